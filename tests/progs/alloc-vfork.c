/* SPDX-License-Identifier: MIT */
/* vfork children that allocate before they exit (glibc allows it; POSIX
 * does not promise it): the child shares its parent's memory and thread
 * storage, yet its events carry its own pid and tid, and the parent's,
 * after it, still carry the parent's. A thread that had not allocated yet
 * vforks too (nothing cached for it before the child runs). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "report.h"

static void child_allocates(size_t size)
{
	void *p = malloc(size);

	report("Malloc", p, size, NULL);
	free(p);
	report("Free", p, 0, NULL);
}

static int vfork_once(size_t child_size, size_t parent_size)
{
	int status;
	pid_t pid = vfork();

	if (pid == 0) {
		child_allocates(child_size);
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid) {
		return 1;
	}
	child_allocates(parent_size);
	return 0;
}

static void *thread_main(void *arg)
{
	(void)arg;
	return (void *)(uintptr_t)vfork_once(130003, 130004);
}

int main(void)
{
	pthread_t th;
	void *ret;
	int bad;

	child_allocates(130000);
	bad = vfork_once(130001, 130002);
	pthread_create(&th, NULL, thread_main, NULL);
	pthread_join(th, &ret);
	return bad || ret;
}
