/* symbolize.h: turn the module-relative frames of snapshots into functions,
 * source files, lines and inlined frames, with elfutils libdwfl (local files
 * with a matching build-id, debug directories, debuginfod), or from a snapshot's
 * embedded symbol section. One symbolizer serves several snapshots at once: a
 * module is known by its build-id (or its path when it has none), so the same
 * library in two runs is looked up once, whatever its load address in each. */
#ifndef MEMWATCH_SYMBOLIZE_H
#define MEMWATCH_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "snapshot.h"

/* The global module index of a frame outside every known module. */
#define SYM_NO_MODULE UINT32_MAX

/* One source frame. Strings belong to the symbolizer (valid until it is freed). */
struct sym_frame {
	const char *function;    /* demangled name, or NULL: unknown */
	const char *file;        /* source file, or NULL: unknown */
	uint32_t line;           /* 0: unknown */
	bool inlined;            /* inlined into the next frame of the same address */
};

/* What one address resolves to: the inlined frames first, then the function
 * that contains them (nframes >= 1; a single unknown frame when nothing is
 * known). */
struct sym_loc {
	uint32_t nframes;
	const struct sym_frame *frames;
};

struct symbolizer;

/* A symbolizer searching the given debug directories (each laid out like
 * /usr/lib/debug: DIR/.build-id/xx/rest.debug), then /usr/lib/debug, then
 * debuginfod when DEBUGINFOD_URLS is set. The strings are copied. */
struct symbolizer *symbolizer_new(const char *const *debug_dirs, size_t ndirs);
void symbolizer_free(struct symbolizer *z);
/* Erase debuginfod's progress line from the terminal, if one was shown. */
void symbolizer_progress_done(struct symbolizer *z);

/* Make s's modules known. Returns a malloc'd map from s's module indexes to
 * global module indexes (s->nmodules entries; caller frees). When s carries a
 * symbol section, its symbols are used for its frames and its files are never
 * opened for them. Call for every snapshot before the first lookup. */
uint32_t *symbolizer_add(struct symbolizer *z, const struct snapshot *s);

/* Resolve a frame (global module index, offset from the load bias). The frame
 * is a return address: one is subtracted first, so the line is the call's and
 * inlined frames are found. Never NULL; cached, so each distinct frame is
 * looked up once. */
const struct sym_loc *symbolizer_lookup(struct symbolizer *z, uint32_t gmod, uint64_t offset);

/* End the Dwfl session and free the debug information it read, keeping
 * every location resolved so far: for a caller that has looked up all it
 * will. A later lookup of a new frame starts a session again. */
void symbolizer_drop_debug(struct symbolizer *z);

/* The number of a location symbolizer_lookup gave (0 up, one per distinct
 * (module, offset), stable for the symbolizer's life), and how many there
 * are so far: for callers that keep facts of their own per location. */
uint32_t symbolizer_loc_index(const struct symbolizer *z, const struct sym_loc *loc);
size_t symbolizer_nlocs(const struct symbolizer *z);

/* A global module's path as recorded ("" when unknown), its build-id in hex
 * ("" when none), and its short name (the path's last component). */
const char *symbolizer_module_path(const struct symbolizer *z, uint32_t gmod);
const char *symbolizer_module_build_id(const struct symbolizer *z, uint32_t gmod);
const char *symbolizer_module_name(const struct symbolizer *z, uint32_t gmod);
/* How many global modules are known. */
size_t symbolizer_nmodules(const struct symbolizer *z);

/* Whether a module's file was found, once one of its frames was looked up. */
enum sym_file {
	SYM_FILE_FOUND,          /* found, or not looked for (no frame of it looked up,
				  * or its frames named by a symbol section) */
	SYM_FILE_ABSENT,         /* nothing at its path here, nor by build-id */
	SYM_FILE_OTHER,          /* the file at its path here has another build-id,
				  * and none with its own was found */
};
enum sym_file symbolizer_module_file(const struct symbolizer *z, uint32_t gmod);
/* Say on stderr, one line each, which modules had frames looked up but no file
 * found: their frames are unnamed. */
void symbolizer_warn_missing(const struct symbolizer *z);

/* Fill s->symbols with the resolved frames of every distinct frame of s's
 * stacks (replacing any symbols it had), so the snapshot can be reported where
 * its binaries are not. Only the modules i with only[i] set when only is not
 * NULL (the others are left to be read from files when reported); never a
 * module whose file is not found (so that a report looks for it again, and
 * says it when it is still missing). Debug directories as for symbolizer_new.
 * Returns the number of frames that resolved to a function name, or -1 with
 * *cause. */
long symbolize_embed(struct snapshot *s, const bool *only, const char *const *debug_dirs,
		     size_t ndirs, char **cause);

/* The build-id of the ELF file open on fd equals want? */
bool sym_file_matches(int fd, const uint8_t *want, size_t len);

/* The hex form of a build-id, into buf (2 * len + 1 bytes). */
char *sym_hex(char *buf, const uint8_t *bits, size_t len);

#endif
