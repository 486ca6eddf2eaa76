/* test_maps.c: unit tests for the smaps breakdown by kind of mapping, and for
 * its round trip through the snapshot's regions section. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "maps.h"
#include "perfmap.h"
#include "snapshot.h"
#include "util.h"

/* One mapping of smaps text with its figures in kB. */
#define MAP(range, perms, inode, path, size, rss, anon, swap)                                 \
	range " " perms " 00000000 00:00 " inode " " path "\n"                                \
	"Size:           " #size " kB\n"                                                     \
	"KernelPageSize:        4 kB\n"                                                       \
	"Rss:            " #rss " kB\n"                                                      \
	"Pss:            " #rss " kB\n"                                                      \
	"Anonymous:      " #anon " kB\n"                                                     \
	"Swap:           " #swap " kB\n"                                                     \
	"VmFlags: rd wr mr mw me ac sd\n"

static const char smaps[] =
	MAP("00400000-00401000", "r--p", "123", "/usr/bin/app", 4, 4, 0, 0)
	MAP("00401000-00402000", "r-xp", "123", "/usr/bin/app", 4, 4, 0, 0)
	MAP("01000000-01400000", "rw-p", "0", "[heap]", 4096, 4000, 4000, 8)
	/* a malloc arena: 64 MiB aligned, in use 1 MiB, the rest reserved */
	MAP("7f0000000000-7f0000100000", "rw-p", "0", "", 1024, 1000, 1000, 0)
	MAP("7f0000100000-7f0004000000", "---p", "0", "", 64512, 0, 0, 0)
	/* plain mmap */
	MAP("7f1000000000-7f1000800000", "rw-p", "0", "", 8192, 8000, 8000, 0)
	/* a thread stack above its guard page, its thread's stack pointer in it */
	MAP("7f2000000000-7f2000001000", "---p", "0", "", 4, 0, 0, 0)
	MAP("7f2000001000-7f2000801000", "rw-p", "0", "", 8192, 16, 16, 0)
	/* a thread stack known by its thread's stack pointer (no guard) */
	MAP("7f3000000000-7f3000100000", "rw-p", "0", "", 1024, 12, 12, 0)
	MAP("7f4000000000-7f4000100000", "rw-p", "0", "[anon:v8 heap]", 1024, 512, 512, 0)
	MAP("7f4100000000-7f4100100000", "rw-s", "77", "/memfd:pool (deleted)", 1024, 256, 0, 0)
	MAP("7f4200000000-7f4200100000", "rw-s", "0", "", 1024, 128, 0, 0)
	MAP("7f5000000000-7f5000200000", "r--p", "99", "/usr/lib/libc.so.6", 2048, 1500, 0, 0)
	MAP("7f5000200000-7f5000201000", "rw-p", "99", "/usr/lib/libc.so.6", 4, 4, 4, 0)
	/* another allocator's region (a mimalloc segment): 64 MiB aligned, above
	 * a PROT_NONE reserve, with no glibc heap header: anonymous */
	MAP("7f5ff0000000-7f6000000000", "---p", "0", "", 262144, 0, 0, 0)
	MAP("7f6000000000-7f6002000000", "rw-p", "0", "", 32768, 20000, 20000, 0)
	MAP("7ffc00000000-7ffc00021000", "rw-p", "0", "[stack]", 132, 32, 32, 0)
	MAP("7ffc00100000-7ffc00102000", "r-xp", "0", "[vdso]", 8, 8, 0, 0);

static const struct snap_region *find(const struct snap_region *v, size_t n, uint32_t kind,
				      const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].kind == kind &&
		    (name ? v[i].name && !strcmp(v[i].name, name) : v[i].name == NULL))
			return &v[i];
	return NULL;
}

/* The memory of the process smaps describes: a glibc heap_info at the arena
 * (its state right after a 48-byte header, its first heap, 1 MiB in use and
 * read-write); zeros elsewhere. */
static bool fake_mem(void *ctx, uint64_t addr, void *buf, size_t len)
{
	uint64_t h[4] = { 0x7f0000000000 + 48, 0, 1 << 20, 1 << 20 };
	(void)ctx;
	memset(buf, 0, len);
	if (addr == 0x7f0000000000)
		memcpy(buf, h, len < sizeof h ? len : sizeof h);
	return true;
}

static void test_kinds(void **state)
{
	uint64_t sps[] = { 0x7f3000080000, 0x7f2000800000 };
	struct snap_region *v = NULL;
	size_t n = 0;
	const struct snap_region *g;
	FILE *f = fmemopen((void *)smaps, sizeof smaps - 1, "r");
	(void)state;

	assert_non_null(f);
	assert_int_equal(maps_parse(f, sps, 2, fake_mem, NULL, &v, &n), 0);
	fclose(f);

	assert_non_null(g = find(v, n, SNAP_REGION_HEAP, NULL));
	assert_int_equal(g->rss, 4000 * 1024);
	assert_int_equal(g->swap, 8 * 1024);
	assert_non_null(g = find(v, n, SNAP_REGION_ARENA, NULL));
	assert_int_equal(g->mappings, 2);
	assert_int_equal(g->rss, 1000 * 1024);
	assert_int_equal(g->size, 65536 * 1024);
	assert_non_null(g = find(v, n, SNAP_REGION_ANON, NULL));
	assert_int_equal(g->rss, (8000 + 20000) * 1024);
	assert_int_equal(g->mappings, 4);    /* the mmap, the guard page, the segment and its reserve */
	assert_non_null(g = find(v, n, SNAP_REGION_STACK, NULL));
	assert_int_equal(g->mappings, 3);    /* [stack], and two by their sp */
	assert_int_equal(g->rss, (16 + 12 + 32) * 1024);
	assert_non_null(g = find(v, n, SNAP_REGION_ANON_NAMED, "[anon:v8 heap]"));
	assert_int_equal(g->rss, 512 * 1024);
	assert_non_null(g = find(v, n, SNAP_REGION_SHMEM, "/memfd:pool (deleted)"));
	assert_int_equal(g->rss, 256 * 1024);
	assert_non_null(g = find(v, n, SNAP_REGION_SHMEM, NULL));
	assert_int_equal(g->rss, 128 * 1024);
	assert_non_null(g = find(v, n, SNAP_REGION_FILE, "/usr/lib/libc.so.6"));
	assert_int_equal(g->mappings, 2);
	assert_int_equal(g->rss, 1504 * 1024);
	assert_int_equal(g->anon, 4 * 1024);
	assert_non_null(g = find(v, n, SNAP_REGION_FILE, "/usr/bin/app"));
	assert_int_equal(g->rss, 8 * 1024);
	assert_non_null(g = find(v, n, SNAP_REGION_OTHER, NULL));
	assert_int_equal(g->rss, 8 * 1024);

	maps_free(v, n);

	/* no memory to read, no stack pointers: no arena, only [stack] a stack */
	f = fmemopen((void *)smaps, sizeof smaps - 1, "r");
	assert_non_null(f);
	assert_int_equal(maps_parse(f, NULL, 0, NULL, NULL, &v, &n), 0);
	fclose(f);
	assert_null(find(v, n, SNAP_REGION_ARENA, NULL));
	assert_non_null(g = find(v, n, SNAP_REGION_STACK, NULL));
	assert_int_equal(g->mappings, 1);
	assert_non_null(g = find(v, n, SNAP_REGION_ANON, NULL));
	assert_int_equal(g->rss, (1000 + 8000 + 16 + 12 + 20000) * 1024);
	maps_free(v, n);
}

/* The regions survive a snapshot's encoding, and a reader maps a kind it does
 * not know to "other". */
static void test_roundtrip(void **state)
{
	struct snap_region r[2] = {
		{ .kind = SNAP_REGION_FILE, .name = "/lib/x.so", .mappings = 3, .size = 1 << 20,
		  .rss = 4096, .anon = 0, .swap = 0 },
		{ .kind = 99, .name = NULL, .mappings = 1, .size = 8192, .rss = 8192, .anon = 8192,
		  .swap = 4096 },
	};
	struct snapshot s = { .pid = 1, .sample_rate = 1, .has_regions = true, .nregions = 2,
			      .regions = r };
	unsigned char *buf;
	size_t len;
	char *cause = NULL;
	struct snapshot *d;
	(void)state;

	assert_int_equal(snapshot_encode(&s, &buf, &len), 0);
	d = snapshot_decode(buf, len, &cause);
	assert_non_null(d);
	assert_true(d->has_regions);
	assert_int_equal(d->nregions, 2);
	assert_int_equal(d->regions[0].kind, SNAP_REGION_FILE);
	assert_string_equal(d->regions[0].name, "/lib/x.so");
	assert_int_equal(d->regions[0].mappings, 3);
	assert_int_equal(d->regions[0].size, 1 << 20);
	assert_int_equal(d->regions[1].kind, SNAP_REGION_OTHER);
	assert_null(d->regions[1].name);
	assert_int_equal(d->regions[1].swap, 4096);
	snapshot_free(d);
	free(buf);

	/* none read: no section, and the reader says so */
	s.has_regions = false;
	s.nregions = 0;
	s.regions = NULL;
	assert_int_equal(snapshot_encode(&s, &buf, &len), 0);
	d = snapshot_decode(buf, len, &cause);
	assert_non_null(d);
	assert_false(d->has_regions);
	snapshot_free(d);
	free(buf);
}

/* This very process: its heap, stack and files are where /proc says. */
static void test_self(void **state)
{
	struct snap_region *v = NULL;
	size_t n = 0;
	char *cause = NULL;
	uint64_t rss = 0;
	(void)state;

	assert_int_equal(maps_read(getpid(), &v, &n, &cause), 0);
	assert_non_null(find(v, n, SNAP_REGION_STACK, NULL));
	for (size_t i = 0; i < n; i++)
		rss += v[i].rss;
	assert_true(rss > 0);
	maps_free(v, n);
	assert_int_equal(maps_read(-5, &v, &n, &cause), -1);
	assert_non_null(cause);
	free(cause);
}

/* A perf map: hex ranges and names with spaces; lines that are not such are
 * skipped; a function compiled again at the same address later wins. */
static void test_perfmap(void **state)
{
	static const char text[] = "7f0000001000 40 LazyCompile:*f a.js:1\n"
				   "garbage\n"
				   "0x7f0000002000 0x100 Builtin: ArgumentsAdaptorTrampoline\n"
				   "7f0000001000 80 LazyCompile:*g a.js:9\n"
				   "7f0000003000 0 empty\n"
				   "7f0000004000 10\n";
	struct perfmap_entry *v = NULL;
	size_t n = 0;
	const struct perfmap_entry *e;
	FILE *f = fmemopen((void *)text, sizeof text - 1, "r");
	(void)state;

	assert_int_equal(perfmap_parse(f, &v, &n), 0);
	fclose(f);
	assert_int_equal(n, 3);
	assert_non_null(e = perfmap_find(v, n, 0x7f0000001050));
	assert_string_equal(e->name, "LazyCompile:*g a.js:9");
	assert_non_null(e = perfmap_find(v, n, 0x7f00000020ff));
	assert_string_equal(e->name, "Builtin: ArgumentsAdaptorTrampoline");
	assert_null(perfmap_find(v, n, 0x7f0000002100));
	assert_null(perfmap_find(v, n, 0x7f0000000fff));
	assert_null(perfmap_find(v, n, 0x7f0000003000));
	perfmap_free(v, n);
}

/* A snapshot whose symbol section holds a runtime's own names (a module [js])
 * gets the perf map's names of its frames outside every module beside them;
 * an address named already keeps its name. */
static void test_perfmap_embed_beside(void **state)
{
	static const char text[] = "7f0000001000 40 Function:^growBuffers a.js:37\n"
				   "7f0000002000 40 Function:^alloc buffer:404\n";
	char path[] = "/tmp/memwatch-test-perfmap.XXXXXX";
	struct snapshot *s = xcalloc(1, sizeof *s);
	int fd = mkstemp(path);
	(void)state;

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, sizeof text - 1), (ssize_t)(sizeof text - 1));
	close(fd);
	s->nmodules = 1;
	s->modules = xcalloc(1, sizeof *s->modules);
	s->modules[0].path = strdup("[js]");
	s->nstacks = 1;
	s->stacks = xcalloc(1, sizeof *s->stacks);
	s->stacks[0].nframes = 3;
	s->stacks[0].frames = xcalloc(1, 3 * sizeof *s->stacks[0].frames);
	s->stacks[0].frames[0] = (struct snap_frame){ SNAP_NO_MODULE, 0x7f0000001010 };
	s->stacks[0].frames[1] = (struct snap_frame){ SNAP_NO_MODULE, 0x7f0000002010 };
	s->stacks[0].frames[2] = (struct snap_frame){ 0, 7 };
	/* the runtime's frame, and the second address named already */
	s->nsymbols = 2;
	s->symbols = xcalloc(1, 2 * sizeof *s->symbols);
	s->symbols[0] = (struct snap_symbol){ 0, 7, 1, xcalloc(1, sizeof(struct snap_symframe)) };
	s->symbols[0].frames[0].function = strdup("retainObjects");
	s->symbols[1] = (struct snap_symbol){ SNAP_NO_MODULE, 0x7f0000002010, 1,
					      xcalloc(1, sizeof(struct snap_symframe)) };
	s->symbols[1].frames[0].function = strdup("named before");

	assert_int_equal(perfmap_embed_file(s, path), 1);
	unlink(path);
	assert_int_equal(s->nsymbols, 3);
	assert_int_equal(s->symbols[2].module, SNAP_NO_MODULE);
	assert_true(s->symbols[2].offset == 0x7f0000001010);
	assert_string_equal(s->symbols[2].frames[0].function, "Function:^growBuffers a.js:37");
	assert_string_equal(s->symbols[0].frames[0].function, "retainObjects");
	assert_string_equal(s->symbols[1].frames[0].function, "named before");
	snapshot_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kinds),
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_self),
		cmocka_unit_test(test_perfmap),
		cmocka_unit_test(test_perfmap_embed_beside),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
