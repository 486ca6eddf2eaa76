/* snapshot.h: the in-memory form of a heap snapshot and its binary .snap encoding.
 * Linked into both the agent (which fills and encodes one) and the CLI (which
 * decodes, validates, stores, diffs and reports). The byte format is documented in
 * memwatch-snapshot(5). This code never calls exit and never prints. */
#ifndef MEMWATCH_SNAPSHOT_H
#define MEMWATCH_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SNAPSHOT_VERSION 1
#define SNAPSHOT_MAGIC "MEMWSNAP" /* the first 8 bytes of every .snap file */
#define SNAP_NO_MODULE UINT32_MAX /* frame outside every known module: offset is the raw address */

/* A loaded object of the target at snapshot time. */
struct snap_module {
	char *path;              /* as the loader saw it; "" for the main program if unknown */
	uint8_t build_id[64];    /* GNU build-id, build_id_len bytes (0: none) */
	uint32_t build_id_len;
	uint64_t bias;           /* load bias (dlpi_addr) */
	uint64_t lo, hi;         /* lowest and highest+1 address of its PT_LOAD segments */
};

/* One frame: a return address (or the allocation call's own address for frame 0)
 * made module-relative: address = modules[module].bias + offset. Packed to 12
 * bytes, not 16: a report of 100 000 stacks holds 4 million of them. */
struct __attribute__((packed, aligned(4))) snap_frame {
	uint32_t module;         /* index into modules, or SNAP_NO_MODULE */
	uint64_t offset;
};

/* Frames of many stacks in one allocation (the decoder's): cap of them, used
 * so far; chunks are chained from the last made. */
struct snap_frame_chunk {
	struct snap_frame_chunk *next;
	size_t cap, used;
	struct snap_frame f[];
};

enum snap_stack_flags {
	SNAP_STACK_TRUNCATED = 1 << 0,   /* deeper than the depth limit: frames cut */
	SNAP_STACK_MMAP = 1 << 1,        /* the program's own mappings, not malloc blocks */
	/* Refinements of SNAP_STACK_MMAP, only ever set with it (so that a reader
	 * that knows only bit 1 reads them as mappings, which they are): */
	SNAP_STACK_BRK = 1 << 2,         /* the program's own brk/sbrk growth */
	SNAP_STACK_FILE = 1 << 3,        /* mappings of a descriptor: a file, memfd, shm */
	SNAP_STACK_JS = 1 << 4,          /* JavaScript objects in V8's heap pages (node) */
};

/* The kind of memory a stack holds, from its flags. */
enum snap_kind { SNAP_KIND_MALLOC, SNAP_KIND_MMAP, SNAP_KIND_BRK, SNAP_KIND_FILE, SNAP_KIND_JS };
static inline enum snap_kind snap_stack_kind(uint32_t flags)
{
	if (!(flags & SNAP_STACK_MMAP))
		return SNAP_KIND_MALLOC;
	return flags & SNAP_STACK_BRK ? SNAP_KIND_BRK
	       : flags & SNAP_STACK_FILE ? SNAP_KIND_FILE
	       : flags & SNAP_STACK_JS ? SNAP_KIND_JS : SNAP_KIND_MMAP;
}
/* "malloc", "mmap", "brk", "file" or "js"; "?" for anything else. */
const char *snap_kind_name(int kind);

/* One distinct call stack and what is attributed to it. Estimated figures are the
 * sums of the weights of the sampled blocks: a block of s bytes was sampled with
 * probability p = -expm1(-(s+1)/R) and stands for s/p bytes and 1/p blocks (exactly
 * s and 1 when R is 1); see memwatch-snapshot(5). */
struct snap_stack {
	uint32_t flags;              /* enum snap_stack_flags */
	uint32_t nframes;
	struct snap_frame *frames;   /* innermost (the allocation call site) first */
	uint64_t live_bytes;         /* estimated bytes still allocated */
	uint64_t live_blocks;        /* estimated blocks still allocated */
	uint64_t live_samples;       /* sampled blocks still allocated (exact count) */
	uint64_t alloc_bytes;        /* estimated bytes allocated since capture start */
	uint64_t alloc_blocks;       /* estimated blocks allocated since capture start */
	uint64_t temp_bytes;         /* estimated bytes of blocks freed soon after their */
	uint64_t temp_blocks;        /* allocation (within temp_window_ns), and blocks */
};

/* The allocator's own view at snapshot time (glibc mallinfo2). */
struct snap_mallinfo {
	bool present;
	uint64_t arena;          /* non-mmapped bytes obtained from the system (arena) */
	uint64_t mmapped;        /* bytes in mmapped chunks (hblkhd) */
	uint64_t in_use;         /* bytes in allocated chunks (uordblks + hblkhd) */
	uint64_t free_bytes;     /* free bytes retained by the allocator (fordblks) */
	uint64_t releasable;     /* releasable top-most free bytes (keepcost) */
};

/* Where the resident memory of the process is, by kind of mapping, read from
 * /proc/PID/smaps by the CLI when it stores a snapshot. */
enum snap_region_kind {
	SNAP_REGION_OTHER = 0,       /* [vdso], [vvar], anything not below */
	SNAP_REGION_HEAP = 1,        /* [heap]: the brk heap (glibc's main arena) */
	SNAP_REGION_ARENA = 2,       /* anonymous heaps of glibc's other malloc arenas */
	SNAP_REGION_ANON = 3,        /* other private anonymous mappings (mmap) */
	SNAP_REGION_ANON_NAMED = 4,  /* anonymous mappings named by prctl: [anon:NAME] */
	SNAP_REGION_STACK = 5,       /* the main thread's [stack] and thread stacks */
	SNAP_REGION_FILE = 6,        /* file-backed mappings, by file */
	SNAP_REGION_SHMEM = 7,       /* shared anonymous, memfd, /dev/shm, SysV shm */
	SNAP_REGION_KIND_MAX = SNAP_REGION_SHMEM,
};

/* The mappings of one kind (and, for files and named mappings, one name). */
struct snap_region {
	uint32_t kind;               /* enum snap_region_kind; a reader maps unknown kinds to other */
	char *name;                  /* the file or the [anon:] name; NULL for the rest */
	uint64_t mappings;           /* how many mappings were summed */
	uint64_t size;               /* address space (Size) */
	uint64_t rss;                /* resident (Rss) */
	uint64_t anon;               /* of which anonymous pages (Anonymous) */
	uint64_t swap;               /* swapped out (Swap) */
};

/* One resolved source frame, for the optional symbol section. */
struct snap_symframe {
	char *function;          /* demangled name, or NULL */
	char *file;              /* source file, or NULL */
	uint32_t line;           /* 0: unknown */
};

/* The resolved frames of one address (inlined frames first, then the function
 * that contains them), written by --embed-symbols. */
struct snap_symbol {
	uint32_t module;
	uint64_t offset;
	uint32_t nframes;
	struct snap_symframe *frames;
};

/* CPython in the process, as the agent found it when the snapshot was taken. */
enum snap_python {
	SNAP_PYTHON_NONE = 0,        /* no CPython found (or a writer that predates the field) */
	SNAP_PYTHON_SAMPLED = 1,     /* its object allocator sampled and its frames read */
	SNAP_PYTHON_NATIVE = 2,      /* a version or build the agent cannot read: native-only */
	SNAP_PYTHON_PAUSED = 3,      /* one it reads, not sampled now (GIL not had yet, finalized) */
};

/* node's JavaScript objects (V8's sampling heap profiler), as the agent read
 * them for the snapshot. */
enum snap_js {
	SNAP_JS_NONE = 0,            /* no V8 found (or a writer that predates the field) */
	SNAP_JS_SAMPLED = 1,         /* its live sampled objects are the stacks of kind js */
	SNAP_JS_NATIVE = 2,          /* a V8 the agent does not read: native-only */
	SNAP_JS_NOT_SAMPLED = 3,     /* one it reads whose profile was not read: js_why */
	SNAP_JS_STARTING = 4,        /* its profiler not started yet in this capture: js_why */
};
#define SNAP_JS_MAX SNAP_JS_STARTING

/* What the sampled live blocks of one stack were at snapshot time, by type
 * (CPython: the type of the object in the block; see memwatch-snapshot(5)):
 * the samples of stack whose block held an object of types[type]. */
struct snap_typed {
	uint32_t stack;              /* index into stacks */
	uint32_t type;               /* index into types */
	uint64_t live_samples;       /* exact */
	uint64_t live_bytes;         /* estimated, as the stack's own figures */
	uint64_t live_blocks;
};
/* The names types[] may hold besides a type's own: a block that holds no
 * object, and one whose words could not be read. */
#define SNAP_TYPE_NOT_OBJECT "<not an object>"
#define SNAP_TYPE_UNREADABLE "<unreadable>"

/* What keeps sampled objects alive (CPython, memwatch snap --referrers): for a
 * few sampled live objects of the top rows, a chain of references from a root
 * (a module global, a class attribute, a frame's local, sys.modules) to the
 * object, found by the interpreter's own traversal; and what one object of
 * each top type holds (its referents by type). See memwatch-snapshot(5). */
struct snap_reflink {
	char *edge;                  /* how it is reached from the link before it: for
				      * the first, the root's name ("__main__.AUDIT_LOG");
				      * then "[3]", "['key']", ".attr"; NULL: unnamed */
	char *type;                  /* the type of the object reached (NULL: unknown) */
};
enum snap_chain_end {
	SNAP_CHAIN_ROOT = 0,         /* the first link is a root */
	SNAP_CHAIN_NO_ROOT = 1,      /* nothing the collector tracks refers to the first
				      * link: held by a C extension, a running frame or
				      * the interpreter itself */
	SNAP_CHAIN_STOPPED = 2,      /* the search stopped at its bound before a root */
};
struct snap_refchain {
	uint32_t type;               /* index into types: the object's type */
	uint32_t stack;              /* index into stacks: its sample's stack */
	uint32_t end;                /* enum snap_chain_end (a reader maps others to stopped) */
	uint32_t nlinks;             /* at least 1: the last link is the object itself */
	struct snap_reflink *links;  /* from the root to the object */
};
struct snap_referent {
	char *type;                  /* the referents' type */
	uint64_t count;              /* how many the object refers to */
	uint64_t bytes;              /* their sizes summed (as sys.getsizeof, with the GC header) */
};
struct snap_forward {
	uint32_t type;               /* index into types: the object's type */
	uint64_t bytes;              /* the object's own size */
	uint32_t nreferents;
	struct snap_referent *referents;   /* by type, largest first */
};
enum snap_refs_status {
	SNAP_REFS_DONE = 0,          /* every object's chain was searched to its end */
	SNAP_REFS_TIME = 1,          /* stopped at the time limit */
	SNAP_REFS_OBJECTS = 2,       /* stopped at the object limit */
	SNAP_REFS_NO_GIL = 3,        /* the GIL was not had within the time limit */
	SNAP_REFS_UNAVAILABLE = 4,   /* not searched (the note says why) */
};
struct snap_refsearch {
	uint32_t status;             /* enum snap_refs_status */
	uint64_t limit_ns;           /* the time limit asked */
	uint64_t max_objects;        /* the object limit asked */
	uint64_t pause_ns;           /* how long Python threads were held (the GIL) */
	uint64_t visited;            /* objects traversed, every pass counted */
	uint64_t tracked;            /* objects the collector tracks (one pass) */
	uint32_t passes;             /* passes over the tracked objects */
	char *note;                  /* why it stopped or was not made; NULL */
};

struct snapshot {
	uint32_t version;            /* format version read (SNAPSHOT_VERSION written) */
	int32_t pid;
	char *exe;                   /* /proc/PID/exe at snapshot time */
	char *cmdline;               /* arguments joined by spaces, may be "" */
	uint64_t time_ns;            /* CLOCK_REALTIME when taken */
	uint64_t capture_start_ns;   /* CLOCK_REALTIME when sampling started */
	uint64_t sample_rate;        /* mean bytes between samples (R); 1 = every allocation */
	uint32_t max_depth;          /* stack depth limit in force */
	uint64_t rss_bytes;          /* process RSS when taken (0: unknown) */
	uint64_t dropped_stacks;     /* distinct stacks not stored because of the stack limit */
	uint64_t dropped_bytes;      /* estimated live bytes of the dropped stacks */
	uint32_t python;             /* enum snap_python: what the agent made of CPython */
	uint32_t python_version;     /* its version, major << 8 | minor (0: none) */
	uint32_t js;                 /* enum snap_js: what the agent made of node's V8 */
	char *js_version;            /* V8's version, or NULL */
	char *js_why;                /* why its objects are not in the snapshot, or NULL */
	struct snap_mallinfo mallinfo;
	size_t nmodules;
	struct snap_module *modules;
	size_t nstacks;
	struct snap_stack *stacks;
	struct snap_frame_chunk *frame_block; /* when set (the decoder's), every
					 * stack's frames are in these chunks */
	bool frames_borrowed;        /* some stacks' frames are another snapshot's
				      * (snapshot_decode_like): not freed with s */
	/* snapshot_read_keep: the file's bytes, and where each stack's frames
	 * are in them as encoded (NULL otherwise, and after snapshot_drop_raw),
	 * so that a snapshot read like this one finds the frames it shares
	 * without decoding them */
	unsigned char *raw;
	size_t raw_mapped;           /* raw is the file mapped, this long (else malloc'd) */
	size_t *raw_at, *raw_len;
	size_t nsymbols;             /* 0 unless symbols were embedded */
	struct snap_symbol *symbols;
	bool has_regions;            /* the mapping breakdown was read (it may be empty) */
	size_t nregions;
	struct snap_region *regions;
	bool has_temp;               /* the stacks' temp_ figures were counted */
	uint64_t temp_window_ns;     /* a block freed this soon is temporary */
	size_t ntypes;               /* 0 unless the types of objects were read */
	char **types;                /* qualified names of types */
	size_t ntyped;
	struct snap_typed *typed;
	bool has_refs;               /* a referrer search was asked (section 9) */
	struct snap_refsearch refsearch;
	size_t nchains;
	struct snap_refchain *chains;
	size_t nforward;
	struct snap_forward *forward;
};

/* Encode s into a malloc'd buffer (*buf, *len; caller frees). One allocation of
 * the exact size; no stdio. 0, or -1 with errno ENOMEM, or EINVAL for a snapshot
 * the decoder would refuse (so none is ever written): sample_rate 0, a frame or
 * symbol naming a module index >= nmodules (other than SNAP_NO_MODULE), a
 * build_id_len over 64, a module with lo > hi, or a NULL array with a non-zero
 * count. NULL strings are written as "" (exe, cmdline, module paths). */
int snapshot_encode(const struct snapshot *s, unsigned char **buf, size_t *len);

/* Decode and validate buf. Returns a new snapshot (caller frees with
 * snapshot_free), or NULL with *cause (caller frees) saying precisely what is wrong
 * ("truncated at byte 123", "checksum mismatch", "version 9 is newer than ..."). */
struct snapshot *snapshot_decode(const unsigned char *buf, size_t len, char **cause);

/* The same, with the frames of each stack that are byte for byte those of
 * like's stack of its index shared with like rather than copied: like must
 * outlive the snapshot returned (diff's two snapshots of one process list
 * most stacks alike, in the same order). */
struct snapshot *snapshot_decode_like(const unsigned char *buf, size_t len,
				      const struct snapshot *like, char **cause);

/* A stack as its bytes are: its frames still encoded (a module reference and
 * an offset, each a varint, per frame), its figures decoded. */
struct snap_raw_stack {
	uint32_t flags, nframes;
	const unsigned char *frames;
	size_t frames_len;
	uint64_t live_bytes, live_blocks, live_samples, alloc_bytes, alloc_blocks;
};
typedef void snapshot_raw_fn(void *arg, size_t i, const struct snap_raw_stack *st);

/* Give each stack of the snapshot in buf to each as its bytes are, without
 * decoding its frames: the checksum and the sections' framing are checked,
 * and the stacks section's records, not what the frames say (a reader that
 * uses them must know them the same as frames it decoded before). *more: the
 * snapshot has sections a reader of stacks' figures alone leaves out (types,
 * referrers). 0, or -1 with *cause (caller frees). */
int snapshot_scan_stacks(const unsigned char *buf, size_t len, snapshot_raw_fn *each, void *arg,
			 bool *more, char **cause);

/* Decode only what a reader needs before the stacks of a set of snapshots:
 * the process and malloc sections, the modules and the embedded symbols (no stacks, no
 * regions, types or referrers), without the checksum, which reads every byte:
 * snapshot_decode of the same bytes checks it and the rest. As
 * snapshot_decode otherwise. */
struct snapshot *snapshot_decode_head(const unsigned char *buf, size_t len, char **cause);

/* Read and decode a file. NULL with *cause naming the file on failure. */
struct snapshot *snapshot_read(const char *path, char **cause);
/* The same with snapshot_decode_like (like may be NULL), for a report that
 * holds one or two snapshots to its end (show, diff): their frames are asked
 * for in pages of 2 MiB, which saves show of 100 000 stacks a tenth of its
 * time in page faults. Not for a reader of many: a trend of ten of them
 * peaked 25 MB higher so, its frames no longer in memory that malloc had
 * already been given back. */
struct snapshot *snapshot_read_like(const char *path, const struct snapshot *like, char **cause);
/* snapshot_read_like, keeping the file's bytes in the snapshot returned for
 * one read like it next: a stack whose encoded frames are those of this
 * one's stack of its index then shares them undecoded. Let them go with
 * snapshot_drop_raw (snapshot_free does too). */
struct snapshot *snapshot_read_keep(const char *path, const struct snapshot *like, char **cause);
void snapshot_drop_raw(struct snapshot *s);
/* The same with snapshot_decode_head: only the pages of the file it needs
 * are read. */
struct snapshot *snapshot_read_head(const char *path, char **cause);
/* The whole file at path into *buf (caller frees), *len bytes: 0, or -1 with
 * *cause naming it. */
int snapshot_read_bytes(const char *path, unsigned char **buf, size_t *len, char **cause);


/* Write s (or already-encoded bytes) to path atomically: a temporary file beside
 * it, renamed into place. Without force an existing path is refused. 0 or -1 with
 * *cause. */
int snapshot_write(const struct snapshot *s, const char *path, bool force, char **cause);
int snapshot_write_bytes(const unsigned char *buf, size_t len, const char *path, bool force,
			 char **cause);

/* Free a snapshot from snapshot_decode/snapshot_read, or one built by hand with
 * malloc'd members. NULL is fine. */
void snapshot_free(struct snapshot *s);

#endif
