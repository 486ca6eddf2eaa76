/* snapio.c: reading and writing .snap files for the CLI: the whole file is read
 * and decoded with the name in every message; writes follow the output rule of
 * util.h (a regular file is written aside and renamed into place, so a failed
 * write leaves no file behind; a device or FIFO is written as it is). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "snapshot.h"
#include "snapshot-internal.h"
#include "util.h"

/* Read all of fd into a new buffer (*buf, *len; caller frees). Grows the buffer
 * geometrically, so pipes and files of any size work; stops early when the first
 * bytes are not a snapshot's signature, so /dev/zero or a huge unrelated file is
 * refused at once instead of read whole. 0 or -errno. */
static int slurp(int fd, unsigned char **buf, size_t *len)
{
	const size_t magic_len = sizeof SNAPSHOT_MAGIC - 1;
	size_t cap = 64 * 1024, n = 0;
	unsigned char *b;
	struct stat sb;

	/* a file's size at once (and a byte more, to see its end), not doubled
	 * up to it: a snapshot of 100 000 stacks is 13 MB */
	if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0 &&
	    (uint64_t)sb.st_size < SIZE_MAX / 2)
		cap = (size_t)sb.st_size + 1;
	b = xmalloc(cap);

	for (;;) {
		if (n == cap) {
			cap *= 2;
			b = xrealloc(b, cap);
		}
		ssize_t r = read(fd, b + n, cap - n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			int err = errno;
			free(b);
			return -err;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (memcmp(b, SNAPSHOT_MAGIC, n < magic_len ? n : magic_len) != 0)
			break; /* the decoder says "not a memwatch snapshot" */
	}
	*buf = b;
	*len = n;
	return 0;
}

/* A regular file's bytes mapped (its pages already in the page cache are
 * mapped in one go): *len bytes, or MAP_FAILED (not a regular file, empty,
 * or not mappable: then it is read). Unlike a copy, nothing is zeroed and
 * copied, which on a report of two 13 MB snapshots was a tenth of its time. */
static void *map_file(int fd, size_t *len)
{
	struct stat sb;
	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size <= 0 ||
	    (uint64_t)sb.st_size >= SIZE_MAX / 2)
		return MAP_FAILED;
	*len = (size_t)sb.st_size;
	return mmap(NULL, *len, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
}

static struct snapshot *read_like(const char *path, const struct snapshot *like, unsigned flags,
				  char **cause)
{
	unsigned char *buf = NULL;
	size_t len = 0;
	char *why = NULL;
	void *map;
	int fd, err = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		*cause = xasprintf("cannot read '%s': %s", path, strerror(errno));
		return NULL;
	}
	map = map_file(fd, &len);
	if (map != MAP_FAILED)
		buf = map;
	else
		err = slurp(fd, &buf, &len);
	close(fd);
	if (err < 0) {
		*cause = xasprintf("cannot read '%s': %s", path, strerror(-err));
		return NULL;
	}
	struct snapshot *s = snapshot_decode_raw(buf, len, like, flags, &why);
	if (s && (flags & SNAP_DECODE_KEEP)) {
		s->raw = buf;
		s->raw_mapped = map != MAP_FAILED ? len : 0;
	} else if (map != MAP_FAILED) {
		munmap(map, len);
	} else {
		free(buf);
	}
	if (!s) {
		*cause = xasprintf("'%s': %s", path, why ? why : "out of memory");
		free(why);
		return NULL;
	}
	return s;
}

struct snapshot *snapshot_read(const char *path, char **cause)
{
	return read_like(path, NULL, 0, cause);
}

struct snapshot *snapshot_read_like(const char *path, const struct snapshot *like, char **cause)
{
	return read_like(path, like, SNAP_DECODE_HUGE, cause);
}

struct snapshot *snapshot_read_keep(const char *path, const struct snapshot *like, char **cause)
{
	return read_like(path, like, SNAP_DECODE_KEEP | SNAP_DECODE_HUGE, cause);
}

int snapshot_read_bytes(const char *path, unsigned char **buf, size_t *len, char **cause)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;

	if (fd < 0) {
		*cause = xasprintf("cannot read '%s': %s", path, strerror(errno));
		return -1;
	}
	err = slurp(fd, buf, len);
	close(fd);
	if (err < 0) {
		*cause = xasprintf("cannot read '%s': %s", path, strerror(-err));
		return -1;
	}
	return 0;
}

struct snapshot *snapshot_read_head(const char *path, char **cause)
{
	unsigned char *buf = NULL;
	size_t len = 0;
	char *why = NULL;
	struct snapshot *s;
	struct stat sb;
	void *map = MAP_FAILED;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		*cause = xasprintf("cannot read '%s': %s", path, strerror(errno));
		return NULL;
	}
	/* mapped: the head's sections are a few pages of the file */
	if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0 &&
	    (uint64_t)sb.st_size < SIZE_MAX / 2)
		map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map != MAP_FAILED) {
		close(fd);
		s = snapshot_decode_head(map, (size_t)sb.st_size, &why);
		munmap(map, (size_t)sb.st_size);
	} else {
		err = slurp(fd, &buf, &len);
		close(fd);
		if (err < 0) {
			*cause = xasprintf("cannot read '%s': %s", path, strerror(-err));
			return NULL;
		}
		s = snapshot_decode_head(buf, len, &why);
		free(buf);
	}
	if (!s) {
		*cause = xasprintf("'%s': %s", path, why ? why : "out of memory");
		free(why);
	}
	return s;
}

int snapshot_write_bytes(const unsigned char *buf, size_t len, const char *path, bool force,
			 char **cause)
{
	struct outfile *o = outfile_open(path, force, cause);

	if (!o)
		return -1;
	if (len && fwrite(buf, 1, len, outfile_stream(o)) != len) {
		*cause = xasprintf("cannot write '%s': %s", path, strerror(errno ? errno : EIO));
		outfile_abort(o);
		return -1;
	}
	return outfile_commit(o, cause);
}

int snapshot_write(const struct snapshot *s, const char *path, bool force, char **cause)
{
	unsigned char *buf;
	size_t len;
	int ret;

	if (snapshot_encode(s, &buf, &len) < 0) {
		if (errno == EINVAL)
			*cause = xasprintf("cannot write '%s': the snapshot is inconsistent (a module index out of range, or a build-id over 64 bytes)",
					   path);
		else
			*cause = xasprintf("cannot write '%s': %s", path, strerror(errno));
		return -1;
	}
	ret = snapshot_write_bytes(buf, len, path, force, cause);
	free(buf);
	return ret;
}
