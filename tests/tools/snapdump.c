/* snapdump.c: test helper that prints a .snap file as stable text, and builds a
 * .snap file from that same text (--from-text), so tests can check what the agent
 * wrote and make fixtures without a live process.
 *
 *   snapdump FILE.snap                  print; exit 3 with one error line if bad
 *   snapdump --from-text TEXT OUT.snap  build OUT from TEXT ("-": stdin)
 *
 * The text: one "key value" line per process field (js_version and js_why
 * quoted, or - when absent); "mallinfo k=v ..." or
 * "mallinfo none"; "module I k=v ... path=\"...\""; "stack I k=v ..." followed by
 * indented frame lines "MODULE:0xOFFSET" (MODULE "-" for none); "symbol
 * MODULE:0xOFFSET nframes=N" followed by indented lines 'function="f" file="a.c"
 * line=N' (- for an absent string); "regions N" (the mapping breakdown was read)
 * and "region kind=K mappings=N size=N rss=N anon=N swap=N name=\"...\""; "type
 * I name=\"...\"" and "typed stack=S type=T samples=N bytes=N blocks=N"; "refsearch
 * status=N limit_ns=N max_objects=N pause_ns=N visited=N tracked=N passes=N
 * note=\"...\"", "chain type=T stack=S end=E" followed by indented lines
 * 'edge="..." type="..."', "forward type=T bytes=N" followed by indented lines
 * 'type="..." count=N bytes=N'. Count lines ("modules 2") and lines starting
 * with "memwatch snapshot" or '#' are ignored on input. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snapshot.h"
#include "util.h"

/* Print s as a quoted string, escaping quotes, backslashes and control bytes;
 * NULL as "-". */
static void print_str(const char *s)
{
	if (!s) {
		fputc('-', stdout);
		return;
	}
	fputc('"', stdout);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			printf("\\%c", *p);
		else if (*p < 0x20 || *p == 0x7f)
			printf("\\x%02x", *p);
		else
			fputc(*p, stdout);
	}
	fputc('"', stdout);
}

/* Print a module reference as the text form uses it: the index, or "-". */
static void print_module_ref(uint32_t module)
{
	if (module == SNAP_NO_MODULE)
		fputc('-', stdout);
	else
		printf("%" PRIu32, module);
}

/* Print the whole snapshot in the stable text form. */
static void dump(const struct snapshot *s)
{
	printf("memwatch snapshot, format %" PRIu32 "\n", s->version);
	printf("pid %" PRId32 "\n", s->pid);
	printf("exe ");
	print_str(s->exe);
	printf("\ncmdline ");
	print_str(s->cmdline);
	printf("\ntime_ns %" PRIu64 "\n", s->time_ns);
	printf("capture_start_ns %" PRIu64 "\n", s->capture_start_ns);
	printf("sample_rate %" PRIu64 "\n", s->sample_rate);
	printf("max_depth %" PRIu32 "\n", s->max_depth);
	printf("rss_bytes %" PRIu64 "\n", s->rss_bytes);
	printf("dropped_stacks %" PRIu64 "\n", s->dropped_stacks);
	printf("dropped_bytes %" PRIu64 "\n", s->dropped_bytes);
	if (s->python || s->python_version)
		printf("python %" PRIu32 " %" PRIu32 ".%" PRIu32 "\n", s->python,
		       s->python_version >> 8, s->python_version & 0xff);
	if (s->js || s->js_version || s->js_why) {
		printf("js %" PRIu32 "\njs_version ", s->js);
		print_str(s->js_version);
		printf("\njs_why ");
		print_str(s->js_why);
		fputc('\n', stdout);
	}
	if (s->mallinfo.present)
		printf("mallinfo arena=%" PRIu64 " mmapped=%" PRIu64 " in_use=%" PRIu64
		       " free_bytes=%" PRIu64 " releasable=%" PRIu64 "\n",
		       s->mallinfo.arena, s->mallinfo.mmapped, s->mallinfo.in_use,
		       s->mallinfo.free_bytes, s->mallinfo.releasable);
	else
		printf("mallinfo none\n");

	printf("modules %zu\n", s->nmodules);
	for (size_t i = 0; i < s->nmodules; i++) {
		const struct snap_module *m = &s->modules[i];
		printf("module %zu bias=0x%" PRIx64 " lo=0x%" PRIx64 " hi=0x%" PRIx64 " build_id=",
		       i, m->bias, m->lo, m->hi);
		if (m->build_id_len == 0)
			fputc('-', stdout);
		for (uint32_t b = 0; b < m->build_id_len; b++)
			printf("%02x", m->build_id[b]);
		printf(" path=");
		print_str(m->path);
		fputc('\n', stdout);
	}

	printf("stacks %zu\n", s->nstacks);
	for (size_t i = 0; i < s->nstacks; i++) {
		const struct snap_stack *st = &s->stacks[i];
		printf("stack %zu live_bytes=%" PRIu64 " live_blocks=%" PRIu64
		       " live_samples=%" PRIu64 " alloc_bytes=%" PRIu64 " alloc_blocks=%" PRIu64
		       " flags=0x%" PRIx32 " nframes=%" PRIu32 "\n",
		       i, st->live_bytes, st->live_blocks, st->live_samples, st->alloc_bytes,
		       st->alloc_blocks, st->flags, st->nframes);
		for (uint32_t f = 0; f < st->nframes; f++) {
			printf("  ");
			print_module_ref(st->frames[f].module);
			printf(":0x%" PRIx64 "\n", st->frames[f].offset);
		}
	}

	printf("symbols %zu\n", s->nsymbols);
	for (size_t i = 0; i < s->nsymbols; i++) {
		const struct snap_symbol *sym = &s->symbols[i];
		printf("symbol ");
		print_module_ref(sym->module);
		printf(":0x%" PRIx64 " nframes=%" PRIu32 "\n", sym->offset, sym->nframes);
		for (uint32_t f = 0; f < sym->nframes; f++) {
			printf("  function=");
			print_str(sym->frames[f].function);
			printf(" file=");
			print_str(sym->frames[f].file);
			printf(" line=%" PRIu32 "\n", sym->frames[f].line);
		}
	}
	if (s->has_regions) {
		printf("regions %zu\n", s->nregions);
		for (size_t i = 0; i < s->nregions; i++) {
			const struct snap_region *g = &s->regions[i];
			printf("region kind=%" PRIu32 " mappings=%" PRIu64 " size=%" PRIu64
			       " rss=%" PRIu64 " anon=%" PRIu64 " swap=%" PRIu64 " name=",
			       g->kind, g->mappings, g->size, g->rss, g->anon, g->swap);
			print_str(g->name);
			fputc('\n', stdout);
		}
	}
	for (size_t i = 0; i < s->ntypes; i++) {
		printf("type %zu name=", i);
		print_str(s->types[i]);
		fputc('\n', stdout);
	}
	for (size_t i = 0; i < s->ntyped; i++) {
		const struct snap_typed *t = &s->typed[i];
		printf("typed stack=%" PRIu32 " type=%" PRIu32 " samples=%" PRIu64 " bytes=%" PRIu64
		       " blocks=%" PRIu64 "\n", t->stack, t->type, t->live_samples, t->live_bytes,
		       t->live_blocks);
	}
	if (s->has_refs) {
		const struct snap_refsearch *q = &s->refsearch;
		printf("refsearch status=%" PRIu32 " limit_ns=%" PRIu64 " max_objects=%" PRIu64
		       " pause_ns=%" PRIu64 " visited=%" PRIu64 " tracked=%" PRIu64 " passes=%" PRIu32
		       " note=", q->status, q->limit_ns, q->max_objects, q->pause_ns, q->visited,
		       q->tracked, q->passes);
		print_str(q->note);
		fputc('\n', stdout);
	}
	for (size_t i = 0; i < s->nchains; i++) {
		const struct snap_refchain *c = &s->chains[i];
		printf("chain type=%" PRIu32 " stack=%" PRIu32 " end=%" PRIu32 "\n", c->type, c->stack,
		       c->end);
		for (uint32_t k = 0; k < c->nlinks; k++) {
			fputs("  edge=", stdout);
			print_str(c->links[k].edge);
			fputs(" type=", stdout);
			print_str(c->links[k].type);
			fputc('\n', stdout);
		}
	}
	for (size_t i = 0; i < s->nforward; i++) {
		const struct snap_forward *f = &s->forward[i];
		printf("forward type=%" PRIu32 " bytes=%" PRIu64 "\n", f->type, f->bytes);
		for (uint32_t k = 0; k < f->nreferents; k++) {
			fputs("  type=", stdout);
			print_str(f->referents[k].type);
			printf(" count=%" PRIu64 " bytes=%" PRIu64 "\n", f->referents[k].count,
			       f->referents[k].bytes);
		}
	}
}

/* ------------------------------------------------------------------------- */
/* The text reader for --from-text. */

struct parser {
	const char *name;   /* input name, for messages */
	unsigned lineno;
	char *p;            /* next character of the current line */
	char *err;          /* first error, caller frees */
	int block;          /* what indented lines belong to: 0 a stack or symbol,
			     * 1 the last chain, 2 the last forward view */
};

/* Record an error at the current line (the first one wins). */
__attribute__((format(printf, 2, 3)))
static void perr(struct parser *ps, const char *fmt, ...)
{
	va_list ap;
	if (ps->err)
		return;
	va_start(ap, fmt);
	char *m = xvasprintf(fmt, ap);
	va_end(ap);
	ps->err = xasprintf("%s:%u: %s", ps->name, ps->lineno, m);
	free(m);
}

/* Skip spaces and tabs. */
static void skip_blanks(struct parser *ps)
{
	while (*ps->p == ' ' || *ps->p == '\t')
		ps->p++;
}

/* Next blank-separated word (modified in place), or NULL at end of line. */
static char *word(struct parser *ps)
{
	skip_blanks(ps);
	if (!*ps->p)
		return NULL;
	char *w = ps->p;
	while (*ps->p && *ps->p != ' ' && *ps->p != '\t')
		ps->p++;
	if (*ps->p)
		*ps->p++ = '\0';
	return w;
}

/* Parse an unsigned number (decimal, or hex with 0x). */
static uint64_t number(struct parser *ps, const char *s, const char *what)
{
	char *end;
	errno = 0;
	if (!s || !*s || *s == '-') {
		perr(ps, "%s: expected a number", what);
		return 0;
	}
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || *end) {
		perr(ps, "%s: '%s' is not a number", what, s);
		return 0;
	}
	return v;
}

/* Parse a quoted string at ps->p (after "key="), or "-" for NULL. */
static char *quoted(struct parser *ps, const char *what)
{
	if (*ps->p == '-') {
		ps->p++;
		return NULL;
	}
	if (*ps->p != '"') {
		perr(ps, "%s: expected a quoted string", what);
		return NULL;
	}
	ps->p++;
	char *out = xmalloc(strlen(ps->p) + 1);
	size_t n = 0;
	while (*ps->p && *ps->p != '"') {
		char c = *ps->p++;
		if (c == '\\') {
			if (*ps->p == 'x' && ps->p[1] && ps->p[2]) {
				char hex[3] = { ps->p[1], ps->p[2], '\0' };
				c = (char)strtoul(hex, NULL, 16);
				ps->p += 3;
			} else if (*ps->p) {
				c = *ps->p++;
			}
		}
		out[n++] = c;
	}
	if (*ps->p != '"') {
		perr(ps, "%s: unterminated string", what);
		free(out);
		return NULL;
	}
	ps->p++;
	out[n] = '\0';
	return out;
}

/* Parse "key=value" words until the end of the line, handing each to set(). A
 * value starting with a quote is a quoted string (may hold blanks). */
static void pairs(struct parser *ps, void *obj,
		  void (*set)(struct parser *, void *, const char *, const char *))
{
	for (;;) {
		skip_blanks(ps);
		if (!*ps->p || ps->err)
			return;
		char *key = ps->p;
		char *eq = strchr(key, '=');
		if (!eq) {
			perr(ps, "expected key=value at '%s'", key);
			return;
		}
		*eq = '\0';
		ps->p = eq + 1;
		if (*ps->p == '"') {
			set(ps, obj, key, NULL); /* the setter reads the quoted string itself */
		} else {
			char *v = word(ps);
			set(ps, obj, key, v ? v : "");
		}
	}
}

/* Parse a frame reference "MODULE:0xOFFSET" ("-" for no module). */
static void frame_ref(struct parser *ps, const char *w, uint32_t *module, uint64_t *offset)
{
	const char *colon = w ? strchr(w, ':') : NULL;
	if (!colon) {
		perr(ps, "expected MODULE:OFFSET");
		return;
	}
	char *mod = xstrdup(w);
	mod[colon - w] = '\0';
	*module = strcmp(mod, "-") == 0 ? SNAP_NO_MODULE : (uint32_t)number(ps, mod, "module");
	free(mod);
	*offset = number(ps, colon + 1, "offset");
}

/* Setter for the fields of a "mallinfo" line. */
static void set_mallinfo(struct parser *ps, void *obj, const char *k, const char *v)
{
	struct snap_mallinfo *m = obj;
	if (!v)
		perr(ps, "mallinfo %s: not a string field", k);
	else if (strcmp(k, "arena") == 0)
		m->arena = number(ps, v, k);
	else if (strcmp(k, "mmapped") == 0)
		m->mmapped = number(ps, v, k);
	else if (strcmp(k, "in_use") == 0)
		m->in_use = number(ps, v, k);
	else if (strcmp(k, "free_bytes") == 0)
		m->free_bytes = number(ps, v, k);
	else if (strcmp(k, "releasable") == 0)
		m->releasable = number(ps, v, k);
	else
		perr(ps, "mallinfo: unknown field '%s'", k);
}

/* Setter for the fields of a "region" line. */
static void set_region(struct parser *ps, void *obj, const char *k, const char *v)
{
	struct snap_region *g = obj;
	if (strcmp(k, "name") == 0) {
		free(g->name);
		g->name = v ? (strcmp(v, "-") == 0 ? NULL : xstrdup(v)) : quoted(ps, k);
	} else if (!v) {
		perr(ps, "region %s: not a string field", k);
	} else if (strcmp(k, "kind") == 0) {
		g->kind = (uint32_t)number(ps, v, k);
	} else if (strcmp(k, "mappings") == 0) {
		g->mappings = number(ps, v, k);
	} else if (strcmp(k, "size") == 0) {
		g->size = number(ps, v, k);
	} else if (strcmp(k, "rss") == 0) {
		g->rss = number(ps, v, k);
	} else if (strcmp(k, "anon") == 0) {
		g->anon = number(ps, v, k);
	} else if (strcmp(k, "swap") == 0) {
		g->swap = number(ps, v, k);
	} else {
		perr(ps, "region: unknown field '%s'", k);
	}
}

/* Setter for the fields of a "type" line. */
static void set_type(struct parser *ps, void *obj, const char *k, const char *v)
{
	char **name = obj;
	if (strcmp(k, "name") == 0) {
		free(*name);
		*name = v ? xstrdup(v) : quoted(ps, k);
	} else {
		perr(ps, "type: unknown field '%s'", k);
	}
}

/* Setter for the fields of a "typed" line. */
static void set_typed(struct parser *ps, void *obj, const char *k, const char *v)
{
	struct snap_typed *t = obj;
	if (!v)
		perr(ps, "typed %s: not a string field", k);
	else if (strcmp(k, "stack") == 0)
		t->stack = (uint32_t)number(ps, v, k);
	else if (strcmp(k, "type") == 0)
		t->type = (uint32_t)number(ps, v, k);
	else if (strcmp(k, "samples") == 0)
		t->live_samples = number(ps, v, k);
	else if (strcmp(k, "bytes") == 0)
		t->live_bytes = number(ps, v, k);
	else if (strcmp(k, "blocks") == 0)
		t->live_blocks = number(ps, v, k);
	else
		perr(ps, "typed: unknown field '%s'", k);
}

/* Setters for the referrer search's lines. */
static void set_refsearch(struct parser *ps, void *obj, const char *k, const char *v)
{
	struct snap_refsearch *q = obj;
	if (strcmp(k, "note") == 0) {
		free(q->note);
		q->note = v ? (strcmp(v, "-") == 0 ? NULL : xstrdup(v)) : quoted(ps, k);
	} else if (!v) {
		perr(ps, "refsearch %s: not a string field", k);
	} else if (strcmp(k, "status") == 0) {
		q->status = (uint32_t)number(ps, v, k);
	} else if (strcmp(k, "limit_ns") == 0) {
		q->limit_ns = number(ps, v, k);
	} else if (strcmp(k, "max_objects") == 0) {
		q->max_objects = number(ps, v, k);
	} else if (strcmp(k, "pause_ns") == 0) {
		q->pause_ns = number(ps, v, k);
	} else if (strcmp(k, "visited") == 0) {
		q->visited = number(ps, v, k);
	} else if (strcmp(k, "tracked") == 0) {
		q->tracked = number(ps, v, k);
	} else if (strcmp(k, "passes") == 0) {
		q->passes = (uint32_t)number(ps, v, k);
	} else {
		perr(ps, "refsearch: unknown field '%s'", k);
	}
}

static void set_chain(struct parser *ps, void *obj, const char *k, const char *v)
{
	struct snap_refchain *c = obj;
	if (!v)
		perr(ps, "chain %s: not a string field", k);
	else if (strcmp(k, "type") == 0)
		c->type = (uint32_t)number(ps, v, k);
	else if (strcmp(k, "stack") == 0)
		c->stack = (uint32_t)number(ps, v, k);
	else if (strcmp(k, "end") == 0)
		c->end = (uint32_t)number(ps, v, k);
	else
		perr(ps, "chain: unknown field '%s'", k);
}

static void set_link(struct parser *ps, void *obj, const char *k, const char *v)
{
	struct snap_reflink *l = obj;
	char **field = strcmp(k, "edge") == 0 ? &l->edge : strcmp(k, "type") == 0 ? &l->type : NULL;
	if (!field) {
		perr(ps, "link: unknown field '%s'", k);
		return;
	}
	free(*field);
	*field = v ? (strcmp(v, "-") == 0 ? NULL : xstrdup(v)) : quoted(ps, k);
}

static void set_forward(struct parser *ps, void *obj, const char *k, const char *v)
{
	struct snap_forward *f = obj;
	if (!v)
		perr(ps, "forward %s: not a string field", k);
	else if (strcmp(k, "type") == 0)
		f->type = (uint32_t)number(ps, v, k);
	else if (strcmp(k, "bytes") == 0)
		f->bytes = number(ps, v, k);
	else
		perr(ps, "forward: unknown field '%s'", k);
}

static void set_referent(struct parser *ps, void *obj, const char *k, const char *v)
{
	struct snap_referent *r = obj;
	if (strcmp(k, "type") == 0) {
		free(r->type);
		r->type = v ? (strcmp(v, "-") == 0 ? NULL : xstrdup(v)) : quoted(ps, k);
	} else if (!v) {
		perr(ps, "referent %s: not a string field", k);
	} else if (strcmp(k, "count") == 0) {
		r->count = number(ps, v, k);
	} else if (strcmp(k, "bytes") == 0) {
		r->bytes = number(ps, v, k);
	} else {
		perr(ps, "referent: unknown field '%s'", k);
	}
}

/* Setter for the fields of a "module" line. */
static void set_module(struct parser *ps, void *obj, const char *k, const char *v)
{
	struct snap_module *m = obj;
	if (strcmp(k, "path") == 0) {
		free(m->path);
		m->path = v ? xstrdup(v) : quoted(ps, k);
		if (!m->path)
			m->path = xstrdup("");
	} else if (!v) {
		perr(ps, "module %s: not a string field", k);
	} else if (strcmp(k, "bias") == 0) {
		m->bias = number(ps, v, k);
	} else if (strcmp(k, "lo") == 0) {
		m->lo = number(ps, v, k);
	} else if (strcmp(k, "hi") == 0) {
		m->hi = number(ps, v, k);
	} else if (strcmp(k, "build_id") == 0) {
		size_t n = strlen(v);
		m->build_id_len = 0;
		if (strcmp(v, "-") == 0)
			return;
		if (n % 2 || n / 2 > sizeof m->build_id) {
			perr(ps, "build_id: expected up to 64 bytes in hex");
			return;
		}
		for (size_t i = 0; i < n / 2; i++) {
			char hex[3] = { v[2 * i], v[2 * i + 1], '\0' };
			char *end;
			m->build_id[i] = (uint8_t)strtoul(hex, &end, 16);
			if (*end) {
				perr(ps, "build_id: '%s' is not hex", v);
				return;
			}
		}
		m->build_id_len = (uint32_t)(n / 2);
	} else {
		perr(ps, "module: unknown field '%s'", k);
	}
}

/* Setter for the fields of a "stack" line. */
static void set_stack(struct parser *ps, void *obj, const char *k, const char *v)
{
	struct snap_stack *st = obj;
	if (!v)
		perr(ps, "stack %s: not a string field", k);
	else if (strcmp(k, "live_bytes") == 0)
		st->live_bytes = number(ps, v, k);
	else if (strcmp(k, "live_blocks") == 0)
		st->live_blocks = number(ps, v, k);
	else if (strcmp(k, "live_samples") == 0)
		st->live_samples = number(ps, v, k);
	else if (strcmp(k, "alloc_bytes") == 0)
		st->alloc_bytes = number(ps, v, k);
	else if (strcmp(k, "alloc_blocks") == 0)
		st->alloc_blocks = number(ps, v, k);
	else if (strcmp(k, "flags") == 0)
		st->flags = (uint32_t)number(ps, v, k);
	else if (strcmp(k, "nframes") != 0) /* the count follows from the frame lines */
		perr(ps, "stack: unknown field '%s'", k);
}

/* Setter for the fields of an indented symbol frame line. */
static void set_symframe(struct parser *ps, void *obj, const char *k, const char *v)
{
	struct snap_symframe *f = obj;
	if (strcmp(k, "function") == 0) {
		free(f->function);
		f->function = v ? (strcmp(v, "-") == 0 ? NULL : xstrdup(v)) : quoted(ps, k);
	} else if (strcmp(k, "file") == 0) {
		free(f->file);
		f->file = v ? (strcmp(v, "-") == 0 ? NULL : xstrdup(v)) : quoted(ps, k);
	} else if (v && strcmp(k, "line") == 0) {
		f->line = (uint32_t)number(ps, v, k);
	} else {
		perr(ps, "symbol frame: unknown field '%s'", k);
	}
}

/* Grow an array by one zeroed element; returns the new element. */
static void *push(void **arr, size_t *n, size_t size)
{
	*arr = xrealloc(*arr, (*n + 1) * size);
	char *e = (char *)*arr + *n * size;
	memset(e, 0, size);
	(*n)++;
	return e;
}

/* Set a string field from the rest of the line (a quoted string). */
static void set_line_string(struct parser *ps, char **field, const char *what)
{
	skip_blanks(ps);
	free(*field);
	*field = quoted(ps, what);
	if (!*field)
		*field = xstrdup("");
}

/* Handle one line of the text form. */
static void parse_line(struct parser *ps, struct snapshot *s, char *line)
{
	ps->p = line;
	bool indented = *line == ' ' || *line == '\t';
	skip_blanks(ps);
	if (!*ps->p || *ps->p == '#' || strncmp(ps->p, "memwatch snapshot", 17) == 0)
		return;

	if (indented) {
		/* A link of the last chain, a referent of the last forward view, a
		 * frame of the last stack, or a resolved frame of the last symbol. */
		if (ps->block == 1) {
			struct snap_refchain *c = &s->chains[s->nchains - 1];
			size_t n = c->nlinks;
			struct snap_reflink *l = push((void **)&c->links, &n, sizeof *l);
			c->nlinks = (uint32_t)n;
			pairs(ps, l, set_link);
		} else if (ps->block == 2) {
			struct snap_forward *f = &s->forward[s->nforward - 1];
			size_t n = f->nreferents;
			struct snap_referent *r = push((void **)&f->referents, &n, sizeof *r);
			f->nreferents = (uint32_t)n;
			pairs(ps, r, set_referent);
		} else if (s->nsymbols) {
			struct snap_symbol *sym = &s->symbols[s->nsymbols - 1];
			size_t n = sym->nframes;
			struct snap_symframe *f = push((void **)&sym->frames, &n, sizeof *f);
			sym->nframes = (uint32_t)n;
			pairs(ps, f, set_symframe);
		} else if (s->nstacks) {
			struct snap_stack *st = &s->stacks[s->nstacks - 1];
			size_t n = st->nframes;
			struct snap_frame *f = push((void **)&st->frames, &n, sizeof *f);
			st->nframes = (uint32_t)n;
			uint32_t module;
			uint64_t offset;
			frame_ref(ps, word(ps), &module, &offset);
			f->module = module;   /* a snap_frame is packed */
			f->offset = offset;
		} else {
			perr(ps, "an indented line belongs to a stack or a symbol");
		}
		return;
	}

	char *key = word(ps);
	ps->block = 0;
	if (strcmp(key, "refsearch") == 0) {
		s->has_refs = true;
		pairs(ps, &s->refsearch, set_refsearch);
		return;
	} else if (strcmp(key, "chain") == 0) {
		struct snap_refchain *c = push((void **)&s->chains, &s->nchains, sizeof *c);
		s->has_refs = true;
		pairs(ps, c, set_chain);
		ps->block = 1;
		return;
	} else if (strcmp(key, "forward") == 0) {
		struct snap_forward *f = push((void **)&s->forward, &s->nforward, sizeof *f);
		s->has_refs = true;
		pairs(ps, f, set_forward);
		ps->block = 2;
		return;
	}
	if (strcmp(key, "pid") == 0) {
		s->pid = (int32_t)number(ps, word(ps), key);
	} else if (strcmp(key, "exe") == 0) {
		set_line_string(ps, &s->exe, key);
	} else if (strcmp(key, "cmdline") == 0) {
		set_line_string(ps, &s->cmdline, key);
	} else if (strcmp(key, "time_ns") == 0) {
		s->time_ns = number(ps, word(ps), key);
	} else if (strcmp(key, "capture_start_ns") == 0) {
		s->capture_start_ns = number(ps, word(ps), key);
	} else if (strcmp(key, "sample_rate") == 0) {
		s->sample_rate = number(ps, word(ps), key);
	} else if (strcmp(key, "max_depth") == 0) {
		s->max_depth = (uint32_t)number(ps, word(ps), key);
	} else if (strcmp(key, "rss_bytes") == 0) {
		s->rss_bytes = number(ps, word(ps), key);
	} else if (strcmp(key, "dropped_stacks") == 0) {
		s->dropped_stacks = number(ps, word(ps), key);
	} else if (strcmp(key, "dropped_bytes") == 0) {
		s->dropped_bytes = number(ps, word(ps), key);
	} else if (strcmp(key, "python") == 0) {
		char *v;
		s->python = (uint32_t)number(ps, word(ps), key);
		v = word(ps);
		s->python_version = (uint32_t)(strtoul(v, &v, 10) << 8);
		s->python_version |= (uint32_t)(*v == '.' ? strtoul(v + 1, NULL, 10) & 0xff : 0);
	} else if (strcmp(key, "js") == 0) {
		s->js = (uint32_t)number(ps, word(ps), key);
	} else if (strcmp(key, "js_version") == 0 || strcmp(key, "js_why") == 0) {
		char **field = key[3] == 'v' ? &s->js_version : &s->js_why;
		skip_blanks(ps);
		free(*field);
		*field = quoted(ps, key);
	} else if (strcmp(key, "mallinfo") == 0) {
		skip_blanks(ps);
		if (strcmp(ps->p, "none") == 0) {
			s->mallinfo.present = false;
			return;
		}
		s->mallinfo.present = true;
		pairs(ps, &s->mallinfo, set_mallinfo);
	} else if (strcmp(key, "modules") == 0 || strcmp(key, "stacks") == 0 ||
		   strcmp(key, "symbols") == 0) {
		return; /* counts follow from the lines themselves */
	} else if (strcmp(key, "regions") == 0) {
		s->has_regions = true;
	} else if (strcmp(key, "region") == 0) {
		struct snap_region *g = push((void **)&s->regions, &s->nregions, sizeof *g);
		s->has_regions = true;
		pairs(ps, g, set_region);
	} else if (strcmp(key, "type") == 0) {
		word(ps); /* the index, implied by the order */
		char **name = push((void **)&s->types, &s->ntypes, sizeof *name);
		pairs(ps, name, set_type);
	} else if (strcmp(key, "typed") == 0) {
		struct snap_typed *t = push((void **)&s->typed, &s->ntyped, sizeof *t);
		pairs(ps, t, set_typed);
	} else if (strcmp(key, "module") == 0) {
		word(ps); /* the index, implied by the order */
		struct snap_module *m = push((void **)&s->modules, &s->nmodules, sizeof *m);
		pairs(ps, m, set_module);
		if (!m->path)
			m->path = xstrdup("");
	} else if (strcmp(key, "stack") == 0) {
		if (s->nsymbols) {
			perr(ps, "stacks come before symbols");
			return;
		}
		word(ps);
		struct snap_stack *st = push((void **)&s->stacks, &s->nstacks, sizeof *st);
		pairs(ps, st, set_stack);
	} else if (strcmp(key, "symbol") == 0) {
		struct snap_symbol *sym = push((void **)&s->symbols, &s->nsymbols, sizeof *sym);
		frame_ref(ps, word(ps), &sym->module, &sym->offset);
		word(ps); /* nframes=N: implied by the frame lines */
	} else {
		perr(ps, "unknown line '%s'", key);
	}
}

/* Build a snapshot from the text in path ("-": stdin). NULL with *cause. */
static struct snapshot *from_text(const char *path, char **cause)
{
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
	struct parser ps = { .name = path };
	struct snapshot *s;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;

	if (!f) {
		*cause = xasprintf("cannot read '%s': %s", path, strerror(errno));
		return NULL;
	}
	s = xcalloc(1, sizeof *s);
	s->version = SNAPSHOT_VERSION;
	s->sample_rate = 1;
	while (!ps.err && (n = getline(&line, &cap, f)) >= 0) {
		ps.lineno++;
		if (n && line[n - 1] == '\n')
			line[n - 1] = '\0';
		parse_line(&ps, s, line);
	}
	free(line);
	if (f != stdin)
		fclose(f);
	if (!s->exe)
		s->exe = xstrdup("");
	if (!s->cmdline)
		s->cmdline = xstrdup("");
	if (ps.err) {
		*cause = ps.err;
		snapshot_free(s);
		return NULL;
	}
	return s;
}

/* Print usage on stderr. */
static void usage(void)
{
	fprintf(stderr, "usage: snapdump FILE.snap\n"
			"       snapdump --from-text TEXT OUT.snap\n");
}

int main(int argc, char **argv)
{
	char *cause = NULL;

	if (argc == 4 && strcmp(argv[1], "--from-text") == 0) {
		struct snapshot *s = from_text(argv[2], &cause);
		if (!s) {
			mw_error("%s", cause);
			free(cause);
			return MW_EXIT_BADFILE;
		}
		int ret = snapshot_write(s, argv[3], true, &cause);
		snapshot_free(s);
		if (ret < 0) {
			mw_error("%s", cause);
			free(cause);
			return MW_EXIT_FAILURE;
		}
		return MW_EXIT_OK;
	}
	if (argc != 2 || argv[1][0] == '-') {
		usage();
		return MW_EXIT_USAGE;
	}
	struct snapshot *s = snapshot_read(argv[1], &cause);
	if (!s) {
		mw_error("%s", cause);
		free(cause);
		return MW_EXIT_BADFILE;
	}
	dump(s);
	snapshot_free(s);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		mw_error("cannot write to standard output: %s", strerror(errno));
		return MW_EXIT_FAILURE;
	}
	return MW_EXIT_OK;
}
