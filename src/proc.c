/* proc.c: memory figures of processes from /proc/PID/status and, through
 * libproc2, smaps_rollup; who a process is; the members of a process tree. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include <linux/magic.h>
#include <libproc2/pids.h>

#include "proc.h"
#include "util.h"

/* The figures of one sample come from /proc/PID/status, which has the
 * anon/file/shmem split of RSS and swap (statm has not). They are read through a
 * descriptor held open for each process, one pread(2) per sample: libproc2's
 * procps_pids_select does the same read twice for the same items, plus
 * /proc/uptime and the allocations of a FILE, and measured 49 us per process on
 * the test machine against 9 us here; the cost target is 50 us per sample in
 * all. A held descriptor also names the process and not its number: once it
 * is reaped, reads fail with ESRCH even if the pid is reused. */

/* PSS and USS from /proc/PID/smaps_rollup through libproc2. It needs ptrace-read
 * access: libproc2 gives zeros for a process whose rollup it cannot read. */
enum pss_idx { P_PID, P_PSS, P_PRV, P_RSS };
static enum pids_item pss_items[] = { PIDS_ID_PID, PIDS_SMAP_PSS, PIDS_SMAP_PRV_TOTAL, PIDS_SMAP_RSS };

/* A process's open status file. */
struct status_fd {
	int pid;
	int fd;                  /* -1: could not be kept open (EMFILE): opened per read */
	bool used;               /* asked for in this read */
	int cg_fd;               /* its /proc/PID/cgroup (-1 not opened yet, -2 none) */
	int ev_fd;               /* the cgroup.events of its cgroup v2 (-2 none) */
	char cg[256];            /*   that cgroup's path, "" when not resolved */
};

struct proc_reader {
	struct status_fd *fds;
	size_t nfds, capfds;
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
	if (pss) {
		e = procps_pids_new(&r->pss, pss_items, (int)(sizeof pss_items / sizeof pss_items[0]));
		if (e < 0) {
			*cause = xasprintf("procps_pids_new: %s", strerror(-e));
			free(r);
			return NULL;
		}
	}
	return r;
}

/* Close a process's held files. */
static void slot_close(struct status_fd *sf)
{
	if (sf->fd >= 0)
		close(sf->fd);
	if (sf->cg_fd >= 0)
		close(sf->cg_fd);
	if (sf->ev_fd >= 0)
		close(sf->ev_fd);
}

void proc_reader_free(struct proc_reader *r)
{
	size_t i;
	if (!r)
		return;
	for (i = 0; i < r->nfds; i++)
		slot_close(&r->fds[i]);
	free(r->fds);
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

/* The held status file of pid, opened on first use. */
static struct status_fd *status_slot(struct proc_reader *r, int pid, size_t hint)
{
	struct status_fd *sf;
	char path[40];
	size_t i;

	if (hint < r->nfds && r->fds[hint].pid == pid)
		return &r->fds[hint];
	for (i = 0; i < r->nfds; i++)
		if (r->fds[i].pid == pid)
			return &r->fds[i];
	if (r->nfds == r->capfds) {
		r->capfds = r->capfds ? r->capfds * 2 : 8;
		r->fds = xrealloc(r->fds, r->capfds * sizeof *r->fds);
	}
	sf = &r->fds[r->nfds++];
	snprintf(path, sizeof path, "/proc/%d/status", pid);
	sf->pid = pid;
	sf->used = false;
	sf->cg_fd = -1;
	sf->ev_fd = -2;
	sf->cg[0] = '\0';
	sf->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (sf->fd < 0 && (errno == ENOENT || errno == ESRCH))
		sf->fd = -2; /* gone */
	return sf;
}

/* The decimal number at p (after blanks), and where it ends. No strtoull:
 * this is the watch's hot path, a few dozen numbers per process per sample. */
static const char *dec_at(const char *p, uint64_t *v)
{
	uint64_t n = 0;

	while (*p == ' ' || *p == '\t')
		p++;
	while (*p >= '0' && *p <= '9')
		n = n * 10 + (uint64_t)(*p++ - '0');
	*v = n;
	return p;
}

static uint64_t dec(const char *p)
{
	uint64_t v;
	dec_at(p, &v);
	return v;
}

/* The hexadecimal mask at p (SigCgt:, CapEff:). */
static unsigned long long hex(const char *p)
{
	unsigned long long n = 0;

	while (*p == ' ' || *p == '\t')
		p++;
	for (;; p++) {
		if (*p >= '0' && *p <= '9')
			n = n << 4 | (unsigned)(*p - '0');
		else if (*p >= 'a' && *p <= 'f')
			n = n << 4 | (unsigned)(*p - 'a' + 10);
		else
			return n;
	}
}

/* Whether the line (len bytes) starts with key; an inline compare of a few
 * bytes, never past the line. */
#define KEY(k) (len >= sizeof k - 1 && memcmp(line, k, sizeof k - 1) == 0)

/* Parse the text of a status file (see proc.h). The lines are told apart by
 * their first letter: this is the watch's hot path, once per process per
 * sample. */
void proc_status_parse(char *buf, struct proc_status *st)
{
	char *line, *next;
	uint64_t v;

	memset(st, 0, sizeof *st);
	st->seccomp = -1;
	for (line = buf; line && *line; line = next) {
		size_t len;
		next = strchr(line, '\n');
		if (next) {
			len = (size_t)(next - line);
			*next++ = '\0';
		} else {
			len = strlen(line);
		}
		switch (line[0]) {
		case 'S':
			if (KEY("State:")) {
				const char *p = line + 6;
				while (*p == ' ' || *p == '\t')
					p++;
				st->state = *p;
			} else if (KEY("SigCgt:")) {
				st->sigcgt = hex(line + 7);
			} else if (KEY("SigBlk:")) {
				st->sigblk = hex(line + 7);
				st->has_sigblk = true;
			} else if (KEY("SigIgn:")) {
				st->sigign = hex(line + 7);
			} else if (KEY("SigPnd:")) {
				st->sigpnd = hex(line + 7);
			} else if (KEY("ShdPnd:")) {
				st->shdpnd = hex(line + 7);
			} else if (KEY("Seccomp:")) {
				st->seccomp = (int)dec(line + 8);
			}
			break;
		case 'T':
			if (KEY("Tgid:"))
				st->tgid = (int)dec(line + 5);
			else if (KEY("TracerPid:"))
				st->tracer = (int)dec(line + 10);
			break;
		case 'P':
			if (KEY("PPid:"))
				st->ppid = (int)dec(line + 5);
			break;
		case 'U':
			if (KEY("Uid:")) {
				const char *p = line + 4;
				for (int i = 0; i < 4; i++) {
					p = dec_at(p, &v);
					st->uid[i] = (unsigned)v;
				}
				st->has_uid = true;
			}
			break;
		case 'G':
			if (KEY("Gid:")) {
				const char *p = line + 4;
				for (int i = 0; i < 4; i++) {
					p = dec_at(p, &v);
					st->gid[i] = (unsigned)v;
				}
			}
			break;
		case 'N':
			/* the pid in the innermost namespace comes last */
			if (KEY("NSpid:")) {
				const char *last = strrchr(line, '\t');
				st->nspid = (int)dec(last ? last + 1 : line + 6);
			}
			break;
		case 'V':
			if (KEY("VmRSS:"))
				st->vm_rss = dec(line + 6);
			else if (KEY("VmSize:"))
				st->vm_size = dec(line + 7);
			else if (KEY("VmSwap:"))
				st->vm_swap = dec(line + 7);
			else if (KEY("VmHWM:"))
				st->vm_hwm = dec(line + 6);
			break;
		case 'R':
			if (KEY("RssAnon:"))
				st->rss_anon = dec(line + 8);
			else if (KEY("RssFile:"))
				st->rss_file = dec(line + 8);
			else if (KEY("RssShmem:"))
				st->rss_shmem = dec(line + 9);
			break;
		case 'C':
			if (KEY("CapEff:"))
				st->capeff = hex(line + 7);
			/* Cpus_allowed and what follows hold nothing we read */
			else if (KEY("Cpus_allowed"))
				return;
			break;
		}
	}
}

#undef KEY

/* Read and parse a status file (see proc.h). */
int proc_status_read(const char *path, struct proc_status *st)
{
	/* the Groups line of a member of many groups makes it long */
	char buf[16384];
	ssize_t n = 0, got;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	memset(st, 0, sizeof *st);
	st->seccomp = -1;
	if (fd < 0)
		return -errno;
	do {
		got = read(fd, buf + n, sizeof buf - 1 - (size_t)n);
		if (got > 0)
			n += got;
	} while ((got > 0 && (size_t)n < sizeof buf - 1) || (got < 0 && errno == EINTR));
	if (got < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	close(fd);
	buf[n] = '\0';
	proc_status_parse(buf, st);
	return 0;
}

int proc_inner_pid(int pid)
{
	char fn[64];
	struct proc_status st;

	snprintf(fn, sizeof fn, "/proc/%d/status", pid);
	if (proc_status_read(fn, &st) < 0 || st.nspid <= 0)
		return pid;
	return st.nspid;
}

/* The figures of one sample from the status text into ps. */
static void parse_status(char *buf, struct proc_stat *ps)
{
	struct proc_status st;

	proc_status_parse(buf, &st);
	ps->zombie = st.state == 'Z' || st.state == 'X';
	ps->state = st.state;
	ps->ppid = st.ppid;
	ps->s.rss = st.vm_rss;
	ps->s.vsz = st.vm_size;
	ps->s.swap = st.vm_swap;
	ps->s.anon = st.rss_anon;
	ps->s.file = st.rss_file;
	ps->s.shmem = st.rss_shmem;
	ps->s.hwm = st.vm_hwm;
}

/* The mount point of the cgroup v2 hierarchy (/sys/fs/cgroup, or
 * /sys/fs/cgroup/unified on a hybrid one), or NULL: then no process can be in
 * a frozen cgroup v2. Looked up once. */
static const char *cgroup2_root(void)
{
	static const char *const mounts[] = { "/sys/fs/cgroup", "/sys/fs/cgroup/unified" };
	static int found = -2;
	struct statfs st;
	int i;

	if (found == -2) {
		found = -1;
		for (i = 0; i < 2 && found < 0; i++)
			if (statfs(mounts[i], &st) == 0 && st.f_type == CGROUP2_SUPER_MAGIC)
				found = i;
	}
	return found >= 0 ? mounts[found] : NULL;
}

/* The cgroup v2 path ("/a/b") in the text of /proc/PID/cgroup, into out. */
static bool cgroup2_path(const char *text, char *out, size_t size)
{
	const char *p, *end;
	for (p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		if (strncmp(p, "0::/", 4) != 0)
			continue;
		p += 3;
		end = p + strcspn(p, "\n");
		if ((size_t)(end - p) >= size)
			return false;
		memcpy(out, p, (size_t)(end - p));
		out[end - p] = '\0';
		return true;
	}
	return false;
}

/* "frozen 1" in the text of a cgroup.events file. */
static bool events_frozen(const char *text)
{
	return strncmp(text, "frozen 1", 8) == 0 || strstr(text, "\nfrozen 1") != NULL;
}

/* Whether a process's cgroup v2 is frozen (cgroup.freeze, by it or an
 * ancestor): a frozen task shows as sleeping in its status. Two preads of
 * held files; the cgroup's file is opened again when the process moves. */
static bool slot_frozen(struct status_fd *sf)
{
	const char *root = cgroup2_root();
	char buf[1024], cg[sizeof sf->cg], path[PATH_MAX];
	ssize_t n;

	if (!root || sf->cg_fd == -2)
		return false;
	if (sf->cg_fd == -1) {
		snprintf(path, sizeof path, "/proc/%d/cgroup", sf->pid);
		sf->cg_fd = open(path, O_RDONLY | O_CLOEXEC);
		if (sf->cg_fd < 0) {
			sf->cg_fd = -2;
			return false;
		}
	}
	n = pread(sf->cg_fd, buf, sizeof buf - 1, 0);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	if (!cgroup2_path(buf, cg, sizeof cg))
		return false;
	if (strcmp(cg, sf->cg) != 0) {
		if (sf->ev_fd >= 0)
			close(sf->ev_fd);
		strcpy(sf->cg, cg);
		sf->ev_fd = -2;
		/* the root cgroup cannot be frozen (it has no cgroup.events) */
		if (strcmp(cg, "/") != 0 &&
		    (size_t)snprintf(path, sizeof path, "%s%s/cgroup.events", root, cg) < sizeof path) {
			sf->ev_fd = open(path, O_RDONLY | O_CLOEXEC);
			if (sf->ev_fd < 0)
				sf->ev_fd = -2;
		}
	}
	if (sf->ev_fd < 0)
		return false;
	n = pread(sf->ev_fd, buf, sizeof buf - 1, 0);
	if (n <= 0) {
		/* the cgroup was removed: look again at the next sample */
		close(sf->ev_fd);
		sf->ev_fd = -2;
		sf->cg[0] = '\0';
		return false;
	}
	buf[n] = '\0';
	return events_frozen(buf);
}

/* One sample of every process: a pread of each held status file, then, with
 * --pss, one libproc2 pass over their smaps_rollup. */
int proc_read(struct proc_reader *r, const int *pids, size_t n, struct proc_stat *out)
{
	char buf[4096];
	struct pids_fetch *f;
	size_t i, j;
	int k;

	for (i = 0; i < r->nfds; i++)
		r->fds[i].used = false;
	for (i = 0; i < n; i++) {
		struct status_fd *sf = status_slot(r, pids[i], i);
		struct proc_stat *p = &out[i];
		ssize_t got;
		int fd = sf->fd;

		memset(p, 0, sizeof *p);
		p->s.pid = pids[i];
		p->s.pss = p->s.uss = RUNLOG_NONE;
		p->s.hwm = p->s.cg_usage = p->s.cg_limit = RUNLOG_NONE;
		sf->used = true;
		if (fd == -2)
			continue;
		if (fd < 0) {
			char path[40];
			snprintf(path, sizeof path, "/proc/%d/status", pids[i]);
			fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd < 0)
				continue;
		}
		do
			got = pread(fd, buf, sizeof buf - 1, 0);
		while (got < 0 && errno == EINTR);
		if (sf->fd < 0)
			close(fd);
		if (got <= 0) {
			/* ESRCH: reaped; the descriptor is of no more use */
			if (sf->fd >= 0) {
				close(sf->fd);
				sf->fd = -2;
			}
			continue;
		}
		buf[got] = '\0';
		p->found = true;
		parse_status(buf, p);
		if (!p->zombie && proc_run_of_state(p->state) == PROC_RUNNING)
			p->frozen = slot_frozen(sf);
	}
	/* close the files of processes no longer asked for */
	for (i = 0, j = 0; i < r->nfds; i++) {
		if (r->fds[i].used)
			r->fds[j++] = r->fds[i];
		else
			slot_close(&r->fds[i]);
	}
	r->nfds = j;

	if (!r->pss || n == 0)
		return 0;
	if (n > r->selcap) {
		r->selcap = n < 16 ? 16 : n * 2;
		r->sel = xrealloc(r->sel, r->selcap * sizeof *r->sel);
	}
	for (i = 0; i < n; i++) {
		r->sel[i] = (unsigned)pids[i];
		out[i].pss_denied = out[i].found && !out[i].zombie;
	}
	/* a resident process with no resident pages in its rollup is one whose
	 * rollup could not be read (another user's, a non-dumpable one) */
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

double proc_age_s(int pid)
{
	char fn[64], buf[1024], *p;
	unsigned long long start;
	struct timespec now;
	long hz = sysconf(_SC_CLK_TCK);

	snprintf(fn, sizeof fn, "/proc/%d/stat", pid);
	if (hz <= 0 || read_small(fn, buf, sizeof buf) <= 0 || !(p = strrchr(buf, ')')) ||
	    clock_gettime(CLOCK_BOOTTIME, &now) < 0)
		return -1;
	/* after "pid (comm)": starttime is field 22, in clock ticks since boot */
	if (sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d "
		   "%*d %*d %llu", &start) != 1)
		return -1;
	return (double)now.tv_sec + (double)now.tv_nsec / 1e9 - (double)start / (double)hz;
}

bool proc_busy(int pid)
{
	char path[64], buf[512], *p;
	struct dirent *e;
	bool busy = false;
	DIR *d;

	snprintf(path, sizeof path, "/proc/%d/task", pid);
	if (!(d = opendir(path)))
		return false;
	while (!busy && (e = readdir(d))) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof path, "/proc/%d/task/%.16s/stat", pid, e->d_name);
		/* the state follows the last ')' of the command name */
		if (read_small(path, buf, sizeof buf) > 0 && (p = strrchr(buf, ')')) && p[1] == ' ')
			busy = p[2] == 'R' || p[2] == 'D';
	}
	closedir(d);
	return busy;
}

bool proc_runs_own_program(int pid)
{
	char fn[64], buf[1024], *p, a[PATH_MAX], b[PATH_MAX];
	ssize_t na, nb;
	int ppid;

	snprintf(fn, sizeof fn, "/proc/%d/stat", pid);
	if (read_small(fn, buf, sizeof buf) <= 0 || !(p = strrchr(buf, ')')) ||
	    sscanf(p + 1, " %*c %d", &ppid) != 1)
		return false;
	snprintf(fn, sizeof fn, "/proc/%d/exe", pid);
	na = readlink(fn, a, sizeof a - 1);
	snprintf(fn, sizeof fn, "/proc/%d/exe", ppid);
	nb = readlink(fn, b, sizeof b - 1);
	if (na <= 0 || nb <= 0)
		return false;
	return na != nb || memcmp(a, b, (size_t)na) != 0;
}

enum proc_run proc_run_of_state(char state)
{
	switch (state) {
	case 'T':
		return PROC_STOPPED;
	case 't':
		return PROC_TRACED;
	case 'Z':
	case 'X':
	case 0:
		return PROC_GONE;
	default:
		return PROC_RUNNING;
	}
}

/* Whether pid's cgroup v2 is frozen (as slot_frozen, opening its files). */
static bool cgroup_frozen(int pid)
{
	const char *root = cgroup2_root();
	char path[PATH_MAX], buf[4096], cg[256], ev[256];

	snprintf(path, sizeof path, "/proc/%d/cgroup", pid);
	if (!root || read_small(path, buf, sizeof buf) <= 0 || !cgroup2_path(buf, cg, sizeof cg) ||
	    strcmp(cg, "/") == 0)
		return false;
	if ((size_t)snprintf(path, sizeof path, "%s%s/cgroup.events", root, cg) >= sizeof path)
		return false;
	return read_small(path, ev, sizeof ev) > 0 && events_frozen(ev);
}

enum proc_run proc_run_state(int pid)
{
	char path[64], buf[512], *p;
	enum proc_run r;

	snprintf(path, sizeof path, "/proc/%d/stat", pid);
	if (read_small(path, buf, sizeof buf) <= 0)
		return PROC_GONE;
	/* the command name in parentheses may hold anything: the state follows
	 * the last ')' */
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ')
		return PROC_GONE;
	r = proc_run_of_state(p[2]);
	if (r == PROC_RUNNING && cgroup_frozen(pid))
		r = PROC_FROZEN;
	return r;
}

const char *proc_run_name(enum proc_run r)
{
	switch (r) {
	case PROC_STOPPED: return "stopped";
	case PROC_TRACED: return "traced";
	case PROC_FROZEN: return "frozen";
	case PROC_GONE: return "gone";
	default: return "running";
	}
}

/* Owner, state and command line of pid, from its status and cmdline files. */
int proc_identify(int pid, struct proc_ident *id)
{
	char path[64], buf[4096];
	struct proc_status st_status;
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
	proc_status_parse(buf, &st_status);
	/* the real uid: the second field of "Uid:" is the effective one */
	id->uid = st_status.has_uid ? (uid_t)st_status.uid[0] : st.st_uid;
	id->other_user = geteuid() != 0 && id->uid != geteuid();
	id->tgid = st_status.tgid > 0 ? st_status.tgid : pid;
	id->zombie = st_status.state == 'Z' || st_status.state == 'X';
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
	/* getdents64 into a buffer on the stack: opendir would allocate 32 KiB
	 * for each member at each sample */
	char ents[2048] __attribute__((aligned(8)));
	ssize_t n, off;
	int dfd;

	snprintf(path, sizeof path, "/proc/%d/task", pid);
	dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return;
	while ((n = getdents64(dfd, ents, sizeof ents)) > 0) {
		for (off = 0; off < n;) {
			struct dirent64 *e = (struct dirent64 *)(void *)(ents + off);
			char *p, *end;
			off += e->d_reclen;
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
	}
	close(dfd);
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

/* Every descendant of the roots, breadth first, from the children files or
 * from one pass over /proc. */
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
