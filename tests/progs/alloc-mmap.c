/* SPDX-License-Identifier: MIT */
/*
 * mmap, munmap, mremap and brk through their syscalls. alloc-mmap N then
 * makes N more mmap/munmap pairs of a page, reported by none: a storm of
 * syscall records (test-preload-syscalls fills the BPF ring with it).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "report.h"

int main(int argc, char **argv)
{
	long storm = argc > 1 ? atol(argv[1]) : 0, i;
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
	for (i = 0; i < storm; i++) {
		p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS,
			 -1, 0);
		if (p != MAP_FAILED) {
			munmap(p, 4096);
		}
	}
	return 0;
}
