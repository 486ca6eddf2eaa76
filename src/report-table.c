/* report-table.c: the table of memwatch diff and show, for people: a header
 * of figures per snapshot, the rows with their frames, and what the rows do
 * not explain. */
#include "config.h"
#include "report-internal.h"
#include "maps.h"
#include "util.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* --------------------------------------------------------------------------- */
/* Table output. */

/* A C++ name as a table shows it: the arguments of templates elided
 * ("std::vector<…>::_M_realloc_insert<…>(…)"), where they make a name run
 * over a line; --full-names keeps them. An operator's own '<' or '>' is no
 * bracket. */
static void print_short_name(FILE *f, const char *name)
{
	int depth = 0;
	const char *p;

	if (strlen(name) <= 60 || !strchr(name, '<')) {
		fputs(name, f);
		return;
	}
	for (p = name; *p; p++) {
		bool op = p - name >= 8 && !strncmp(p - 8, "operator", 8);
		if (*p == '<' && !op) {
			if (depth++ == 0)
				fputs("<\u2026>", f);
		} else if (*p == '>' && depth > 0 && !(p > name && p[-1] == '-')) {
			depth--;
		} else if (depth == 0) {
			fputc(*p, f);
			if (op && (*p == '<' || *p == '>') && (p[1] == '<' || p[1] == '>' || p[1] == '='))
				fputc(*++p, f);
		}
	}
}

/* One frame as the table shows it. */
static void print_frame(FILE *f, struct report *r, const struct dframe *d, const char *via,
			int kind)
{
	if (!d->function)
		fputs("<unknown>", f);
	else if (r->o->full_names)
		fputs(d->function, f);
	else
		print_short_name(f, d->function);
	if (d->file) {
		fprintf(f, "  %s", base_name(d->file));
		if (d->line)
			fprintf(f, ":%" PRIu32, d->line);
	} else if (d->gmod != SYM_NO_MODULE && d->function &&
		   !strcmp(symbolizer_module_name(r->z, d->gmod), "[js]")) {
		/* a JavaScript frame of no script (a builtin, the worker mark):
		 * its offset is a hash of its name, nothing to read */
	} else if (d->gmod != SYM_NO_MODULE && r->o->by == REPORT_BY_FUNCTION && d->function) {
		/* one row stands for many addresses of the function */
		fprintf(f, "  (%s)", symbolizer_module_name(r->z, d->gmod));
	} else if (d->gmod != SYM_NO_MODULE) {
		fprintf(f, "  (%s+0x%" PRIx64 ")", symbolizer_module_name(r->z, d->gmod), d->offset);
	} else {
		fprintf(f, "  (0x%" PRIx64 ")", d->offset);
	}
	if (d->inlined)
		fputs(" [inlined]", f);
	if (kind > SNAP_KIND_MALLOC)
		fprintf(f, " [%s]", snap_kind_name(kind));
	if (via && *via)
		fprintf(f, "  (%s)", via);
	fputc('\n', f);
}

const char *by_title(enum report_by by)
{
	return by == REPORT_BY_STACK ? "call stack" : by == REPORT_BY_FUNCTION ? "function" :
	       by == REPORT_BY_TYPE ? "type" : "line";
}

const char *by_plural(enum report_by by)
{
	return by == REPORT_BY_STACK ? "stacks" : by == REPORT_BY_FUNCTION ? "functions" :
	       by == REPORT_BY_TYPE ? "types" : "lines";
}

/* By type: the type, then the lines of the user's code that allocated most
 * of its objects (in a diff, most of their growth). */
static void print_type_row(FILE *f, struct report *r, const struct row *w, int width)
{
	struct row_part *p;
	size_t n = row_top_parts(r, w, 3, &p);
	bool diff = r->nin > 1;
	char b[32];

	fprintf(f, "%s", w->type ? w->type : "?");
	if (w->kind > SNAP_KIND_MALLOC)
		fprintf(f, " [%s]", snap_kind_name(w->kind));
	fputc('\n', f);
	for (size_t i = 0; i < n; i++) {
		const struct dframe d = { .function = p[i].name, .file = p[i].file, .line = p[i].line,
					  .gmod = SYM_NO_MODULE };
		int64_t v = diff ? (int64_t)(p[i].bytes[1] - p[i].bytes[0]) : (int64_t)p[i].bytes[0];
		fprintf(f, "%*s%10s  from ", width, "", diff ? fmt_signed(b, sizeof b, v)
							      : fmt_bytes(b, sizeof b, (double)v));
		if (!d.function)
			fputs("<unknown>\n", f);
		else
			print_frame(f, r, &d, NULL, SNAP_KIND_MALLOC);
	}
	free(p);
}

/* By stack: the types its objects are, most of their bytes first. */
static void print_row_types(FILE *f, struct report *r, const struct row *w, int width)
{
	struct row_part *p;
	size_t n = row_top_parts(r, w, 3, &p);

	if (n) {
		fprintf(f, "%*smostly ", width, "");
		for (size_t i = 0; i < n; i++)
			fprintf(f, "%s%s", i ? ", " : "", p[i].name);
		fputc('\n', f);
	}
	free(p);
}

/* CPython: what keeps the row's objects alive (the chains of the referrer
 * search), and what one object of its type holds. */
static void print_row_refs(FILE *f, const struct row *w, int width)
{
	char **t;
	size_t n = row_chain_texts(w, 3, &t);

	for (size_t i = 0; i < n; i++) {
		fprintf(f, "%*skept alive by: %s\n", width, "", t[i]);
		free(t[i]);
	}
	free(t);
	if (w->forward) {
		char *h = row_forward_text(w->forward);
		fprintf(f, "%*s%s\n", width, "", h);
		free(h);
	}
}

/* The referrer search of a snapshot, in a line. */
static void print_refsearch(FILE *f, const struct snapshot *s)
{
	const struct snap_refsearch *q = &s->refsearch;
	char b[32];

	if (!s->has_refs)
		return;
	if (q->status == SNAP_REFS_UNAVAILABLE || q->status == SNAP_REFS_NO_GIL) {
		fprintf(f, "  referrers not searched: %s\n", q->note ? q->note : "unknown");
		return;
	}
	fprintf(f, "  referrers searched: %zu chain%s, Python held %s (%" PRIu64 " objects traversed in %u pass%s, "
		"%" PRIu64 " tracked)%s%s\n", s->nchains, s->nchains == 1 ? "" : "s",
		fmt_seconds(b, sizeof b, (double)q->pause_ns / 1e9), q->visited, q->passes,
		q->passes == 1 ? "" : "es", q->tracked, q->note ? "; " : "", q->note ? q->note : "");
}

/* The frames of a row after its figures (already printed, width columns). */
void print_row_frames(FILE *f, struct report *r, const struct row *w, int width)
{
	size_t max = r->o->depth, n, total, i;
	struct dframe *d;
	char via[96];

	if (r->o->by == REPORT_BY_TYPE) {
		print_type_row(f, r, w, width);
		print_row_refs(f, w, width);
		return;
	}
	n = row_frames(r, w, max, false, &d, &total, NULL, via, sizeof via);
	if (n == 0) {
		fputs("<no frames>\n", f);
	}
	for (i = 0; i < n; i++) {
		if (i > 0)
			fprintf(f, "%*s", width, "");
		print_frame(f, r, &d[i], i == 0 ? via : NULL, i == 0 ? w->kind : SNAP_KIND_MALLOC);
		/* frames left out between two shown: never an impossible caller
		 * (a Python function under __libc_start_call_main) as if real */
		if (i + 1 < n && d[i].after.hi) {
			char gap[96];
			describe_gap(r, &d[i].after, gap, sizeof gap);
			fprintf(f, "%*s... %s hidden\n", width, "", gap);
		}
	}
	if (total > n)
		fprintf(f, "%*s... %zu more frame%s%s\n", width, "", total - n,
			total - n == 1 ? "" : "s", w->truncated ? " (stack truncated)" : "");
	else if (w->truncated)
		fprintf(f, "%*s... (stack truncated at the depth limit)\n", width, "");
	free(d);
	if (r->o->by == REPORT_BY_STACK) {
		print_row_types(f, r, w, width);
		print_row_refs(f, w, width);
	}
}

/* A wall-clock time in UTC, so a report reads the same in every time zone. */
static const char *fmt_time(char *buf, size_t n, uint64_t ns)
{
	time_t t = (time_t)(ns / 1000000000u);
	struct tm tm;
	if (ns == 0 || !gmtime_r(&t, &tm)) {
		snprintf(buf, n, "unknown");
		return buf;
	}
	strftime(buf, n, "%Y-%m-%d %H:%M:%S UTC", &tm);
	return buf;
}

/* The sample rate in words. */
static const char *fmt_rate(char *buf, size_t n, uint64_t rate)
{
	char b[32];
	if (rate <= 1)
		snprintf(buf, n, "every allocation");
	else
		snprintf(buf, n, "one sample per %s on average", fmt_bytes(b, sizeof b, (double)rate));
	return buf;
}

/* A change in bytes, with its sign. */
const char *fmt_signed(char *buf, size_t n, int64_t v)
{
	if (v > 0) {
		buf[0] = '+';
		fmt_bytes(buf + 1, n - 1, (double)v);
	} else {
		fmt_bytes(buf, n, (double)v);
	}
	return buf;
}

/* How long the capture had run when s was taken, in seconds (0: unknown). */
static double capture_seconds(const struct snapshot *s)
{
	return s->capture_start_ns && s->time_ns > s->capture_start_ns
		       ? (double)(s->time_ns - s->capture_start_ns) / 1e9
		       : 0;
}

/* The header lines that describe one snapshot. */
static void print_snapshot_header(FILE *f, const struct input *in, const char *label)
{
	const struct snapshot *s = in->s;
	char b1[64], b2[64], b3[32];
	double cap = capture_seconds(s);

	fprintf(f, "%-10s %s\n", label, in->path);
	fprintf(f, "  process  pid %" PRId32 ", %s\n", s->pid, s->exe && *s->exe ? s->exe : "?");
	if (s->cmdline && *s->cmdline)
		fprintf(f, "  command  %s\n", s->cmdline);
	fprintf(f, "  taken    %s, after %s of capture\n", fmt_time(b1, sizeof b1, s->time_ns),
		fmt_seconds(b3, sizeof b3, cap));
	fprintf(f, "  sampling %s\n", fmt_rate(b2, sizeof b2, s->sample_rate));
	fprintf(f, "  samples  %" PRIu64 " live in %" PRIu64 " stacks", in->total.live_samples,
		in->live_stacks);
	if (s->dropped_stacks)
		fprintf(f, "; %" PRIu64 " stacks dropped (%s)", s->dropped_stacks,
			fmt_bytes(b1, sizeof b1, (double)s->dropped_bytes));
	fputc('\n', f);
}

/* The RSS that malloc does not hold (in use or kept free); mallinfo present. */
static uint64_t rest_of_rss(const struct snapshot *s)
{
	uint64_t held = s->mallinfo.in_use + s->mallinfo.free_bytes;
	return s->rss_bytes > held ? s->rss_bytes - held : 0;
}

/* The program's name as its user knows it: the first word of its command
 * line (a link's name: redis-server, not the redis-check-rdb it leads to;
 * python3, not python3.11), else its executable's. Into buf. */
static const char *program_name(const struct snapshot *s, char *buf, size_t n)
{
	if (s->cmdline && *s->cmdline) {
		size_t len = strcspn(s->cmdline, " ");
		snprintf(buf, n, "%.*s", (int)len, s->cmdline);
		return base_name(buf);
	}
	return s->exe && *s->exe ? base_name(s->exe) : "?";
}

/* One snapshot in one line: where it is from, when, and how it was sampled. */
void print_snapshot_line(FILE *f, const struct input *in, const char *label)
{
	const struct snapshot *s = in->s;
	char b1[64], b2[64], b3[32], name[256];
	double cap = capture_seconds(s);

	fprintf(f, "%-8s %s: pid %" PRId32 " %s, %s after %s of capture, %s", label, in->path,
		s->pid, program_name(s, name, sizeof name),
		fmt_time(b1, sizeof b1, s->time_ns), fmt_seconds(b3, sizeof b3, cap),
		s->sample_rate <= 1 ? "every allocation" : "1 sample per ");
	if (s->sample_rate > 1)
		fputs(fmt_bytes(b2, sizeof b2, (double)s->sample_rate), f);
	if (s->dropped_stacks)
		fprintf(f, "; %" PRIu64 " stacks dropped (%s)", s->dropped_stacks,
			fmt_bytes(b1, sizeof b1, (double)s->dropped_bytes));
	fputc('\n', f);
}

/* The allocator's view: live sampled heap against what malloc holds and RSS. */
static void print_memory(FILE *f, const struct input *in)
{
	const struct snapshot *s = in->s;
	char b[32];

	fprintf(f, "\nmemory\n");
	fprintf(f, "  %-32s %12s\n", "live heap (sampled estimate)",
		fmt_bytes(b, sizeof b, (double)in->total.live_bytes));
	if (s->mallinfo.present) {
		fprintf(f, "  %-32s %12s\n", "allocator in use",
			fmt_bytes(b, sizeof b, (double)s->mallinfo.in_use));
		fprintf(f, "  %-32s %12s\n", "allocator slack (free, kept)",
			fmt_bytes(b, sizeof b, (double)s->mallinfo.free_bytes));
		if (s->rss_bytes)
			fprintf(f, "  %-32s %12s\n", "rest of RSS (not heap)",
				fmt_bytes(b, sizeof b, (double)rest_of_rss(s)));
	}
	if (s->rss_bytes)
		fprintf(f, "  %-32s %12s\n", "RSS", fmt_bytes(b, sizeof b, (double)s->rss_bytes));
}

/* A standard error with its sign, in a column of width display cells ('±' is
 * two bytes and one cell). */
static void print_sd(FILE *f, double sd, int width)
{
	char b[32], c[40];
	snprintf(c, sizeof c, "\u00b1%s", fmt_bytes(b, sizeof b, sd));
	fprintf(f, "%*s", width + 1, c);
}

/* The sample count of a row, marked when it is too few to tell from noise. */
static void print_samples(FILE *f, const struct row *w, uint64_t n)
{
	/* (no count of samples is kept for what was allocated or freed) */
	if (n == UINT64_MAX)
		fprintf(f, " %7s%c", "-", w->weak ? '?' : ' ');
	else
		fprintf(f, " %7" PRIu64 "%c", n, w->weak ? '?' : ' ');
}

/* --sample alloc or temp: what the snapshot says of them, above the rows. */
static void print_volume(FILE *f, const struct input *in)
{
	char b1[32], b2[32];

	fprintf(f, "         allocated %s in %" PRIu64 " blocks since capture start",
		fmt_bytes(b1, sizeof b1, (double)in->total.alloc_bytes), in->total.alloc_blocks);
	if (in->s->has_temp)
		fprintf(f, "; temporary %s in %" PRIu64 " blocks (freed within %.1f ms)\n",
			fmt_bytes(b2, sizeof b2, (double)in->total.temp_bytes), in->total.temp_blocks,
			(double)in->s->temp_window_ns / 1e6);
	else
		fputs("; no temporary figures (a snapshot of an older agent)\n", f);
}

/* The note under a table that shows weak rows. */
static void print_weak_note(FILE *f, struct row **v, size_t n)
{
	size_t i;
	for (i = 0; i < n && !v[i]->weak; i++)
		;
	if (i < n)
		fprintf(f, "  ? too few samples to tell from sampling noise (within two standard errors,\n"
			   "    \u00b1 is one): listed after the rows with evidence\n");
}

/* Kinds in the order a report lists them: the allocator's first. */
static const uint32_t kind_order[] = {
	SNAP_REGION_HEAP, SNAP_REGION_ARENA, SNAP_REGION_ANON, SNAP_REGION_ANON_NAMED,
	SNAP_REGION_STACK, SNAP_REGION_SHMEM, SNAP_REGION_FILE, SNAP_REGION_OTHER,
};
#define NKINDS (sizeof kind_order / sizeof kind_order[0])

/* The named regions (files, [anon:] names, shared memory) of a kind worth a
 * line of their own: the n with the most resident bytes (in a diff, the most
 * change), into idx. */
static size_t top_named(const struct snapshot *a, const struct snapshot *b, uint32_t kind,
			size_t *idx, size_t n);

/* The resident bytes of the region of s with kind and name (0: none). */
static uint64_t region_rss(const struct snapshot *s, uint32_t kind, const char *name)
{
	for (size_t i = 0; s && i < s->nregions; i++)
		if (s->regions[i].kind == kind && s->regions[i].name && !strcmp(s->regions[i].name, name))
			return s->regions[i].rss;
	return 0;
}

static size_t top_named(const struct snapshot *a, const struct snapshot *b, uint32_t kind,
			size_t *idx, size_t n)
{
	int64_t best[8];
	size_t k = 0;

	if (n > 8)
		n = 8;
	for (size_t i = 0; i < b->nregions; i++) {
		const struct snap_region *g = &b->regions[i];
		int64_t v;
		size_t j;
		if (g->kind != kind || !g->name)
			continue;
		v = (int64_t)g->rss - (a ? (int64_t)region_rss(a, kind, g->name) : 0);
		if (v < 0)
			v = -v;
		if (v < 4096 * 16)
			continue;   /* a few pages: not worth a line */
		for (j = k; j > 0 && best[j - 1] < v; j--) {
			if (j < n) {
				best[j] = best[j - 1];
				idx[j] = idx[j - 1];
			}
		}
		if (j < n) {
			best[j] = v;
			idx[j] = i;
			if (k < n)
				k++;
		}
	}
	return k;
}

/* memwatch show: where the resident memory is, by kind of mapping. */
static void print_regions(FILE *f, const struct snapshot *s)
{
	struct kind_sums k;
	char b1[32], b2[32], b3[32];
	size_t top[3], nt;

	if (!s->has_regions)
		return;
	sum_kinds(s, &k);
	fprintf(f, "\nresident memory by mapping %21s %12s %12s %9s\n", "resident", "anonymous",
		"swap", "mappings");
	for (size_t i = 0; i < NKINDS; i++) {
		uint32_t kd = kind_order[i];
		if (!k.mappings[kd])
			continue;
		fprintf(f, "  %-32s %12s %12s %12s %9" PRIu64 "\n", maps_kind_name(kd),
			fmt_bytes(b1, sizeof b1, (double)k.rss[kd]),
			fmt_bytes(b2, sizeof b2, (double)k.anon[kd]),
			fmt_bytes(b3, sizeof b3, (double)k.swap[kd]), k.mappings[kd]);
		if (kd == SNAP_REGION_ANON && s->mallinfo.present && s->mallinfo.mmapped)
			fprintf(f, "    %-30s %12s\n", "of which malloc's large blocks",
				fmt_bytes(b1, sizeof b1, (double)s->mallinfo.mmapped));
		nt = top_named(NULL, s, kd, top, 3);
		for (size_t j = 0; j < nt; j++)
			fprintf(f, "    %-30s %12s\n", base_name(s->regions[top[j]].name),
				fmt_bytes(b1, sizeof b1, (double)s->regions[top[j]].rss));
	}
}

/* node: the line that says why a snapshot has none of its JavaScript objects
 * (which: "this snapshot", "the after snapshot"...), nothing when it has them
 * or is no node. */
static void print_js_note(FILE *f, const struct snapshot *s, const char *which)
{
	const char *why = s->js_why && s->js_why[0] ? s->js_why : "no reason recorded";
	if (s->js == SNAP_JS_NATIVE)
		fprintf(f, "  node: JavaScript objects not sampled: %s: captured native-only\n", why);
	else if (s->js == SNAP_JS_NOT_SAMPLED || s->js == SNAP_JS_STARTING)
		fprintf(f, "  node: JavaScript objects not sampled in %s: %s\n", which, why);
	else if (s->js == SNAP_JS_SAMPLED && s->js_why && s->js_why[0])
		/* the main thread's are there, not every worker thread's */
		fprintf(f, "  node: JavaScript objects not all sampled in %s: %s\n", which, why);
}

/* memwatch diff: what the two snapshots lack of node's JavaScript objects.
 * A before snapshot taken while V8's profiler was starting misses nothing
 * (it samples only what is allocated once started): it is not said. */
static void print_js_notes(FILE *f, const struct snapshot *a, const struct snapshot *b)
{
	if (b->js == SNAP_JS_NATIVE || a->js == SNAP_JS_NATIVE) {
		print_js_note(f, b->js == SNAP_JS_NATIVE ? b : a, "");
		return;
	}
	if (a->js == SNAP_JS_NOT_SAMPLED) {
		print_js_note(f, a, "the before snapshot");
		if (b->js == SNAP_JS_SAMPLED)
			fprintf(f, "    (the rows of kind js count all of their objects as new)\n");
	}
	if (b->js == SNAP_JS_SAMPLED)
		print_js_note(f, b, "the after snapshot");
	if (b->js == SNAP_JS_NOT_SAMPLED || b->js == SNAP_JS_STARTING) {
		print_js_note(f, b, "the after snapshot");
		fprintf(f, "    (V8's heap shows as the mappings of its pages, kind mmap, not by\n"
			"    JavaScript function)\n");
	}
}

/* memwatch show as a table: the snapshot, the memory, the largest stacks. */
static int table_show(FILE *f, struct report *r)
{
	const struct input *in = &r->in[0];
	enum report_sample sample = r->o->sample;
	struct row **v;
	size_t n, i;
	char b[32];
	const int width = 61;

	if (r->o->details) {
		print_snapshot_header(f, in, "snapshot");
		print_memory(f, in);
		print_regions(f, in->s);
	} else {
		print_snapshot_line(f, in, "snapshot");
		fprintf(f, "memory   live heap %s (%" PRIu64 " samples in %" PRIu64 " stacks)",
			fmt_bytes(b, sizeof b, (double)in->total.live_bytes), in->total.live_samples,
			in->live_stacks);
		if (in->s->mallinfo.present)
			fprintf(f, ", allocator in use %s",
				fmt_bytes(b, sizeof b, (double)in->s->mallinfo.in_use));
		if (in->s->rss_bytes)
			fprintf(f, ", RSS %s", fmt_bytes(b, sizeof b, (double)in->s->rss_bytes));
		fputc('\n', f);
	}
	if (in->s->python == SNAP_PYTHON_NATIVE)
		fprintf(f, "  CPython %u.%u captured native-only (memwatch cannot read it): its small objects "
			"and Python frames are not in these stacks\n",
			in->s->python_version >> 8, in->s->python_version & 0xff);
	print_js_note(f, in->s, "this snapshot");
	print_refsearch(f, in->s);
	if (sample != REPORT_SAMPLE_LIVE)
		print_volume(f, in);
	v = select_rows(r, pred_live, cmp_live, r->o->top, &n);
	fprintf(f, "\n%s by %s (%zu of %zu rows)\n", sample_words(sample), by_title(r->o->by),
		n, held_rows(r));
	fprintf(f, "%4s %12s %10s %7s %13s %8s  %s\n", "#", "bytes", "\u00b1", "share", "blocks",
		"samples", "where");
	for (i = 0; i < n; i++) {
		const struct row *w = v[i];
		uint64_t total = sample_bytes(&in->total, sample);
		double share = total ? 100.0 * (double)w->val[0] / (double)total : 0;
		fprintf(f, "%4zu %12s ", i + 1, fmt_bytes(b, sizeof b, (double)w->val[0]));
		print_sd(f, w->sd, 10);
		fprintf(f, " %6.1f%% %13" PRIu64, share, sample_blocks(&w->f[0], sample));
		print_samples(f, w, sample == REPORT_SAMPLE_LIVE ? w->f[0].live_samples : UINT64_MAX);
		fputs("  ", f);
		print_row_frames(f, r, w, width);
	}
	print_weak_note(f, v, n);
	free(v);
	return 0;
}

/* One section of the diff table (grown or shrunk rows). */
static void table_diff_rows(FILE *f, struct report *r, struct row **v, size_t n)
{
	char b1[32], b2[32], b3[32];
	const int width = 80;
	size_t i;

	fprintf(f, "%4s %11s %10s %11s %11s %10s %8s %-6s  %s\n", "#", "growth", "\u00b1", "before",
		"after", "blocks", "samples", "status", "where");
	for (i = 0; i < n; i++) {
		const struct row *w = v[i];
		enum report_sample sample = r->o->sample;
		int64_t db = (int64_t)sample_blocks(&w->f[1], sample) -
			     (int64_t)sample_blocks(&w->f[0], sample);
		fprintf(f, "%4zu %11s ", i + 1, fmt_signed(b1, sizeof b1, w->growth));
		print_sd(f, w->sd, 10);
		fprintf(f, " %11s %11s %+10" PRId64, fmt_bytes(b2, sizeof b2, (double)w->val[0]),
			fmt_bytes(b3, sizeof b3, (double)w->val[1]), db);
		print_samples(f, w, sample == REPORT_SAMPLE_LIVE ? w->f[1].live_samples : UINT64_MAX);
		fprintf(f, " %-6s  ", status_of(w));
		print_row_frames(f, r, w, width);
	}
	print_weak_note(f, v, n);
}

/* memwatch diff: the change of the resident memory by kind of mapping. */
static void print_regions_change(FILE *f, const struct snapshot *a, const struct snapshot *b)
{
	struct kind_sums ka, kb;
	char x[32], y[32], z[32];
	size_t top[3], nt;

	if (!a->has_regions || !b->has_regions)
		return;
	sum_kinds(a, &ka);
	sum_kinds(b, &kb);
	fprintf(f, "\nresident memory by mapping\n");
	for (size_t i = 0; i < NKINDS; i++) {
		uint32_t kd = kind_order[i];
		if (!ka.mappings[kd] && !kb.mappings[kd])
			continue;
		fprintf(f, "  %-28s %11s -> %11s  %s\n", maps_kind_name(kd),
			fmt_bytes(x, sizeof x, (double)ka.rss[kd]),
			fmt_bytes(y, sizeof y, (double)kb.rss[kd]),
			fmt_signed(z, sizeof z, (int64_t)kb.rss[kd] - (int64_t)ka.rss[kd]));
		if (kd == SNAP_REGION_ANON && a->mallinfo.present && b->mallinfo.present &&
		    (a->mallinfo.mmapped || b->mallinfo.mmapped))
			fprintf(f, "    %-26s %11s -> %11s  %s\n", "of which malloc's large blocks",
				fmt_bytes(x, sizeof x, (double)a->mallinfo.mmapped),
				fmt_bytes(y, sizeof y, (double)b->mallinfo.mmapped),
				fmt_signed(z, sizeof z,
					   (int64_t)b->mallinfo.mmapped - (int64_t)a->mallinfo.mmapped));
		nt = top_named(a, b, kd, top, 3);
		for (size_t j = 0; j < nt; j++) {
			const struct snap_region *g = &b->regions[top[j]];
			uint64_t before = region_rss(a, kd, g->name);
			fprintf(f, "    %-26s %11s -> %11s  %s\n", base_name(g->name),
				fmt_bytes(x, sizeof x, (double)before),
				fmt_bytes(y, sizeof y, (double)g->rss),
				fmt_signed(z, sizeof z, (int64_t)g->rss - (int64_t)before));
		}
	}
}

/* One line on how far the sampled stacks account for the RSS growth; when they
 * explain less than half, say where the rest may be, so that an empty or thin
 * report is never read as "nothing grew". */
static void print_explained(FILE *f, const struct report *r)
{
	const struct snapshot *a = r->in[0].s, *b = r->in[1].s;
	double share = explained_share(r);
	uint32_t kind = SNAP_REGION_OTHER;
	char g[32];
	/* a CPython captured native-only (a moment before the swap, or after
	 * finalization, is not said) */
	const struct snapshot *py = b->python == SNAP_PYTHON_NATIVE ? b : a->python == SNAP_PYTHON_NATIVE ? a : NULL;

	if (py)
		fprintf(f, "  CPython %u.%u captured native-only (memwatch cannot read it): its small objects "
			"and Python frames are not in these stacks\n",
			py->python_version >> 8, py->python_version & 0xff);
	print_js_notes(f, a, b);
	if (share < 0)
		return;
	fmt_signed(g, sizeof g, rss_growth(r));
	if (share >= 0.5) {
		fprintf(f, "  sampled stacks explain %.0f %% of the RSS growth (%s)\n", 100 * share, g);
		return;
	}
	fprintf(f, "  unexplained: sampled stacks explain only %.0f %% of the RSS growth (%s)\n", 100 * share,
		g);
	if (largest_region_growth(r, &kind) > 0 && py && kind == SNAP_REGION_ANON) {
		/* pymalloc's arenas are anonymous mappings of its own */
		fmt_bytes(g, sizeof g, (double)largest_region_growth(r, &kind));
		fprintf(f, "    %s of it is in anonymous mappings: the growth is in CPython's object arenas\n"
			"    (pymalloc), which this version's objects cannot be sampled in: see \"resident\n"
			"    memory by mapping\" below\n", g);
		return;
	}
	if (largest_region_growth(r, &kind) > 0) {
		fmt_bytes(g, sizeof g, (double)largest_region_growth(r, &kind));
		fprintf(f, "    %s of it is in %s%s: see \"resident memory by mapping\" below\n", g,
			maps_kind_name(kind),
			kind == SNAP_REGION_HEAP || kind == SNAP_REGION_ARENA
				? " (malloc's own, through calls memwatch does not sample)"
				: kind == SNAP_REGION_ANON ? " outside malloc" : "");
		return;
	}
	fprintf(f, "    %s\n",
		a->mallinfo.present && b->mallinfo.present
			? "the rest is memory no sampled call made (memory mapped before capture or by\n"
			  "    raw system calls, a runtime's own heap, thread stacks, files)"
			: "the rest is memory no sampled call made (memory mapped before capture or by\n"
			  "    raw system calls, a runtime's own heap, thread stacks, files), or in an\n"
			  "    allocator whose figures memwatch cannot read");
}

/* The rows of r by their status from the first snapshot to the last: new,
 * grown, shrunk, gone, unchanged (a stack whose blocks were all freed on both
 * sides holds nothing, and is not counted). */
static void status_counts(const struct report *r, size_t counts[5])
{
	for (size_t i = 0; i < r->nrows; i++) {
		const char *st = status_of(&r->rows[i]);
		if (r->rows[i].f[0].live_bytes == 0 && r->rows[i].f[1].live_bytes == 0)
			continue;
		counts[strcmp(st, "new") == 0 ? 0 : strcmp(st, "grown") == 0 ? 1 :
		       strcmp(st, "shrunk") == 0 ? 2 : strcmp(st, "gone") == 0 ? 3 : 4]++;
	}
}

/* diff's brief header, from r's first snapshot to its last: the two, the
 * change of the live heap and the RSS, the rows by status, how far the
 * sampled stacks account for the RSS growth (and where it went when they
 * explain less than half), the referrer search's outcome. A run's trend
 * starts with it too. */
void print_brief(FILE *f, const struct report *r)
{
	const struct input *a = &r->in[0], *b = &r->in[1];
	size_t counts[5] = { 0 };
	char x[32], y[32], z[32];

	status_counts(r, counts);
	print_snapshot_line(f, a, "before");
	print_snapshot_line(f, b, "after");
	fprintf(f, "change   live heap %s",
		fmt_signed(z, sizeof z, (int64_t)b->total.live_bytes - (int64_t)a->total.live_bytes));
	if (a->s->rss_bytes && b->s->rss_bytes)
		fprintf(f, ", RSS %s (%s -> %s)", fmt_signed(z, sizeof z, rss_growth(r)),
			fmt_bytes(x, sizeof x, (double)a->s->rss_bytes),
			fmt_bytes(y, sizeof y, (double)b->s->rss_bytes));
	fprintf(f, "; %zu new, %zu grown, %zu shrunk, %zu gone, %zu unchanged %s\n", counts[0],
		counts[1], counts[2], counts[3], counts[4], by_plural(r->o->by));
	print_explained(f, r);
	/* where the growth went, when the stacks do not say */
	if (explained_share(r) >= 0 && explained_share(r) < 0.5)
		print_regions_change(f, a->s, b->s);
	print_refsearch(f, b->s);
}

/* memwatch diff as a table: both snapshots, the change, then what grew and
 * what shrank. */
static int table_diff(FILE *f, struct report *r)
{
	const struct input *a = &r->in[0], *b = &r->in[1];
	size_t ng, ns, counts[5] = { 0 };
	struct row **grown, **shrunk;
	char x[32], y[32], z[32];

	if (!r->o->details) {
		print_brief(f, r);
		goto rows;
	}
	status_counts(r, counts);
	print_snapshot_header(f, a, "before");
	print_snapshot_header(f, b, "after");
	fprintf(f, "\nchange\n");
	fprintf(f, "  %-28s %11s -> %11s  %s\n", "live heap (sampled estimate)",
		fmt_bytes(x, sizeof x, (double)a->total.live_bytes),
		fmt_bytes(y, sizeof y, (double)b->total.live_bytes),
		fmt_signed(z, sizeof z, (int64_t)b->total.live_bytes - (int64_t)a->total.live_bytes));
	if (a->s->mallinfo.present && b->s->mallinfo.present)
		fprintf(f, "  %-28s %11s -> %11s  %s\n", "allocator in use",
			fmt_bytes(x, sizeof x, (double)a->s->mallinfo.in_use),
			fmt_bytes(y, sizeof y, (double)b->s->mallinfo.in_use),
			fmt_signed(z, sizeof z,
				   (int64_t)b->s->mallinfo.in_use - (int64_t)a->s->mallinfo.in_use));
	if (a->s->mallinfo.present && b->s->mallinfo.present && a->s->rss_bytes && b->s->rss_bytes)
		fprintf(f, "  %-28s %11s -> %11s  %s\n", "rest of RSS (not heap)",
			fmt_bytes(x, sizeof x, (double)rest_of_rss(a->s)),
			fmt_bytes(y, sizeof y, (double)rest_of_rss(b->s)),
			fmt_signed(z, sizeof z, (int64_t)rest_of_rss(b->s) - (int64_t)rest_of_rss(a->s)));
	if (a->s->rss_bytes && b->s->rss_bytes)
		fprintf(f, "  %-28s %11s -> %11s  %s\n", "RSS",
			fmt_bytes(x, sizeof x, (double)a->s->rss_bytes),
			fmt_bytes(y, sizeof y, (double)b->s->rss_bytes),
			fmt_signed(z, sizeof z, (int64_t)b->s->rss_bytes - (int64_t)a->s->rss_bytes));
	fprintf(f, "  %zu new, %zu grown, %zu shrunk, %zu gone, %zu unchanged %s\n", counts[0],
		counts[1], counts[2], counts[3], counts[4],
		by_plural(r->o->by));

	print_explained(f, r);
	print_regions_change(f, a->s, b->s);
	print_refsearch(f, b->s);
rows:
	grown = select_rows(r, pred_grown, cmp_growth_desc, r->o->top, &ng);
	shrunk = select_rows(r, pred_shrunk, cmp_growth_asc, r->o->top, &ns);
	if (r->o->sample != REPORT_SAMPLE_LIVE) {
		print_volume(f, &r->in[0]);
		print_volume(f, &r->in[1]);
	}
	fprintf(f, "\n%s by %s, largest first\n",
		r->o->sample == REPORT_SAMPLE_ALLOC ? "allocated between the snapshots"
		: r->o->sample == REPORT_SAMPLE_TEMP ? "temporary between the snapshots" : "growth",
		by_title(r->o->by));
	if (ng)
		table_diff_rows(f, r, grown, ng);
	else if (rss_growth(r) > 0)
		fprintf(f, "  (no sampled stack grew)\n");
	else
		fprintf(f, "  (nothing grew)\n");
	if (ns) {
		fprintf(f, "\nshrinkage, largest first\n");
		table_diff_rows(f, r, shrunk, ns);
	}
	free(grown);
	free(shrunk);
	return 0;
}


const struct report_writer report_table_writer = { "table", table_show, table_diff, false };
