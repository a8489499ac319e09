/* SPDX-License-Identifier: MIT */
/* bench-ebpf-work N: N malloc/free pairs on one thread; prints the
 * nanoseconds the loop took (startup and probe attachment excluded). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull +
	       (unsigned long long)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100000, i;
	unsigned long long t0, t1;

	t0 = now_ns();
	for (i = 0; i < n; i++) {
		void *volatile p = malloc(64 + (i & 63));

		free(p);
	}
	t1 = now_ns();
	printf("%llu\n", t1 - t0);
	return 0;
}
