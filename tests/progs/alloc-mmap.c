/* SPDX-License-Identifier: MIT */
/* mmap, munmap, mremap and brk through their syscalls. */
#define _GNU_SOURCE
#include <stdint.h>
#include <sys/mman.h>

#include "report.h"

int main(void)
{
	size_t a = 7 * 4096, b = 13 * 4096, c = 29 * 4096;
	char *p, *q, *brk0, *brk1;

	p = mmap(NULL, a, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	report("Mmap", p, a, NULL);
	q = mremap(p, a, b, MREMAP_MAYMOVE);
	report("Munmap", p, a, NULL);
	report("Mmap", q, b, NULL);
	munmap(q, b);
	report("Munmap", q, b, NULL);

	/* failed: no event */
	p = mmap(NULL, c, PROT_READ, MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED,
		 -1, 1);
	report("Nothing", NULL, c, NULL);

	brk0 = sbrk(0);
	brk1 = sbrk(17 * 4096);
	if (brk1 == brk0) {
		report("Brk", brk0 + 17 * 4096, 17 * 4096, NULL);
		sbrk(-17 * 4096);
		report("Brk", brk0, 17 * 4096, NULL);
	}
	return 0;
}
