/* SPDX-License-Identifier: MIT */
/*
 * sig-count SIGNO READY: counts the signals SIGNO it gets. Creates the
 * file READY once its handler is in place, waits for a first signal (at
 * most 20 s), then 0.5 s more for a second one, and prints
 * "signals N". A program for which a second signal means "quit now"
 * would have skipped its clean shutdown for N > 1 (issue 28, item 4).
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t count;

static void on_signal(int signo)
{
	(void)signo;
	count++;
}

/* sleep through the signals: nanosleep returns early on each */
static void sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000,
			       .tv_nsec = (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0) {
	}
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };
	int signo, fd, i;

	if (argc != 3) {
		fprintf(stderr, "usage: sig-count SIGNO READY\n");
		return 2;
	}
	signo = atoi(argv[1]);
	sigemptyset(&sa.sa_mask);
	if (sigaction(signo, &sa, NULL) < 0) {
		perror("sigaction");
		return 1;
	}
	fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		perror(argv[2]);
		return 1;
	}
	close(fd);
	for (i = 0; i < 2000 && count == 0; i++) {
		sleep_ms(10);
	}
	sleep_ms(500);
	printf("signals %d\n", (int)count);
	return 0;
}
