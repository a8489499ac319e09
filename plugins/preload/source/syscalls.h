/* SPDX-License-Identifier: MIT */
/*
 * plugins/preload/source/syscalls.h - the preload source's syscall events
 * when it runs as root: the eBPF source's mmap, munmap, mremap and brk
 * tracepoints (common/bpf/syscall-events.bpf.h, loaded from syscalls.bpf.c),
 * their ring read next to the interposer's and the two merged in timestamp
 * order (syscalls.c). Used from source.c only, on the poller thread.
 *
 * Errors: negative errno, after a message through the host's log.
 */
#ifndef MT_PRELOAD_SYSCALLS_H
#define MT_PRELOAD_SYSCALLS_H

#include <stddef.h>
#include <stdint.h>

#include <memtrack/plugin.h>

#include "ring-read.h"
#include "shm.h"

/* source arg syscalls=: where mmap, munmap, mremap and brk come from */
enum pl_sys_mode {
	PL_SYS_AUTO = 0, /* BPF when root and BPF work, else libc */
	PL_SYS_BPF,      /* the syscall tracepoints, or fail */
	PL_SYS_LIBC,     /* the interposer's hooks of libc's functions */
};

struct pl_syscalls;

/*
 * The BPF side for mode, loaded but not attached, or *out = NULL when the
 * hooks of libc are to record them (libc mode, auto without root/BPF, a
 * build without eBPF). lib is the interposer and memfd the shared memory:
 * what the traced processes map of them is not recorded (syscalls.c);
 * shm holds the interposers' verdicts on its libraries (selfdeps.c).
 */
int pl_syscalls_create(const struct mt_host *host, enum pl_sys_mode mode,
		       size_t ring_size, const char *lib, int memfd,
		       struct pl_shm *shm, struct pl_syscalls **out);

/* Track root_pid and its descendants from now on; attach. */
int pl_syscalls_start(struct pl_syscalls *sc, int root_pid, int enabled);

/* An epoll fd that is readable when either ring (efd: the interposer's
 * wake-up eventfd) has something. */
int pl_syscalls_poll_fd(struct pl_syscalls *sc, int efd);

/* At most max events of both rings, merged in timestamp order (see
 * syscalls.c). Returns the number emitted or a negative errno. */
int pl_syscalls_read(struct pl_syscalls *sc, struct pl_reader *rd,
		     struct mt_emitter *em, size_t max);

/* What both rings held when called, then everything staged. */
int pl_syscalls_drain(struct pl_syscalls *sc, struct pl_reader *rd,
		      struct mt_emitter *em);

/* Where the metadata chunks of the shared ring go (meta.c's
 * pl_meta_take() through the source); set before the first read. */
void pl_syscalls_set_meta(struct pl_syscalls *sc, pl_ring_meta_fn take,
			  void *ctx);

void pl_syscalls_set_enabled(struct pl_syscalls *sc, int enabled);

/* failed reservations of the BPF ring */
uint64_t pl_syscalls_dropped(struct pl_syscalls *sc);

/* Processes forked in the tree that BPF could not add to its map: their
 * mmap, munmap, mremap and brk are missing. */
uint64_t pl_syscalls_untracked(struct pl_syscalls *sc);

/* mmap, munmap, mremap and brk calls BPF could not follow (its map of
 * threads in a call was full): their events are missing. */
uint64_t pl_syscalls_unrecorded(struct pl_syscalls *sc);

/* the BPF ring's size in bytes */
size_t pl_syscalls_ring_size(struct pl_syscalls *sc);

/* Detaches everything; NULL is fine. */
void pl_syscalls_destroy(struct pl_syscalls *sc);

/* memtrack's id of task id of pid namespace ns (its inode), as BPF noted
 * it at the task's fork; 0 when unknown (pidns.h). */
int32_t pl_syscalls_nsid(void *sc, uint64_t ns, int32_t id);

#endif /* MT_PRELOAD_SYSCALLS_H */
