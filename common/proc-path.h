/* SPDX-License-Identifier: MIT */
/*
 * common/proc-path.h - a path as another process sees it, through /proc.
 */
#ifndef MT_COMMON_PROC_PATH_H
#define MT_COMMON_PROC_PATH_H

#include <stddef.h>
#include <sys/types.h>

/*
 * The path process pid would open for (dirfd, path), as a path memtrack
 * can open, into out: an absolute path under /proc/PID/root; a relative
 * one under /proc/PID/cwd (dirfd AT_FDCWD) or /proc/PID/fd/DIRFD; an empty
 * path with a dirfd is that fd itself (AT_EMPTY_PATH); /proc/self and
 * /proc/thread-self are /proc/PID (a tid names its thread). Other symlinks
 * inside are still followed from memtrack's root. Returns 0, or
 * -ENAMETOOLONG.
 */
int mt_proc_path(pid_t pid, int dirfd, const char *path, char *out,
		 size_t size);

#endif /* MT_COMMON_PROC_PATH_H */
