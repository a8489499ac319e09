/* SPDX-License-Identifier: MIT */
/* fork() while other threads allocate: each child allocates a size of its
 * own, which must carry the child's pid and tid (not the parent's). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "report.h"

#define THREADS 3
#define FORKS 20

static volatile int stop;

static void *churn(void *arg)
{
	(void)arg;
	while (!stop) {
		void *volatile p = malloc(700);

		free(p);
	}
	return NULL;
}

int main(void)
{
	pthread_t th[THREADS];
	int i, status, bad = 0;

	for (i = 0; i < THREADS; i++) {
		pthread_create(&th[i], NULL, churn, NULL);
	}
	for (i = 0; i < FORKS; i++) {
		pid_t pid = fork();

		if (pid == 0) {
			size_t size = 120000 + (size_t)i;
			void *p = malloc(size);

			report("Malloc", p, size, NULL);
			free(p);
			report("Free", p, 0, NULL);
			_exit(0);
		}
		if (pid < 0 || waitpid(pid, &status, 0) != pid ||
		    !WIFEXITED(status) || WEXITSTATUS(status)) {
			bad = 1;
		}
	}
	stop = 1;
	for (i = 0; i < THREADS; i++) {
		pthread_join(th[i], NULL);
	}
	return bad;
}
