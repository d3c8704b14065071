/* What hako-launch shows: its own lines ("hako-launch: ..."), the processes' lines
 * ("[name] ..."), and the status line, which on a terminal is rewritten in place and so must be
 * cleared before any other line. Everything hako-launch says also goes to its own log. One
 * console a process: it is the process's terminal. */
#ifndef HAKOI_LAUNCH_CONSOLE_H
#define HAKOI_LAUNCH_CONSOLE_H

#include <stddef.h>

/* quiet: no progress lines and no status line; no_echo: no process lines. A terminal on stdout
 * gets the status line in place and, without NO_COLOR, colours. */
void hakoi_console_init(int quiet, int no_echo);
/* A log file of hako-launch (its own, a process's), emptied and readable by its owner only
 * (mode 0600 whatever the umask or an earlier run left): the viewer's log and hako-launch's
 * hold the viewer's control token. Refused (-1, errno EPERM) when the file there is not a
 * regular file of ours. The fd, or -1 with errno set. */
int hakoi_log_open(const char *path);
/* hako-launch's own log (a convenience: without it, the terminal still has every line). */
void hakoi_console_open_log(const char *path);
void hakoi_console_close_log(void);

int hakoi_console_tty(void);
int hakoi_console_color(void);
int hakoi_console_quiet(void);

/* A progress line (not with --quiet, but always to the log). */
void hakoi_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A progress line shown even with --quiet: the outcome. */
void hakoi_say_always(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* An error line, on stderr. */
void hakoi_complain(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* "[name] text" (len bytes), in the ANSI colour `color` on a terminal. */
void hakoi_console_echo(const char *name, int color, const char *text, size_t len);

/* The status line: rewritten in place on a terminal (cut to its width), else printed as a
 * line. Not with --quiet. */
void hakoi_console_status(const char *text);
void hakoi_console_status_clear(void);

#endif
