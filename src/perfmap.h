/* perfmap.h: names for frames in code that a runtime compiled while it ran
 * (JIT), from the perf map it writes: /tmp/perf-PID.map, one "START SIZE NAME"
 * line per function, hexadecimal (node --perf-basic-prof, Python 3.12 -X perf,
 * jcmd PID Compiler.perfmap). The map is read when a snapshot is stored, since
 * it may be gone by the time the snapshot is reported. */
#ifndef MEMWATCH_PERFMAP_H
#define MEMWATCH_PERFMAP_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "snapshot.h"

struct perfmap_entry {
	uint64_t start, size;
	size_t line;             /* its place in the map: the later of two at one start wins */
	char *name;
};

/* Parse the map in f into *out (*n entries, sorted by start; caller frees with
 * perfmap_free). Lines that are not "START SIZE NAME" are skipped. 0 or -1
 * (out of memory). */
int perfmap_parse(FILE *f, struct perfmap_entry **out, size_t *n);
void perfmap_free(struct perfmap_entry *v, size_t n);

/* The entry holding address a, or NULL. */
const struct perfmap_entry *perfmap_find(const struct perfmap_entry *v, size_t n, uint64_t a);

/* Name the frames of s that lie outside every module and inside a function of
 * pid's perf map (seen through /proc/PID/root, under the pid the process has
 * in its own namespace), as entries of s's symbol section, beside what the
 * section holds (a runtime's own frames; an address it names already keeps
 * its name). Returns how many addresses were named; 0 when there is no map. */
size_t perfmap_embed(struct snapshot *s, pid_t pid);
/* The same from the map at path. */
size_t perfmap_embed_file(struct snapshot *s, const char *path);

/* The path by which pid's perf map is reached without /proc/PID/root (ours:
 * /tmp/perf-NSPID.map), when that is the same file, so that it can be read
 * once the process is gone (its snapshot at exit); else NULL. Caller frees. */
char *perfmap_path_here(pid_t pid);

#endif
