/* perfmap.c: names for JIT frames, from the runtime's perf map. */
#include "config.h"
#include "perfmap.h"
#include "proc.h"
#include "util.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Lines of perf maps written by a runtime that lives long can be many; a map
 * larger than this is read up to it. */
#define PERFMAP_MAX_ENTRIES 4000000

static int cmp_start(const void *a, const void *b)
{
	const struct perfmap_entry *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->line < y->line ? -1 : x->line > y->line;
}

int perfmap_parse(FILE *f, struct perfmap_entry **out, size_t *n)
{
	struct perfmap_entry *v = NULL;
	size_t nv = 0, cap = 0;
	char *line = NULL;
	size_t linecap = 0;
	ssize_t len;

	while ((len = getline(&line, &linecap, f)) > 0 && nv < PERFMAP_MAX_ENTRIES) {
		char *p = line, *end;
		uint64_t start, size;

		if (line[len - 1] == '\n')
			line[--len] = '\0';
		start = strtoull(p, &end, 16);
		if (end == p || *end != ' ')
			continue;
		p = end + 1;
		size = strtoull(p, &end, 16);
		if (end == p || *end != ' ' || !end[1] || size == 0)
			continue;
		if (nv == cap) {
			size_t ncap = cap ? cap * 2 : 256;
			struct perfmap_entry *nvv = realloc(v, ncap * sizeof *v);
			if (!nvv)
				goto oom;
			v = nvv;
			cap = ncap;
		}
		v[nv].start = start;
		v[nv].size = size;
		v[nv].line = nv;
		v[nv].name = strdup(end + 1);
		if (!v[nv].name)
			goto oom;
		nv++;
	}
	free(line);
	/* a runtime appends: a function compiled again later at the same place
	 * comes after, and sorts after, so the later wins */
	if (nv)
		qsort(v, nv, sizeof *v, cmp_start);
	*out = v;
	*n = nv;
	return 0;
oom:
	free(line);
	perfmap_free(v, nv);
	return -1;
}

void perfmap_free(struct perfmap_entry *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i].name);
	free(v);
}

const struct perfmap_entry *perfmap_find(const struct perfmap_entry *v, size_t n, uint64_t a)
{
	size_t lo = 0, hi = n;

	/* the last entry starting at or below a */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (v[mid].start <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	return a - v[lo - 1].start < v[lo - 1].size ? &v[lo - 1] : NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

size_t perfmap_embed(struct snapshot *s, pid_t pid)
{
	char path[96];

	snprintf(path, sizeof path, "/proc/%d/root/tmp/perf-%d.map", (int)pid, proc_inner_pid((int)pid));
	return perfmap_embed_file(s, path);
}

char *perfmap_path_here(pid_t pid)
{
	char theirs[96], *ours;
	struct stat a, b;
	int inner = proc_inner_pid((int)pid);

	snprintf(theirs, sizeof theirs, "/proc/%d/root/tmp/perf-%d.map", (int)pid, inner);
	ours = xasprintf("/tmp/perf-%d.map", inner);
	if (stat(theirs, &a) == 0 && stat(ours, &b) == 0 && a.st_dev == b.st_dev &&
	    a.st_ino == b.st_ino)
		return ours;
	free(ours);
	return NULL;
}

size_t perfmap_embed_file(struct snapshot *s, const char *path)
{
	struct perfmap_entry *v;
	uint64_t *addrs = NULL, *had = NULL;
	size_t n, na = 0, cap = 0, named = 0, nhad = 0;
	FILE *f;

	f = fopen(path, "re");
	if (!f)
		return 0;
	if (perfmap_parse(f, &v, &n) < 0 || n == 0) {
		fclose(f);
		return 0;
	}
	fclose(f);
	/* the distinct addresses outside every module */
	for (size_t i = 0; i < s->nstacks; i++) {
		for (uint32_t j = 0; j < s->stacks[i].nframes; j++) {
			const struct snap_frame *fr = &s->stacks[i].frames[j];
			if (fr->module != SNAP_NO_MODULE || fr->offset == 0)
				continue;
			if (na == cap) {
				cap = cap ? cap * 2 : 256;
				addrs = xrealloc(addrs, cap * sizeof *addrs);
			}
			addrs[na++] = fr->offset;
		}
	}
	if (na)
		qsort(addrs, na, sizeof *addrs, cmp_u64);
	/* addresses outside every module that the symbol section names already
	 * (an earlier read of a map) keep their names; the section may hold
	 * others, such as the names of a runtime's own frames */
	for (size_t i = 0; i < s->nsymbols; i++)
		if (s->symbols[i].module == SNAP_NO_MODULE)
			nhad++;
	if (nhad) {
		had = xcalloc(nhad, sizeof *had);
		nhad = 0;
		for (size_t i = 0; i < s->nsymbols; i++)
			if (s->symbols[i].module == SNAP_NO_MODULE)
				had[nhad++] = s->symbols[i].offset;
		qsort(had, nhad, sizeof *had, cmp_u64);
	}
	for (size_t i = 0; i < na; i++) {
		const struct perfmap_entry *e;
		struct snap_symbol *y;
		if (i && addrs[i] == addrs[i - 1])
			continue;
		if (nhad && bsearch(&addrs[i], had, nhad, sizeof *had, cmp_u64))
			continue;
		/* a return address: the call is the byte before it */
		e = perfmap_find(v, n, addrs[i] - 1);
		if (!e)
			continue;
		s->symbols = xrealloc(s->symbols, (s->nsymbols + 1) * sizeof *s->symbols);
		y = &s->symbols[s->nsymbols++];
		y->module = SNAP_NO_MODULE;
		y->offset = addrs[i];
		y->nframes = 1;
		y->frames = xcalloc(1, sizeof *y->frames);
		y->frames[0].function = xstrdup(e->name);
		named++;
	}
	free(addrs);
	free(had);
	perfmap_free(v, n);
	return named;
}
