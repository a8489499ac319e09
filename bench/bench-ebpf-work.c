/* SPDX-License-Identifier: MIT */
/* bench-ebpf-work N [THREADS]: N malloc/free pairs in all, on THREADS
 * threads (1) that start together, N/THREADS each; prints the nanoseconds
 * from their start to the last one's end (startup, probe attachment and
 * thread creation excluded). With THREADS > 1 the tracer's producers
 * contend for its ring, which one thread never shows. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define MAX_THREADS 64

static pthread_barrier_t start;
static long per_thread;

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull +
	       (unsigned long long)ts.tv_nsec;
}

static void pairs(long n)
{
	long i;

	for (i = 0; i < n; i++) {
		void *volatile p = malloc(64 + (i & 63));

		free(p);
	}
}

static void *thread_main(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&start);
	pairs(per_thread);
	return NULL;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100000;
	long threads = argc > 2 ? atol(argv[2]) : 1, i;
	pthread_t th[MAX_THREADS];
	unsigned long long t0, t1;

	if (threads < 1 || threads > MAX_THREADS || n < threads) {
		fprintf(stderr, "usage: %s N [THREADS 1..%d, at most N]\n",
			argv[0], MAX_THREADS);
		return 2;
	}
	if (threads == 1) {
		/* as before threads existed: no thread, no barrier */
		t0 = now_ns();
		pairs(n);
		t1 = now_ns();
		printf("%llu\n", t1 - t0);
		return 0;
	}
	per_thread = n / threads;
	pthread_barrier_init(&start, NULL, (unsigned int)threads + 1);
	for (i = 0; i < threads; i++) {
		if (pthread_create(&th[i], NULL, thread_main, NULL)) {
			fprintf(stderr, "%s: cannot start thread %ld\n",
				argv[0], i);
			return 1;
		}
	}
	pthread_barrier_wait(&start);
	t0 = now_ns();
	for (i = 0; i < threads; i++) {
		pthread_join(th[i], NULL);
	}
	t1 = now_ns();
	printf("%llu\n", t1 - t0);
	return 0;
}
