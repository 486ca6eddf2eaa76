/* debugcache.h: copies of debug files with their DWARF decompressed, kept by
 * build-id (debugcache.c). */
#ifndef MEMWATCH_DEBUGCACHE_H
#define MEMWATCH_DEBUGCACHE_H

#include <stddef.h>
#include <stdint.h>

/* The copy of the debug file of build-id id in the cache, checked to carry
 * it: its descriptor, with *name (freed) set to its path; or -1. */
int debugcache_open(const uint8_t *id, size_t len, char **name);

/* Keep a copy of the ELF file open on fd, whose build-id is id, in the cache,
 * with its compressed sections decompressed; nothing when it has none or no
 * copy can be written. fd is only read. */
void debugcache_add(int fd, const uint8_t *id, size_t len);

#endif
