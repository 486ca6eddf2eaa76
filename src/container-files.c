/* container-files.c: the files a process maps, when they are not ours at the
 * paths its snapshot records. A process in its own mount namespace (unshare
 * -m, systemd's BindPaths= or RootImage=, snaps, containers) or one whose
 * file was replaced or deleted since it mapped it sees other files, or
 * files we do not see at all. Each module is told apart by the device and
 * inode of the very object mapped (/proc/PID/map_files), else by its
 * build-id; the others are read while the process lives, through its root
 * or map_files, for their symbols to be embedded in the snapshot. */
#include "config.h"
#include "container.h"
#include "snapshot.h"
#include "util.h"

#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* A file-backed mapping of the process, from /proc/PID/maps. */
struct fmap {
	uint64_t lo, hi;
	dev_t dev;
	ino_t ino;
};

/* The file-backed mappings of pid (*n of them; caller frees). NULL when its
 * maps cannot be read (gone, or not ours to read). */
static struct fmap *read_fmaps(int pid, size_t *n)
{
	char fn[64], line[PATH_MAX + 128];
	struct fmap *v = NULL;
	size_t cap = 0;
	FILE *f;

	*n = 0;
	snprintf(fn, sizeof fn, "/proc/%d/maps", pid);
	if (!(f = fopen(fn, "re")))
		return NULL;
	while (fgets(line, sizeof line, f)) {
		uint64_t lo, hi, ino;
		unsigned maj, min;
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %*s %*x %x:%x %" SCNu64, &lo, &hi, &maj, &min,
			   &ino) != 5 || ino == 0)
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 64;
			v = xrealloc(v, cap * sizeof *v);
		}
		v[(*n)++] = (struct fmap){ lo, hi, makedev(maj, min), (ino_t)ino };
	}
	fclose(f);
	if (!v)
		v = xmalloc(sizeof *v);   /* read, and empty */
	return v;
}

/* The first of the n mappings (in address order, as maps lists them) that
 * ends above addr, or NULL. */
static const struct fmap *first_above(const struct fmap *v, size_t n, uint64_t addr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (v[mid].hi <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n ? &v[lo] : NULL;
}

/* The build-id of the regular file at fn equals the module's? */
static bool same_build_id(const char *fn, const struct snap_module *m)
{
	const void *bits;
	struct stat st;
	ssize_t len;
	bool same = false;
	Elf *e;
	/* a path may name anything: a FIFO must not block us */
	int fd = open(fn, O_RDONLY | O_CLOEXEC | O_NONBLOCK);

	if (fd < 0)
		return false;
	elf_version(EV_CURRENT);
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (e = elf_begin(fd, ELF_C_READ_MMAP, NULL))) {
		len = dwelf_elf_gnu_build_id(e, &bits);
		same = len > 0 && (size_t)len == m->build_id_len &&
		       memcmp(bits, m->build_id, m->build_id_len) == 0;
		elf_end(e);
	}
	close(fd);
	return same;
}

/* fn is the file mapped (device and inode dev:ino), or one with the module's
 * build-id? */
static bool is_mapped_file(const char *fn, dev_t dev, ino_t ino, const struct snap_module *m)
{
	struct stat st;

	if (stat(fn, &st) < 0)
		return false;
	if (st.st_dev == dev && st.st_ino == ino)
		return true;
	/* overlayfs and btrfs subvolumes give stat another device than maps:
	 * the same build-id is the same code */
	return m->build_id_len > 0 && same_build_id(fn, m);
}

/* Add name to the list *names ("a, b"). */
static void name_add(char **names, const char *path)
{
	const char *slash = strrchr(path, '/');
	const char *name = slash ? slash + 1 : path;
	char *more = *names ? xasprintf("%s, %s", *names, name) : xstrdup(name);

	free(*names);
	*names = more;
}

void container_files_point(struct snapshot *s, int pid, struct their_files *tf)
{
	size_t nmaps;
	struct fmap *maps = read_fmaps(pid, &nmaps);
	int map_errno = 0;
	size_t nunread = 0;

	bool *used;

	memset(tf, 0, sizeof *tf);
	if (!maps)
		return;
	/* only the modules that frames of the snapshot are in matter */
	used = xcalloc(s->nmodules ? s->nmodules : 1, sizeof *used);
	for (size_t i = 0; i < s->nstacks; i++)
		for (uint32_t j = 0; j < s->stacks[i].nframes; j++)
			if (s->stacks[i].frames[j].module < s->nmodules)
				used[s->stacks[i].frames[j].module] = true;
	for (size_t i = 0; i < s->nmodules; i++) {
		struct snap_module *m = &s->modules[i];
		const struct fmap *fm = NULL;
		char mf[96], *fn;
		struct stat st;
		dev_t dev;
		ino_t ino;

		/* "" (the main program unnamed), the vDSO, "[python]": no file */
		if (!used[i] || !m->path || m->path[0] != '/')
			continue;
		if ((fm = first_above(maps, nmaps, m->lo)) && fm->lo >= m->hi)
			fm = NULL;
		if (!fm)
			continue;   /* unmapped since (dlclose): nothing to read */
		snprintf(mf, sizeof mf, "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, pid, fm->lo, fm->hi);
		/* map_files tells the very object mapped, when we may follow it
		 * (CAP_SYS_ADMIN); maps alone tells its device and inode */
		if (stat(mf, &st) == 0) {
			dev = st.st_dev;
			ino = st.st_ino;
		} else {
			dev = fm->dev;
			ino = fm->ino;
		}
		if (is_mapped_file(m->path, dev, ino, m))
			continue;   /* ours: read at report time, as any file */
		if (!tf->embed) {
			tf->embed = xcalloc(s->nmodules, sizeof *tf->embed);
			tf->recorded = xcalloc(s->nmodules, sizeof *tf->recorded);
		}
		/* its root first: the file by its own name keeps its debug link
		 * working (a .debug file beside it); map_files for a file replaced or
		 * deleted since, or out of reach through the root */
		fn = xasprintf("/proc/%d/root%s", pid, m->path);
		if (!is_mapped_file(fn, dev, ino, m)) {
			int fd = open(mf, O_RDONLY | O_CLOEXEC);
			free(fn);
			fn = NULL;
			if (fd >= 0) {
				close(fd);
				fn = xstrdup(mf);
			} else if (!map_errno) {
				map_errno = errno;
			}
		}
		if (!fn) {
			name_add(&tf->unreadable, m->path);
			nunread++;
			continue;
		}
		tf->recorded[i] = m->path;
		m->path = fn;
		tf->embed[i] = true;
		tf->nembed++;
	}
	free(maps);
	free(used);
	if (tf->nembed) {
		struct stat st;
		tf->debug_dir = xasprintf("/proc/%d/root/usr/lib/debug", pid);
		if (stat(tf->debug_dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
			free(tf->debug_dir);
			tf->debug_dir = NULL;
		}
	}
	if (tf->unreadable) {
		char *why = xasprintf("%s: %s here, and neither /proc/%d/root nor /proc/%d/map_files "
				      "reaches %s (%s%s)", tf->unreadable,
				      nunread > 1 ? "the files mapped are not at their paths"
						  : "the file mapped is not at its path",
				      pid, pid, nunread > 1 ? "them" : "it", strerror(map_errno),
				      map_errno == EPERM ? ": map_files needs CAP_SYS_ADMIN" : "");
		free(tf->unreadable);
		tf->unreadable = why;
	}
}

void container_files_restore(struct snapshot *s, struct their_files *tf)
{
	if (tf->recorded)
		for (size_t i = 0; i < s->nmodules; i++)
			if (tf->recorded[i]) {
				free(s->modules[i].path);
				s->modules[i].path = tf->recorded[i];
			}
	free(tf->recorded);
	free(tf->embed);
	free(tf->unreadable);
	free(tf->debug_dir);
	memset(tf, 0, sizeof *tf);
}
