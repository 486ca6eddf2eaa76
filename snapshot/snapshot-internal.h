/* snapshot-internal.h: what the encoder (snapshot.c) and the decoder
 * (snapdecode.c) of the .snap format share: the fixed frame of the format
 * (memwatch-snapshot(5)) and the checks both make. Not for other callers: they
 * use snapshot.h. */
#ifndef MEMWATCH_SNAPSHOT_INTERNAL_H
#define MEMWATCH_SNAPSHOT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "snapshot.h"

/* The fixed frame of the format: see memwatch-snapshot(5). */
#define SNAP_MAGIC_LEN 8       /* SNAPSHOT_MAGIC without its NUL */
#define SNAP_HEADER_LEN 16     /* magic, u16 version, u16 flags, u32 section count */
#define SNAP_SECTION_HDR_LEN 16 /* u32 type, u32 flags, u64 length */
#define SNAP_TRAILER_LEN 4     /* u32 CRC-32 of every byte before it */
#define SNAP_BUILD_ID_MAX 64
#define SNAP_REFS_VERSION 1    /* the first field of section 9 */

enum snap_section_type {
	SEC_PROCESS = 1,
	SEC_MALLINFO = 2,
	SEC_MODULES = 3,
	SEC_STACKS = 4,
	SEC_SYMBOLS = 5,
	SEC_REGIONS = 6,
	SEC_TEMPORARY = 7,
	SEC_TYPES = 8,
	SEC_REFERRERS = 9,
	SEC_KNOWN_MAX = SEC_REFERRERS,
};

enum snap_section_flags {
	/* A reader that does not know this section type must refuse the file. */
	SNAP_SECTION_REQUIRED = 1 << 0,
};

/* Is a module reference valid against n modules? */
static inline bool snap_module_ref_ok(uint32_t module, size_t n)
{
	return module == SNAP_NO_MODULE || module < n;
}

/* How snapshot_decode_raw decodes. */
enum snap_decode_flags {
	/* where each stack's encoded frames are in buf is recorded (raw_at,
	 * raw_len) for the caller, which keeps buf as the snapshot's raw
	 * (snapio.c) */
	SNAP_DECODE_KEEP = 1 << 0,
	/* the frames asked for in pages of 2 MiB (bigmem.h): for a report
	 * that holds one or two snapshots to its end */
	SNAP_DECODE_HUGE = 1 << 1,
};

/* snapshot_decode_like, as flags say. Frames encoded as those of like's
 * stack of their index, in like's raw, are shared without being decoded. */
struct snapshot *snapshot_decode_raw(const unsigned char *buf, size_t len,
				     const struct snapshot *like, unsigned flags, char **cause);

/* CRC-32 of len bytes (the trailer of a file), defined in snapshot.c. */
uint32_t snap_crc(const unsigned char *p, size_t len);

#endif
