/* hotspot.h: names for the Java methods a HotSpot JVM compiled. Before a
 * snapshot of a JVM is stored, memwatch asks the JVM to write its perf map
 * (/tmp/perf-PID.map, read by perfmap.c), as `jcmd PID Compiler.perfmap` does,
 * through HotSpot's attach mechanism: a trigger file and SIGQUIT start its
 * attach listener, whose Unix socket takes the command. */
#ifndef MEMWATCH_HOTSPOT_H
#define MEMWATCH_HOTSPOT_H

#include <stdbool.h>

/* How long one request may take in all (the socket to appear, the command to
 * be answered): a watch must not stall for longer. */
#define HOTSPOT_TIMEOUT_MS 2000

/* What is known of one process's JVM across its snapshots. Zero it to start. */
struct hotspot {
	bool given_up;    /* refused, or not a JVM that can be asked: never again
			   * (a SIGQUIT it did not take as an attach trigger
			   * prints a thread dump) */
	bool said;        /* the caller said why, once */
	bool answered;    /* it wrote its map at least once */
	bool signalled;   /* memwatch sent it the SIGQUIT that started its listener */
	double ms;        /* how long the last request took */
};

/* When pid is a HotSpot JVM (libjvm.so mapped) that runs and has not refused,
 * ask it to write its perf map, within timeout_ms. SIGQUIT is only sent to a
 * process that maps libjvm.so, is not OpenJ9, catches SIGQUIT and was not
 * started with -XX:+DisableAttachMechanism; the trigger file is removed
 * before returning. Returns 1 when the map was written, 0 when there was
 * nothing to ask (not a JVM, not running now, given up before, or memwatch
 * was told to stop meanwhile), -1 when it could not be asked: *why (caller
 * frees) is one line for people, with the command that would write the map
 * or what else to do. */
int hotspot_perfmap(struct hotspot *h, int pid, int timeout_ms, char **why);

#endif
