/* SPDX-License-Identifier: MIT */
/* Allocations before main in a linked library's constructor. */
#include <stdlib.h>

#include "report.h"

extern void *libctor_block;

int main(void)
{
	free(libctor_block);
	report("Free", libctor_block, 0, NULL);
	return 0;
}
