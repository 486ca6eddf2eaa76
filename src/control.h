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
	char python[16];         /* CPython: none, unsupported, off, waiting, on, finalized ("" unknown) */
	unsigned python_major, python_minor;   /* its version, where one was found */
};

/* Connect to the agent of pid. Returns a socket fd, or -errno with *cause set:
 * -ECONNREFUSED / -ENOENT when no agent listens there. timeout_ms bounds every
 * later request on this connection. */
int control_connect(int pid, int timeout_ms, char **cause);
/* Start capture (rate: mean bytes between samples; depth: frame limit;
 * max_stacks: 0 for the agent's default). 0 or -1 with *cause. */
int control_start(int fd, uint64_t rate, unsigned depth, uint64_t max_stacks, char **cause);
/* Take ownership of a capture the agent started on its own (preload, capture=now). */
int control_hold(int fd, char **cause);
int control_stop(int fd, char **cause);
int control_status(int fd, struct control_status *st, char **cause);
/* What a status says about a CPython target that is captured native-only (an
 * unsupported version, the GIL not yet had, the interpreter finalized), as one
 * line into buf; NULL when there is nothing to say. */
const char *control_python_note(const struct control_status *st, char *buf, size_t len);
/* Ask for a snapshot; *buf (caller frees) holds the .snap bytes. 0 or -1. */
int control_snapshot(int fd, unsigned char **buf, size_t *len, char **cause);

#endif
