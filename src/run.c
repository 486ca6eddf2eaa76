/* run.c: memwatch run -- CMD ARGS: start a program with the agent preloaded and
 * watch it as memwatch -p does; exit with the program's own status. A program
 * the agent cannot be loaded into (progkind.c) starts without it. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/protocol.h"
#include "capture.h"
#include "commands.h"
#include "progkind.h"
#include "subproc.h"
#include "util.h"
#include "watch.h"

const char run_usage[] =
	"  memwatch run [OPTIONS] [--] CMD [ARGS...]\n"
	"      Start CMD with the agent preloaded and watch it like memwatch -p; every\n"
	"      watch and capture option above applies except -p (default --capture now).\n"
	"      A CMD the agent cannot be loaded into (statically linked, musl, Go, a C\n"
	"      library other than glibc) starts without it and is watched only, with\n"
	"      one line saying why.\n"
	"      Waits for CMD and exits with its exit status (128+N when a signal N ended\n"
	"      it). With -d the watch ends at the duration instead: memwatch exits 0 and\n"
	"      CMD goes on running (its pid is said on stderr). Without -c, a CMD that\n"
	"      started other programs (sh -c 'a | b') gets a hint to use --children.\n";

/* An unnamed file the agent of the command writes its last snapshot into when
 * the command exits (what was never freed). Returns the fd, or -1: then there
 * is no snapshot at exit, and nothing else changes. */
static int exit_file(void)
{
	const char *dir = getenv("TMPDIR");
	int fd = open(dir && *dir ? dir : "/tmp", O_TMPFILE | O_RDWR, 0600);
	if (fd < 0) {
		char *p = xasprintf("%s/memwatch-exit.XXXXXX", dir && *dir ? dir : "/tmp");
		fd = mkstemp(p);
		if (fd >= 0)
			unlink(p);
		free(p);
	}
	return fd;
}

/* Make dir (a directory of ours that no one else may write into), or find it
 * made. 0, or -1. */
static int own_dir(const char *dir)
{
	struct stat st;

	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -1;
	if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 022))
		return -1;
	return 0;
}

/* Make DIR/NAME/BASE a link to real, the file st describes, or find it made.
 * 0, or -1. */
static int platform_link(const char *dir, const char *name, const char *real,
			 const struct stat *st)
{
	char *pdir = xasprintf("%s/%s", dir, name);
	char *link = xasprintf("%s/%s", pdir, base_name(real)), target[PATH_MAX];
	struct stat lst;
	ssize_t n;
	int ret = -1;

	if (own_dir(pdir) < 0)
		goto out;
	n = readlink(link, target, sizeof target - 1);
	if (n < 0 || (size_t)n != strlen(real) || memcmp(target, real, (size_t)n)) {
		unlink(link);
		if (symlink(real, link) < 0 && errno != EEXIST)
			goto out;
	}
	if (stat(link, &lst) == 0 && lst.st_dev == st->st_dev && lst.st_ino == st->st_ino)
		ret = 0;
out:
	free(pdir);
	free(link);
	return ret;
}

/* The agent as LD_PRELOAD is to name it: "DIR/$PLATFORM/libmemwatch-agent.so",
 * where DIR/PLATFORM (this machine's AT_PLATFORM, x86_64) holds a link to it.
 * glibc's loader may say another platform for $PLATFORM than the kernel's:
 * on x86_64 before 2.37, "haswell" on a processor with AVX2, FMA, BMI2 and
 * MOVBE, "xeon_phi" on one with AVX512ER; those directories hold the link
 * too.
 * glibc's loader expands $PLATFORM and loads the agent; musl's finds no such
 * file and, as for any preload it cannot find, goes on without it: a musl
 * program the command starts (sh -c, a script's exec) still starts, where
 * the agent itself would stop it ("symbol not found"). DIR is
 * TMPDIR/memwatch-UID/agent-DEV-INO, made once for that agent file and kept
 * (programs the command leaves running may still exec others). The agent's
 * own path when that cannot be made. Caller frees. */
static char *preload_path(const char *agent)
{
	const char *plat = (const char *)getauxval(AT_PLATFORM), *tmp = getenv("TMPDIR");
	static const char *const loader_platforms[] = { "haswell", "xeon_phi" };
	char *real = realpath(agent, NULL), *top = NULL, *dir = NULL, *ret = NULL;
	struct stat st;
	size_t i;

	if (!real)
		return xstrdup(agent);
	if (!plat || !*plat || strpbrk(plat, "/: $") || stat(real, &st) < 0)
		goto out;
	/* every program of the command's tree resolves it, from any directory */
	top = xasprintf("%s/memwatch-%u", tmp && tmp[0] == '/' ? tmp : "/tmp", (unsigned)geteuid());
	dir = xasprintf("%s/agent-%llx-%llx", top, (unsigned long long)st.st_dev,
			(unsigned long long)st.st_ino);
	/* separators of LD_PRELOAD, or a token of the loader's own, in the path */
	if (strpbrk(dir, ": \t$") || own_dir(top) < 0 || own_dir(dir) < 0 ||
	    platform_link(dir, plat, real, &st) < 0)
		goto out;
	for (i = 0; i < sizeof loader_platforms / sizeof loader_platforms[0]; i++)
		if (strcmp(plat, loader_platforms[i]) != 0 &&
		    platform_link(dir, loader_platforms[i], real, &st) < 0)
			goto out;
	ret = xasprintf("%s/$PLATFORM/%s", dir, base_name(real));
out:
	if (!ret)
		ret = xstrdup(real);
	free(real);
	free(top);
	free(dir);
	return ret;
}

/* Set the environment the agent is preloaded with in the child. The exit file
 * is named by descriptor, inode and pid, so that only this process writes it,
 * and only while that descriptor is still the file memwatch made. */
static void setup_preload(const char *agent, const struct capture_opts *co, bool children,
			  int exit_fd)
{
	const char *old = getenv("LD_PRELOAD");
	char *pre = old && *old ? xasprintf("%s:%s", old, agent) : xstrdup(agent);
	struct stat st;
	char exitopt[96] = "", who[32];
	char *opts;

	if (exit_fd >= 0 && fstat(exit_fd, &st) == 0)
		snprintf(exitopt, sizeof exitopt, ",exitfd=%d,exitino=%llu,exitpid=%d", exit_fd,
			 (unsigned long long)st.st_ino, (int)getpid());
	/* Without --children only this process samples: the programs it starts
	 * inherit the preload but their agents stay off. With it, forked children
	 * sample on their own and exec'd ones start their own agents. */
	if (children)
		snprintf(who, sizeof who, "children=1");
	else
		snprintf(who, sizeof who, "pid=%d", (int)getpid());
	opts = xasprintf("capture=%s,rate=%llu,depth=%u,max-stacks=%llu,%s%s",
			 co->mode == CAPTURE_NOW ? "now" : "idle",
			 (unsigned long long)co->sample_rate, co->max_depth,
			 (unsigned long long)co->max_stacks,
			 who, exitopt);
	setenv("LD_PRELOAD", pre, 1);
	setenv(MEMWATCH_AGENT_ENV, opts, 1);
	free(pre);
	free(opts);
}

/* What the child needs before exec: the preload, when there is an agent (NULL:
 * the program cannot take it). */
struct preload {
	const char *agent;
	const struct capture_opts *co;
	bool children;
	int exit_fd;
};

static void child_preload(void *arg)
{
	const struct preload *p = arg;
	if (p->co->mode != CAPTURE_NEVER && p->agent)
		setup_preload(p->agent, p->co, p->children, p->exit_fd);
}

/* Start argv as a child, with the signal discipline of subproc.h and a clean
 * slate: nothing blocked, and the signals memwatch handles or ignores (SIGPIPE,
 * SIGXFSZ) at their defaults. Returns the pid, or -errno (exec failures too,
 * so that the parent can say them in its own words). */
static int spawn(char **argv, const char *agent, const struct capture_opts *co, bool children,
		 int exit_fd)
{
	static const int dfl[] = { SIGINT, SIGTERM, SIGCHLD, SIGPIPE, SIGXFSZ, 0 };
	struct preload p = { agent, co, children, exit_fd };
	struct subproc sp = { .argv = argv, .fd = { -1, -1, -1 }, .default_signals = dfl,
			      .unblock_all = true, .before_exec = child_preload, .arg = &p };
	int exec_errno, status;
	pid_t pid = subproc_start(&sp, &exec_errno, &status);

	return pid == 0 ? -exec_errno : pid;
}

/* Whether the agent cannot be loaded into the program cmd starts (found on
 * PATH as exec finds it; a script judged by its interpreter). Then says so
 * once, with the fix, and returns the cause for the run log (caller frees);
 * else NULL, and the agent is preloaded. */
static char *refusal(const char *cmd)
{
	char *path = prog_find_in_path(cmd), what[400], *subject;
	struct prog_info pi;

	if (!path)
		return NULL;      /* exec says what is wrong */
	prog_judge_file(path, &pi);
	free(path);
	if (!prog_refused(pi.kind))
		return NULL;
	prog_what(&pi, what, sizeof what);
	subject = pi.script ? xasprintf("'%s', the interpreter of '%s',", pi.judged, cmd)
			    : xasprintf("'%s'", cmd);
	mw_warn("%s %s: its allocations cannot be sampled (%s); its memory is watched only",
		subject, what, prog_why(pi.kind));
	mw_hint("%s", prog_hint(pi.kind));
	free(subject);
	return xasprintf("the program %s: %s", what, prog_why(pi.kind));
}

int cmd_run(int argc, char **argv)
{
	struct watch_opts o;
	char *agent, *cmdline, *cause = NULL, *refused = NULL, *preload;
	int argi = 0, rc, pid, exit_fd;

	watch_opts_init(&o);
	o.capture.mode = CAPTURE_NOW;
	rc = watch_parse(argc, argv, &o, true, &argi);
	if (rc == WATCH_PARSE_HELP) {
		printf("Usage:\n%s\nWatch and capture options:\n%s", run_usage, watch_usage);
		return MW_EXIT_OK;
	}
	if (rc != 0)
		return rc;
	if (argi >= argc) {
		mw_error("run: no command given");
		mw_hint("memwatch run [OPTIONS] -- CMD [ARGS...]");
		watch_opts_release(&o);
		return MW_EXIT_USAGE;
	}
	/* refuse an output that will not be written before starting the command */
	if (o.output && outfile_check(o.output, o.force, &cause) < 0) {
		mw_error("%s", cause);
		free(cause);
		watch_opts_release(&o);
		return MW_EXIT_FAILURE;
	}
	/* never stop a program from starting: one the agent cannot be loaded
	 * into (musl's loader fails on it) starts without it, watched from /proc;
	 * what it starts is attached to as memwatch -p would */
	if (o.capture.mode != CAPTURE_NEVER)
		refused = refusal(argv[argi]);
	o.capture.refused = refused;
	o.capture.preloaded = !refused;
	agent = find_agent_library();
	if (o.capture.mode != CAPTURE_NEVER && !refused && access(agent, R_OK) != 0) {
		mw_error("cannot find the agent library '%s': %s", agent, strerror(errno));
		mw_hint("set MEMWATCH_AGENT to the path of libmemwatch-agent.so");
		free(agent);
		watch_opts_release(&o);
		return MW_EXIT_FAILURE;
	}
	exit_fd = o.capture.mode != CAPTURE_NEVER && !refused ? exit_file() : -1;

	preload = refused ? NULL : preload_path(agent);
	pid = spawn(argv + argi, preload, &o.capture, o.children, exit_fd);
	free(agent);
	free(preload);
	if (pid < 0) {
		mw_error("cannot run '%s': %s", argv[argi], strerror(-pid));
		if (exit_fd >= 0)
			close(exit_fd);
		free(refused);
		watch_opts_release(&o);
		return -pid == ENOENT ? 127 : 126;
	}
	if (exit_fd >= 0)
		fcntl(exit_fd, F_SETFD, FD_CLOEXEC);   /* not for gnuplot or other children */
	o.capture.exit_fd = exit_fd;
	o.capture.exit_pid = pid;
	o.run_child = pid;
	cmdline = watch_command_line("memwatch run", argc, argv);
	rc = watch_loop(&o, cmdline);
	free(cmdline);
	if (exit_fd >= 0)
		close(exit_fd);
	free(refused);
	watch_opts_release(&o);
	return rc;
}
