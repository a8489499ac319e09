/* SPDX-License-Identifier: MIT */
/* jemalloc, linked dynamically (alloc-jemalloc) or statically
 * (alloc-jemalloc-static): its malloc replaces glibc's, and its own API. */
#include <stdlib.h>
#include <jemalloc/jemalloc.h>

#include "report.h"

int main(void)
{
	void *p, *q;

	p = malloc(50001);
	report("Malloc", p, 50001, NULL);
	free(p);
	report("Free", p, 0, NULL);

	p = calloc(2, 25001);
	report("Calloc", p, 50002, NULL);
	q = realloc(p, 50003);
	report("Realloc", q, 50003, p);
	free(q);
	report("Free", q, 0, NULL);

	p = mallocx(50004, 0);
	report("Malloc", p, 50004, NULL);
	q = rallocx(p, 50005, 0);
	report("Realloc", q, 50005, p);
	dallocx(q, 0);
	report("Free", q, 0, NULL);

	p = mallocx(50006, MALLOCX_ZERO);
	report("Calloc", p, 50006, NULL);
	sdallocx(p, 50006, 0);
	report("Free", p, 0, NULL);

	p = mallocx(50007, MALLOCX_ALIGN(4096));
	report("AlignedAlloc", p, 50007, NULL);
	dallocx(p, 0);
	report("Free", p, 0, NULL);

	if (posix_memalign(&p, 512, 50008) == 0) {
		report("AlignedAlloc", p, 50008, NULL);
		free(p);
		report("Free", p, 0, NULL);
	}
	p = aligned_alloc(256, 50009);
	report("AlignedAlloc", p, 50009, NULL);
	free(p);
	report("Free", p, 0, NULL);
	return 0;
}
