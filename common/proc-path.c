/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "proc-path.h"

int mt_proc_path(pid_t pid, int dirfd, const char *path, char *out,
		 size_t size)
{
	const char *rest = NULL;
	int n;

	/* /proc/self names whoever opens it: memtrack, not pid (a program
	 * exec'ing /proc/self/exe, Chromium's zygote) */
	if (!strncmp(path, "/proc/self", 10)) {
		rest = path + 10;
	} else if (!strncmp(path, "/proc/thread-self", 17)) {
		rest = path + 17;
	}
	if (rest && (!*rest || *rest == '/')) {
		n = snprintf(out, size, "/proc/%d%s", (int)pid, rest);
	} else if (path[0] == '/') {
		n = snprintf(out, size, "/proc/%d/root%s", (int)pid, path);
	} else if (dirfd == AT_FDCWD) {
		n = snprintf(out, size, "/proc/%d/cwd/%s", (int)pid, path);
	} else if (!path[0]) {
		n = snprintf(out, size, "/proc/%d/fd/%d", (int)pid, dirfd);
	} else {
		n = snprintf(out, size, "/proc/%d/fd/%d/%s", (int)pid, dirfd,
			     path);
	}
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}
