/* report-json.c: --format json; the schema is in memwatch(1), REPORTS. */
#include "config.h"
#include "report-internal.h"
#include "maps.h"
#include "util.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define JSON_VERSION 1

/* --------------------------------------------------------------------------- */
/* JSON output; the schema is in memwatch(1), REPORTS. */

/* The length of the valid UTF-8 sequence at p, or 0. */
static int utf8_len(const unsigned char *p)
{
	int n, i;
	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		n = 2;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		n = 3;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		n = 4;
	else
		return 0;
	for (i = 1; i < n; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

/* A JSON string (or null); bytes that are not UTF-8 (a path from another
 * system) become U+FFFD, so the document always parses. */
void json_str(FILE *f, const char *s)
{
	const unsigned char *p;
	int n;

	if (!s) {
		fputs("null", f);
		return;
	}
	fputc('"', f);
	for (p = (const unsigned char *)s; *p; p += n) {
		n = utf8_len(p);
		if (n == 0) {
			fputs("\\ufffd", f);
			n = 1;
		} else if (*p == '"' || *p == '\\') {
			fprintf(f, "\\%c", *p);
		} else if (*p < 0x20 || *p == 0x7f) {
			fprintf(f, "\\u%04x", *p);
		} else {
			fwrite(p, 1, (size_t)n, f);
		}
	}
	fputc('"', f);
}

/* The SNAP object of the JSON schema. */
static void json_snapshot(FILE *f, const struct input *in)
{
	const struct snapshot *s = in->s;
	fputs("{\"path\": ", f);
	json_str(f, in->path);
	fprintf(f, ", \"pid\": %" PRId32 ", \"exe\": ", s->pid);
	json_str(f, s->exe);
	fputs(", \"cmdline\": ", f);
	json_str(f, s->cmdline);
	fprintf(f,
		", \"time_ns\": %" PRIu64 ", \"capture_start_ns\": %" PRIu64
		", \"sample_rate\": %" PRIu64 ", \"rss_bytes\": %" PRIu64 ", \"stacks\": %zu"
		", \"dropped_stacks\": %" PRIu64 ", \"dropped_bytes\": %" PRIu64
		", \"live_bytes\": %" PRIu64 ", \"live_blocks\": %" PRIu64
		", \"live_samples\": %" PRIu64 ", \"python\": ",
		s->time_ns, s->capture_start_ns, s->sample_rate, s->rss_bytes, s->nstacks,
		s->dropped_stacks, s->dropped_bytes, in->total.live_bytes, in->total.live_blocks,
		in->total.live_samples);
	if (s->python)
		fprintf(f, "{\"state\": \"%s\", \"version\": \"%u.%u\"}",
			s->python == SNAP_PYTHON_SAMPLED ? "sampled" :
			s->python == SNAP_PYTHON_NATIVE ? "native-only" : "not-sampled",
			s->python_version >> 8, s->python_version & 0xff);
	else
		fputs("null", f);
	fputs(", \"js\": ", f);
	if (s->js) {
		fprintf(f, "{\"state\": \"%s\", \"version\": ",
			s->js == SNAP_JS_SAMPLED ? "sampled" :
			s->js == SNAP_JS_NATIVE ? "native-only" :
			s->js == SNAP_JS_STARTING ? "starting" : "not-sampled");
		json_str(f, s->js_version);
		fputs(", \"why\": ", f);
		json_str(f, s->js_why);
		fputc('}', f);
	} else
		fputs("null", f);
	fputs(", \"mallinfo\": ", f);
	if (s->mallinfo.present)
		fprintf(f,
			"{\"arena\": %" PRIu64 ", \"mmapped\": %" PRIu64 ", \"in_use\": %" PRIu64
			", \"free_bytes\": %" PRIu64 ", \"releasable\": %" PRIu64 "}",
			s->mallinfo.arena, s->mallinfo.mmapped, s->mallinfo.in_use,
			s->mallinfo.free_bytes, s->mallinfo.releasable);
	else
		fputs("null", f);
	fputs(", \"referrers\": ", f);
	if (s->has_refs) {
		const struct snap_refsearch *q = &s->refsearch;
		static const char *const status[] = { "done", "time-limit", "object-limit", "no-gil",
						      "not-searched" };
		fprintf(f, "{\"status\": \"%s\", \"limit_ns\": %" PRIu64 ", \"max_objects\": %" PRIu64
			", \"pause_ns\": %" PRIu64 ", \"visited\": %" PRIu64 ", \"tracked\": %" PRIu64
			", \"passes\": %" PRIu32 ", \"chains\": %zu, \"note\": ",
			status[q->status <= SNAP_REFS_UNAVAILABLE ? q->status : SNAP_REFS_UNAVAILABLE],
			q->limit_ns, q->max_objects, q->pause_ns, q->visited, q->tracked, q->passes,
			s->nchains);
		json_str(f, q->note);
		fputc('}', f);
	} else {
		fputs("null", f);
	}
	fputs(", \"regions\": ", f);
	if (s->has_regions) {
		fputc('[', f);
		for (size_t i = 0; i < s->nregions; i++) {
			const struct snap_region *g = &s->regions[i];
			fprintf(f, "%s{\"kind\": \"%s\", \"name\": ", i ? ", " : "",
				maps_kind_name(g->kind));
			json_str(f, g->name);
			fprintf(f,
				", \"mappings\": %" PRIu64 ", \"size\": %" PRIu64 ", \"rss\": %" PRIu64
				", \"anon\": %" PRIu64 ", \"swap\": %" PRIu64 "}",
				g->mappings, g->size, g->rss, g->anon, g->swap);
		}
		fputs("]}", f);
	} else {
		fputs("null}", f);
	}
}

/* CPython: what keeps a row's objects alive ("kept_alive_by": the chains as
 * text), and what one object of its type holds ("holds"). */
static void json_refs(FILE *f, const struct row *w)
{
	char **t;
	size_t n = row_chain_texts(w, 5, &t);

	if (n) {
		fputs("\"kept_alive_by\": [", f);
		for (size_t i = 0; i < n; i++) {
			if (i)
				fputs(", ", f);
			json_str(f, t[i]);
			free(t[i]);
		}
		fputs("],\n    ", f);
	}
	free(t);
	if (w->forward) {
		const struct snap_forward *fw = w->forward;
		fprintf(f, "\"holds\": {\"bytes\": %" PRIu64 ", \"referents\": [", fw->bytes);
		for (uint32_t i = 0; i < fw->nreferents; i++) {
			fputs(i ? ", {\"type\": " : "{\"type\": ", f);
			json_str(f, fw->referents[i].type);
			fprintf(f, ", \"count\": %" PRIu64 ", \"bytes\": %" PRIu64 "}", fw->referents[i].count,
				fw->referents[i].bytes);
		}
		fputs("]},\n    ", f);
	}
}

/* By type, a row's "type" and the "lines" that allocated its objects; by
 * stack, the "types" of the objects its stacks hold: each with its bytes and
 * blocks (before and after in a diff), the largest first. */
static void json_parts(FILE *f, struct report *r, const struct row *w)
{
	struct row_part *p;
	size_t n = row_top_parts(r, w, r->o->by == REPORT_BY_TYPE ? 10 : 5, &p);
	bool diff = r->nin > 1;

	if (r->o->by != REPORT_BY_TYPE && !w->nparts) {
		free(p);
		return;     /* no object read: the row as before */
	}
	if (r->o->by == REPORT_BY_TYPE) {
		fputs("\"type\": ", f);
		json_str(f, w->type);
		fputs(", \"lines\": [", f);
	} else {
		fputs("\"types\": [", f);
	}
	for (size_t i = 0; i < n; i++) {
		fputs(i ? ", {" : "{", f);
		if (r->o->by == REPORT_BY_TYPE) {
			fputs("\"function\": ", f);
			json_str(f, p[i].name);
			fputs(", \"file\": ", f);
			json_str(f, p[i].file);
			fprintf(f, ", \"line\": %" PRIu32, p[i].line);
		} else {
			fputs("\"type\": ", f);
			json_str(f, p[i].name);
		}
		if (diff)
			fprintf(f, ", \"before_bytes\": %" PRIu64 ", \"after_bytes\": %" PRIu64
				   ", \"before_blocks\": %" PRIu64 ", \"after_blocks\": %" PRIu64 "}",
				p[i].bytes[0], p[i].bytes[1], p[i].blocks[0], p[i].blocks[1]);
		else
			fprintf(f, ", \"live_bytes\": %" PRIu64 ", \"live_blocks\": %" PRIu64 "}",
				p[i].bytes[0], p[i].blocks[0]);
	}
	fputs("],\n    ", f);
	free(p);
	json_refs(f, w);
}

/* A row's "frames" array, innermost first: the frames all its stacks share. */
void json_frames(FILE *f, struct report *r, const struct row *w)
{
	struct dframe *d;
	size_t head, i;
	size_t n = row_frames(r, w, r->o->depth_set ? r->o->depth : 0, true, &d, NULL, &head, NULL, 0);

	/* the frame tables head the row with: the user's own */
	fprintf(f, "\"merged\": %s, \"head\": %zu, \"frames\": [", w->segs ? "true" : "false",
		r->o->by == REPORT_BY_STACK ? head : 0);
	for (i = 0; i < n; i++) {
		fputs(i ? ",\n      {\"function\": " : "\n      {\"function\": ", f);
		json_str(f, d[i].function);
		fputs(", \"file\": ", f);
		json_str(f, d[i].file);
		fprintf(f, ", \"line\": %" PRIu32 ", \"inlined\": %s, \"module\": ", d[i].line,
			d[i].inlined ? "true" : "false");
		json_str(f, d[i].gmod == SYM_NO_MODULE ? NULL : symbolizer_module_path(r->z, d[i].gmod));
		fputs(", \"build_id\": ", f);
		json_str(f, d[i].gmod == SYM_NO_MODULE ? NULL
						      : symbolizer_module_build_id(r->z, d[i].gmod));
		fprintf(f, ", \"offset\": \"0x%" PRIx64 "\"", d[i].offset);
		/* where the row's stacks differ: how many frames are left out */
		if (d[i].after.hi)
			fprintf(f, ", \"left_out\": {\"min\": %" PRIu32 ", \"max\": %" PRIu32 "}",
				d[i].after.lo, d[i].after.hi);
		fputc('}', f);
	}
	fputc(']', f);
	free(d);
}

const char *by_name(enum report_by by)
{
	return by == REPORT_BY_STACK ? "stack" : by == REPORT_BY_FUNCTION ? "function" :
	       by == REPORT_BY_TYPE ? "type" : "line";
}

/* --sample as it is given. */
static const char *sample_name(enum report_sample sample)
{
	return sample == REPORT_SAMPLE_ALLOC ? "alloc" : sample == REPORT_SAMPLE_TEMP ? "temp" : "live";
}

/* memwatch show as JSON. */
static int json_show(FILE *f, struct report *r)
{
	struct row **v;
	size_t n, i;

	v = select_rows(r, pred_live, cmp_live, r->o->top, &n);
	fprintf(f, "{\"version\": %d, \"kind\": \"show\", \"by\": \"%s\", \"sample\": \"%s\",\n \"snapshot\": ",
		JSON_VERSION, by_name(r->o->by), sample_name(r->o->sample));
	json_snapshot(f, &r->in[0]);
	fprintf(f, ",\n \"rows_total\": %zu,\n \"rows\": [", held_rows(r));
	for (i = 0; i < n; i++) {
		const struct row *w = v[i];
		uint64_t total = sample_bytes(&r->in[0].total, r->o->sample);
		double share = total ? (double)w->val[0] / (double)total : 0;
		fprintf(f,
			"%s\n  {\"rank\": %zu, \"kind\": \"%s\", \"live_bytes\": %" PRIu64 ", \"live_blocks\": %" PRIu64
			", \"live_samples\": %" PRIu64 ", \"share\": %.4f, \"alloc_bytes\": %" PRIu64
			", \"alloc_blocks\": %" PRIu64 ", \"temp_bytes\": %" PRIu64 ", \"temp_blocks\": %" PRIu64
			", \"stderr_bytes\": %.0f, \"weak\": %s"
			", \"truncated\": %s,\n    ",
			i ? "," : "", i + 1, snap_kind_name(w->kind), w->f[0].live_bytes, w->f[0].live_blocks,
			w->f[0].live_samples, share, w->f[0].alloc_bytes, w->f[0].alloc_blocks,
			w->f[0].temp_bytes, w->f[0].temp_blocks, w->sd,
			w->weak ? "true" : "false", w->truncated ? "true" : "false");
		json_parts(f, r, w);
		json_frames(f, r, w);
		fputc('}', f);
	}
	fputs("\n ]\n}\n", f);
	free(v);
	return 0;
}

/* The ROW objects of a diff. */
static void json_diff_rows(FILE *f, struct report *r, struct row **v, size_t n)
{
	enum report_sample sample = r->o->sample;
	size_t i;
	for (i = 0; i < n; i++) {
		const struct row *w = v[i];
		fprintf(f,
			"%s\n  {\"rank\": %zu, \"status\": \"%s\", \"kind\": \"%s\", \"growth_bytes\": %" PRId64
			", \"growth_blocks\": %" PRId64 ", \"before_bytes\": %" PRIu64
			", \"after_bytes\": %" PRIu64 ", \"before_blocks\": %" PRIu64
			", \"after_blocks\": %" PRIu64 ", \"before_samples\": %" PRIu64
			", \"after_samples\": %" PRIu64 ", \"stderr_bytes\": %.0f, \"weak\": %s"
			", \"truncated\": %s,\n    ",
			i ? "," : "", i + 1, status_of(w), snap_kind_name(w->kind), w->growth,
			(int64_t)sample_blocks(&w->f[1], sample) - (int64_t)sample_blocks(&w->f[0], sample),
			w->val[0], w->val[1], sample_blocks(&w->f[0], sample),
			sample_blocks(&w->f[1], sample), w->f[0].live_samples, w->f[1].live_samples, w->sd,
			w->weak ? "true" : "false", w->truncated ? "true" : "false");
		json_parts(f, r, w);
		json_frames(f, r, w);
		fputc('}', f);
	}
}

/* memwatch diff as JSON. */
static int json_diff(FILE *f, struct report *r)
{
	struct row **grown, **shrunk;
	size_t ng, ns;

	grown = select_rows(r, pred_grown, cmp_growth_desc, r->o->top, &ng);
	shrunk = select_rows(r, pred_shrunk, cmp_growth_asc, r->o->top, &ns);
	fprintf(f, "{\"version\": %d, \"kind\": \"diff\", \"by\": \"%s\", \"sample\": \"%s\",\n \"before\": ",
		JSON_VERSION, by_name(r->o->by), sample_name(r->o->sample));
	json_snapshot(f, &r->in[0]);
	fputs(",\n \"after\": ", f);
	json_snapshot(f, &r->in[1]);
	fprintf(f, ",\n \"growth_bytes\": %" PRId64 ",\n \"rss_growth_bytes\": %" PRId64
		   ",\n \"explained\": ",
		(int64_t)r->in[1].total.live_bytes - (int64_t)r->in[0].total.live_bytes, rss_growth(r));
	if (explained_share(r) < 0)
		fputs("null", f);
	else
		fprintf(f, "%.4f", explained_share(r));
	fprintf(f, ",\n \"rows_total\": %zu,\n \"grown\": [", held_rows(r));
	json_diff_rows(f, r, grown, ng);
	fputs("\n ],\n \"shrunk\": [", f);
	json_diff_rows(f, r, shrunk, ns);
	fputs("\n ]\n}\n", f);
	free(grown);
	free(shrunk);
	return 0;
}

const struct report_writer report_json_writer = { "json", json_show, json_diff, false };
