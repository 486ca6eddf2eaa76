/* replay.c: runs a libFuzzer target over files without libFuzzer, so the
 * committed corpus (including past crashers) is replayed by make check, under the
 * sanitizers when configured with --enable-asan. Arguments: files or directories. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Feed one file to the target. 0, or -1 if it cannot be read. */
static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		return -1;
	}
	size_t cap = 4096, n = 0, r;
	uint8_t *buf = malloc(cap);
	while (buf && (r = fread(buf + n, 1, cap - n, f)) > 0) {
		n += r;
		if (n == cap)
			buf = realloc(buf, cap *= 2);
	}
	fclose(f);
	if (!buf)
		return -1;
	/* an exact-size copy, so the sanitizers see reads past the end */
	uint8_t *exact = malloc(n ? n : 1);
	memcpy(exact, buf, n);
	free(buf);
	LLVMFuzzerTestOneInput(exact, n);
	free(exact);
	return 0;
}

int main(int argc, char **argv)
{
	int files = 0, bad = 0;
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
			DIR *d = opendir(argv[i]);
			struct dirent *e;
			while (d && (e = readdir(d))) {
				if (e->d_name[0] == '.')
					continue;
				char path[4096];
				snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
				bad += replay_file(path) < 0;
				files++;
			}
			if (d)
				closedir(d);
		} else {
			bad += replay_file(argv[i]) < 0;
			files++;
		}
	}
	printf("replayed %d inputs\n", files);
	return bad || files == 0 ? 1 : 0;
}
