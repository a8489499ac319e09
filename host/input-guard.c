/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "input-guard.h"

bool mt_file_is_open_input(const char *path)
{
	struct stat target, st;
	struct dirent *de;
	bool found = false;
	DIR *dir;

	/* a file that does not exist yet is nobody's input */
	if (stat(path, &target) < 0 || !S_ISREG(target.st_mode)) {
		return false;
	}
	dir = opendir("/proc/self/fd");
	if (!dir) {
		return false;
	}
	while (!found && (de = readdir(dir))) {
		char *end;
		long fd = strtol(de->d_name, &end, 10);
		int flags;

		if (*end || end == de->d_name || fd == dirfd(dir)) {
			continue;
		}
		flags = fcntl((int)fd, F_GETFL);
		if (flags < 0 || (flags & O_ACCMODE) == O_WRONLY ||
		    fstat((int)fd, &st) < 0) {
			continue;
		}
		found = st.st_dev == target.st_dev &&
			st.st_ino == target.st_ino;
	}
	closedir(dir);
	return found;
}
