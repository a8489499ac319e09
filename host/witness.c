/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "witness.h"

/* An answer takes microseconds; a witness that does not answer within
 * this was stopped or killed on its own, and is no longer asked. */
#define ANSWER_MS 200

struct mt_witness {
	pid_t pid;
	int fd;
};

static void close_all_but(int keep)
{
	if (keep > 0 && syscall(SYS_close_range, 0U, (unsigned int)keep - 1,
				0U) < 0) {
		for (int fd = 0; fd < keep; fd++) {
			close(fd);
		}
	}
	if (syscall(SYS_close_range, (unsigned int)keep + 1, ~0U, 0U) < 0) {
		for (int fd = keep + 1; fd < 1024; fd++) {
			close(fd);
		}
	}
}

/* The witness: each byte read is a signal number; it takes one pending
 * such signal, if any, and answers 1 or 0. System calls only. */
static void __attribute__((noreturn)) witness_main(int fd)
{
	const struct timespec zero = { 0 };
	unsigned char signo, got;
	sigset_t one;

	/* memtrack's stdout may be a pipe whose reader waits for EOF */
	close_all_but(fd);
	/* a helper of memtrack's, not part of the tree (host/run.c) */
	prctl(PR_SET_NAME, "memtrack-witness", 0, 0, 0);
	for (;;) {
		ssize_t n = read(fd, &signo, 1);

		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n <= 0) {
			_exit(0);
		}
		sigemptyset(&one);
		sigaddset(&one, signo);
		got = sigtimedwait(&one, NULL, &zero) == (int)signo;
		while (send(fd, &got, 1, MSG_NOSIGNAL) < 0 && errno == EINTR) {
		}
	}
}

struct mt_witness *mt_witness_start(const sigset_t *set)
{
	struct mt_witness *w = calloc(1, sizeof(*w));
	int sv[2];

	(void)set; /* blocked already: the witness inherits the mask */
	if (!w) {
		return NULL;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		mt_debug("signal witness: socketpair: %s", strerror(errno));
		free(w);
		return NULL;
	}
	/* fork() without SIGCHLD at exit: see witness.h */
	w->pid = (pid_t)syscall(SYS_clone, 0UL, NULL, NULL, NULL, NULL);
	if (w->pid < 0) {
		mt_debug("signal witness: clone: %s", strerror(errno));
		close(sv[0]);
		close(sv[1]);
		free(w);
		return NULL;
	}
	if (w->pid == 0) {
		witness_main(sv[1]);
	}
	close(sv[1]);
	w->fd = sv[0];
	return w;
}

static int ask(struct mt_witness *w, int signo)
{
	unsigned char q = (unsigned char)signo, got = 0;
	struct pollfd pfd = { .fd = w->fd, .events = POLLIN };
	ssize_t n;

	while ((n = send(w->fd, &q, 1, MSG_NOSIGNAL)) < 0 && errno == EINTR) {
	}
	if (n != 1) {
		return -EPIPE;
	}
	while ((n = poll(&pfd, 1, ANSWER_MS)) < 0 && errno == EINTR) {
	}
	if (n != 1) {
		return -ETIMEDOUT;
	}
	while ((n = recv(w->fd, &got, 1, 0)) < 0 && errno == EINTR) {
	}
	return n == 1 ? got : -EPIPE;
}

/* The witness broke: from now on nothing counts as a group signal. */
static void give_up(struct mt_witness *w, int err)
{
	mt_debug("signal witness: %s: no longer asked", strerror(-err));
	close(w->fd);
	w->fd = -1;
}

bool mt_witness_group_got(struct mt_witness *w, int signo, int grace_ms)
{
	const struct timespec zero = { 0 };
	struct timespec grace = {
		.tv_sec = grace_ms / 1000,
		.tv_nsec = (long)(grace_ms % 1000) * 1000000L,
	};
	sigset_t one;
	int got;

	if (!w || w->fd < 0) {
		return false;
	}
	got = ask(w, signo);
	if (got == 0 && grace_ms > 0) {
		/* nanosleep is not restarted by blocked signals: none of
		 * memtrack's can interrupt it */
		nanosleep(&grace, NULL);
		got = ask(w, signo);
	}
	if (got == 1) {
		/* The group's copy of ours, not another signal: memtrack
		 * had it when the witness did (one kill reaches the whole
		 * group), unless it merged with the one just read. Taken at
		 * the first answer too: memtrack can read a sender's signal
		 * to it alone before the sender's next one to the group
		 * lands (timeout(1)), and the group's copy, read next, found
		 * the witness's taken and was forwarded: the command got
		 * the signal twice (tests/test-group-signals.sh, 'signals
		 * 2', 1 run in ~5). */
		sigemptyset(&one);
		sigaddset(&one, signo);
		sigtimedwait(&one, NULL, &zero);
	}
	if (got < 0) {
		give_up(w, got);
		return false;
	}
	return got == 1;
}

void mt_witness_stop(struct mt_witness *w)
{
	if (!w) {
		return;
	}
	if (w->fd >= 0) {
		close(w->fd);
	}
	/* EOF ends it, unless it was stopped: then it goes this way */
	kill(w->pid, SIGKILL);
	while (waitpid(w->pid, NULL, __WCLONE) < 0 && errno == EINTR) {
	}
	free(w);
}
