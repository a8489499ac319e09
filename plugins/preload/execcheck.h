/* SPDX-License-Identifier: MIT */
/*
 * plugins/preload/execcheck.h - will the interposer be loaded into the
 * program a process is about to exec? Used by the source for the command
 * itself and by the interposer's exec wrappers for everything after it.
 *
 * No allocation, no lock, system calls only: the wrappers run in vfork
 * children and between fork and exec.
 */
#ifndef MT_PRELOAD_EXECCHECK_H
#define MT_PRELOAD_EXECCHECK_H

#include <stddef.h>

/*
 * Why the file at path (or open as fd, when fd >= 0) will run untraced: a
 * PL_NOTE_* (shm.h), or 0 when nothing is known to stop the interposer
 * (including when the file cannot be read or is not a regular file: exec
 * will say why; a FIFO is never opened, so this never blocks). envp: the
 * environment it gets, checked for LD_PRELOAD and the shared memory's
 * variable; NULL: not checked.
 */
int pl_exec_check(const char *path, int fd, char *const envp[]);

/*
 * Find file in the directories of pathvar (execvp's search: NULL means
 * the default path) and write the first executable match to out. A name
 * with a slash is used as is. Returns 0, or -1 when nothing matched (out
 * then holds file).
 */
int pl_exec_find(const char *file, const char *pathvar, char *out,
		 size_t size);

#endif /* MT_PRELOAD_EXECCHECK_H */
