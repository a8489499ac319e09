/* SPDX-License-Identifier: MIT */
/* tcmalloc (gperftools), linked dynamically: its malloc replaces glibc's,
 * and its own tc_ API. */
#include <stdlib.h>
#include <gperftools/tcmalloc.h>

#include "report.h"

int main(void)
{
	void *p, *q;

	p = malloc(60001);
	report("Malloc", p, 60001, NULL);
	free(p);
	report("Free", p, 0, NULL);

	p = tc_malloc(60002);
	report("Malloc", p, 60002, NULL);
	q = tc_realloc(p, 60003);
	report("Realloc", q, 60003, p);
	tc_free(q);
	report("Free", q, 0, NULL);

	p = tc_calloc(3, 20002);
	report("Calloc", p, 60006, NULL);
	tc_free(p);
	report("Free", p, 0, NULL);

	p = tc_memalign(4096, 60004);
	report("AlignedAlloc", p, 60004, NULL);
	tc_free(p);
	report("Free", p, 0, NULL);

	if (tc_posix_memalign(&p, 512, 60005) == 0) {
		report("AlignedAlloc", p, 60005, NULL);
		tc_free(p);
		report("Free", p, 0, NULL);
	}
	return 0;
}
