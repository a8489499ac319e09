/* SPDX-License-Identifier: MIT */
/* A program that needs liblzma.so.5 itself, as the preload interposer's
 * libunwind does (--stacks): the mappings ld.so makes of it are the
 * program's, and stay in a recording of the preload source's BPF mode as
 * in the eBPF source's. */
#include <lzma.h>
#include <stdlib.h>

#include "report.h"

int main(void)
{
	void *p;

	if (!lzma_version_string()[0]) {
		return 3;
	}
	p = malloc(80001);
	report("Malloc", p, 80001, NULL);
	free(p);
	report("Free", p, 0, NULL);
	return 0;
}
