/* symbolize-dwarf.c: what one address of a module reported to the
 * symbolizer's Dwfl session is: the function that holds it, found through a
 * per-CU table of function ranges, with its chain of inlined frames, their
 * files and lines, from DWARF; else its function alone from the ELF symbol
 * table. Names are demangled (C++ and Rust) and interned. The modules, the
 * session and the cache are symbolize.c. */
#include "config.h"
#include "symbolize-internal.h"
#include "util.h"

#include <dwarf.h>
#include <libiberty/demangle.h>
#include <stdlib.h>
#include <string.h>

/* Is name mangled as C++ (_Z, which Rust's legacy mangling is too) or as
 * Rust's v0 (_R)? */
static bool mangled(const char *name)
{
	return name[0] == '_' && (name[1] == 'Z' || name[1] == 'R');
}

/* Demangled C++/Rust name, interned; other names as they are. libiberty
 * decodes Rust's manglings as rustc-demangle's short form does: the legacy
 * hash ("::h0123456789abcdef") and v0's crate disambiguators left out, the
 * '$LT$'-style escapes of legacy names decoded. */
static const char *intern_name(struct symbolizer *z, const char *name)
{
	const char *r;
	char *d;

	if (!name)
		return NULL;
	if (!mangled(name))
		return sym_intern(z, name);
	d = cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI | DMGL_AUTO);
	if (!d)
		return sym_intern(z, name);
	r = sym_intern(z, d);
	free(d);
	return r;
}

/* The name of a function-like DIE: its linkage name (demangled), else its name. */
static const char *die_name(struct symbolizer *z, Dwarf_Die *die)
{
	Dwarf_Attribute a;
	const char *n;

	n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &a));
	if (!n)
		n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a));
	if (!n)
		n = dwarf_diename(die);
	return intern_name(z, n);
}

static bool function_like(int tag)
{
	return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine ||
	       tag == DW_TAG_entry_point;
}

/* Add the address ranges of the subprogram at die (those with code). */
static void add_ranges(struct cucache *c, size_t *cap, Dwarf_Die *die)
{
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off = 0;

	while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
		if (hi <= lo)
			continue;
		if (c->nfns == *cap) {
			*cap = *cap ? *cap * 2 : 64;
			c->fns = xrealloc(c->fns, *cap * sizeof *c->fns);
		}
		c->fns[c->nfns].lo = lo;
		c->fns[c->nfns].hi = hi;
		c->fns[c->nfns].die = dwarf_dieoffset(die);
		c->nfns++;
	}
}

/* Collect the subprograms under die: at the top of the CU, and inside
 * namespaces and classes (where C++ and Rust may put definitions). */
static void collect_functions(struct cucache *c, size_t *cap, Dwarf_Die *parent, int level)
{
	Dwarf_Die child;

	if (level > 16 || dwarf_child(parent, &child) != 0)
		return;
	do {
		switch (dwarf_tag(&child)) {
		case DW_TAG_subprogram:
			add_ranges(c, cap, &child);
			break;
		case DW_TAG_namespace:
		case DW_TAG_class_type:
		case DW_TAG_structure_type:
		case DW_TAG_union_type:
		case DW_TAG_module:
			collect_functions(c, cap, &child, level + 1);
			break;
		default:
			break;
		}
	} while (dwarf_siblingof(&child, &child) == 0);
}

/* By address; among aliases (the same range) the first DIE of the CU comes
 * last, so that the search, which goes down from the top, meets it first. */
static int cmp_fnrange(const void *pa, const void *pb)
{
	const struct fnrange *a = pa, *b = pb;
	if (a->lo != b->lo)
		return a->lo < b->lo ? -1 : 1;
	if (a->hi != b->hi)
		return a->hi < b->hi ? -1 : 1;
	return a->die > b->die ? -1 : a->die < b->die;
}

/* The function table of the CU cu of module g, built at its first use. */
static bool cu_eq(const void *entry, const void *key)
{
	const struct cucache *c = entry;
	const struct place *p = key;
	return c->gmod == p->gmod && c->cu == p->offset;
}

static struct cucache *cu_functions(struct symbolizer *z, uint32_t g, Dwarf_Die *cu)
{
	struct place p = { g, dwarf_dieoffset(cu) };
	size_t cap = 0;
	struct cucache *c;
	bool added;

	c = hashmap_put(&z->cus, place_hash(g, p.offset), cu_eq, &p, &added);
	if (!added)
		return c;
	c->gmod = g;
	c->cu = p.offset;
	collect_functions(c, &cap, cu, 0);
	if (c->nfns)   /* a CU without functions has no array: qsort's is nonnull */
		qsort(c->fns, c->nfns, sizeof *c->fns, cmp_fnrange);
	return c;
}

/* The subprogram DIE whose code holds addr (a CU-relative DWARF address). */
static bool function_at(struct cucache *c, Dwarf *dw, Dwarf_Addr addr, Dwarf_Die *out)
{
	size_t lo = 0, hi = c->nfns, k;

	while (lo < hi) {   /* the first range starting above addr */
		size_t mid = (lo + hi) / 2;
		if (c->fns[mid].lo <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* the nearest ranges below; a few back, for nested ranges */
	for (k = lo; k > 0 && lo - k < 8; k--)
		if (addr < c->fns[k - 1].hi)
			return dwarf_offdie(dw, c->fns[k - 1].die, out) != NULL;
	return false;
}

/* The scopes holding addr inside the function fn, innermost first, fn last:
 * descend through the children whose ranges hold addr (inlined instances,
 * lexical blocks). *chain is malloc'd; returns the count. */
static int scopes_in(Dwarf_Die *fn, Dwarf_Addr addr, Dwarf_Die **chain)
{
	Dwarf_Die *v = NULL, child;
	int n = 0, cap = 0, i;
	Dwarf_Die cur = *fn;

	for (;;) {
		if (n == cap) {
			cap = cap ? cap * 2 : 8;
			v = xrealloc(v, (size_t)cap * sizeof *v);
		}
		v[n++] = cur;
		if (n > 256 || dwarf_child(&cur, &child) != 0)
			break;
		bool found = false;
		do {
			int tag = dwarf_tag(&child);
			if ((tag == DW_TAG_inlined_subroutine || tag == DW_TAG_lexical_block ||
			     tag == DW_TAG_try_block || tag == DW_TAG_catch_block ||
			     tag == DW_TAG_with_stmt || tag == DW_TAG_common_block) &&
			    dwarf_haspc(&child, addr) == 1) {
				found = true;
				break;
			}
		} while (dwarf_siblingof(&child, &child) == 0);
		if (!found)
			break;
		cur = child;
	}
	/* innermost first */
	for (i = 0; i < n / 2; i++) {
		Dwarf_Die t = v[i];
		v[i] = v[n - 1 - i];
		v[n - 1 - i] = t;
	}
	*chain = v;
	return n;
}

/* The source frames at pc from DWARF: the innermost frame's place from the line
 * table, each outer frame's from the DW_AT_call_file/line of the inlined
 * instance it contains. Returns the number of frames (0: no DWARF here). */
static uint32_t dwarf_frames(struct symbolizer *z, uint32_t g, Dwfl_Module *m, Dwarf_Addr pc,
			     struct sym_frame **out)
{
	Dwarf_Addr bias = 0;
	Dwarf_Die *cu = dwfl_module_addrdie(m, pc, &bias);
	Dwarf_Die *chain = NULL, fn;
	Dwarf_Files *files = NULL;
	Dwfl_Line *line;
	Dwarf *dw;
	const char *file = NULL;
	int nchain, i, lineno = 0;
	uint32_t nf = 0;
	struct sym_frame *f = NULL;

	if (!cu)
		return 0;
	dw = dwfl_module_getdwarf(m, &bias);
	if (!dw || !function_at(cu_functions(z, g, cu), dw, pc - bias, &fn))
		return 0;
	nchain = scopes_in(&fn, pc - bias, &chain);
	if (dwarf_getsrcfiles(cu, &files, NULL) != 0)
		files = NULL;
	line = dwfl_module_getsrc(m, pc);
	if (line)
		file = dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL);

	f = xcalloc((size_t)nchain, sizeof *f);
	for (i = 0; i < nchain; i++) {
		int tag = dwarf_tag(&chain[i]);
		Dwarf_Attribute a;
		Dwarf_Word v;

		if (!function_like(tag))
			continue;
		f[nf].function = die_name(z, &chain[i]);
		f[nf].file = sym_intern(z, file);
		f[nf].line = lineno > 0 ? (uint32_t)lineno : 0;
		f[nf].inlined = tag == DW_TAG_inlined_subroutine;
		nf++;
		if (tag != DW_TAG_inlined_subroutine)
			break;
		file = NULL;
		lineno = 0;
		if (files && dwarf_formudata(dwarf_attr(&chain[i], DW_AT_call_file, &a), &v) == 0)
			file = dwarf_filesrc(files, v, NULL, NULL);
		if (dwarf_formudata(dwarf_attr(&chain[i], DW_AT_call_line, &a), &v) == 0)
			lineno = (int)v;
	}
	free(chain);
	if (nf == 0) {
		free(f);
		return 0;
	}
	f[nf - 1].inlined = false;
	*out = f;
	return nf;
}

static int cmp_fsym(const void *pa, const void *pb)
{
	const struct fsym *a = pa, *b = pb;
	if (a->lo != b->lo)
		return a->lo < b->lo ? -1 : 1;
	if (a->rank != b->rank)
		return a->rank > b->rank ? -1 : 1;
	return strcmp(a->name, b->name);
}

/* The module's function symbols sorted by address, read once: Dwfl's own
 * dwfl_module_addrinfo scans the whole table at every call, which dominates
 * when many addresses of a large library have no DWARF. */
static void load_symbols(struct symbolizer *z, struct gmod *g)
{
	int n, i;
	size_t k = 0, j;

	g->syms_loaded = true;
	n = dwfl_module_getsymtab(g->dwmod);
	if (n <= 0)
		return;
	g->syms = xcalloc((size_t)n, sizeof *g->syms);
	for (i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		const char *name = dwfl_module_getsym_info(g->dwmod, i, &sym, &addr, NULL, NULL, NULL);
		int type = GELF_ST_TYPE(sym.st_info), bind = GELF_ST_BIND(sym.st_info);

		if (!name || !*name || sym.st_shndx == SHN_UNDEF ||
		    (type != STT_FUNC && type != STT_GNU_IFUNC))
			continue;
		g->syms[k].lo = addr;
		g->syms[k].hi = addr + sym.st_size;
		g->syms[k].name = intern_name(z, name);
		/* sized first, then global over weak over local */
		g->syms[k].rank = (sym.st_size ? 4 : 0) +
				  (bind == STB_GLOBAL ? 2 : bind == STB_WEAK ? 1 : 0);
		k++;
	}
	qsort(g->syms, k, sizeof *g->syms, cmp_fsym);
	/* keep the preferred symbol of each address */
	for (i = 0, j = 0; (size_t)i < k; i++)
		if (j == 0 || g->syms[j - 1].lo != g->syms[i].lo)
			g->syms[j++] = g->syms[i];
	g->nsyms = j;
}

/* The function symbol containing pc, or NULL. */
static const char *symbol_at(struct symbolizer *z, struct gmod *g, GElf_Addr pc)
{
	size_t lo = 0, hi;

	if (!g->syms_loaded)
		load_symbols(z, g);
	hi = g->nsyms;
	while (lo < hi) {   /* the first symbol above pc */
		size_t mid = (lo + hi) / 2;
		if (g->syms[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	lo--;
	if (g->syms[lo].hi > g->syms[lo].lo)
		return pc < g->syms[lo].hi ? g->syms[lo].name : NULL;
	/* a symbol of unknown size reaches up to the next one */
	return lo + 1 < g->nsyms || pc - g->syms[lo].lo < 4096 ? g->syms[lo].name : NULL;
}

/* The source frames at pc: DWARF's, else the symbol table's function. */
uint32_t sym_frames_at(struct symbolizer *z, uint32_t g, Dwarf_Addr pc, struct sym_frame **out)
{
	uint32_t n = dwarf_frames(z, g, z->mods[g].dwmod, pc, out);

	if (n == 0) {
		const char *name = symbol_at(z, &z->mods[g], pc);
		if (name) {
			*out = xcalloc(1, sizeof **out);
			(*out)->function = name;
			n = 1;
		}
	}
	return n;
}
