/* SPDX-License-Identifier: MIT */
/*
 * Runs itself again through /proc/self/exe, as Chromium starts its
 * zygote: a path that names whoever opens it, which memtrack's exec gate
 * must read as the caller's. The second image makes one malloc of 10501
 * bytes and frees it.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "report.h"

int main(int argc, char **argv)
{
	void *p;

	if (argc < 2 || strcmp(argv[1], "again")) {
		execl("/proc/self/exe", argv[0], "again", (char *)NULL);
		return 127;
	}
	p = malloc(10501);
	report("Malloc", p, 10501, NULL);
	free(p);
	report("Free", p, 0, NULL);
	return 0;
}
