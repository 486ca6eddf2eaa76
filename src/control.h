/* control.h: the CLI side of the agent control protocol (see agent/protocol.h). */
#ifndef MEMWATCH_CONTROL_H
#define MEMWATCH_CONTROL_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

struct control_status {
	bool capturing;
	uint64_t rate;
	uint64_t samples;
	uint64_t stacks;
	uint64_t live_bytes;
	uint64_t hooks;          /* GOT slots patched now; 0 when the hooks are removed */
};

/* Connect to the agent of pid. Returns a socket fd, or -errno with *cause set:
 * -ECONNREFUSED / -ENOENT when no agent listens there. timeout_ms bounds every
 * later request on this connection. */
int control_connect(int pid, int timeout_ms, char **cause);
/* What "start" got: a capture of its own, or a hold on one running already. */
struct control_started {
	bool joined;             /* capture was on: joined at the settings in force */
	uint64_t rate;           /* the sample rate in force (what snapshots record) */
	unsigned depth;          /* the frame limit in force (0: not said) */
	int holder_pid;          /* joined: a memwatch holding it too (0: none, or not said) */
	uint64_t age_ms;         /* joined: how long it has been running (0: not said) */
};

/* Start capture (rate: mean bytes between samples; depth: frame limit;
 * max_stacks: 0 for the agent's default), or join the one running, whose
 * settings stay. *got (may be NULL) says which. 0 or -1 with *cause. */
int control_start(int fd, uint64_t rate, unsigned depth, uint64_t max_stacks,
		  struct control_started *got, char **cause);
/* Hold the capture without starting it: take over one the agent started on its
 * own (preload, capture=now). */
int control_hold(int fd, char **cause);
/* One warning line: pid's capture was joined at another rate than asked. */
void control_warn_rate(int pid, const struct control_started *got, uint64_t asked);
int control_stop(int fd, char **cause);
int control_status(int fd, struct control_status *st, char **cause);
/* Ask for a snapshot; *buf (caller frees) holds the .snap bytes. 0 or -1. */
int control_snapshot(int fd, unsigned char **buf, size_t *len, char **cause);

#endif
