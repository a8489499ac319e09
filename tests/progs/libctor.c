/* SPDX-License-Identifier: MIT */
/* A shared library that allocates in its constructor, which ld.so runs
 * before anything of the executable (alloc-libctor links it). */
#include <stdlib.h>

#include "report.h"

void *libctor_block;

__attribute__((constructor)) static void libctor_init(void)
{
	libctor_block = malloc(10202);
	report("Malloc", libctor_block, 10202, NULL);
}
