/* agentctl.c: speaks the agent control protocol through src/control.c, one
 * request after another on one connection, so tests can drive start, hold, stop,
 * status and snapshots and see what happens when the connection closes.
 * Usage: agentctl PID REQUEST...
 *   start=RATE   start capture (depth 64)     hold       own the capture
 *   stop         stop capture, remove hooks    status     print the status
 *   snapshot=F   write a snapshot to F         sleep=MS   wait
 * Prints one line per request; exits 1 at the first failure. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "control.h"
#include "snapshot.h"
#include "util.h"

int main(int argc, char **argv)
{
	char *cause = NULL;
	int pid, fd, i;

	if (argc < 3 || parse_pid(argv[1], &pid, &cause) < 0) {
		fprintf(stderr, "usage: agentctl PID REQUEST...\n");
		return 2;
	}
	fd = control_connect(pid, 20000, &cause);
	if (fd < 0) {
		mw_error("%s", cause);
		return 1;
	}
	for (i = 2; i < argc; i++) {
		const char *a = argv[i];
		int r = 0;
		if (strncmp(a, "start=", 6) == 0) {
			r = control_start(fd, strtoull(a + 6, NULL, 10), 64, 0, NULL, &cause);
			if (r == 0)
				printf("start: ok\n");
		} else if (strcmp(a, "hold") == 0) {
			r = control_hold(fd, &cause);
			if (r == 0)
				printf("hold: ok\n");
		} else if (strcmp(a, "stop") == 0) {
			r = control_stop(fd, &cause);
			if (r == 0)
				printf("stop: ok\n");
		} else if (strcmp(a, "status") == 0) {
			struct control_status st;
			r = control_status(fd, &st, &cause);
			if (r == 0)
				printf("status: capturing=%d hooks=%llu rate=%llu samples=%llu stacks=%llu live=%llu js=%s js-workers=%u python=%s\n",
				       st.capturing, (unsigned long long)st.hooks, (unsigned long long)st.rate,
				       (unsigned long long)st.samples, (unsigned long long)st.stacks,
				       (unsigned long long)st.live_bytes, st.js[0] ? st.js : "?", st.js_workers,
				       st.python[0] ? st.python : "?");
		} else if (strncmp(a, "snapshot=", 9) == 0) {
			unsigned char *buf;
			size_t len;
			struct snapshot *s;
			r = control_snapshot(fd, &buf, &len, &cause);
			if (r == 0) {
				s = snapshot_decode(buf, len, &cause);
				if (!s || snapshot_write_bytes(buf, len, a + 9, true, &cause) < 0)
					r = -1;
				else
					printf("snapshot: ok stacks=%zu\n", s->nstacks);
				snapshot_free(s);
				free(buf);
			}
		} else if (strncmp(a, "sleep=", 6) == 0) {
			struct timespec ts = { 0, 0 };
			long ms = atol(a + 6);
			ts.tv_sec = ms / 1000;
			ts.tv_nsec = (ms % 1000) * 1000000L;
			nanosleep(&ts, NULL);
		} else {
			fprintf(stderr, "agentctl: unknown request '%s'\n", a);
			return 2;
		}
		fflush(stdout);
		if (r < 0) {
			mw_error("%s", cause);
			return 1;
		}
	}
	close(fd);
	return 0;
}
