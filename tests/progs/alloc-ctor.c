/* SPDX-License-Identifier: MIT */
/* Allocations before main: in a constructor of the executable. */
#include <stdlib.h>

#include "report.h"

static void *early;

__attribute__((constructor)) static void init(void)
{
	early = malloc(10101);
	report("Malloc", early, 10101, NULL);
}

int main(void)
{
	free(early);
	report("Free", early, 0, NULL);
	return 0;
}
