/* SPDX-License-Identifier: MIT */
/*
 * memtrack --pid PID: the processes a run attaches to, instead of a
 * command it starts.
 */
#ifndef MT_HOST_ATTACH_H
#define MT_HOST_ATTACH_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define MT_ATTACH_MAX 64

struct mt_attach {
	size_t n;
	pid_t pid[MT_ATTACH_MAX];
	int pidfd[MT_ATTACH_MAX]; /* readable once the process has exited */
};

/* Check each pid (it exists, is not a zombie, a kernel thread or memtrack
 * itself) and open its pidfd. Returns 0, or -EINVAL with the reason logged
 * naming the pid (a usage error), or another -errno (logged). */
int mt_attach_open(struct mt_attach *a, const pid_t *pids, size_t n);

/* Whether every attached process has exited. */
bool mt_attach_all_gone(const struct mt_attach *a);

void mt_attach_close(struct mt_attach *a);

#endif /* MT_HOST_ATTACH_H */
