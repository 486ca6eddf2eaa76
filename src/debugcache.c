/* debugcache.c: copies of debug files with their DWARF decompressed, kept by
 * build-id.
 *
 * Debian's debug files (libc6-dbg's, every -dbgsym's, debuginfod's downloads)
 * keep their .debug_* sections zlib-compressed. libdw inflates every one of
 * them whole when it opens the file: for libc, 4 MiB to 10 MiB, about a
 * quarter of the instructions of a report of 100 000 stacks, at every report.
 * The first report that needs such a file writes a copy with those sections
 * stored plain into the cache; the following ones are given the copy instead
 * of the file (before libdwfl looks for it) and inflate nothing. A copy is
 * named by the build-id, which fixes its contents, made under a temporary
 * name and renamed, and checked to carry that build-id before use. Copies
 * unused for CACHE_DAYS are removed when a new one is written (a use renews
 * the copy's time), as debuginfod's client ages out its downloads; and the
 * least recently used while the copies hold more than CACHE_MAX together. A
 * file whose copy would take more than a quarter of that is not copied (libdw
 * inflates it in memory, as without the cache), nor one that names a dwz file.
 *
 * Where: $MEMWATCH_DEBUG_CACHE, else $XDG_CACHE_HOME/memwatch/debug, else
 * ~/.cache/memwatch/debug. MEMWATCH_DEBUG_CACHE set empty keeps none. */
#include "config.h"
#include "debugcache.h"
#include "symbolize.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CACHE_DAYS 14
#define CACHE_MAX ((uint64_t)1 << 30)

/* The cache directory (caller frees), or NULL for none. */
static char *cache_dir(void)
{
	const char *e = getenv("MEMWATCH_DEBUG_CACHE");

	if (e)
		return *e ? xstrdup(e) : NULL;
	e = getenv("XDG_CACHE_HOME");
	if (e && e[0] == '/')
		return xasprintf("%s/memwatch/debug", e);
	e = getenv("HOME");
	if (e && e[0] == '/')
		return xasprintf("%s/.cache/memwatch/debug", e);
	return NULL;
}

/* mkdir -p, private to the user. */
static bool make_dirs(const char *dir)
{
	char *p = xstrdup(dir), *s;
	bool ok = true;

	for (s = p + 1; ok; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		char c = *s;
		*s = '\0';
		if (mkdir(p, 0700) != 0 && errno != EEXIST)
			ok = false;
		*s = c;
		if (c == '\0')
			break;
	}
	free(p);
	return ok;
}

/* The size of the ELF file on fd with its compressed sections stored plain;
 * 0 when it has none, or names a dwz file (whose name may be relative to the
 * file's own place, not the copy's). */
static uint64_t plain_size(int fd)
{
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	Elf_Scn *scn = NULL;
	bool any = false, alt = false;
	uint64_t size = 0;
	const char *name;
	struct stat st;
	size_t names;
	GElf_Shdr sh;
	GElf_Chdr ch;

	if (!elf)
		return 0;
	if (elf_getshdrstrndx(elf, &names) != 0 || fstat(fd, &st) != 0)
		alt = true;
	else
		size = (uint64_t)st.st_size;
	while (!alt && (scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		if ((sh.sh_flags & SHF_COMPRESSED) && sh.sh_type != SHT_NOBITS &&
		    gelf_getchdr(scn, &ch)) {
			any = true;
			size += ch.ch_size > sh.sh_size ? ch.ch_size - sh.sh_size : 0;
		}
		name = elf_strptr(elf, names, sh.sh_name);
		alt = name && strcmp(name, ".gnu_debugaltlink") == 0;
	}
	elf_end(elf);
	return any && !alt ? size : 0;
}

static bool copy_file(int from, int to)
{
	static char buf[1 << 16];
	off_t at = 0;
	ssize_t n;

	while ((n = pread(from, buf, sizeof buf, at)) > 0) {
		if (write_all(to, buf, (size_t)n) != 0)
			return false;
		at += n;
	}
	return n == 0;
}

/* Rewrite the copy on fd with every compressed section stored plain; libelf
 * lays the file out again (the program headers of a debug file describe
 * memory, which does not change). */
static bool decompress(int fd)
{
	Elf *elf = elf_begin(fd, ELF_C_RDWR, NULL);
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	bool ok = elf != NULL;

	while (ok && (scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_COMPRESSED) &&
		    sh.sh_type != SHT_NOBITS)
			ok = elf_compress(scn, 0, 0) >= 0;
	ok = ok && elf_update(elf, ELF_C_WRITE) >= 0;
	if (elf)
		elf_end(elf);
	return ok;
}

struct entry {
	char *name;
	time_t used;
	uint64_t size;
};

static int by_use(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	return x->used < y->used ? -1 : x->used > y->used;
}

/* Remove the copies unused for CACHE_DAYS, and temporary files a killed
 * report left behind a day ago; then, while the copies left hold more than
 * max bytes, the least recently used but keep. */
static void prune(const char *dir, uint64_t max, const char *keep)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	struct stat st;
	time_t now = time(NULL);
	struct entry *e = NULL;
	size_t n = 0, cap = 0, i;
	uint64_t total = 0;

	if (!d)
		return;
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		bool copy = len > 6 && strcmp(de->d_name + len - 6, ".debug") == 0 &&
			    de->d_name[0] != '.';
		bool tmp = strncmp(de->d_name, ".tmp-", 5) == 0;
		if ((!copy && !tmp) || fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue;
		if (now - st.st_mtime > (copy ? CACHE_DAYS * 86400 : 86400)) {
			unlinkat(dirfd(d), de->d_name, 0);
			continue;
		}
		if (!copy)
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			e = xrealloc(e, cap * sizeof *e);
		}
		e[n++] = (struct entry){ xstrdup(de->d_name), st.st_mtime, (uint64_t)st.st_size };
		total += (uint64_t)st.st_size;
	}
	if (n)
		qsort(e, n, sizeof *e, by_use);
	for (i = 0; i < n; i++) {
		if (total > max && strcmp(e[i].name, keep) != 0 &&
		    unlinkat(dirfd(d), e[i].name, 0) == 0)
			total -= e[i].size;
		free(e[i].name);
	}
	free(e);
	closedir(d);
}

/* The most the copies may hold together (a copy is made only when it takes
 * at most a quarter of it). */
static uint64_t cache_max(void)
{
	const char *t = getenv("MEMWATCH_TEST_DEBUG_CACHE_MAX");
	return t && *t ? strtoull(t, NULL, 10) : CACHE_MAX;
}

/* Write the decompressed copy of the file on fd as path. */
static bool make_copy(int fd, const char *dir, const char *path, const uint8_t *id, size_t len)
{
	char *tmp = xasprintf("%s/.tmp-XXXXXX", dir);
	int t = mkostemp(tmp, O_CLOEXEC);
	bool ok = t >= 0;

	ok = ok && copy_file(fd, t) && decompress(t) && sym_file_matches(t, id, len) &&
	     rename(tmp, path) == 0;
	if (t >= 0)
		close(t);
	if (!ok && t >= 0)
		unlink(tmp);
	free(tmp);
	if (ok)
		prune(dir, cache_max(), strrchr(path, '/') + 1);
	return ok;
}

/* The copy's path for build-id id, or NULL without a cache. */
static char *copy_path(const uint8_t *id, size_t len, char **dir)
{
	char hex[129];

	if (len < 2 || len > 64 || !(*dir = cache_dir()))
		return NULL;
	sym_hex(hex, id, len);
	return xasprintf("%s/%s.debug", *dir, hex);
}

int debugcache_open(const uint8_t *id, size_t len, char **name)
{
	char *dir = NULL, *path = copy_path(id, len, &dir);
	int fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;

	if (fd >= 0 && !sym_file_matches(fd, id, len)) {
		close(fd);
		fd = -1;
	}
	if (fd >= 0) {
		futimens(fd, NULL);     /* used now: not aged out */
		free(*name);
		*name = path;
		path = NULL;
	}
	free(path);
	free(dir);
	return fd;
}

void debugcache_add(int fd, const uint8_t *id, size_t len)
{
	uint64_t size = fd >= 0 ? plain_size(fd) : 0;
	char *dir = NULL, *path;

	if (!size || size > cache_max() / 4 || !sym_file_matches(fd, id, len))
		return;
	path = copy_path(id, len, &dir);
	if (path && make_dirs(dir))
		make_copy(fd, dir, path, id, len);
	free(path);
	free(dir);
}
