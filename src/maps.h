/* maps.h: where a process's resident memory is, by kind of mapping (brk heap,
 * malloc arenas, anonymous mappings, thread stacks, files, shared memory), read
 * from /proc/PID/smaps when a snapshot is stored. */
#ifndef MEMWATCH_MAPS_H
#define MEMWATCH_MAPS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "snapshot.h"

/* Read pid's mappings and sum them by kind into *out (*n entries; caller frees
 * with maps_free). 0, or -1 with *cause (caller frees). */
int maps_read(pid_t pid, struct snap_region **out, size_t *n, char **cause);

/* Reads len bytes of the process's memory at addr into buf; false when it
 * cannot. */
typedef bool maps_read_mem(void *ctx, uint64_t addr, void *buf, size_t len);

/* The same from smaps text f; sps are the stack pointers of threads (their
 * mappings are thread stacks), nsps of them; rd(ctx, ...) reads the process's
 * memory (glibc's arenas are told by their header), or is NULL. 0, or -1 (out
 * of memory). */
int maps_parse(FILE *f, const uint64_t *sps, size_t nsps, maps_read_mem *rd, void *ctx,
	       struct snap_region **out, size_t *n);

/* Free what maps_read or maps_parse made. */
void maps_free(struct snap_region *v, size_t n);

/* A kind's name in reports ("brk heap", "malloc arenas", ...). */
const char *maps_kind_name(uint32_t kind);

/* Add the mapping breakdown of pid to s (has_regions set on success). A failure
 * leaves s without one and is not an error of the snapshot: 0 or -1 with *cause. */
int maps_add_to_snapshot(struct snapshot *s, pid_t pid, char **cause);

/* What the CLI adds to a snapshot from /proc when it stores one: the mapping
 * breakdown and the names of JIT frames (perfmap.h); and the executable,
 * command line and RSS the agent could not read where the process's root has
 * no /proc mounted (a chroot, some containers). A process gone meanwhile
 * gives neither, which is no error of the snapshot. */
void maps_enrich_snapshot(struct snapshot *s, pid_t pid);

#endif
