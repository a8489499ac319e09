/* SPDX-License-Identifier: MIT */
/* mimalloc's API and its malloc, which replaces glibc's when linked. */
#include <stdlib.h>
#include <mimalloc.h>

#include "report.h"

int main(void)
{
	void *p, *q;

	p = mi_malloc(60001);
	report("Malloc", p, 60001, NULL);
	mi_free(p);
	report("Free", p, 0, NULL);

	p = mi_calloc(3, 20001);
	report("Calloc", p, 60003, NULL);
	q = mi_realloc(p, 60004);
	report("Realloc", q, 60004, p);
	mi_free(q);
	report("Free", q, 0, NULL);

	p = mi_zalloc(60005);
	report("Calloc", p, 60005, NULL);
	mi_free(p);
	report("Free", p, 0, NULL);

	/* the reference (the CodSpeed runner's memtrack) writes
	 * mi_malloc_aligned as a Malloc and mi_zalloc_aligned as a Calloc;
	 * mi_new_aligned is a Malloc like aligned operator new */
	p = mi_malloc_aligned(60006, 256);
	report("Malloc", p, 60006, NULL);
	mi_free(p);
	report("Free", p, 0, NULL);

	p = mi_zalloc_aligned(60010, 256);
	report("Calloc", p, 60010, NULL);
	mi_free(p);
	report("Free", p, 0, NULL);

	p = mi_new_aligned(60011, 256);
	report("Malloc", p, 60011, NULL);
	mi_free(p);
	report("Free", p, 0, NULL);

	p = mi_aligned_alloc(256, 60012);
	report("AlignedAlloc", p, 60012, NULL);
	mi_free(p);
	report("Free", p, 0, NULL);

	p = mi_new(60007);
	report("Malloc", p, 60007, NULL);
	mi_free(p);
	report("Free", p, 0, NULL);

	p = malloc(60008);
	report("Malloc", p, 60008, NULL);
	free(p);
	report("Free", p, 0, NULL);
	return 0;
}
