/* proc.c: memory figures of processes through libproc2, who a process is, and
 * the members of a process tree. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libproc2/pids.h>

#include "proc.h"
#include "util.h"

/* The items of one sample, all from /proc/PID/status (one read per process):
 * status has the anon/file/shmem split of RSS and swap, which statm has not. */
enum basic_idx { B_PID, B_STATE, B_PPID, B_RSS, B_ANON, B_FILE, B_SHMEM, B_SWAP, B_VSZ };
static enum pids_item basic_items[] = {
	PIDS_ID_PID, PIDS_STATE, PIDS_ID_PPID, PIDS_VM_RSS, PIDS_VM_RSS_ANON,
	PIDS_VM_RSS_FILE, PIDS_VM_RSS_SHARED, PIDS_VM_SWAP, PIDS_VM_SIZE,
};

/* PSS and USS from /proc/PID/smaps_rollup, in a context of their own: the file
 * needs ptrace-read access, and a process whose rollup cannot be read must still
 * get its basic figures. */
enum pss_idx { P_PID, P_PSS, P_PRV, P_RSS };
static enum pids_item pss_items[] = { PIDS_ID_PID, PIDS_SMAP_PSS, PIDS_SMAP_PRV_TOTAL, PIDS_SMAP_RSS };

struct proc_reader {
	struct pids_info *basic;
	struct pids_info *pss;          /* NULL without --pss */
	unsigned *sel;                  /* pid list for procps_pids_select, reused */
	size_t selcap;
};

struct proc_reader *proc_reader_new(bool pss, char **cause)
{
	struct proc_reader *r = xcalloc(1, sizeof *r);
	int e;

	if (fatal_proc_unmounted(NULL, 0)) {
		*cause = xstrdup("/proc is not mounted");
		free(r);
		return NULL;
	}
	e = procps_pids_new(&r->basic, basic_items, (int)(sizeof basic_items / sizeof basic_items[0]));
	if (e < 0) {
		*cause = xasprintf("procps_pids_new: %s", strerror(-e));
		free(r);
		return NULL;
	}
	if (pss) {
		e = procps_pids_new(&r->pss, pss_items, (int)(sizeof pss_items / sizeof pss_items[0]));
		if (e < 0) {
			*cause = xasprintf("procps_pids_new: %s", strerror(-e));
			procps_pids_unref(&r->basic);
			free(r);
			return NULL;
		}
	}
	return r;
}

void proc_reader_free(struct proc_reader *r)
{
	if (!r)
		return;
	if (r->basic)
		procps_pids_unref(&r->basic);
	if (r->pss)
		procps_pids_unref(&r->pss);
	free(r->sel);
	free(r);
}

/* The index of pid in pids[0..n), or -1. Trees are small: a linear search. */
static long find_pid(const int *pids, size_t n, int pid, size_t hint)
{
	size_t i;
	if (hint < n && pids[hint] == pid)
		return (long)hint;
	for (i = 0; i < n; i++)
		if (pids[i] == pid)
			return (long)i;
	return -1;
}

int proc_read(struct proc_reader *r, const int *pids, size_t n, struct proc_stat *out)
{
	struct pids_fetch *f;
	size_t i;
	int k;

	if (n > r->selcap) {
		r->selcap = n < 16 ? 16 : n * 2;
		r->sel = xrealloc(r->sel, r->selcap * sizeof *r->sel);
	}
	for (i = 0; i < n; i++) {
		r->sel[i] = (unsigned)pids[i];
		memset(&out[i], 0, sizeof out[i]);
		out[i].s.pid = pids[i];
		out[i].s.pss = out[i].s.uss = RUNLOG_NONE;
	}
	if (n == 0)
		return 0;
	f = procps_pids_select(r->basic, r->sel, (int)n, PIDS_SELECT_PID);
	if (!f)
		return -(errno ? errno : EIO);
	for (k = 0; k < f->counts->total; k++) {
		struct pids_stack *st = f->stacks[k];
		int pid = PIDS_VAL(B_PID, s_int, st, r->basic);
		long at = find_pid(pids, n, pid, (size_t)k);
		struct proc_stat *p;
		char state;

		if (at < 0)
			continue;
		p = &out[at];
		state = PIDS_VAL(B_STATE, s_ch, st, r->basic);
		p->found = true;
		p->zombie = state == 'Z' || state == 'X';
		p->ppid = PIDS_VAL(B_PPID, s_int, st, r->basic);
		p->s.rss = PIDS_VAL(B_RSS, ul_int, st, r->basic);
		p->s.anon = PIDS_VAL(B_ANON, ul_int, st, r->basic);
		p->s.file = PIDS_VAL(B_FILE, ul_int, st, r->basic);
		p->s.shmem = PIDS_VAL(B_SHMEM, ul_int, st, r->basic);
		p->s.swap = PIDS_VAL(B_SWAP, ul_int, st, r->basic);
		p->s.vsz = PIDS_VAL(B_VSZ, ul_int, st, r->basic);
	}
	if (!r->pss)
		return 0;
	for (i = 0; i < n; i++)
		out[i].pss_denied = out[i].found && !out[i].zombie;
	/* libproc2 gives zeros for a process whose smaps_rollup it cannot read
	 * (another user's, a non-dumpable one): a resident process with no resident
	 * pages in its rollup is one of those */
	f = procps_pids_select(r->pss, r->sel, (int)n, PIDS_SELECT_PID);
	if (!f)
		return 0;
	for (k = 0; k < f->counts->total; k++) {
		struct pids_stack *st = f->stacks[k];
		int pid = PIDS_VAL(P_PID, s_int, st, r->pss);
		long at = find_pid(pids, n, pid, (size_t)k);
		if (at < 0 || !out[at].found || out[at].zombie)
			continue;
		if (PIDS_VAL(P_RSS, ul_int, st, r->pss) == 0 && out[at].s.rss > 0)
			continue;
		out[at].pss_denied = false;
		out[at].s.pss = PIDS_VAL(P_PSS, ul_int, st, r->pss);
		out[at].s.uss = PIDS_VAL(P_PRV, ul_int, st, r->pss);
	}
	return 0;
}

/* Read a small /proc file into buf (NUL-terminated); length or -errno. */
static ssize_t read_small(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n, got = 0;
	if (fd < 0)
		return -errno;
	while ((size_t)got < size - 1) {
		n = read(fd, buf + got, size - 1 - (size_t)got);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			n = -errno;
			close(fd);
			return n;
		}
		if (n == 0)
			break;
		got += n;
	}
	close(fd);
	buf[got] = '\0';
	return got;
}

int proc_identify(int pid, struct proc_ident *id)
{
	char path[64], buf[4096];
	struct stat st;
	ssize_t n, i;

	memset(id, 0, sizeof *id);
	snprintf(path, sizeof path, "/proc/%d", pid);
	if (stat(path, &st) != 0)
		return errno == ENOENT ? -ESRCH : -errno;
	snprintf(path, sizeof path, "/proc/%d/status", pid);
	n = read_small(path, buf, sizeof buf);
	if (n == -ENOENT || n == -ESRCH)
		return -ESRCH;
	if (n < 0)
		return (int)n;
	/* the real uid: the second field of "Uid:" is the effective one */
	{
		const char *u = strstr(buf, "\nUid:");
		id->uid = u ? (uid_t)strtoul(u + 5, NULL, 10) : st.st_uid;
	}
	id->other_user = geteuid() != 0 && id->uid != geteuid();
	snprintf(path, sizeof path, "/proc/%d/cmdline", pid);
	n = read_small(path, buf, sizeof buf);
	if (n > 0) {
		while (n > 0 && buf[n - 1] == '\0')
			n--;
		for (i = 0; i < n; i++)
			if (buf[i] == '\0' || buf[i] == '\n')
				buf[i] = ' ';
		buf[n] = '\0';
		id->cmdline = xstrdup(buf);
		return 0;
	}
	/* a kernel thread or a zombie: its name from comm */
	snprintf(path, sizeof path, "/proc/%d/comm", pid);
	n = read_small(path, buf, sizeof buf);
	if (n > 0 && buf[n - 1] == '\n')
		buf[--n] = '\0';
	id->cmdline = xasprintf("[%s]", n > 0 ? buf : "?");
	return 0;
}

/* Descendants are found from /proc/PID/task/TID/children where the kernel has it
 * (CONFIG_PROC_CHILDREN): a few small reads per member. Elsewhere every process's
 * parent is read in one libproc2 pass over /proc. */
struct proc_tree {
	int use_children;        /* -1 unknown, 0 no, 1 yes */
	struct pids_info *all;   /* for the pass over /proc */
	int *pids, *ppids;       /* the result */
	size_t n, cap;
	int *apid, *appid;       /* the pass over /proc: every pid and its parent */
	size_t an, acap;
};

struct proc_tree *proc_tree_new(void)
{
	struct proc_tree *t = xcalloc(1, sizeof *t);
	t->use_children = -1;
	return t;
}

void proc_tree_free(struct proc_tree *t)
{
	if (!t)
		return;
	if (t->all)
		procps_pids_unref(&t->all);
	free(t->pids);
	free(t->ppids);
	free(t->apid);
	free(t->appid);
	free(t);
}

/* Add pid (child of ppid) to the result unless it is there already. */
static void tree_add(struct proc_tree *t, int pid, int ppid, const int *roots, size_t nroots)
{
	size_t i;
	for (i = 0; i < nroots; i++)
		if (roots[i] == pid)
			return;
	for (i = 0; i < t->n; i++)
		if (t->pids[i] == pid)
			return;
	if (t->n == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 16;
		t->pids = xrealloc(t->pids, t->cap * sizeof *t->pids);
		t->ppids = xrealloc(t->ppids, t->cap * sizeof *t->ppids);
	}
	t->pids[t->n] = pid;
	t->ppids[t->n] = ppid;
	t->n++;
}

/* The children of pid from its threads' children files. */
static void children_of(struct proc_tree *t, int pid, const int *roots, size_t nroots)
{
	char path[320], buf[4096];
	DIR *d;
	struct dirent *e;

	snprintf(path, sizeof path, "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return;
	while ((e = readdir(d))) {
		char *p, *end;
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof path, "/proc/%d/task/%s/children", pid, e->d_name);
		if (read_small(path, buf, sizeof buf) <= 0)
			continue;
		for (p = buf;; p = end) {
			long c = strtol(p, &end, 10);
			if (end == p)
				break;
			if (c > 0)
				tree_add(t, (int)c, pid, roots, nroots);
		}
	}
	closedir(d);
}

/* Every process and its parent, in one pass over /proc. */
static int scan_all(struct proc_tree *t)
{
	static enum pids_item items[] = { PIDS_ID_PID, PIDS_ID_PPID };
	struct pids_fetch *f;
	int k, e;

	if (!t->all) {
		e = procps_pids_new(&t->all, items, 2);
		if (e < 0)
			return e;
	}
	f = procps_pids_reap(t->all, PIDS_FETCH_TASKS_ONLY);
	if (!f)
		return -(errno ? errno : EIO);
	t->an = 0;
	for (k = 0; k < f->counts->total; k++) {
		if (t->an == t->acap) {
			t->acap = t->acap ? t->acap * 2 : 256;
			t->apid = xrealloc(t->apid, t->acap * sizeof *t->apid);
			t->appid = xrealloc(t->appid, t->acap * sizeof *t->appid);
		}
		t->apid[t->an] = PIDS_VAL(0, s_int, f->stacks[k], t->all);
		t->appid[t->an] = PIDS_VAL(1, s_int, f->stacks[k], t->all);
		t->an++;
	}
	return 0;
}

int proc_tree_scan(struct proc_tree *t, const int *roots, size_t nroots,
		   const int **pids, const int **ppids, size_t *n)
{
	size_t i, j, done;
	int e;

	if (t->use_children < 0) {
		char path[80];
		snprintf(path, sizeof path, "/proc/self/task/%d/children", (int)getpid());
		t->use_children = access(path, R_OK) == 0;
	}
	t->n = 0;
	if (t->use_children) {
		for (i = 0; i < nroots; i++)
			children_of(t, roots[i], roots, nroots);
		/* breadth first: t->n grows while we walk it */
		for (done = 0; done < t->n; done++)
			children_of(t, t->pids[done], roots, nroots);
	} else {
		e = scan_all(t);
		if (e < 0)
			return e;
		for (i = 0; i < nroots; i++)
			for (j = 0; j < t->an; j++)
				if (t->appid[j] == roots[i])
					tree_add(t, t->apid[j], roots[i], roots, nroots);
		for (done = 0; done < t->n; done++)
			for (j = 0; j < t->an; j++)
				if (t->appid[j] == t->pids[done])
					tree_add(t, t->apid[j], t->pids[done], roots, nroots);
	}
	*pids = t->pids;
	*ppids = t->ppids;
	*n = t->n;
	return 0;
}
