/* SPDX-License-Identifier: MIT */
/*
 * host/attach.c - the processes of `memtrack --pid PID`.
 *
 * A pid is checked through its /proc/PID/stat, read once: a process that
 * does not exist, a zombie (nothing left to record), a kernel thread (no
 * user-space allocator) and memtrack itself are refused with a line saying
 * which. Each process is then held by a pidfd, which polls readable when
 * it exits: a pid reused meanwhile is not mistaken for it.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "attach.h"
#include "log.h"

#define PF_KTHREAD 0x00200000u

/* State and flags from /proc/PID/stat; -errno when it cannot be read. */
static int proc_stat(pid_t pid, char *state, unsigned long *flags)
{
	char path[64], buf[1024], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		return -errno;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0) {
		return -ESRCH;
	}
	buf[n] = '\0';
	/* "pid (comm) S ppid pgrp session tty tpgid flags ...": comm may
	 * hold anything, so from its last ')' */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %c %*d %*d %*d %*d %*d %lu", state, flags) !=
			  2) {
		return -EINVAL;
	}
	return 0;
}

int mt_attach_open(struct mt_attach *a, const pid_t *pids, size_t n)
{
	size_t i;

	a->n = 0;
	for (i = 0; i < n; i++) {
		unsigned long flags = 0;
		char state = 0;
		int err, fd;

		if (pids[i] == getpid()) {
			mt_err("--pid %d: that is memtrack itself", (int)pids[i]);
			return -EINVAL;
		}
		err = proc_stat(pids[i], &state, &flags);
		if (err == -ENOENT || err == -ESRCH) {
			mt_err("--pid %d: no such process", (int)pids[i]);
			return -EINVAL;
		}
		if (err) {
			mt_err("--pid %d: cannot read /proc/%d/stat: %s",
			       (int)pids[i], (int)pids[i], strerror(-err));
			return err == -EINVAL ? -EIO : err;
		}
		if (state == 'Z' || state == 'X') {
			mt_err("--pid %d: the process has exited (a zombie): nothing to record",
			       (int)pids[i]);
			return -EINVAL;
		}
		if (flags & PF_KTHREAD) {
			mt_err("--pid %d: a kernel thread: it has no allocator to record",
			       (int)pids[i]);
			return -EINVAL;
		}
		for (size_t j = 0; j < a->n; j++) {
			if (a->pid[j] == pids[i]) {
				mt_err("--pid %d: given twice", (int)pids[i]);
				return -EINVAL;
			}
		}
		fd = (int)syscall(SYS_pidfd_open, pids[i], 0);
		if (fd < 0) {
			err = -errno;
			if (err == -ESRCH) {
				mt_err("--pid %d: no such process", (int)pids[i]);
				return -EINVAL;
			}
			mt_err("--pid %d: pidfd_open: %s", (int)pids[i],
			       strerror(-err));
			return err;
		}
		fcntl(fd, F_SETFD, FD_CLOEXEC);
		a->pid[a->n] = pids[i];
		a->pidfd[a->n] = fd;
		a->n++;
	}
	return 0;
}

bool mt_attach_all_gone(const struct mt_attach *a)
{
	struct pollfd p[MT_ATTACH_MAX];
	size_t i, gone = 0;

	for (i = 0; i < a->n; i++) {
		p[i] = (struct pollfd){ .fd = a->pidfd[i], .events = POLLIN };
	}
	if (poll(p, (nfds_t)a->n, 0) < 0) {
		return false;
	}
	for (i = 0; i < a->n; i++) {
		gone += !!(p[i].revents & (POLLIN | POLLHUP));
	}
	return a->n && gone == a->n;
}

void mt_attach_close(struct mt_attach *a)
{
	for (size_t i = 0; i < a->n; i++) {
		close(a->pidfd[i]);
	}
	a->n = 0;
}
