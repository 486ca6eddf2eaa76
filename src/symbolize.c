/* symbolize.c: module-relative frames to function, file, line and inlined
 * frames with elfutils libdwfl; the ELF symbol table when there is no DWARF;
 * a snapshot's embedded symbols when it has them. What one address is in a
 * module (DWARF, the symbol table, demangling) is symbolize-dwarf.c; here are
 * the modules, the Dwfl session and the files it is given (local, by build-id
 * in the debug directories, debuginfod), the cache and embedding.
 *
 * Every distinct module (by build-id, else by path) of every snapshot added is
 * reported once into a single Dwfl session, at an address of our choosing
 * (modules of different runs may overlap in their real address spaces; Dwfl
 * needs them apart). A frame's offset from its load bias is then looked up at
 * that chosen base. Results are cached per (module, offset). */
#include "config.h"
#include "symbolize.h"
#include "symbolize-internal.h"
#include "debugcache.h"
#include "hashmap.h"
#include "util.h"

#include <elfutils/debuginfod.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The few debuginfod client calls used for the progress line are looked up at
 * run time: linking libdebuginfod (with curl and its TLS stack) would triple
 * memwatch's resident size while it watches, and libdw loads the debuginfod
 * client by itself when DEBUGINFOD_URLS is set. */
static struct {
	void *(*get_user_data)(debuginfod_client *);
	void (*set_user_data)(debuginfod_client *, void *);
	void (*set_progressfn)(debuginfod_client *, debuginfod_progressfn_t);
} dbgd;

/* Where modules are placed in the Dwfl address space: above every user-space
 * address, each in its own 64 GiB window. */
#define PLACE_FIRST (UINT64_C(1) << 48)
#define PLACE_STEP (UINT64_C(1) << 36)

/* A cache slot: (module, offset) to an index into locs. */
struct slot {
	uint32_t gmod;
	uint32_t loc;            /* index into locs + 1; 0: made by slot_find, not
				  * filled yet */
	uint64_t offset;
};

static const struct sym_frame unknown_frame = { NULL, NULL, 0, false };

static bool str_eq(const void *entry, const void *key)
{
	return strcmp(*(const char *const *)entry, key) == 0;
}

/* The one shared copy of s (NULL stays NULL), owned by z. */
const char *sym_intern(struct symbolizer *z, const char *s)
{
	const char **e;
	bool added;

	if (!s)
		return NULL;
	e = hashmap_put(&z->strs, hash_str(s), str_eq, s, &added);
	if (added)
		*e = xstrdup(s);
	return *e;
}

char *sym_hex(char *buf, const uint8_t *bits, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t i;
	for (i = 0; i < len; i++) {
		buf[2 * i] = hex[bits[i] >> 4];
		buf[2 * i + 1] = hex[bits[i] & 15];
	}
	buf[2 * len] = '\0';
	return buf;
}

/* Make a path absolute against the working directory (Dwfl searches by
 * build-id only in absolute directories). Caller frees. */
static char *absolute(const char *p)
{
	char cwd[PATH_MAX];
	if (p[0] == '/' || !getcwd(cwd, sizeof cwd))
		return xstrdup(p);
	return xasprintf("%s/%s", cwd, p);
}

/* A separate debug file named by build-id in our directories, used as the
 * module's ELF when the binary itself is nowhere: it has the program headers,
 * the symbol table and the DWARF, which is all symbolization needs. */
static int find_elf(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
		    char **file_name, Elf **elfp)
{
	struct symbolizer *z = *userdata;   /* set when the module was reported */
	const unsigned char *bits;
	GElf_Addr vaddr;
	char hex[129];
	int fd, len;
	size_t i;

	fd = dwfl_build_id_find_elf(mod, userdata, modname, base, file_name, elfp);
	if (fd >= 0 || *elfp)
		return fd;
	len = dwfl_module_build_id(mod, &bits, &vaddr);
	if (len <= 1 || len > 64)
		return -1;
	fd = debugcache_open(bits, (size_t)len, file_name);
	if (fd >= 0)
		return fd;
	sym_hex(hex, bits, (size_t)len);
	for (i = 0; i < z->ndirs; i++) {
		char *p = xasprintf("%s/.build-id/%.2s/%s.debug", z->dirs[i], hex, hex + 2);
		fd = open(p, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			free(*file_name);
			*file_name = p;
			debugcache_add(fd, bits, (size_t)len);
			return fd;
		}
		free(p);
	}
	return -1;
}

/* The module's separate debug file: its decompressed copy (debugcache.c) when
 * there is one, else found as libdwfl finds it, and copied for the next
 * reports when it keeps its DWARF compressed. The copy is handed over before
 * the standard search, which may keep the Elf of what it found for the module
 * whatever descriptor is returned. A dwz file (asked for by its .gnu_debugaltlink
 * name, with no CRC) has a build-id of its own: it is left to the search. */
static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
			  GElf_Addr base, const char *file_name, const char *debuglink_file,
			  GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	bool alt = debuglink_file && debuglink_crc == 0;
	const unsigned char *bits;
	GElf_Addr vaddr;
	int fd, len;

	len = alt ? 0 : dwfl_module_build_id(mod, &bits, &vaddr);
	if (len > 0 && (fd = debugcache_open(bits, (size_t)len, debuginfo_file_name)) >= 0)
		return fd;
	fd = dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name,
					  debuglink_file, debuglink_crc, debuginfo_file_name);
	if (len > 0)
		debugcache_add(fd, bits, (size_t)len);
	return fd;
}

/* debuginfod's progress, on a terminal only: one line rewritten in place. */
static int progress(debuginfod_client *c, long a, long b)
{
	struct symbolizer *z = dbgd.get_user_data(c);
	if (z)
		z->progress_shown = true;
	if (b > 0)
		fprintf(stderr, "\rmemwatch: downloading debug info: %ld/%ld KiB   ", a / 1024,
			b / 1024);
	else
		fprintf(stderr, "\rmemwatch: downloading debug info: %ld KiB   ", a / 1024);
	return 0;
}

struct symbolizer *symbolizer_new(const char *const *debug_dirs, size_t ndirs)
{
	struct symbolizer *z = xcalloc(1, sizeof *z);
	size_t i, len = 0;
	char *p;

	hashmap_init(&z->slots, sizeof(struct slot));
	hashmap_init(&z->strs, sizeof(const char *));
	hashmap_init(&z->cus, sizeof(struct cucache));
	z->front = xcalloc((size_t)1 << SYM_FRONT_BITS, sizeof *z->front);

	z->dirs = xcalloc(ndirs + 1, sizeof *z->dirs);
	for (i = 0; i < ndirs; i++)
		z->dirs[z->ndirs++] = absolute(debug_dirs[i]);
	z->dirs[z->ndirs++] = xstrdup("/usr/lib/debug");
	for (i = 0; i < z->ndirs; i++)
		len += strlen(z->dirs[i]) + 1;
	/* the file's own directory, its .debug, then ours and the system's */
	z->debuginfo_path = p = xmalloc(len + 16);
	p += sprintf(p, ":.debug");
	for (i = 0; i < z->ndirs; i++)
		p += sprintf(p, ":%s", z->dirs[i]);

	z->callbacks.find_elf = find_elf;
	z->callbacks.find_debuginfo = find_debuginfo;
	z->callbacks.section_address = dwfl_offline_section_address;
	z->callbacks.debuginfo_path = &z->debuginfo_path;
	elf_version(EV_CURRENT);
	return z;
}

void symbolizer_progress_done(struct symbolizer *z)
{
	if (z && z->progress_shown) {
		fputs("\r\033[K", stderr);
		z->progress_shown = false;
	}
}

void symbolizer_free(struct symbolizer *z)
{
	size_t i;

	if (!z)
		return;
	symbolizer_progress_done(z);
	if (z->dwfl)
		dwfl_end(z->dwfl);
	for (i = 0; i < z->nmods; i++) {
		free(z->mods[i].key);
		free(z->mods[i].path);
		free(z->mods[i].name);
		free(z->mods[i].syms);
	}
	free(z->mods);
	for (i = 0; i < z->nlocs; i++)
		if (z->locs[i].frames != &unknown_frame)
			free((void *)z->locs[i].frames);
	free(z->locs);
	free(z->front);
	hashmap_release(&z->slots);
	for (struct cucache *c = hashmap_next(&z->cus, NULL); c; c = hashmap_next(&z->cus, c))
		free(c->fns);
	hashmap_release(&z->cus);
	for (const char **e = hashmap_next(&z->strs, NULL); e; e = hashmap_next(&z->strs, e))
		free((void *)*e);
	hashmap_release(&z->strs);
	for (i = 0; i < z->ndirs; i++)
		free(z->dirs[i]);
	free(z->dirs);
	free(z->debuginfo_path);
	free(z);
}

static bool slot_eq(const void *entry, const void *key)
{
	const struct slot *s = entry;
	const struct place *p = key;
	return s->gmod == p->gmod && s->offset == p->offset;
}

/* The cache slot of (g, off): found, or a new one (loc 0) for cache_put. */
static struct slot *slot_find(struct symbolizer *z, uint32_t g, uint64_t off)
{
	struct place p = { g, off };
	bool added;

	return hashmap_put(&z->slots, place_hash(g, off), slot_eq, &p, &added);
}

/* Store a resolved location for (g, off); frames is taken over. */
static const struct sym_loc *cache_put(struct symbolizer *z, struct slot *s, uint32_t g,
				       uint64_t off, struct sym_frame *frames, uint32_t n)
{
	if (z->nlocs == z->alocs) {
		z->alocs = z->alocs ? z->alocs * 2 : 4096;
		z->locs = xrealloc(z->locs, z->alocs * sizeof *z->locs);
	}
	if (n == 0) {
		free(frames);
		z->locs[z->nlocs].frames = &unknown_frame;
		z->locs[z->nlocs].nframes = 1;
	} else {
		z->locs[z->nlocs].frames = frames;
		z->locs[z->nlocs].nframes = n;
	}
	s->gmod = g;
	s->offset = off;
	s->loc = (uint32_t)z->nlocs + 1;
	return &z->locs[z->nlocs++];
}

uint32_t *symbolizer_add(struct symbolizer *z, const struct snapshot *s)
{
	uint32_t *map = xcalloc(s->nmodules ? s->nmodules : 1, sizeof *map);
	bool *embedded = xcalloc(s->nmodules ? s->nmodules : 1, sizeof *embedded);
	size_t i, j;

	/* a module the symbol section covers is read from it alone; one it does not
	 * (a snapshot that carries only the names of its JIT frames) from files */
	for (i = 0; i < s->nsymbols; i++)
		if (s->symbols[i].module < s->nmodules)
			embedded[s->symbols[i].module] = true;
	for (i = 0; i < s->nmodules; i++) {
		const struct snap_module *m = &s->modules[i];
		char hex[129];
		char *key;
		uint32_t blen = m->build_id_len > 64 ? 64 : m->build_id_len;

		sym_hex(hex, m->build_id, blen);
		/* without a build-id, the path and the size tell modules apart (two
		 * unnamed modules are not one) and still match across runs */
		key = blen ? xasprintf("b:%s", hex)
			   : xasprintf("p:%" PRIx64 ":%s", m->hi - m->lo, m->path ? m->path : "");
		for (j = 0; j < z->nmods; j++)
			if (strcmp(z->mods[j].key, key) == 0)
				break;
		if (j == z->nmods) {
			struct gmod *g;
			const char *slash;
			z->mods = xrealloc(z->mods, (z->nmods + 1) * sizeof *z->mods);
			g = &z->mods[z->nmods++];
			memset(g, 0, sizeof *g);
			g->key = key;
			g->path = xstrdup(m->path ? m->path : "");
			slash = strrchr(g->path, '/');
			g->name = xstrdup(slash ? slash + 1 : g->path);
			memcpy(g->build_id, m->build_id, blen);
			g->build_id_len = blen;
			memcpy(g->build_id_hex, hex, sizeof hex);
			g->bias = m->bias;
			g->lo = m->lo;
			g->hi = m->hi;
		} else {
			free(key);
		}
		if (!embedded[i])
			z->mods[j].use_files = true;
		map[i] = (uint32_t)j;
	}

	/* embedded symbols go straight into the cache */
	for (i = 0; i < s->nsymbols; i++) {
		const struct snap_symbol *y = &s->symbols[i];
		struct sym_frame *f;
		struct slot *sl;
		uint32_t g = y->module < s->nmodules ? map[y->module] : SYM_NO_MODULE;

		sl = slot_find(z, g, y->offset);
		if (sl->loc)
			continue;
		f = xcalloc(y->nframes ? y->nframes : 1, sizeof *f);
		for (j = 0; j < y->nframes; j++) {
			f[j].function = sym_intern(z, y->frames[j].function);
			f[j].file = sym_intern(z, y->frames[j].file);
			f[j].line = y->frames[j].line;
			f[j].inlined = j + 1 < y->nframes;
		}
		cache_put(z, sl, g, y->offset, f, y->nframes);
	}
	free(embedded);
	return map;
}

bool sym_file_matches(int fd, const uint8_t *want, size_t len)
{
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	const void *bits;
	ssize_t n;
	bool ok;

	if (!elf)
		return false;
	n = dwelf_elf_gnu_build_id(elf, &bits);
	ok = n > 0 && (size_t)n == len && memcmp(bits, want, len) == 0;
	elf_end(elf);
	return ok;
}

/* Start the Dwfl session (once, at the first lookup). */
static void start_dwfl(struct symbolizer *z)
{
	z->reported = true;
	z->dwfl = dwfl_begin(&z->callbacks);
	if (!z->dwfl) {
		mw_warn("dwfl_begin: %s", dwfl_errmsg(-1));
		return;
	}
	if (getenv("DEBUGINFOD_URLS") && *getenv("DEBUGINFOD_URLS") &&
	    !getenv("DEBUGINFOD_PROGRESS") && isatty(STDERR_FILENO)) {
		debuginfod_client *c = dwfl_get_debuginfod_client(z->dwfl);
		/* libdw has loaded the client library: find its calls there */
		void *h = c ? dlopen("libdebuginfod.so.1", RTLD_LAZY | RTLD_NOLOAD) : NULL;
		if (h) {
			*(void **)&dbgd.get_user_data = dlsym(h, "debuginfod_get_user_data");
			*(void **)&dbgd.set_user_data = dlsym(h, "debuginfod_set_user_data");
			*(void **)&dbgd.set_progressfn = dlsym(h, "debuginfod_set_progressfn");
		}
		if (dbgd.get_user_data && dbgd.set_user_data && dbgd.set_progressfn) {
			dbgd.set_user_data(c, z);
			dbgd.set_progressfn(c, progress);
		}
	}
}

/* Report module g to Dwfl, at the first lookup of one of its frames (so the
 * many libraries a process maps cost nothing unless a stack goes through
 * them): its file if present with the recorded build-id, else its range and
 * build-id for the callbacks to find. */
static void report_module(struct symbolizer *z, struct gmod *g, size_t i)
{
	Dwfl_Module *m = NULL;
	Dwarf_Addr elf_bias;
	void **ud;
	int fd = -1;
	bool other = false;

	g->reported = true;
	if (!z->dwfl || !g->use_files)
		return;
	/* a module at bias 0 is a fixed-address executable: Dwfl keeps it where
	 * it is linked, whatever base is asked */
	g->place = g->bias == 0 ? 0 : PLACE_FIRST + PLACE_STEP * i;
	dwfl_report_begin_add(z->dwfl);
	if (g->path[0] == '/') {
		/* a recorded path may now name anything: a FIFO must not block us */
		struct stat st;
		fd = open(g->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
			close(fd);
			fd = -1;
		}
	}
	if (fd >= 0 && (g->build_id_len == 0 || sym_file_matches(fd, g->build_id, g->build_id_len))) {
		m = dwfl_report_elf(z->dwfl, g->path, g->path, fd, g->place, true);
		if (!m)
			close(fd);
	} else if (fd >= 0) {
		close(fd);
		other = true;
	}
	if (!m && g->build_id_len > 0 && g->hi > g->lo && g->lo >= g->bias) {
		m = dwfl_report_module(z->dwfl, g->path[0] ? g->path : g->build_id_hex,
				       g->place + (g->lo - g->bias), g->place + (g->hi - g->bias));
		if (m && dwfl_module_report_build_id(m, g->build_id, g->build_id_len, 0) != 0)
			m = NULL;
	}
	g->dwmod = m;
	if (m) {
		/* the module's userdata slot: find_elf reaches z through it */
		dwfl_module_info(m, &ud, NULL, NULL, NULL, NULL, NULL, NULL);
		*ud = z;
	}
	if (dwfl_report_end(z->dwfl, NULL, NULL) != 0)
		mw_warn("dwfl_report_end: %s", dwfl_errmsg(-1));
	/* a module reported by its build-id alone has its file looked for now (as
	 * its first lookup would): none anywhere leaves its frames unnamed */
	if (!m || !dwfl_module_getelf(m, &elf_bias))
		g->file = other ? SYM_FILE_OTHER : SYM_FILE_ABSENT;
}

static const struct sym_loc *resolve(struct symbolizer *z, struct slot *sl, uint32_t g,
				     uint64_t off)
{
	struct sym_frame *f = NULL;
	uint32_t n;

	if (g >= z->nmods || !z->mods[g].dwmod || off == 0)
		return cache_put(z, sl, g, off, NULL, 0);
	/* a return address: the call is the byte before */
	n = sym_frames_at(z, g, z->mods[g].place + off - 1, &f);
	return cache_put(z, sl, g, off, f, n);
}

const struct sym_loc *symbolizer_lookup(struct symbolizer *z, uint32_t gmod, uint64_t offset)
{
	struct front *f = &z->front[(offset * UINT64_C(0x9e3779b97f4a7c15) ^ gmod) >>
				    (64 - SYM_FRONT_BITS)];
	struct slot *sl;

	if (f->loc && f->offset == offset && f->gmod == gmod)
		return &z->locs[f->loc - 1];
	sl = slot_find(z, gmod, offset);
	if (!sl->loc) {
		if (!z->reported)
			start_dwfl(z);
		if (gmod < z->nmods && !z->mods[gmod].reported)
			report_module(z, &z->mods[gmod], gmod);
		/* reporting does not touch the cache: sl is still valid */
		resolve(z, sl, gmod, offset);
	}
	f->offset = offset;
	f->gmod = gmod;
	f->loc = sl->loc;
	return &z->locs[sl->loc - 1];
}

void symbolizer_drop_debug(struct symbolizer *z)
{
	if (!z->dwfl)
		return;
	dwfl_end(z->dwfl);
	z->dwfl = NULL;
	z->reported = false;
	/* reported again at their next lookup, at the same place: the symbols
	 * and functions read from them (by address there) stay good */
	for (size_t i = 0; i < z->nmods; i++) {
		z->mods[i].reported = false;
		z->mods[i].dwmod = NULL;
	}
}

uint32_t symbolizer_loc_index(const struct symbolizer *z, const struct sym_loc *loc)
{
	return (uint32_t)(loc - z->locs);
}

size_t symbolizer_nlocs(const struct symbolizer *z)
{
	return z->nlocs;
}

const char *symbolizer_module_path(const struct symbolizer *z, uint32_t g)
{
	return g < z->nmods ? z->mods[g].path : "";
}

const char *symbolizer_module_build_id(const struct symbolizer *z, uint32_t g)
{
	return g < z->nmods ? z->mods[g].build_id_hex : "";
}

const char *symbolizer_module_name(const struct symbolizer *z, uint32_t g)
{
	return g < z->nmods ? z->mods[g].name : "";
}

size_t symbolizer_nmodules(const struct symbolizer *z)
{
	return z->nmods;
}

enum sym_file symbolizer_module_file(const struct symbolizer *z, uint32_t g)
{
	return g < z->nmods ? z->mods[g].file : SYM_FILE_FOUND;
}

void symbolizer_warn_missing(const struct symbolizer *z)
{
	for (size_t i = 0; i < z->nmods; i++) {
		const struct gmod *g = &z->mods[i];
		const char *id = g->build_id_hex;

		if (g->file == SYM_FILE_FOUND)
			continue;
		if (!g->path[0])
			mw_warn("no symbols for the module with build-id %s: no file of it is here, and "
				"the snapshot does not carry them", id[0] ? id : "(none)");
		else if (g->file == SYM_FILE_OTHER)
			mw_warn("no symbols for %s: %s here is another build than %s, and the snapshot "
				"does not carry them", g->name, g->path, id);
		else if (id[0])
			mw_warn("no symbols for %s: %s is not here, nor a debug file with build-id %s, "
				"and the snapshot does not carry them", g->name, g->path, id);
		else
			mw_warn("no symbols for %s: %s is not here, and the snapshot does not carry them",
				g->name, g->path);
	}
}

/* Free the symbol section of s. */
static void free_symbols(struct snapshot *s)
{
	size_t i, j;
	for (i = 0; i < s->nsymbols; i++) {
		for (j = 0; j < s->symbols[i].nframes; j++) {
			free(s->symbols[i].frames[j].function);
			free(s->symbols[i].frames[j].file);
		}
		free(s->symbols[i].frames);
	}
	free(s->symbols);
	s->symbols = NULL;
	s->nsymbols = 0;
}

static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

/* A module that is no file: the agent's "[python]", whose frames (Python
 * functions) are named by the snapshot's own symbol section. */
static bool pseudo_module(const struct snapshot *s, uint32_t m)
{
	return m < s->nmodules && s->modules[m].path && s->modules[m].path[0] == '[';
}

long symbolize_embed(struct snapshot *s, const bool *only, const char *const *debug_dirs,
		     size_t ndirs, char **cause)
{
	struct symbolizer *z;
	struct snapshot view = *s;
	uint32_t *map;
	size_t i, j, nsym = 0, asym = 0;
	struct snap_symbol *syms = NULL;
	long named = 0;

	/* resolve from files, not from the symbols s may already carry */
	view.nsymbols = 0;
	view.symbols = NULL;
	z = symbolizer_new(debug_dirs, ndirs);
	map = symbolizer_add(z, &view);
	for (i = 0; i < s->nstacks; i++) {
		for (j = 0; j < s->stacks[i].nframes; j++) {
			const struct snap_frame *fr = &s->stacks[i].frames[j];
			size_t before = z->nlocs;
			const struct sym_loc *loc;
			struct snap_symbol *y;
			uint32_t k;

			if (fr->module >= s->nmodules || pseudo_module(s, fr->module) ||
			    (only && !only[fr->module]))
				continue;
			loc = symbolizer_lookup(z, map[fr->module], fr->offset);
			if (z->nlocs == before)
				continue;   /* seen already */
			if (z->mods[map[fr->module]].file != SYM_FILE_FOUND)
				continue;   /* left to the report to find, or to say missing */
			if (nsym == asym) {
				asym = asym ? asym * 2 : 256;
				syms = xrealloc(syms, asym * sizeof *syms);
			}
			y = &syms[nsym++];
			y->module = fr->module;
			y->offset = fr->offset;
			y->nframes = loc->frames[0].function || loc->nframes > 1 ? loc->nframes : 0;
			y->frames = xcalloc(y->nframes ? y->nframes : 1, sizeof *y->frames);
			for (k = 0; k < y->nframes; k++) {
				y->frames[k].function = dup_or_null(loc->frames[k].function);
				y->frames[k].file = dup_or_null(loc->frames[k].file);
				y->frames[k].line = loc->frames[k].line;
			}
			if (loc->frames[loc->nframes - 1].function)
				named++;
		}
	}
	free(map);
	symbolizer_free(z);
	/* the names of frames outside every module (JIT code, from the perf map
	 * when the snapshot was stored) and of Python frames come from no file:
	 * keep them, and those of the modules not asked for */
	for (i = 0; i < s->nsymbols; i++) {
		uint32_t m = s->symbols[i].module;
		if (m != SNAP_NO_MODULE && !pseudo_module(s, m) && !(only && m < s->nmodules && !only[m]))
			continue;
		if (nsym == asym) {
			asym = asym ? asym * 2 : 256;
			syms = xrealloc(syms, asym * sizeof *syms);
		}
		syms[nsym++] = s->symbols[i];
		s->symbols[i].nframes = 0;
		s->symbols[i].frames = NULL;
	}
	free_symbols(s);
	s->symbols = syms;
	s->nsymbols = nsym;
	(void)cause;
	return named;
}
