// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * SIGINT, SIGTERM and SIGHUP for the commands that change an image: the
 * handler only records the signal; the library stops at its next commit
 * (xip_set_interrupt), the command rolls back or finishes, closes the image
 * clean and exits 128 + the signal's number, as a shell reports it.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"

volatile sig_atomic_t cmd_stop_signal;
/* written to by the handler: a poll(2) in the library wakes up at once */
static int stop_pipe[2] = { -1, -1 };

static void on_stop(int sig)
{
	int saved = errno;

	cmd_stop_signal = sig;
	/* a full pipe has a byte to wake on already */
	if (stop_pipe[1] >= 0)
		(void)!write(stop_pipe[1], "", 1);
	errno = saved;
}

void cmd_catch_signals(const int *sigs, size_t n, void (*handler)(int))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = 0;	/* no SA_RESTART: a blocked read returns */
	for (size_t i = 0; i < n; i++) {
		struct sigaction old;

		/* a signal ignored by the parent stays ignored (nohup) */
		if (sigaction(sigs[i], NULL, &old) == 0 &&
		    old.sa_handler == SIG_IGN)
			continue;
		sigaction(sigs[i], &sa, NULL);
	}
}

void cmd_catch_stop_signals(void)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };

	if (stop_pipe[0] < 0 && pipe2(stop_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		stop_pipe[0] = stop_pipe[1] = -1;
	cmd_catch_signals(sigs, sizeof(sigs) / sizeof(sigs[0]), on_stop);
	xip_set_interrupt(&cmd_stop_signal);
	xip_set_interrupt_fd(stop_pipe[0]);
}

int cmd_stop_status(int rc)
{
	return cmd_stop_signal ? 128 + cmd_stop_signal : rc;
}
