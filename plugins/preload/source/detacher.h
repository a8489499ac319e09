/* SPDX-License-Identifier: MIT */
/*
 * plugins/preload/source/detacher.h - a process that detaches the root mode's
 * syscall tracepoints after memtrack has let go of them (detacher.c).
 * Used from syscalls.c only, on the poller thread.
 *
 * Errors: negative errno; nothing is logged (the caller then detaches the
 * links itself, which is only slower).
 */
#ifndef MT_PRELOAD_DETACHER_H
#define MT_PRELOAD_DETACHER_H

#include <stddef.h>

/* fds pl_detacher_adopt() takes */
#define PL_DETACHER_MAX_FDS 64

/*
 * Fork the detacher and return memtrack's end of its socket
 * (close-on-exec). Must be called before the host makes memtrack a
 * subreaper, that is from the source's create(): see detacher.c.
 */
int pl_detacher_start(void);

/*
 * Give the detacher a reference to each of fds, at most
 * PL_DETACHER_MAX_FDS (the caller still closes its own): it closes them once pl_detacher_release() is called or
 * memtrack exits.
 */
int pl_detacher_adopt(int sock, const int *fds, size_t n);

/* Close sock: the detacher closes what it holds, then exits. */
void pl_detacher_release(int sock);

#endif /* MT_PRELOAD_DETACHER_H */
