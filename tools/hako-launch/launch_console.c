/* hako-launch's terminal and its own log (launch_console.h). */
#include "launch_console.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

static struct {
	int quiet;
	int no_echo;
	int tty;
	int color;
	int own_log;      /* fd, -1 when none */
	int status_shown; /* a status line is on screen (tty) */
} C = {.own_log = -1};

void hakoi_console_init(int quiet, int no_echo)
{
	C.quiet = quiet;
	C.no_echo = no_echo;
	C.tty = isatty(STDOUT_FILENO);
	C.color = C.tty && getenv("NO_COLOR") == NULL;
}

int hakoi_log_open(const char *path)
{
	/* Not O_TRUNC: a file left by an earlier run keeps its mode through open, and one that is
	 * not ours (a shared log folder) must not be emptied either. So: check, narrow, then
	 * truncate. O_NOFOLLOW: a link planted in the folder does not redirect the log. */
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		return -1;
	}
	struct stat sb;
	int err = 0;
	if (fstat(fd, &sb) != 0) {
		err = errno;
	} else if (!S_ISREG(sb.st_mode) || sb.st_uid != geteuid()) {
		err = EPERM;
	} else if (fchmod(fd, 0600) != 0 || ftruncate(fd, 0) != 0) {
		err = errno;
	}
	if (err != 0) {
		close(fd);
		errno = err;
		return -1;
	}
	return fd;
}

void hakoi_console_open_log(const char *path)
{
	C.own_log = hakoi_log_open(path);
}

void hakoi_console_close_log(void)
{
	if (C.own_log >= 0) {
		close(C.own_log);
		C.own_log = -1;
	}
}

int hakoi_console_tty(void)
{
	return C.tty;
}

int hakoi_console_color(void)
{
	return C.color;
}

int hakoi_console_quiet(void)
{
	return C.quiet;
}

static void own_log(const char *text)
{
	if (C.own_log >= 0) {
		size_t n = strlen(text);
		if (write(C.own_log, text, n) != (ssize_t)n) {
			/* the log is a convenience; the terminal has the message */
		}
	}
}

void hakoi_console_status_clear(void)
{
	if (C.status_shown) {
		fputs("\r\033[K", stdout);
		C.status_shown = 0;
	}
}

static void vline(FILE *out, const char *fmt, va_list ap)
{
	char text[2048];
	int n = snprintf(text, sizeof(text), "hako-launch: ");
	vsnprintf(text + n, sizeof(text) - (size_t)n, fmt, ap);
	size_t len = strlen(text);
	if (len + 1 < sizeof(text)) {
		text[len++] = '\n';
		text[len] = '\0';
	}
	hakoi_console_status_clear();
	if (out == stderr) {
		fflush(stdout);
	}
	fputs(text, out);
	fflush(out);
	own_log(text);
}

void hakoi_say(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (C.quiet) {
		char text[2048];
		vsnprintf(text, sizeof(text), fmt, ap);
		char line[2100];
		snprintf(line, sizeof(line), "hako-launch: %s\n", text);
		own_log(line);
	} else {
		vline(stdout, fmt, ap);
	}
	va_end(ap);
}

void hakoi_say_always(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vline(stdout, fmt, ap);
	va_end(ap);
}

void hakoi_complain(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vline(stderr, fmt, ap);
	va_end(ap);
}

void hakoi_console_echo(const char *name, int color, const char *text, size_t len)
{
	if (C.no_echo) {
		return;
	}
	hakoi_console_status_clear();
	if (C.color) {
		printf("\033[%dm[%s]\033[0m %.*s\n", color, name, (int)len, text);
	} else {
		printf("[%s] %.*s\n", name, (int)len, text);
	}
	fflush(stdout); /* a pipe (| tee, a log collector) sees each line as it comes */
}

void hakoi_console_status(const char *text)
{
	if (C.quiet) {
		return;
	}
	if (C.tty) {
		char line[256];
		snprintf(line, sizeof(line), "%s", text);
		struct winsize ws;
		if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1 &&
		    ws.ws_col <= sizeof(line)) {
			line[ws.ws_col - 1] = '\0'; /* a wrapped line could not be rewritten */
		}
		printf("\r\033[K%s%s%s", C.color ? "\033[1m" : "", line, C.color ? "\033[0m" : "");
		C.status_shown = 1;
	} else {
		printf("hako-launch: %s\n", text);
	}
	fflush(stdout);
}
