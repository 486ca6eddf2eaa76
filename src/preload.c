/* preload.c: why the agent that memwatch run preloads does not listen in a
 * process of the command's tree, read from /proc without touching it: its
 * maps (the agent loaded, not started), its auxiliary vector (AT_SECURE: the
 * loader ignored LD_PRELOAD), its environment (LD_PRELOAD cleared by the
 * program that started it). capture.c says it and attaches as -p does. */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "preload.h"
#include "proc.h"
#include "util.h"

#define AGENT_NAME "libmemwatch-agent"
#ifndef AT_SECURE
#define AT_SECURE 23
#endif

/* The whole of a small /proc file into a buffer (caller frees), its length in
 * *len; NULL when it cannot be read. */
static char *slurp(int pid, const char *what, size_t *len)
{
	char fn[64], *buf = NULL;
	size_t cap = 0, n = 0;
	ssize_t r;
	int fd;

	snprintf(fn, sizeof fn, "/proc/%d/%s", pid, what);
	fd = open(fn, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	for (;;) {
		if (n + 4096 > cap) {
			cap = cap ? cap * 2 : 16384;
			if (cap > (64u << 20))
				break;
			buf = xrealloc(buf, cap + 1);
		}
		r = read(fd, buf + n, cap - n);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	if (!buf)
		return NULL;
	buf[n] = '\0';
	*len = n;
	return buf;
}

/* Whether the agent is mapped in pid. */
static bool agent_mapped(int pid)
{
	size_t len;
	char *maps = slurp(pid, "maps", &len);
	bool yes = maps && strstr(maps, AGENT_NAME);

	free(maps);
	return yes;
}

/* AT_SECURE in pid's auxiliary vector: 1, 0, or -1 unknown. */
static int secure_exec(int pid)
{
	size_t len, i;
	unsigned long *av = (unsigned long *)slurp(pid, "auxv", &len);
	int r = -1;

	if (!av)
		return -1;
	for (i = 0; i + 1 < len / sizeof *av; i += 2) {
		if (av[i] == 0)
			break;
		if (av[i] == AT_SECURE) {
			r = av[i + 1] != 0;
			break;
		}
	}
	free(av);
	return r;
}

/* Whether pid's environment names the agent in LD_PRELOAD: 1, 0, or -1
 * unknown. */
static int env_names_agent(int pid)
{
	size_t len, off;
	char *env = slurp(pid, "environ", &len);
	int r = 0;

	if (!env)
		return -1;
	for (off = 0; off < len; off += strlen(env + off) + 1)
		if (strncmp(env + off, "LD_PRELOAD=", 11) == 0 && strstr(env + off, AGENT_NAME))
			r = 1;
	free(env);
	return r;
}

enum preload_miss preload_missing(int pid)
{
	/* mapped by the loader, its constructor still to run: a program
	 * exec'd a moment ago (a fork has its agent listening before fork
	 * returns, or never) */
	if (agent_mapped(pid))
		return proc_age_s(pid) < 1.0 ? PRELOAD_STARTING : PRELOAD_IDLE;
	if (secure_exec(pid) == 1)
		return PRELOAD_SECURE;
	if (env_names_agent(pid) == 0)
		return PRELOAD_CLEARED;
	return PRELOAD_STARTING;
}

const char *preload_miss_text(enum preload_miss m)
{
	switch (m) {
	case PRELOAD_IDLE:
		return "its agent is loaded but was not started in it (a fork the agent could not follow)";
	case PRELOAD_SECURE:
		return "the loader ignored LD_PRELOAD (a set-uid or set-gid program, or one with file capabilities)";
	case PRELOAD_CLEARED:
		return "it was started without the agent's LD_PRELOAD (the program that started it cleared its environment)";
	default:
		return "the preloaded agent did not start in it";
	}
}

const char *preload_miss_name(enum preload_miss m)
{
	switch (m) {
	case PRELOAD_IDLE: return "idle";
	case PRELOAD_SECURE: return "secure";
	case PRELOAD_CLEARED: return "cleared";
	default: return "absent";
	}
}
