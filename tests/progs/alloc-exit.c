/* SPDX-License-Identifier: MIT */
/* Allocations after main returns: in an atexit handler and in a
 * destructor, which run inside exit(). */
#include <stdlib.h>

#include "report.h"

static void *block;

static void at_exit(void)
{
	void *p = malloc(10303);

	report("Malloc", p, 10303, NULL);
	free(p);
	report("Free", p, 0, NULL);
}

__attribute__((destructor)) static void fini(void)
{
	free(block);
	report("Free", block, 0, NULL);
}

int main(void)
{
	block = malloc(10304);
	report("Malloc", block, 10304, NULL);
	atexit(at_exit);
	return 0;
}
