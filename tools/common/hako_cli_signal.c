/* See hako_cli.h: the signals a tool's loop looks for. */
#define _DEFAULT_SOURCE /* NSIG */
#define _POSIX_C_SOURCE 200809L

#include "hako_cli.h"

#include <string.h>

/* The flag of each signal; written before its handler is installed, read only by it. */
static volatile sig_atomic_t *g_flags[NSIG];

static void on_signal(int sig)
{
	if (sig > 0 && sig < NSIG && g_flags[sig] != NULL) {
		*g_flags[sig] = sig;
	}
}

void hako_cli_catch_signal(int sig, volatile sig_atomic_t *flag, int once)
{
	if (sig <= 0 || sig >= NSIG) {
		return;
	}
	g_flags[sig] = flag;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = once ? SA_RESETHAND : 0;
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, NULL);
}

void hako_cli_catch_stop(volatile sig_atomic_t *flag, int once)
{
	hako_cli_catch_signal(SIGINT, flag, once);
	hako_cli_catch_signal(SIGTERM, flag, once);
}
