/* SPDX-License-Identifier: MIT */
/* The glibc allocator API, each call with a size no other call uses. Built
 * dynamic (alloc-basic) and -static (alloc-static). */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>

#include "report.h"

/* keep the compiler from pairing or dropping calls */
static void *volatile sink;

int main(void)
{
	void *p, *q;

	p = malloc(10001);
	report("Malloc", p, 10001, NULL);
	free(p);
	report("Free", p, 0, NULL);

	p = calloc(7, 1001);
	report("Calloc", p, 7007, NULL);
	free(p);
	report("Free", p, 0, NULL);

	/* a Realloc with old_addr 0, as the reference writes it */
	p = realloc(NULL, 10003);
	report("Realloc", p, 10003, NULL);
	q = realloc(p, 10004);
	report("Realloc", q, 10004, p);
	sink = realloc(q, 0); /* frees q, returns NULL */
	report("Free", q, 0, NULL);

	p = reallocarray(NULL, 5, 2001);
	report("Realloc", p, 10005, NULL);
	q = reallocarray(p, 2, 5003);
	report("Realloc", q, 10006, p);
	free(q);
	report("Free", q, 0, NULL);

	p = aligned_alloc(64, 10048);
	report("AlignedAlloc", p, 10048, NULL);
	free(p);
	report("Free", p, 0, NULL);

	p = memalign(128, 10007);
	report("AlignedAlloc", p, 10007, NULL);
	free(p);
	report("Free", p, 0, NULL);

	if (posix_memalign(&p, 256, 10008) == 0) {
		report("AlignedAlloc", p, 10008, NULL);
		free(p);
		report("Free", p, 0, NULL);
	}
	if (posix_memalign(&p, 3, 10009) == EINVAL) {
		report("Nothing", NULL, 10009, NULL);
	}

	p = valloc(10010);
	report("AlignedAlloc", p, 10010, NULL);
	free(p);
	report("Free", p, 0, NULL);

	p = pvalloc(10011);
	report("AlignedAlloc", p, 10011, NULL);
	free(p);
	report("Free", p, 0, NULL);

	/* failures produce nothing */
	sink = malloc((size_t)1 << 62);
	report("Nothing", NULL, (size_t)1 << 62, NULL);
	sink = calloc((size_t)1 << 40, (size_t)1 << 21);
	report("Nothing", NULL, (size_t)1 << 61, NULL);
	free(NULL);
	return 0;
}
