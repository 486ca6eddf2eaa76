/* fuzz_runlog.c: libFuzzer target for the run.log reader (memwatch plot reads logs
 * that users pass around). Each input is written to a file and read back: it is
 * accepted with consistent contents or refused with a reason, never crashes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runlog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char path[64];
	char *cause = NULL;
	struct runlog_data *d;
	FILE *f;

	if (!path[0])
		snprintf(path, sizeof path, "%s/memwatch-fuzz-runlog.%d",
			 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp", (int)getpid());
	f = fopen(path, "wb");
	if (!f)
		abort();
	if (size && fwrite(data, 1, size, f) != size)
		abort();
	fclose(f);

	d = runlog_read(path, &cause);
	if (!d) {
		if (!cause || !*cause)
			abort(); /* a refusal says why */
		free(cause);
		return 0;
	}
	if (cause || d->nsamples == 0)
		abort(); /* a log with no samples is refused, not accepted empty */
	for (size_t i = 0; i < d->nsamples; i++) {
		int known = 0;
		for (size_t j = 0; j < d->npids; j++)
			known |= d->pids[j] == d->samples[i].s.pid;
		if (!known)
			abort(); /* every sample's pid is in the pid list */
	}
	for (size_t i = 0; i < d->nevents; i++)
		if (!d->events[i].kind || !d->events[i].detail)
			abort();
	runlog_data_free(d);
	return 0;
}
