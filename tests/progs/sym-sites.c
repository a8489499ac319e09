/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/sym-sites.c - known sites for the symbolizer
 * (tests/test-symbols.sh), recorded with --source preload --stacks. The
 * test finds each line by its @marker comment:
 *   @block   the malloc of sym_block(): 1000 + 2000 + 3000 B, freed
 *   @three   main's three calls of sym_block() on one line: three return
 *            addresses, one site (main @three; sym_block @block), 6000 B
 *   @inline  main's call of the static inline sym_small(), 5 x 64 B,
 *            freed at once; sym_small's malloc at @helper, an inlined
 *            frame (always_inline, at any -O)
 *   @leak    main's call of sym_block(): 777 B, never freed
 * Totals: 9 allocations, 8 frees, 7097 B allocated, 777 B leaked.
 */
#include <stdlib.h>

static void *volatile keep;

__attribute__((noipa)) void *sym_block(size_t n)
{
	void *p = malloc(n); /* @block */

	/* used after the call: the call is no tail call, its frame stays */
	__asm__ volatile("" : "+r"(p));
	return p;
}

static inline __attribute__((always_inline)) void *sym_small(size_t n)
{
	return malloc(n); /* @helper */
}

int main(void)
{
	void *a, *b, *c;
	int i;

	a = sym_block(1000); b = sym_block(2000); c = sym_block(3000); /* @three */
	for (i = 0; i < 5; i++) {
		keep = sym_small(64); /* @inline */
		free(keep);
	}
	free(a);
	free(b);
	free(c);
	keep = sym_block(777); /* @leak */
	return 0;
}
