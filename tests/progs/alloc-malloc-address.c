/* SPDX-License-Identifier: MIT */
/* A non-PIE executable that takes malloc's address in its code, as
 * Debian's /usr/bin/python3.11 does: the linker gives it a canonical PLT
 * entry (a dynamic symbol malloc, undefined, whose value is that entry's
 * address), and the loader's lookup of "malloc" returns that address.
 * Every call still goes to the malloc that won the lookup: nothing here
 * is an allocator of its own. */
#include <stdlib.h>

#include "report.h"

typedef void *(*malloc_fn)(size_t);

/* volatile: the call goes through the pointer, not straight to the PLT */
static malloc_fn volatile through;

int main(void)
{
	void *p;

	through = malloc; /* an absolute address in non-PIE code */
	p = through(10501);
	report("Malloc", p, 10501, NULL);
	free(p);
	report("Free", p, 0, NULL);
	return 0;
}
