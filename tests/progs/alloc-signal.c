/* SPDX-License-Identifier: MIT */
/* Allocations in a signal handler, while the interrupted thread is itself
 * allocating (the handler may interrupt a write into the ring). A timer
 * fires every 50 us; each handler call allocates a size of its own. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "report.h"

#define CALLS 200

static void *volatile blocks[CALLS];
static volatile sig_atomic_t calls;

static void on_alarm(int sig)
{
	int n = calls;

	(void)sig;
	if (n < CALLS) {
		blocks[n] = malloc(300000 + (size_t)n);
		free(blocks[n]);
		calls = n + 1;
	}
}

int main(void)
{
	struct itimerval it = { { 0, 50 }, { 0, 50 } };
	struct sigaction sa;
	sigset_t set;
	int i;

	/* whoever started us may block it (Check's test processes do) */
	sigemptyset(&set);
	sigaddset(&set, SIGALRM);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	/* malloc is not async-signal-safe: the main loop must never hold
	 * the arena lock a handler needs. Once the thread's cache (tcache)
	 * is set up, malloc(1000)/free pairs take no lock. */
	free(malloc(1000));
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	while (calls < CALLS) {
		void *volatile p = malloc(1000);

		free(p);
	}
	it.it_value.tv_usec = it.it_interval.tv_usec = 0;
	setitimer(ITIMER_REAL, &it, NULL);
	/* each block was freed right away: report in the order they came */
	for (i = 0; i < CALLS; i++) {
		report("Malloc", blocks[i], 300000 + (size_t)i, NULL);
		report("Free", blocks[i], 0, NULL);
	}
	return 0;
}
