/* SPDX-License-Identifier: MIT */
/* A large malloc: glibc serves it with its own mmap (above
 * M_MMAP_THRESHOLD), which is a Malloc and an Mmap; its free a Free and a
 * Munmap. Only the Malloc and the Free are reported here (the mapping's
 * address and size are glibc's business): the test looks for the Mmap
 * that holds the block, before the Malloc. */
#include <stdlib.h>

#include "report.h"

#define LARGE (10u << 20)

int main(void)
{
	char *p = malloc(LARGE);

	report("Malloc", p, LARGE, NULL);
	p[0] = 1;
	free(p);
	report("Free", p, 0, NULL);
	return 0;
}
