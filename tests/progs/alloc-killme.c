/* SPDX-License-Identifier: MIT */
/* Reports its allocations, says "ready", then allocates from several
 * threads until it is killed (the test sends SIGKILL): every event it
 * reported must be in the recording, and the threads killed in the middle
 * of a write must not hold the reader up. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>

#include "report.h"

#define THREADS 4
#define BLOCKS 50

static void *churn(void *arg)
{
	(void)arg;
	for (;;) {
		void *volatile p = malloc(800);

		free(p);
	}
	return NULL;
}

int main(void)
{
	pthread_t th;
	int i;

	for (i = 0; i < BLOCKS; i++) {
		size_t size = 110000 + (size_t)i;

		report("Malloc", malloc(size), size, NULL);
	}
	for (i = 0; i < THREADS; i++) {
		pthread_create(&th, NULL, churn, NULL);
	}
	if (write(1, "ready\n", 6) != 6) {
		return 3;
	}
	for (;;) {
		pause();
	}
}
