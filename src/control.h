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
	char python[16];         /* CPython: none, unsupported, unreadable, off, waiting, on,
				  * finalized ("" unknown) */
	unsigned python_major, python_minor;   /* its version, where one was found */
	char python_why[96];     /* unreadable: why its structures cannot be read */
	char js[16];             /* node's JavaScript heap: none, unsupported, off, waiting, on, gone */
	char js_version[48];     /* V8's version ("-": none) */
	unsigned js_workers;     /* worker threads' isolates sampled now */
	char js_why[200];        /* why JavaScript objects were last not read ("": they were) */
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
/* What a status says about a CPython target that is captured native-only (an
 * unsupported version, the GIL not yet had, the interpreter finalized), as one
 * line into buf; NULL when there is nothing to say. */
const char *control_python_note(const struct control_status *st, char *buf, size_t len);
/* The high-water mark of the agent's estimated live heap ("peak" in
 * protocol.h): peaks marked so far, the last one's bytes and age, the live
 * bytes now. 0, or -1 with *cause (an agent older than the request refuses
 * it). */
struct control_peak {
	uint64_t count, bytes, live, age_ms;
};
int control_peak(int fd, struct control_peak *pk, char **cause);
/* What a status says about node's JavaScript objects when they are not in
 * the snapshots (a V8 the agent does not read, the JavaScript thread not at
 * a safe point in time, its isolate torn down), as one line into buf; NULL
 * when there is nothing to say. */
const char *control_js_note(const struct control_status *st, char *buf, size_t len);
/* Ask for a snapshot; *buf (caller frees) holds the .snap bytes. 0 or -1. */
int control_snapshot(int fd, unsigned char **buf, size_t *len, char **cause);

/* A snapshot request whose reply may take longer than one wait: a target
 * stopped mid-request (SIGSTOP, a debugger) answers only when it runs again, so
 * the reply is received in as many calls as it needs, the connection staying
 * in step. Zero-initialised; release it when giving up. */
struct control_snap_rx {
	bool active;             /* a request was sent; its reply has not come whole */
	bool have_line;          /* its "ok <nbytes>" line is in */
	char line[128];
	size_t linelen;
	unsigned char *data;     /* the bytes announced: len, got so far */
	size_t len, got;
};
enum {
	CONTROL_RX_DONE = 1,         /* the snapshot is in */
	CONTROL_RX_PENDING = 0,      /* not yet: call control_snapshot_recv again later */
	CONTROL_RX_INTERRUPTED = -2, /* a signal came (see control_set_interrupt): the same */
	CONTROL_RX_FAILED = -1,      /* the connection is lost or out of step (*cause); rx reset */
};
/* Send a snapshot request. 0, or -1 with *cause. */
int control_snapshot_send(int fd, struct control_snap_rx *rx, char **cause);
/* The same, with a referrer search (CPython) bounded by refs_ms (0: none)
 * and refs_objects objects traversed. */
int control_snapshot_send_refs(int fd, struct control_snap_rx *rx, uint64_t refs_ms,
			       uint64_t refs_objects, char **cause);
/* Receive what has come of the reply, waiting up to timeout_ms for the rest.
 * CONTROL_RX_DONE with *buf (caller frees) and *len, or another CONTROL_RX_. */
int control_snapshot_recv(int fd, struct control_snap_rx *rx, int timeout_ms,
			  unsigned char **buf, size_t *len, char **cause);
void control_snap_rx_release(struct control_snap_rx *rx);

/* Every wait for an agent (requests, snapshots) ends within about 0.1 s once
 * fn returns true; NULL restores the default: a SIGINT or SIGTERM came
 * (stop_signals_install). */
void control_set_interrupt(bool (*fn)(void));

/* Whether a wait for the agent would end now for a signal (as above). */
bool control_interrupted(void);

#endif
