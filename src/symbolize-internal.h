/* symbolize-internal.h: what the two halves of the symbolizer share:
 * symbolize.c (the modules, the Dwfl session they are reported into, the
 * cache, embedding) and symbolize-dwarf.c (what one address of a reported
 * module is: DWARF functions, lines and inlined frames, else the ELF symbol
 * table). Not for other callers: they use symbolize.h. */
#ifndef MEMWATCH_SYMBOLIZE_INTERNAL_H
#define MEMWATCH_SYMBOLIZE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>

#include "hashmap.h"
#include "symbolize.h"

struct gmod {
	char *key;               /* "b:" + build-id hex, or "p:" + path */
	char *path;
	char *name;              /* last path component */
	uint8_t build_id[64];
	uint32_t build_id_len;
	char build_id_hex[129];
	uint64_t bias, lo, hi;   /* as first recorded */
	bool use_files;          /* some snapshot without symbols has frames here */
	uint64_t place;          /* the bias it has in our Dwfl */
	bool reported;           /* report_module done (dwmod may still be NULL) */
	enum sym_file file;      /* whether its file was found (once reported) */
	struct fsym *syms;       /* its function symbols by address, once needed */
	size_t nsyms;
	bool syms_loaded;
	Dwfl_Module *dwmod;
};

/* A function symbol: [lo, hi) in Dwfl addresses (hi == lo: size unknown). */
struct fsym {
	GElf_Addr lo, hi;
	const char *name;        /* interned, demangled */
	int rank;                /* preference among symbols at one address */
};

/* A function's address range in a compilation unit (DWARF addresses). */
struct fnrange {
	Dwarf_Addr lo, hi;
	Dwarf_Off die;           /* its DW_TAG_subprogram */
};

/* The functions of one compilation unit, sorted by address, read once. */
struct cucache {
	uint32_t gmod;
	Dwarf_Off cu;            /* the CU DIE's offset */
	struct fnrange *fns;
	size_t nfns;
};

/* A (module, offset) as the caches are asked it. */
struct place {
	uint32_t gmod;
	uint64_t offset;
};

/* The hash of a (module, offset), for the caches. */
static inline uint64_t place_hash(uint32_t g, uint64_t off)
{
	return hash_mix64(off ^ ((uint64_t)g << 40));
}

/* A direct-mapped cache in front of the slots: a report looks up every
 * frame of every stack, mostly the same few addresses again. */
#define SYM_FRONT_BITS 13
struct front {
	uint64_t offset;
	uint32_t gmod;
	uint32_t loc;            /* index into locs + 1; 0: empty */
};

struct symbolizer {
	char *debuginfo_path;
	Dwfl_Callbacks callbacks;
	Dwfl *dwfl;
	bool reported;
	char **dirs;             /* absolute debug directories, in search order */
	size_t ndirs;

	struct gmod *mods;
	size_t nmods;

	struct hashmap slots;    /* (module, offset) -> struct slot */
	struct sym_loc *locs;
	size_t nlocs, alocs;

	struct front *front;     /* the last lookups, before the slots */

	struct hashmap strs;     /* interned strings: const char *, owned */

	struct hashmap cus;      /* (module, CU offset) -> struct cucache */

	bool progress_shown;
};

/* The one shared copy of s (NULL stays NULL), owned by z (symbolize.c). */
const char *sym_intern(struct symbolizer *z, const char *s);

/* The source frames at pc, an address in module g's place in the Dwfl session
 * (g reported, its dwmod set): from DWARF, else the function alone from the
 * ELF symbol table. Returns their count, 0 when nothing is known; *out is
 * malloc'd when not 0 (the caller takes it). (symbolize-dwarf.c) */
uint32_t sym_frames_at(struct symbolizer *z, uint32_t g, Dwarf_Addr pc, struct sym_frame **out);

#endif
