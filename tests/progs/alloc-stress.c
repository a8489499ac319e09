/* SPDX-License-Identifier: MIT */
/* Many events fast: THREADS threads x N malloc/free pairs, thread t using
 * size 90000 + t. With a small ring the source must throttle, not drop. */
#include <pthread.h>
#include <stdlib.h>

#include "report.h"

#define THREADS 4

static long iterations;

static void *worker(void *arg)
{
	size_t size = 90000 + (size_t)(uintptr_t)arg;
	long i;

	for (i = 0; i < iterations; i++) {
		void *volatile p = malloc(size);

		free(p);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th[THREADS];
	int i;

	iterations = argc > 1 ? atol(argv[1]) : 10000;
	for (i = 0; i < THREADS; i++) {
		pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)i);
	}
	for (i = 0; i < THREADS; i++) {
		pthread_join(th[i], NULL);
	}
	return 0;
}
