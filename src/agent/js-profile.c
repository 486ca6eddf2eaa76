/* js-profile.c: V8's sampling heap profile as node's runtime reads it (see
 * js.c): v8::AllocationProfile's tree read, on the isolate's thread, into a
 * result of our own (a stack per node that holds live samples, the
 * functions named once by hash), the results of several isolates merged,
 * and a result added to a snapshot. */
#include "config.h"

#define _GNU_SOURCE 1
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "js.h"
#include "snapshot.h"
#include "v8api.h"

void result_free(struct js_result *r)
{
	size_t i;
	if (!r)
		return;
	for (i = 0; i < r->nstacks; i++)
		free(r->stacks[i].frames);
	for (i = 0; i < r->nnames; i++) {
		free(r->names[i].function);
		free(r->names[i].file);
	}
	free(r->stacks);
	free(r->names);
	free(r);
}

/* Room for element n of the malloc'd array *v. */
static bool grow(void **v, size_t n, size_t *cap, size_t elsize)
{
	void *x;
	if (n < *cap)
		return true;
	x = realloc(*v, (*cap ? *cap * 2 : 64) * elsize);
	if (!x)
		return false;
	*v = x;
	*cap = *cap ? *cap * 2 : 64;
	return true;
}

static uint64_t hash_str(uint64_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return (h ^ 0xff) * 0x100000001b3ull;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

static int cmp_name(const void *a, const void *b)
{
	uint64_t x = ((const struct js_name *)a)->hash, y = ((const struct js_name *)b)->hash;
	return x < y ? -1 : x > y;
}

/* One name per hash. */
void names_uniq(struct js_result *r)
{
	size_t u = 0, i;
	if (!r->nnames)
		return;
	qsort(r->names, r->nnames, sizeof *r->names, cmp_name);
	for (i = 0; i < r->nnames; i++) {
		if (u && r->names[u - 1].hash == r->names[i].hash) {
			free(r->names[i].function);
			free(r->names[i].file);
			continue;
		}
		r->names[u++] = r->names[i];
	}
	r->nnames = u;
}

/* Read the profile into a result of our own: one stack per node that holds
 * live samples, its frames the path from that node up to the root. */
struct js_result *read_profile(void *iso, int depth)
{
	const struct v8_layout *lay = mw_v8_lay;
	unsigned char hs[V8_HS_ROOM] __attribute__((aligned(16)));
	struct js_result *r = calloc(1, sizeof *r);
	void *prof, **vt, *root;
	const struct std_vector *sv;
	uint32_t *ids = NULL;
	size_t nids = 0, ncap = 0, scap = 0, i;
	struct { const void *n; uint32_t depth; uint32_t child; } *walk = NULL;
	uint64_t *path = NULL;
	size_t wcap = 0, top = 0;
	bool failed = false;

	if (!r)
		return NULL;
	if (!mw_v8_scope_open(hs, iso)) {
		free(r);
		return NULL;
	}
	prof = mw_v8.profile(mw_v8.heap_profiler(iso));
	if (!prof) {
		mw_v8_scope_close(hs);
		return r;
	}
	vt = *(void ***)prof;
	root = ((v8_root_fn *)vt[V8_VT_ROOT])(prof);
	sv = ((v8_samples_fn *)vt[V8_VT_SAMPLES])(prof);
	/* the node ids of the samples, sorted: live_samples by node */
	nids = (size_t)(sv->end - sv->begin) / lay->sample_size;
	if (nids && !(ids = malloc(nids * sizeof *ids)))
		failed = true;
	for (i = 0; !failed && i < nids; i++)
		ids[i] = V8_AT(sv->begin + i * lay->sample_size, lay->sample_node_id, uint32_t);
	if (ids)
		qsort(ids, nids, sizeof *ids, cmp_u32);
	path = calloc((size_t)depth + 2, sizeof *path);
	wcap = (size_t)depth + 2;
	walk = calloc(wcap, sizeof *walk);
	if (!path || !walk)
		failed = true;
	if (!failed && root) {
		walk[0].n = root;
		walk[0].depth = 0;
		walk[0].child = 0;
		top = 1;
	}
	while (!failed && top) {
		const void *n = walk[top - 1].n;
		const struct std_vector *ch = &V8_AT(n, lay->node_children, struct std_vector);
		const struct std_vector *al = &V8_AT(n, lay->node_allocations, struct std_vector);
		int line = V8_AT(n, lay->node_line, int), column = V8_AT(n, lay->node_column, int);
		uint32_t d = walk[top - 1].depth;
		size_t nch = (size_t)(ch->end - ch->begin) / sizeof(void *);
		if (walk[top - 1].child == 0 && d > 0) {
			/* first visit: this node's frame, then its own samples */
			char *fn = mw_v8_string(iso, V8_AT(n, lay->node_name, void *), "(anonymous)");
			char *file = mw_v8_string(iso, V8_AT(n, lay->node_script_name, void *), "");
			uint64_t h = 0xcbf29ce484222325ull;
			size_t na = (size_t)(al->end - al->begin) / lay->alloc_size;
			if (!fn || !file) {
				free(fn);
				free(file);
				failed = true;
				break;
			}
			h = hash_str(hash_str(h, fn), file);
			h = mw_splitmix64(h ^ ((uint64_t)(uint32_t)line << 32 | (uint32_t)column));
			h &= 0x7fffffffffffffffull;
			path[d - 1] = h;
			if (!grow((void **)&r->names, r->nnames, &ncap, sizeof *r->names)) {
				free(fn);
				free(file);
				failed = true;
				break;
			}
			r->names[r->nnames].hash = h;
			r->names[r->nnames].function = fn;
			r->names[r->nnames].file = file;
			r->names[r->nnames].line = line > 0 ? (uint32_t)line : 0;
			r->nnames++;
			if (na) {
				struct js_stack *st;
				size_t k;
				if (!grow((void **)&r->stacks, r->nstacks, &scap, sizeof *r->stacks)) {
					failed = true;
					break;
				}
				st = &r->stacks[r->nstacks];
				memset(st, 0, sizeof *st);
				st->frames = malloc(d * sizeof *st->frames);
				if (!st->frames) {
					failed = true;
					break;
				}
				for (k = 0; k < d; k++)
					st->frames[k] = path[d - 1 - k];
				st->nframes = d;
				for (k = 0; k < na; k++) {
					const char *a = al->begin + k * lay->alloc_size;
					unsigned count = V8_AT(a, lay->alloc_count, unsigned);
					st->bytes += (uint64_t)V8_AT(a, lay->alloc_bytes, size_t) * count;
					st->blocks += count;
				}
				if (ids) {
					uint32_t key = V8_AT(n, lay->node_id, uint32_t);
					uint32_t *p = bsearch(&key, ids, nids, sizeof *ids, cmp_u32);
					if (p) {
						while (p > ids && p[-1] == key)
							p--;
						while (p < ids + nids && *p == key) {
							st->samples++;
							p++;
						}
					}
				}
				r->nstacks++;
			}
		}
		if (walk[top - 1].child < nch && d < (uint32_t)depth && top < wcap) {
			const void *c = ((void *const *)ch->begin)[walk[top - 1].child++];
			walk[top].n = c;
			walk[top].depth = d + 1;
			walk[top].child = 0;
			top++;
			continue;
		}
		top--;
	}
	((v8_delete_fn *)vt[V8_VT_DELETE])(prof);
	mw_v8_scope_close(hs);
	free(ids);
	free(walk);
	free(path);
	if (failed) {
		result_free(r);
		return NULL;
	}
	names_uniq(r);
	return r;
}

/* One frame's name in a result: its hash, taking the strings. */
static bool name_add(struct js_result *r, size_t *cap, uint64_t h, char *fn, char *file, uint32_t line)
{
	if (!grow((void **)&r->names, r->nnames, cap, sizeof *r->names))
		return false;
	r->names[r->nnames].hash = h;
	r->names[r->nnames].function = fn;
	r->names[r->nnames].file = file;
	r->names[r->nnames].line = line;
	r->nnames++;
	return true;
}


/* The outermost frame of a worker thread's stacks. */
#define WORKER_FRAME "(worker thread)"
static uint64_t worker_hash(void)
{
	return mw_splitmix64(hash_str(0xcbf29ce484222325ull, WORKER_FRAME)) & 0x7fffffffffffffffull;
}

/* Move the stacks and names of from (freed) into into; a worker's stacks get
 * an outermost frame that says so. False when out of memory (from is freed
 * all the same, into keeps what it had). */
bool result_take(struct js_result *into, struct js_result *from, bool worker)
{
	size_t i, ncap = into->nnames, scap = into->nstacks;
	bool ok = true;
	if (!from)
		return true;
	if (worker) {
		char *fn = strdup(WORKER_FRAME), *file = strdup("");
		if (!fn || !file || !name_add(into, &ncap, worker_hash(), fn, file, 0)) {
			free(fn);
			free(file);
			ok = false;
		}
	}
	for (i = 0; ok && i < from->nnames; i++) {
		if (!name_add(into, &ncap, from->names[i].hash, from->names[i].function, from->names[i].file,
			      from->names[i].line)) {
			ok = false;
			break;
		}
		from->names[i].function = from->names[i].file = NULL;
	}
	for (i = 0; ok && i < from->nstacks; i++) {
		struct js_stack *st = &from->stacks[i];
		if (worker) {
			uint64_t *f = realloc(st->frames, (st->nframes + 1) * sizeof *f);
			if (!f) {
				ok = false;
				break;
			}
			f[st->nframes++] = worker_hash();
			st->frames = f;
		}
		if (!grow((void **)&into->stacks, into->nstacks, &scap, sizeof *into->stacks)) {
			ok = false;
			break;
		}
		into->stacks[into->nstacks++] = *st;
		st->frames = NULL;
	}
	names_uniq(into);
	result_free(from);
	return ok;
}

/* Add result r (freed) to s: its stacks as stacks of kind js, at most depth
 * frames deep, whose frames are in a module "[js]" named in s's symbol
 * section. 0, or -1 (ENOMEM). */
int js_result_add(struct snapshot *s, struct js_result *r, int depth)
{
	struct snap_module *m;
	struct snap_symbol *y;
	struct snap_stack *st;
	uint32_t mod;
	size_t i, k;
	int ret = -1;

	if (!r->nstacks) {
		result_free(r);
		return 0;
	}
	m = realloc(s->modules, (s->nmodules + 1) * sizeof *m);
	if (!m)
		goto out;
	s->modules = m;
	mod = (uint32_t)s->nmodules;
	memset(&m[mod], 0, sizeof m[mod]);
	if (!(m[mod].path = strdup("[js]")))
		goto out;
	s->nmodules++;
	y = realloc(s->symbols, (s->nsymbols + r->nnames) * sizeof *y);
	if (!y)
		goto out;
	s->symbols = y;
	for (i = 0; i < r->nnames; i++) {
		struct snap_symbol *d = &s->symbols[s->nsymbols];
		memset(d, 0, sizeof *d);
		if (!(d->frames = calloc(1, sizeof *d->frames)))
			goto out;
		d->module = mod;
		d->offset = r->names[i].hash;
		d->nframes = 1;
		d->frames->function = r->names[i].function;
		d->frames->file = r->names[i].file[0] ? r->names[i].file : NULL;
		if (!r->names[i].file[0])
			free(r->names[i].file);
		d->frames->line = r->names[i].line;
		r->names[i].function = r->names[i].file = NULL;
		s->nsymbols++;
	}
	st = realloc(s->stacks, (s->nstacks + r->nstacks) * sizeof *st);
	if (!st)
		goto out;
	s->stacks = st;
	for (i = 0; i < r->nstacks; i++) {
		struct snap_stack *d = &s->stacks[s->nstacks];
		memset(d, 0, sizeof *d);
		if (!(d->frames = calloc(r->stacks[i].nframes ? r->stacks[i].nframes : 1, sizeof *d->frames)))
			goto out;
		d->flags = SNAP_STACK_MMAP | SNAP_STACK_JS;
		if (r->stacks[i].nframes >= (uint32_t)depth)
			d->flags |= SNAP_STACK_TRUNCATED;
		d->nframes = r->stacks[i].nframes;
		for (k = 0; k < d->nframes; k++) {
			d->frames[k].module = mod;
			d->frames[k].offset = r->stacks[i].frames[k];
		}
		d->live_bytes = d->alloc_bytes = r->stacks[i].bytes;
		d->live_blocks = d->alloc_blocks = r->stacks[i].blocks;
		d->live_samples = r->stacks[i].samples;
		s->nstacks++;
	}
	ret = 0;
out:
	result_free(r);
	return ret;
}
