/* protocol.h: how the memwatch CLI talks to the agent inside a target process.
 * Shared by the agent (server) and src/control.c (client). */
#ifndef MEMWATCH_PROTOCOL_H
#define MEMWATCH_PROTOCOL_H

/* The agent listens on the abstract Unix socket "\0memwatch-agent.<pid>" (no file
 * to clean up, no path a client chooses; a forked child that keeps sampling
 * listens under its own pid). Only a peer with the target's uid or root is served
 * (SO_PEERCRED).
 *
 * Requests are single text lines ending in '\n':
 *   start rate=<bytes> depth=<frames> [max-stacks=<n>]
 *   stop
 *   snapshot [referrers=<ms> objects=<n>]
 *   status
 *   hold          (hold the capture without starting it: take over one the
 *                 agent started on its own, capture=now)
 *   peak          (the high-water mark of the estimated live heap)
 * Replies are one line, "ok ..." or "err <message>", except that "snapshot" is
 * answered by "ok <nbytes>\n" followed by exactly nbytes of .snap encoding.
 * "status" answers "ok capturing=<0|1> rate=<R> samples=<n> stacks=<n> live=<bytes> pid=<pid>
 * hooks=<n> holders=<n> python=<state> python-version=<x.y> js=<state> js-version=<v>
 * js-workers=<n>
 * python-why=<sentence>\tjs-why=<sentence>": samples taken since capture
 * start, distinct stacks, estimated live bytes, the number of GOT slots patched
 * now (0 once stop removed them), how many hold the capture, what was made of
 * CPython and of node's JavaScript heap; the two sentences say why either is
 * not read (empty when it is): python-why ends at the tab, js-why at the end
 * of the line.
 * "snapshot referrers=<ms> objects=<n>" (CPython) adds what keeps the top
 * sampled objects alive (section 9 of the snapshot): a search that holds the
 * GIL, bounded by <ms> milliseconds from the request (the wait for the GIL
 * included) and by <n> objects traversed; the snapshot says how it went (an
 * agent older than this answers "err unknown request").
 * "peak" answers "ok peaks=<n> peak=<bytes> live=<bytes> age-ms=<ms>": the
 * estimated live heap marks a peak each time it passes the last one by 10 %
 * and 8 MiB; n counts the peaks marked (it only grows: a client that saw n
 * knows a new one by n changing), peak is the last one's live bytes, age-ms
 * how long ago it was marked, live the estimate now. It takes no lock, so a
 * watch may ask it at every sample. (An agent older than this request
 * answers "err unknown request".)
 *
 * Several clients share one capture. "start" and "hold" give the connection a
 * hold on it; capture runs while anyone holds it. "start" when capture is off
 * starts it at the asked settings: "ok capturing rate=<R> depth=<D> slots=<n>
 * holders=<n>"; when it is on, the connection joins it at the settings in force
 * (the first holder's: a rate changed mid-capture would mix sample weights):
 * "ok already capturing rate=<R> depth=<D> holders=<n> holder-pid=<pid of
 * another holding client, 0 for none> age-ms=<how long it has been running>". "stop" drops the connection's hold
 * ("ok released holders=<n>" while others still hold, "ok stopped" when it was
 * the last); from a connection that holds nothing it stops a capture that no
 * client holds, and is refused ("err capture is held by memwatch pid <pid>...")
 * when one does. "snapshot" never resets or stops anything. A connection that
 * closes drops its hold, so a killed memwatch never leaves a target instrumented,
 * nor ends the capture of another memwatch. */
#define MEMWATCH_SOCKET_PREFIX "memwatch-agent."

/* The most frames a stack may keep ("start depth=", the agent's "depth="
 * option): the CLI checks --max-depth against it, the agent refuses more. */
#define MEMWATCH_MAX_DEPTH 256

/* Options the preloaded agent reads at start-up (memwatch run), and the argument
 * string the injector passes to memwatch_agent_start(): comma-separated
 * key=value: capture=now|idle, rate=<bytes>, depth=<frames>, max-stacks=<n>. */
#define MEMWATCH_AGENT_ENV "MEMWATCH_AGENT_OPTIONS"

/* Exported by libmemwatch-agent.so: install hooks if not yet installed, start the
 * control thread, start capture if the options say so. Returns 0, or -1, and
 * stores the same in *result when result is not NULL (the injector's calls
 * return through a signal frame, which does not keep the return value). Safe
 * to call twice (the second call changes nothing and returns 0). Short: it
 * spawns the control thread and returns.
 *   int memwatch_agent_start(const char *options, int *result); */
#define MEMWATCH_AGENT_START_SYMBOL "memwatch_agent_start"

#endif
