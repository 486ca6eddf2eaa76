/* run.c: memwatch run -- CMD ARGS: start a program with the agent preloaded and
 * watch it as memwatch -p does; exit with the program's own status. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/protocol.h"
#include "capture.h"
#include "commands.h"
#include "util.h"
#include "watch.h"

const char run_usage[] =
	"  memwatch run [OPTIONS] [--] CMD [ARGS...]\n"
	"      Start CMD with the agent preloaded and watch it like memwatch -p; every\n"
	"      watch and capture option above applies except -p (default --capture now).\n"
	"      Exits with CMD's exit status (128+N when a signal N ended it).\n";

/* Set the environment the agent is preloaded with in the child. */
static void setup_preload(const char *agent, const struct capture_opts *co)
{
	const char *old = getenv("LD_PRELOAD");
	char *pre = old && *old ? xasprintf("%s:%s", old, agent) : xstrdup(agent);
	char *opts = xasprintf("capture=%s,rate=%llu,depth=%u,max-stacks=%llu",
			       co->mode == CAPTURE_NOW ? "now" : "idle",
			       (unsigned long long)co->sample_rate, co->max_depth,
			       (unsigned long long)co->max_stacks);
	setenv("LD_PRELOAD", pre, 1);
	setenv(MEMWATCH_AGENT_ENV, opts, 1);
	free(pre);
	free(opts);
}

/* Start argv as a child. Exec failures come back through a close-on-exec pipe
 * so the parent can say them in its own words. Returns the pid, or -errno. */
static int spawn(char **argv, const char *agent, const struct capture_opts *co)
{
	int pfd[2], err = 0;
	pid_t pid;
	ssize_t n;

	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		err = errno;
		close(pfd[0]);
		close(pfd[1]);
		return -err;
	}
	if (pid == 0) {
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGCHLD, SIG_DFL);
		signal(SIGPIPE, SIG_DFL);
		signal(SIGXFSZ, SIG_DFL);
		close(pfd[0]);
		if (co->mode != CAPTURE_NEVER)
			setup_preload(agent, co);
		execvp(argv[0], argv);
		err = errno;
		(void)!write(pfd[1], &err, sizeof err);
		_exit(127);
	}
	close(pfd[1]);
	do
		n = read(pfd[0], &err, sizeof err);
	while (n < 0 && errno == EINTR);
	close(pfd[0]);
	if (n == (ssize_t)sizeof err) {
		waitpid(pid, NULL, 0);
		return -err;
	}
	return pid;
}

int cmd_run(int argc, char **argv)
{
	struct watch_opts o;
	char *agent, *cmdline;
	int argi = 0, rc, pid;
	struct stat st;

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
	if (o.output && !o.force && strcmp(o.output, "-") != 0 && lstat(o.output, &st) == 0) {
		mw_error("'%s' exists (use --force to overwrite)", o.output);
		return MW_EXIT_FAILURE;
	}
	agent = find_agent_library();
	if (o.capture.mode != CAPTURE_NEVER && access(agent, R_OK) != 0) {
		mw_error("cannot find the agent library '%s': %s", agent, strerror(errno));
		mw_hint("set MEMWATCH_AGENT to the path of libmemwatch-agent.so");
		free(agent);
		return MW_EXIT_FAILURE;
	}
	o.capture.preloaded = true;

	pid = spawn(argv + argi, agent, &o.capture);
	free(agent);
	if (pid < 0) {
		mw_error("cannot run '%s': %s", argv[argi], strerror(-pid));
		return -pid == ENOENT ? 127 : 126;
	}
	o.run_child = pid;
	cmdline = watch_command_line("memwatch run", argc, argv);
	rc = watch_loop(&o, cmdline);
	free(cmdline);
	watch_opts_release(&o);
	return rc;
}
