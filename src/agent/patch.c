/* patch.c: the GOT patching that routes every loaded module's calls to
 * malloc, free and friends, mimalloc's own API, the mmap family, brk/sbrk and
 * dlopen through the
 * hooks of hooks.c: the allocator's own functions found (mw_orig), slots
 * rewritten and put back, modules loaded later found. */
#include "config.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include "agent.h"
#include "snapshot.h"

static const char *const func_names[F_COUNT] = {
	"malloc", "calloc", "realloc", "reallocarray", "free", "posix_memalign",
	"aligned_alloc", "memalign", "valloc", "pvalloc", "dlopen",
	"mmap", "mmap64", "munmap", "mremap", "brk", "sbrk",
	"mi_malloc", "mi_calloc", "mi_realloc", "mi_free", "mi_zalloc", "mi_mallocn",
	"mi_reallocn", "mi_reallocf", "mi_strdup", "mi_strndup", "mi_malloc_aligned",
	"mi_zalloc_aligned", "mi_calloc_aligned", "mi_realloc_aligned", "mi_malloc_small",
	"mi_zalloc_small", "mi_free_size", "mi_free_aligned", "mi_free_size_aligned",
};

/* ------------------------------------------------------------------------- */
/* GOT patching. */

/* One slot we changed, to put back on removal. */
struct slot_rec {
	uintptr_t *slot;
	uintptr_t old;        /* what it held: the original, or a lazy-binding PLT stub */
	uintptr_t base;       /* the module's load bias, to tell a vanished module */
	uint8_t func;
};

/* A module as seen by dl_iterate_phdr, copied out so the loader lock is not
 * held while patching. */
struct modinfo {
	uintptr_t base, lo, hi;
	const ElfW(Dyn) *dyn;
	char *name;                      /* malloc'd copy; "" for the main program */
	bool main;
};

static pthread_mutex_t patch_lock = PTHREAD_MUTEX_INITIALIZER;
static struct slot_rec *recs;
static size_t nrecs, caprecs;
static bool installed;
static unsigned long long seen_adds, seen_subs;
static uintptr_t self_base, ldso_base, vdso_addr;

bool mw_hooks_installed(void)
{
	return __atomic_load_n(&installed, __ATOMIC_ACQUIRE);
}

unsigned mw_hooks_slots(void)
{
	return (unsigned)nrecs;
}

struct self_find {
	uintptr_t addr;
	bool found;
};

/* dl_iterate_phdr callback: find the module holding addr (the agent's text). */
static int find_self_cb(struct dl_phdr_info *info, size_t sz, void *data)
{
	struct self_find *f = data;
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	int i;
	bool has = false;
	(void)sz;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t a, b;
		if (ph->p_type != PT_LOAD)
			continue;
		a = info->dlpi_addr + ph->p_vaddr;
		b = a + ph->p_memsz;
		if (f->addr >= a && f->addr < b)
			has = true;
		if (ph->p_flags & PF_X) {
			if (a < lo)
				lo = a;
			if (b > hi)
				hi = b;
		}
	}
	if (!has)
		return 0;
	self_base = info->dlpi_addr;
	mw_self_lo = lo;
	mw_self_hi = hi;
	f->found = true;
	return 1;
}

struct collect {
	struct modinfo *m;
	size_t n, cap;
	unsigned long long adds, subs;
	bool failed;
};

/* dl_iterate_phdr callback: copy what patching needs of every module. */
static int collect_cb(struct dl_phdr_info *info, size_t sz, void *data)
{
	struct collect *c = data;
	struct modinfo *m;
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	int i;

	if (sz >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
		c->adds = info->dlpi_adds;
		c->subs = info->dlpi_subs;
	}
	if (c->n == c->cap) {
		size_t ncap = c->cap ? c->cap * 2 : 64;
		struct modinfo *nm = realloc(c->m, ncap * sizeof *nm);
		if (!nm) {
			c->failed = true;
			return 1;
		}
		c->m = nm;
		c->cap = ncap;
	}
	m = &c->m[c->n];
	memset(m, 0, sizeof *m);
	m->base = info->dlpi_addr;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;
		switch (ph->p_type) {
		case PT_LOAD:
			if (a < lo)
				lo = a;
			if (a + ph->p_memsz > hi)
				hi = a + ph->p_memsz;
			break;
		case PT_DYNAMIC:
			m->dyn = (const ElfW(Dyn) *)a;
			break;
		}
	}
	m->lo = lo;
	m->hi = hi;
	m->main = c->n == 0;
	m->name = strdup(info->dlpi_name ? info->dlpi_name : "");
	if (!m->name) {
		c->failed = true;
		return 1;
	}
	c->n++;
	return 0;
}

static void free_collect(struct collect *c)
{
	size_t i;
	for (i = 0; i < c->n; i++)
		free(c->m[i].name);
	free(c->m);
}

/* Modules whose slots are never touched: the vDSO, the dynamic loader (it
 * keeps its own allocator pointers) and the agent itself. */
static bool skip_module(const struct modinfo *m)
{
	if (!m->dyn)
		return true;
	if (m->base == self_base && m->lo <= mw_self_lo && mw_self_lo < m->hi)
		return true;
	if (ldso_base && m->base == ldso_base)
		return true;
	if (vdso_addr && m->lo <= vdso_addr && vdso_addr < m->hi)
		return true;
	if (strncmp(m->name, "linux-vdso", 10) == 0 || strncmp(m->name, "linux-gate", 10) == 0)
		return true;
	return false;
}

/* Make sure m is completely loaded and stays so while we patch it: a NOLOAD
 * dlopen waits for any load in progress (it takes the loader lock) and holds a
 * reference. Returns the handle to dlclose, (void *)-1 for the main program,
 * or NULL when the module is not (or no longer) a fully loaded object. */
static void *pin_module(const struct modinfo *m)
{
	struct link_map *lm;
	if (m->main)
		return (void *)-1;
	if (!m->name[0])
		return NULL;
	lm = mw_orig.dlopen(m->name, RTLD_LAZY | RTLD_NOLOAD);
	if (!lm) {
		dlerror();
		return NULL;
	}
	if (lm->l_addr != m->base) {
		dlclose(lm);
		return NULL;
	}
	return lm;
}

static void unpin_module(void *h)
{
	if (h && h != (void *)-1)
		dlclose(h);
}

/* True when p is a symbol that its module does not define: the canonical PLT
 * entry a non-PIE executable makes for a function whose address it takes (the
 * dynamic symbol is undefined but has a value, and glibc's dlsym and dladdr
 * both accept it). Calling it jumps through the executable's own GOT slot,
 * which is a slot we hook. */
static bool is_plt_stub(void *p)
{
	Dl_info info;
	const ElfW(Sym) *sym = NULL;
	return dladdr1(p, &info, (void **)&sym, RTLD_DL_SYMENT) && sym && sym->st_shndx == SHN_UNDEF;
}

/* The definition of name in the module m itself, or NULL: a lookup through a
 * handle searches the module's dependencies too, so the answer must be checked
 * to lie in m and to be defined there. */
static void *defined_in(const struct modinfo *m, const char *name)
{
	struct link_map *h, *lm = NULL;
	Dl_info info;
	void *p;

	if (m->main || !m->name[0] || skip_module(m))
		return NULL;
	/* The agent's own reference to dlopen: its slots are never patched, and
	 * a PLT-class binding never lands on a canonical PLT entry. */
	h = dlopen(m->name, RTLD_LAZY | RTLD_NOLOAD);
	if (!h) {
		dlerror();
		return NULL;
	}
	p = h->l_addr == m->base ? dlsym(h, name) : NULL;
	if (p && (!dladdr1(p, &info, (void **)&lm, RTLD_DL_LINKMAP) || lm != h || is_plt_stub(p)))
		p = NULL;
	dlclose(h);
	return p;
}

/* Fill mw_orig with the function each hook must call. dlsym(RTLD_DEFAULT) finds
 * the first definition in the global scope: glibc's, or an allocator preloaded
 * before us (the agent defines none of these names, so it never finds a hook).
 * But where a non-PIE executable takes the address of malloc, that first
 * "definition" is the executable's PLT entry, which leads back to the hook
 * through the executable's slot: a hook calling it would call itself forever.
 * Then the function is taken from the first module, in load order (the order
 * of the global scope, so a preloaded allocator still wins), that really
 * defines it. A name found nowhere else is left NULL: never hooked. */
static int resolve_originals(void)
{
	struct collect c = { 0 };
	void **slots = (void **)&mw_orig;
	bool stub[F_COUNT] = { false };
	bool any = false;
	size_t k;
	int i;

	for (i = 0; i < F_COUNT; i++) {
		slots[i] = dlsym(RTLD_DEFAULT, func_names[i]);
		if (slots[i] && is_plt_stub(slots[i])) {
			slots[i] = NULL;
			stub[i] = any = true;
		}
	}
	if (!any)
		return 0;
	dl_iterate_phdr(collect_cb, &c);
	if (c.failed) {
		free_collect(&c);
		return -1;
	}
	for (i = 0; i < F_COUNT; i++)
		for (k = 0; stub[i] && k < c.n && !slots[i]; k++)
			slots[i] = defined_in(&c.m[k], func_names[i]);
	free_collect(&c);
	return 0;
}

int mw_hooks_init(char **why)
{
	struct self_find f = { (uintptr_t)&mw_hooks_init, false };
	static const enum mw_func required[] = { F_MALLOC, F_CALLOC, F_REALLOC, F_FREE, F_DLOPEN };
	size_t i;

	mw_page_size = (size_t)sysconf(_SC_PAGESIZE);
	dl_iterate_phdr(find_self_cb, &f);
	ldso_base = getauxval(AT_BASE);
	vdso_addr = getauxval(AT_SYSINFO_EHDR);
	if (!f.found) {
		*why = "cannot find the agent's own module";
		return -1;
	}
	if (resolve_originals() < 0) {
		*why = "out of memory";
		return -1;
	}
	for (i = 0; i < sizeof required / sizeof required[0]; i++)
		if (!((void **)&mw_orig)[required[i]]) {
			*why = (char *)func_names[required[i]];
			return -1;
		}
	return 0;
}

/* The protection of the process's mappings, read from /proc/self/maps once per
 * patching round: a slot is written in place when its page is writable, and
 * otherwise (RELRO, or a program that protected its own GOT) with the page made
 * writable for the store and given back exactly its protection. A slot whose
 * page is not mapped at all is left alone. */
struct mapent {
	uintptr_t lo, hi;
	int prot;
};

struct maps {
	struct mapent *e;
	size_t n, cap;
};

static void maps_add(struct maps *m, const char *line)
{
	unsigned long lo, hi;
	char perms[5] = "";
	if (sscanf(line, "%lx-%lx %4s", &lo, &hi, perms) != 3)
		return;
	if (m->n == m->cap) {
		size_t ncap = m->cap ? m->cap * 2 : 256;
		struct mapent *n = realloc(m->e, ncap * sizeof *n);
		if (!n)
			return;
		m->e = n;
		m->cap = ncap;
	}
	m->e[m->n].lo = lo;
	m->e[m->n].hi = hi;
	m->e[m->n].prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
			  (perms[2] == 'x' ? PROT_EXEC : 0);
	m->n++;
}

static void maps_read(struct maps *m)
{
	char buf[8192];
	size_t have = 0;
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	for (;;) {
		ssize_t r = read(fd, buf + have, sizeof buf - 1 - have);
		char *line, *nl;
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		have += (size_t)r;
		buf[have] = 0;
		line = buf;
		while ((nl = strchr(line, '\n')) != NULL) {
			*nl = 0;
			maps_add(m, line);
			line = nl + 1;
		}
		have = (size_t)(buf + have - line);
		memmove(buf, line, have);
		if (have == sizeof buf - 1)
			have = 0;   /* a line longer than the buffer: its address was read */
	}
	close(fd);
}

static int maps_prot(const struct maps *m, uintptr_t a)
{
	size_t lo = 0, hi = m->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (a < m->e[mid].lo)
			hi = mid;
		else if (a >= m->e[mid].hi)
			lo = mid + 1;
		else
			return m->e[mid].prot;
	}
	return -1;
}

/* Store v into slot, lifting a write protection around the store. */
static bool write_slot(const struct maps *mp, uintptr_t *slot, uintptr_t v)
{
	uintptr_t a = (uintptr_t)slot;
	void *page = (void *)(a & ~(mw_page_size - 1));
	int prot = maps_prot(mp, a);
	if (prot < 0 || !(prot & PROT_READ))
		return false;
	if (!(prot & PROT_WRITE) && mprotect(page, mw_page_size, prot | PROT_WRITE) != 0)
		return false;
	__atomic_store_n(slot, v, __ATOMIC_RELEASE);
	if (!(prot & PROT_WRITE))
		mprotect(page, mw_page_size, prot);
	return true;
}

static bool add_rec(uintptr_t *slot, uintptr_t old, uintptr_t base, int func)
{
	size_t i;
	for (i = 0; i < nrecs; i++)
		if (recs[i].slot == slot) {
			recs[i].old = old;
			recs[i].base = base;
			recs[i].func = (uint8_t)func;
			return true;
		}
	if (!mw_grow((void **)&recs, nrecs, &caprecs, sizeof *recs))
		return false;
	recs[nrecs].slot = slot;
	recs[nrecs].old = old;
	recs[nrecs].base = base;
	recs[nrecs].func = (uint8_t)func;
	nrecs++;
	return true;
}

/* The hooked function a symbol name stands for, or -1. */
static int func_of(const char *s)
{
	int i;
	switch (s[0]) {
	case 'm': case 'c': case 'r': case 'f': case 'p': case 'a': case 'v': case 'd':
	case 'b': case 's':
		break;
	default:
		return -1;
	}
	/* mimalloc's names apart: most modules have a hundred m... symbols */
	if (s[0] == 'm' && s[1] == 'i' && s[2] == '_') {
		for (i = F_MI_MALLOC; i < F_COUNT; i++)
			if (strcmp(s, func_names[i]) == 0)
				return i;
		return -1;
	}
	for (i = 0; i < F_MI_MALLOC; i++)
		if (strcmp(s, func_names[i]) == 0)
			return i;
	return -1;
}

/* A dynamic-section address: the loader relocates most d_ptr in place, but a
 * read-only dynamic section keeps link-time values. */
static uintptr_t dyn_addr(const struct modinfo *m, uintptr_t v)
{
	return (m->base && v < m->base) ? v + m->base : v;
}

/* Patch the JUMP_SLOT and GLOB_DAT relocations of one module. A slot is changed
 * only when it holds the original (or, lazily bound, a stub of the module's own
 * PLT): a slot bound to some other allocator stays alone, since routing its
 * frees to ours would corrupt memory. Returns the slots patched. */
static unsigned patch_module(const struct modinfo *m, const struct maps *mp, bool no_maps,
			     bool no_mi)
{
	const ElfW(Dyn) *d;
	const ElfW(Sym) *symtab = NULL;
	const char *strtab = NULL;
	uintptr_t rela = 0, jmprel = 0, rel = 0;
	size_t relasz = 0, pltrelsz = 0, relsz = 0, strsz = 0;
	long pltrel = DT_RELA;
	unsigned patched = 0;
	int pass;

	for (d = m->dyn; d->d_tag != DT_NULL; d++) {
		switch (d->d_tag) {
		case DT_SYMTAB: symtab = (const ElfW(Sym) *)dyn_addr(m, d->d_un.d_ptr); break;
		case DT_STRTAB: strtab = (const char *)dyn_addr(m, d->d_un.d_ptr); break;
		case DT_STRSZ: strsz = d->d_un.d_val; break;
		case DT_RELA: rela = dyn_addr(m, d->d_un.d_ptr); break;
		case DT_RELASZ: relasz = d->d_un.d_val; break;
		case DT_REL: rel = dyn_addr(m, d->d_un.d_ptr); break;
		case DT_RELSZ: relsz = d->d_un.d_val; break;
		case DT_JMPREL: jmprel = dyn_addr(m, d->d_un.d_ptr); break;
		case DT_PLTRELSZ: pltrelsz = d->d_un.d_val; break;
		case DT_PLTREL: pltrel = (long)d->d_un.d_val; break;
		}
	}
	if (!symtab || !strtab)
		return 0;
	for (pass = 0; pass < 3; pass++) {
		uintptr_t tab;
		size_t tabsz, entsz, k, n;
		bool is_rela;
		switch (pass) {
		case 0: tab = rela; tabsz = relasz; is_rela = true; break;
		case 1: tab = rel; tabsz = relsz; is_rela = false; break;
		default: tab = jmprel; tabsz = pltrelsz; is_rela = pltrel == DT_RELA; break;
		}
		if (!tab || !tabsz)
			continue;
		entsz = is_rela ? sizeof(ElfW(Rela)) : sizeof(ElfW(Rel));
		n = tabsz / entsz;
		for (k = 0; k < n; k++) {
			ElfW(Addr) off;
			ElfW(Xword) info;
			unsigned type;
			size_t symi;
			const char *name;
			uintptr_t *slot, cur;
			int f;
			if (is_rela) {
				const ElfW(Rela) *r = (const ElfW(Rela) *)tab + k;
				off = r->r_offset;
				info = r->r_info;
			} else {
				const ElfW(Rel) *r = (const ElfW(Rel) *)tab + k;
				off = r->r_offset;
				info = r->r_info;
			}
			type = (unsigned)ELF64_R_TYPE(info);
			if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
				continue;
			symi = ELF64_R_SYM(info);
			if (!symi || (strsz && symtab[symi].st_name >= strsz))
				continue;
			name = strtab + symtab[symi].st_name;
			f = func_of(name);
			if (f < 0 || !((void **)&mw_orig)[f] || (no_maps && f >= F_MMAP && f <= F_SBRK) ||
			    (no_mi && f >= F_MI_MALLOC))
				continue;
			slot = (uintptr_t *)(m->base + off);
			if ((uintptr_t)slot < m->lo || (uintptr_t)slot >= m->hi)
				continue;
			if (maps_prot(mp, (uintptr_t)slot) < 0)
				continue;
			cur = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
			if (cur == (uintptr_t)mw_hook_fn[f])
				continue;
			if (cur != (uintptr_t)((void **)&mw_orig)[f] && !(cur >= m->lo && cur < m->hi))
				continue;
			if (!add_rec(slot, cur, m->base, f))
				continue;
			if (write_slot(mp, slot, (uintptr_t)mw_hook_fn[f]))
				patched++;
		}
	}
	return patched;
}

/* Drop the records of modules that are gone (dlclosed): their slots may now be
 * someone else's memory. */
static void prune_recs(const struct collect *c)
{
	size_t i, j, k = 0;
	for (i = 0; i < nrecs; i++) {
		bool live = false;
		for (j = 0; j < c->n && !live; j++)
			live = c->m[j].base == recs[i].base && (uintptr_t)recs[i].slot >= c->m[j].lo &&
			       (uintptr_t)recs[i].slot < c->m[j].hi;
		if (live)
			recs[k++] = recs[i];
	}
	nrecs = k;
}

/* Patch every module; with refresh, only if the hooks are (still) installed:
 * a dlopen racing with a stop must not bring them back. */
/* Modules patched since the last full pass, by load bias: a refresh (after a
 * dlopen) patches only modules not in it, so that a program loading hundreds
 * of libraries one by one (an interpreter importing extensions) does not pay
 * for all of them at every load. Any unload empties it (another object may
 * now sit at a remembered address). */
static uintptr_t *done;
static size_t ndone, capdone;

static bool is_done(uintptr_t base)
{
	size_t i;
	for (i = 0; i < ndone; i++)
		if (done[i] == base)
			return true;
	return false;
}

static void mark_done(uintptr_t base)
{
	if (ndone == capdone) {
		size_t ncap = capdone ? capdone * 2 : 512;
		uintptr_t *n = mw_map(ncap * sizeof *n);
		if (!n)
			return;
		if (done) {
			memcpy(n, done, ndone * sizeof *n);
			mw_unmap(done, capdone * sizeof *done);
		}
		done = n;
		capdone = ncap;
	}
	done[ndone++] = base;
}

/* A module whose mmaps are an allocator's own, never sampled as mappings: the
 * one defining the real malloc (jemalloc and tcmalloc call mmap through their
 * GOT; glibc's malloc does not go through one), mimalloc's (where it does not
 * stand in for malloc), and the one defining CPython's object allocator (its
 * arenas are mmaps whose objects python.c samples). */
static bool allocator_module(const struct modinfo *m, uintptr_t py)
{
	uintptr_t a = (uintptr_t)mw_orig.malloc;
	return (a >= m->lo && a < m->hi) || (py && py >= m->lo && py < m->hi);
}

/* mimalloc's module: its entry points call one another through its own slots,
 * which are never hooked (a block would be counted twice). */
static bool mimalloc_module(const struct modinfo *m)
{
	uintptr_t a = (uintptr_t)mw_orig.mi_malloc;
	return a && a >= m->lo && a < m->hi;
}

/* mimalloc loaded since the originals were resolved (dlopen'd): its entry
 * points, set before any slot leads to their hooks. */
static void resolve_mimalloc(void)
{
	void **slots = (void **)&mw_orig;
	void *p;
	int i;

	if (mw_orig.mi_malloc)
		return;
	p = dlsym(RTLD_DEFAULT, func_names[F_MI_MALLOC]);
	if (!p || is_plt_stub(p)) {
		dlerror();
		return;
	}
	for (i = F_MI_MALLOC + 1; i < F_COUNT; i++) {
		void *q = dlsym(RTLD_DEFAULT, func_names[i]);
		if (!q || is_plt_stub(q))
			dlerror();
		else
			slots[i] = q;
	}
	__atomic_store_n(&slots[F_MI_MALLOC], p, __ATOMIC_RELEASE);
}

static int install(bool blocking, bool refresh)
{
	uintptr_t py;
	struct collect c = { 0 };
	struct maps mp = { 0 };
	size_t i;
	int total = 0;

	if (blocking)
		pthread_mutex_lock(&patch_lock);
	else if (pthread_mutex_trylock(&patch_lock) != 0)
		return -1;
	if (refresh && !installed) {
		pthread_mutex_unlock(&patch_lock);
		return 0;
	}
	mw_tls.guard++;
	mw_loader_enter();
	__atomic_store_n(&installed, true, __ATOMIC_RELEASE);
	py = (uintptr_t)dlsym(RTLD_DEFAULT, "PyObject_Malloc");
	if (!py)
		dlerror();
	resolve_mimalloc();
	dl_iterate_phdr(collect_cb, &c);
	if (!c.failed) {
		if (c.subs != seen_subs) {
			prune_recs(&c);
			ndone = 0;
		}
		if (!refresh)
			ndone = 0;
		for (i = 0; i < c.n; i++) {
			void *pin;
			bool mi;
			if (skip_module(&c.m[i]) || is_done(c.m[i].base))
				continue;
			pin = pin_module(&c.m[i]);
			if (!pin)
				continue;
			if (!mp.n)
				maps_read(&mp);
			mi = mimalloc_module(&c.m[i]);
			total += (int)patch_module(&c.m[i], &mp, allocator_module(&c.m[i], py) || mi,
						   mi);
			mark_done(c.m[i].base);
			unpin_module(pin);
		}
		seen_adds = c.adds;
		seen_subs = c.subs;
	}
	free_collect(&c);
	free(mp.e);
	mw_loader_leave();
	mw_tls.guard--;
	pthread_mutex_unlock(&patch_lock);
	return total;
}

int mw_hooks_install(bool blocking)
{
	return install(blocking, false);
}

int mw_hooks_refresh(bool blocking)
{
	return install(blocking, true);
}

void mw_hooks_remove(void)
{
	struct collect c = { 0 };
	struct maps mp = { 0 };
	size_t i, j;

	pthread_mutex_lock(&patch_lock);
	mw_tls.guard++;
	mw_loader_enter();
	__atomic_store_n(&installed, false, __ATOMIC_RELEASE);
	dl_iterate_phdr(collect_cb, &c);
	if (!c.failed) {
		prune_recs(&c);
		for (j = 0; j < c.n; j++) {
			void *pin = NULL;
			bool any = false;
			for (i = 0; i < nrecs && !any; i++)
				any = recs[i].base == c.m[j].base;
			if (!any || skip_module(&c.m[j]) || !(pin = pin_module(&c.m[j])))
				continue;
			if (!mp.n)
				maps_read(&mp);
			for (i = 0; i < nrecs; i++) {
				struct slot_rec *r = &recs[i];
				if (r->base != c.m[j].base || (uintptr_t)r->slot < c.m[j].lo ||
				    (uintptr_t)r->slot >= c.m[j].hi)
					continue;
				if (__atomic_load_n(r->slot, __ATOMIC_ACQUIRE) == (uintptr_t)mw_hook_fn[r->func])
					write_slot(&mp, r->slot, r->old);
			}
			unpin_module(pin);
		}
		/* Everything that could be restored was; forget the rest too. */
		nrecs = 0;
		ndone = 0;
	}
	free_collect(&c);
	free(mp.e);
	mw_loader_leave();
	mw_tls.guard--;
	pthread_mutex_unlock(&patch_lock);
}

/* dl_iterate_phdr callback: read the load/unload counters from the first entry. */
static int counters_cb(struct dl_phdr_info *info, size_t sz, void *data)
{
	unsigned long long *v = data;
	if (sz >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
		v[0] = info->dlpi_adds;
		v[1] = info->dlpi_subs;
	}
	return 1;
}

bool mw_modules_changed(void)
{
	unsigned long long v[2] = { 0, 0 };
	mw_loader_enter();
	dl_iterate_phdr(counters_cb, v);
	mw_loader_leave();
	return v[0] != __atomic_load_n(&seen_adds, __ATOMIC_RELAXED) ||
	       v[1] != __atomic_load_n(&seen_subs, __ATOMIC_RELAXED);
}

/* fork: the patch lock is never taken in prepare (the control thread may hold it
 * while it waits for the loader lock, which a forking constructor could hold);
 * the child, alone, simply gets a fresh lock. A record appended concurrently
 * may be missing in the child, which only means a slot it will not restore. */
void mw_hooks_atfork_prepare(void)
{
}

void mw_hooks_atfork_parent(void)
{
}

void mw_hooks_atfork_child(void)
{
	pthread_mutex_init(&patch_lock, NULL);
	mw_maps_atfork_child();
}
