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
 *   snapshot
 *   status
 *   hold          (make this connection the capture's owner without starting)
 * Replies are one line, "ok ..." or "err <message>", except that "snapshot" is
 * answered by "ok <nbytes>\n" followed by exactly nbytes of .snap encoding.
 * "status" answers "ok capturing=<0|1> rate=<R> samples=<n> stacks=<n> live=<bytes> pid=<pid>
 * hooks=<n>": samples taken since capture start, distinct stacks, estimated live
 * bytes, and the number of GOT slots patched now (0 once stop removed them).
 *
 * The connection that sent "start" (or "hold") owns the capture: when it closes
 * without "stop", the agent stops sampling and removes its hooks on its own, so a
 * killed memwatch never leaves a target instrumented. */
#define MEMWATCH_SOCKET_PREFIX "memwatch-agent."

/* Options the preloaded agent reads at start-up (memwatch run), and the argument
 * string the injector passes to memwatch_agent_start(): comma-separated
 * key=value: capture=now|idle, rate=<bytes>, depth=<frames>, max-stacks=<n>. */
#define MEMWATCH_AGENT_ENV "MEMWATCH_AGENT_OPTIONS"

/* Exported by libmemwatch-agent.so: install hooks if not yet installed, start the
 * control thread, start capture if the options say so. Returns 0, or -1. Safe to
 * call twice (the second call changes nothing and returns 0). Short: it spawns
 * the control thread and returns. */
#define MEMWATCH_AGENT_START_SYMBOL "memwatch_agent_start"

#endif
