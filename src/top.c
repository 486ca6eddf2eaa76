/* top.c: memwatch top -p PID: the watch with a full-screen face (ncurses).
 * The watch loop (watch.c) samples, logs and captures as ever; this file
 * parses the command and is the face: after every sample it has the pages
 * take their samples (top-pages.c: each capture asked for snapshots of its
 * own at a cadence set by what one costs the target and, when r asks, one
 * with a referrer search; the rows of report.h's view) and draws them
 * (top-draw.c), and it reads the keys while it waits. */
#include "config.h"

#include <curses.h>
#include <fcntl.h>
#include <getopt.h>
#include <locale.h>
#include <poll.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <term.h>
#include <unistd.h>

#include "commands.h"
#include "top-internal.h"
#include "util.h"

const char top_usage[] =
	"  memwatch top -p PID [options]\n"
	"    The watch as a live full-screen view: per process, RSS, its growth and\n"
	"    the call stacks growing now, refreshed as snapshots come, each with its\n"
	"    verdict over the watch (leak?, plateau, burst, steady) from its third\n"
	"    snapshot on. The options of the watch (-c, -i, -d, -o, --capture, -r,\n"
	"    ...) apply, and these:\n"
	"  -b, --by WHAT           rows by stack (default), function, line or type\n"
	"                          (of CPython's objects: estimated objects and bytes)\n"
	"  -s, --sort KEY          growth (default), live or alloc\n"
	"    Keys: Up/Down move, Enter opens the row (the types its objects mostly\n"
	"    are and its whole stack; by type, the lines that allocated them), s sort,\n"
	"    b by, / focus pattern, x hide pattern, m mark now as the base, p pause,\n"
	"    Tab/n next and Shift-Tab/N previous process, w write the view's\n"
	"    snapshot, r one referrer search (CPython) with the next snapshot: from\n"
	"    then on an opened row by stack or type shows what keeps its objects\n"
	"    alive (Python threads wait while it runs, up to --referrers-limit;\n"
	"    --referrers searches only with the last snapshot, at the end), q quit.\n"
	"    Needs a terminal (not a pipe, not TERM=dumb). Snapshots for the view are\n"
	"    taken no more often than keeps their cost in the target under 1% of a\n"
	"    CPU; the header says the cadence.\n";

/* ---- the face ---- */

static void face_begin(struct top *tp)
{
	if (tp->on)
		return;
	tp->scr = newterm(NULL, stdout, stdin);
	if (!tp->scr)
		return;
	tp->on = true;
	cbreak();
	noecho();
	nonl();
	keypad(stdscr, TRUE);
	nodelay(stdscr, TRUE);
	curs_set(0);
	set_escdelay(25);
}

static void face_sampled(void *arg, double t, const struct watch_member *m, size_t n)
{
	struct top *tp = arg;
	size_t i;

	face_begin(tp);
	tp->t = t;
	for (i = 0; i < tp->npages; i++)
		tp->pages[i].live = false;
	for (i = 0; i < n; i++)
		page_sample(tp, page_of(tp, m[i].pid, m[i].cmd), t, &m[i]);
	if (!tp->paused)
		draw(tp);
}

/* Read a line at the bottom of the screen (a pattern); NULL when cancelled. */
static char *prompt(struct top *tp, const char *what)
{
	char buf[200];
	int r;

	clip_line(LINES - 1, what);
	echo();
	nodelay(stdscr, FALSE);
	curs_set(1);
	r = getnstr(buf, sizeof buf - 1);
	noecho();
	curs_set(0);
	nodelay(stdscr, TRUE);
	(void)tp;
	if (r == ERR)
		return NULL;
	return xstrdup(buf);
}

/* A new focus or hide pattern (empty: none). Every page's view is made again. */
static void set_pattern(struct top *tp, bool focus)
{
	char *pat = prompt(tp, focus ? "focus (rows whose stack matches; empty: all): "
				     : "hide (frames that are not yours; empty: none): ");
	regex_t re;
	bool *has = focus ? &tp->ro.has_focus : &tp->ro.has_hide;
	regex_t *slot = focus ? &tp->ro.focus : &tp->ro.hide;
	char **saved = focus ? &tp->focus_pat : &tp->hide_pat;

	if (!pat)
		return;
	if (*pat && regcomp(&re, pat, REG_EXTENDED | REG_NOSUB) != 0) {
		snprintf(tp->msg, sizeof tp->msg, "invalid pattern '%.100s'", pat);
		free(pat);
		return;
	}
	/* the views hold a copy of the options: made again before the old
	 * pattern goes */
	for (size_t i = 0; i < tp->npages; i++) {
		report_view_free(tp->pages[i].view);
		tp->pages[i].view = NULL;
	}
	if (*has)
		regfree(slot);
	*has = *pat != '\0';
	if (*has)
		*slot = re;
	free(*saved);
	*saved = *pat ? pat : NULL;
	if (!*pat)
		free(pat);
	for (size_t i = 0; i < tp->npages; i++) {
		page_new_view(tp, &tp->pages[i]);
		page_update_rows(tp, &tp->pages[i], false);
	}
	tp->sel = tp->scroll = 0;
}

/* Write the view's latest snapshot of the page to a file. */
static void write_snapshot(struct top *tp, struct page *p)
{
	char *path, *cause = NULL;

	if (!p->now) {
		snprintf(tp->msg, sizeof tp->msg, "no snapshot to write yet");
		return;
	}
	path = xasprintf("memwatch-top-%d.%u.snap", p->pid, ++p->written);
	if (snapshot_write(p->now, path, tp->wo.force, &cause) < 0) {
		snprintf(tp->msg, sizeof tp->msg, "%s", cause);
		free(cause);
	} else {
		snprintf(tp->msg, sizeof tp->msg, "wrote %s", path);
	}
	free(path);
}

/* r: a referrer search with the page's next view snapshot; said at once when
 * the process is known not to be CPython. */
static void ask_refs(struct top *tp, struct page *p)
{
	if (p->now && p->now->python == SNAP_PYTHON_NONE) {
		snprintf(tp->msg, sizeof tp->msg, "pid %d is not CPython: no Python objects to search "
			 "referrers of", p->pid);
		return;
	}
	p->refs_asked = true;
	p->next_peek = 0;
	snprintf(tp->msg, sizeof tp->msg, "pid %d: referrer search asked%s", p->pid,
		 tp->paused ? " (paused: it comes once updates resume)" :
		 p->state && strcmp(p->state, "capturing") ? " (it comes once capturing)" : "");
}

/* Act on one key; true to quit. */
static bool on_key(struct top *tp, int ch)
{
	struct page *p = tp->npages ? &tp->pages[tp->cur] : NULL;

	switch (ch) {
	case 'q':
	case 'Q':
		return true;
	case KEY_UP:
	case 'k':
		if (tp->stack_open && tp->stack_scroll)
			tp->stack_scroll--;
		else if (!tp->stack_open && tp->sel)
			tp->sel--;
		break;
	case KEY_DOWN:
	case 'j':
		if (tp->stack_open)
			tp->stack_scroll++;
		else
			tp->sel++;
		break;
	case KEY_PPAGE:
		tp->sel = tp->sel > (size_t)(LINES - 7) ? tp->sel - (size_t)(LINES - 7) : 0;
		break;
	case KEY_NPAGE:
		tp->sel += (size_t)(LINES - 7);
		break;
	case '\r':
	case '\n':
	case KEY_ENTER:
		tp->stack_open = !tp->stack_open;
		tp->stack_scroll = 0;
		break;
	case 27:
	case KEY_LEFT:
		tp->stack_open = false;
		break;
	case 's':
		tp->sort = (tp->sort + 1) % 3;
		for (size_t i = 0; i < tp->npages; i++)
			page_update_rows(tp, &tp->pages[i], false);
		tp->sel = tp->scroll = 0;
		break;
	case 'b':
		tp->ro.by = (tp->ro.by + 1) % 4;
		for (size_t i = 0; i < tp->npages; i++) {
			page_new_view(tp, &tp->pages[i]);
			page_update_rows(tp, &tp->pages[i], false);
		}
		tp->sel = tp->scroll = 0;
		break;
	case '/':
	case 'x':
		set_pattern(tp, ch == '/');
		break;
	case 'm':
		if (p && p->now) {
			struct snapshot *old = p->base;
			p->base = p->now;
			page_let_go(p, old);
			p->marked = true;
			page_update_rows(tp, p, false);
			snprintf(tp->msg, sizeof tp->msg, "marked: growth is now counted from here");
		}
		break;
	case 'p':
	case ' ':
		tp->paused = !tp->paused;
		break;
	case '\t':
	case 'n':
		if (tp->npages)
			tp->cur = (tp->cur + 1) % tp->npages;
		tp->sel = tp->scroll = 0;
		tp->stack_open = false;
		break;
	case KEY_BTAB:
	case 'N':
		if (tp->npages)
			tp->cur = (tp->cur + tp->npages - 1) % tp->npages;
		tp->sel = tp->scroll = 0;
		tp->stack_open = false;
		break;
	case 'w':
		if (p)
			write_snapshot(tp, p);
		break;
	case 'r':
		if (p)
			ask_refs(tp, p);
		break;
	case KEY_RESIZE:
	default:
		break;
	}
	return false;
}

static int face_wait(void *arg, uint64_t deadline_ns, bool (*stop)(void))
{
	struct top *tp = arg;

	face_begin(tp);
	for (;;) {
		uint64_t now = mono_ns();
		struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
		int ms, ch;
		bool any = false;

		if (stop())
			return FACE_SIGNAL;
		if (now >= deadline_ns)
			return FACE_DUE;
		ms = (int)((deadline_ns - now) / 1000000u) + 1;
		poll(&pfd, 1, ms > 100 ? 100 : ms);
		if (stop())
			return FACE_SIGNAL;
		while (tp->on && (ch = getch()) != ERR) {
			if (on_key(tp, ch))
				return FACE_QUIT;
			any = true;
		}
		if (any || is_term_resized(LINES, COLS))
			draw(tp);
	}
}

/* The terminal back as it was; what came on stderr meanwhile goes there. */
static void face_end(void *arg)
{
	struct top *tp = arg;
	char buf[4096];
	ssize_t k;
	off_t off = 0;

	if (tp->on) {
		endwin();
		delscreen(tp->scr);
		tp->on = false;
	}
	if (tp->real_err < 0)
		return;
	dup2(tp->real_err, STDERR_FILENO);
	close(tp->real_err);
	tp->real_err = -1;
	while ((k = pread(tp->err_fd, buf, sizeof buf, off)) > 0) {
		if (write(STDERR_FILENO, buf, (size_t)k) < 0)
			break;
		off += k;
	}
	close(tp->err_fd);
	tp->err_fd = -1;
}

/* ---- the command ---- */

static const struct option top_options[] = {
	{ "by", required_argument, NULL, 'b' },
	{ "sort", required_argument, NULL, 's' },
	{ NULL, 0, NULL, 0 },
};

static int top_option(int c, const char *arg, void *ctx)
{
	struct top *tp = ctx;

	if (c == 'b') {
		if (!strcmp(arg, "stack"))
			tp->ro.by = REPORT_BY_STACK;
		else if (!strcmp(arg, "function"))
			tp->ro.by = REPORT_BY_FUNCTION;
		else if (!strcmp(arg, "line"))
			tp->ro.by = REPORT_BY_LINE;
		else if (!strcmp(arg, "type"))
			tp->ro.by = REPORT_BY_TYPE;
		else {
			mw_error("top: invalid --by '%s' (stack, function, line or type)", arg);
			return MW_EXIT_USAGE;
		}
		return 0;
	}
	if (!strcmp(arg, "growth"))
		tp->sort = REPORT_SORT_GROWTH;
	else if (!strcmp(arg, "live"))
		tp->sort = REPORT_SORT_LIVE;
	else if (!strcmp(arg, "alloc"))
		tp->sort = REPORT_SORT_ALLOC;
	else {
		mw_error("top: invalid --sort '%s' (growth, live or alloc)", arg);
		return MW_EXIT_USAGE;
	}
	return 0;
}

/* Whether the terminal can take a full-screen view; said when not. */
static int check_terminal(void)
{
	const char *term = getenv("TERM");
	int err = 0;
	bool ok;

	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
		mw_error("top: standard %s is not a terminal", isatty(STDIN_FILENO) ? "output" : "input");
		mw_hint("memwatch -p PID watches without one (a status line, the report at the end)");
		return MW_EXIT_USAGE;
	}
	ok = term && *term && strcmp(term, "dumb") && setupterm(NULL, STDOUT_FILENO, &err) == OK;
	ok = ok && tigetstr("cup") && tigetstr("cup") != (char *)-1;
	/* the view sets up its own terminal (newterm) */
	if (cur_term)
		del_curterm(cur_term);
	if (!ok) {
		mw_error("top: the terminal cannot be drawn on (TERM=%s)", term && *term ? term : "");
		mw_hint("set TERM to your terminal's type, or use memwatch -p PID (a status line)");
		return MW_EXIT_USAGE;
	}
	return 0;
}

/* memwatch top: parse, check the terminal, watch with the view as the face. */
int cmd_top(int argc, char **argv)
{
	struct top tp;
	struct watch_face face = { .arg = &tp, .sampled = face_sampled, .wait = face_wait,
				   .end = face_end };
	char *cmdline;
	int r, argi = 0;

	memset(&tp, 0, sizeof tp);
	tp.real_err = tp.err_fd = -1;
	watch_opts_init(&tp.wo);
	report_options_init(&tp.ro);
	r = watch_parse_more(argc, argv, &tp.wo, &argi, "b:s:", top_options, top_option, &tp);
	if (r == WATCH_PARSE_HELP) {
		r = mw_usage_print(top_usage);
		goto out;
	}
	if (r == 0 && tp.wo.output && strcmp(tp.wo.output, "-") == 0) {
		/* the terminal is the view's */
		mw_error("top: the run log cannot go to standard output (-o -)");
		mw_hint("give it a file: -o FILE");
		r = MW_EXIT_USAGE;
	}
	if (r != 0 || (r = check_terminal()) != 0)
		goto out;
	setlocale(LC_ALL, "");
	tp.utf8 = MB_CUR_MAX > 1;
	/* what memwatch says while the view is up would tear it: it is kept, shown
	 * on the message line, and written out when the terminal is back */
	tp.err_fd = memfd_create("memwatch-top-messages", MFD_CLOEXEC);
	if (tp.err_fd >= 0) {
		fflush(stderr);
		tp.real_err = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
		if (tp.real_err < 0 || dup2(tp.err_fd, STDERR_FILENO) < 0) {
			close(tp.err_fd);
			tp.err_fd = -1;
			if (tp.real_err >= 0)
				close(tp.real_err);
			tp.real_err = -1;
		}
	}
	tp.wo.face = &face;
	tp.wo.quiet = true;
	cmdline = watch_command_line("memwatch top", argc, argv);
	r = watch_loop(&tp.wo, cmdline);
	free(cmdline);
	face_end(&tp);
out:
	for (size_t i = 0; i < tp.npages; i++)
		page_free(&tp.pages[i]);
	free(tp.pages);
	free(tp.focus_pat);
	free(tp.hide_pat);
	report_options_release(&tp.ro);
	watch_opts_release(&tp.wo);
	return r;
}
