/* commands.h: the entry point and help text of every memwatch command. Each
 * cmd_* parses its own options (getopt_long) and returns an enum mw_exit. */
#ifndef MEMWATCH_COMMANDS_H
#define MEMWATCH_COMMANDS_H

/* memwatch [-p PID ...] : watch (src/watch.c) */
int cmd_watch(int argc, char **argv);
extern const char watch_usage[];
/* memwatch top -p PID: the watch as a live full-screen view (src/top.c) */
int cmd_top(int argc, char **argv);
extern const char top_usage[];
/* memwatch run [opts] -- CMD ARGS (src/run.c) */
int cmd_run(int argc, char **argv);
extern const char run_usage[];
/* memwatch snap -p PID [-o F] (src/snap.c) */
int cmd_snap(int argc, char **argv);
extern const char snap_usage[];
/* memwatch diff A B, memwatch show A (src/report.c) */
int cmd_diff(int argc, char **argv);
extern const char diff_usage[];
int cmd_show(int argc, char **argv);
extern const char show_usage[];
/* memwatch plot run.log (src/plot.c) */
int cmd_plot(int argc, char **argv);
extern const char plot_usage[];
/* memwatch report RUN.LOG: one HTML page for a run (src/htmlreport.c) */
int cmd_report(int argc, char **argv);
extern const char report_usage[];

/* Print the whole help (every command) to stdout. */
void usage_all(void);

#endif
