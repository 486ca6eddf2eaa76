/* fuzz_options.c: libFuzzer target for the option parsers a user types into:
 * durations, sizes, pids, trigger rules and snapshot steps. Each must accept or
 * refuse with a reason, never read past the string, and keep what it accepts in
 * range. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "trigger.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Run one parser result through the common checks. */
static void verdict(int rc, char *cause)
{
	if (rc == 0 && cause)
		abort(); /* success leaves no cause */
	if (rc != 0 && (!cause || !*cause))
		abort(); /* a refusal says why */
	free(cause);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	char *cause;
	uint64_t v;
	int pid;
	struct trigger_rule r;
	struct snap_step st;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';

	cause = NULL;
	int rc = parse_duration_ms(s, &v, &cause);
	if (rc == 0 && v == 0)
		abort(); /* a zero interval is refused */
	verdict(rc, cause);

	cause = NULL;
	verdict(parse_size(s, &v, &cause), cause);

	cause = NULL;
	rc = parse_pid(s, &pid, &cause);
	if (rc == 0 && pid <= 0)
		abort();
	verdict(rc, cause);

	cause = NULL;
	verdict(trigger_parse(s, &r, &cause), cause);

	cause = NULL;
	verdict(snap_step_parse(s, &st, &cause), cause);

	free(s);
	return 0;
}
