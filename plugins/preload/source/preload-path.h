/* SPDX-License-Identifier: MIT */
/*
 * plugins/preload/source/preload-path.h - the interposer's path as LD_PRELOAD
 * must spell it (preload-path.c). Used from source.c only, on the
 * thread that creates the source.
 */
#ifndef MT_PRELOAD_PRELOAD_PATH_H
#define MT_PRELOAD_PRELOAD_PATH_H

#include <stddef.h>

#include <memtrack/plugin.h>

/*
 * A path of lib (absolute) that ld.so reads whole from LD_PRELOAD, in out:
 * lib itself, or, when lib has a character that ld.so splits or expands
 * there, a symbolic link to it in a directory this function makes under
 * $TMPDIR or /tmp. The directory is removed when the plugin is unloaded
 * (at memtrack's exit), not by the source's destroy(): the traced tree
 * may exec after tracing stopped.
 *
 * Errors: negative errno, after a message naming lib and why through
 * host->log; out is then unchanged.
 */
int pl_preload_path(const struct mt_host *host, const char *lib, char *out,
		    size_t size);

#endif /* MT_PRELOAD_PRELOAD_PATH_H */
