/* SPDX-License-Identifier: MIT */
/*
 * plugins/preload/interposer/stack-maps.h - the executable mappings of this
 * process as MTKM records (exec, map, fork; format in plugins/ebpf/README.md,
 * "Call stacks"), so that `memtrack report` can tie the addresses of a stack
 * to (file, offset) as it does for the eBPF source.
 *
 * Built in-process without malloc or /proc/self/maps: dl_iterate_phdr
 * gives each loaded object, its executable PT_LOAD segments give the
 * records' start, end (page-rounded, as the kernel maps them) and file
 * offset, its PT_NOTE in memory the GNU build-id. The path is the
 * loader's name for the object (which may be a symlink the kernel's maps
 * would show resolved, e.g. /lib/x86_64-linux-gnu/libc.so.6; a relative
 * one is made absolute with the current directory), the main program's
 * is readlink("/proc/self/exe") (without /proc, AT_EXECFN if absolute). The vDSO is left out, as the eBPF source
 * leaves out what is not a file.
 *
 * Knowing when to send: glibc counts objects loaded and unloaded
 * (dlpi_adds, dlpi_subs); mtpl_maps_changed() compares them with the
 * last snapshot written, for the price of one dl_iterate_phdr callback.
 * Only a new stack can point into a new object, so checking before
 * sending each new stack is enough.
 *
 * Threads: the state is shared by the process's threads; mtpl_maps_lock()
 * serialises writers, and must be held from mtpl_maps_changed() until
 * the records written are placed in the ring, so that a thread that
 * finds nothing changed knows the mappings are in the ring before its
 * stack. Signals: the functions take the loader's lock (dl_iterate_phdr),
 * which glibc does not promise to be async-signal-safe; the lock here
 * refuses a signal handler nested in its holder (-EDEADLK) instead of
 * deadlocking.
 * Its dl_iterate_phdr calls go through stack-unwind's fork gate
 * (mtpl_loader_enter): the atfork functions of stack-unwind.h must be
 * registered.
 * Fork: the child keeps the state (its mappings are the parent's: send a
 * fork record) and calls mtpl_maps_atfork_child(), which frees the lock
 * a thread that did not come along may have held. After exec, init a new state and write with
 * MTPL_MAPS_EXEC.
 */
#ifndef MTPL_STACK_MAPS_H
#define MTPL_STACK_MAPS_H

#include "addr-set.h"
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* MTKM record types */
#define MTPL_MAPS_REC_EXEC 1
#define MTPL_MAPS_REC_MAP 2
#define MTPL_MAPS_REC_FORK 3

/* mtpl_maps_write() flags */
#define MTPL_MAPS_EXEC 1u /* an exec record first, then every mapping */

struct mtpl_maps {
	unsigned long long adds, subs; /* as of the last snapshot written */
	int written;                   /* a snapshot was written */
	/* starts of the code segments sent (a set that grows), and those a
	 * pass records, kept only when it succeeds */
	struct pl_addr_set sent;
	uint64_t *pend;
	size_t npend, pend_cap;
	/* the first prefix objects of the loader's list were sent whole,
	 * the last of them with program headers prefix_phdr: a pass does
	 * not look at them again while that one is still there (issue 24:
	 * thousands of dlopens each walked every object) */
	size_t prefix;
	const void *prefix_phdr;
	long page;
	int lock;      /* 0, or the tid holding it */
	char exe[4096];
	ssize_t exe_len; /* 0: not read yet; < 0: unknown */
	char scratch[4096]; /* a relative name made absolute */
};

/* Set the state up (mmaps room for 4,096 segments). 0 or -errno. */
int mtpl_maps_init(struct mtpl_maps *m);

/* Unmap the state. */
void mtpl_maps_destroy(struct mtpl_maps *m);

/* Serialise writers (see above): 0, or -EDEADLK when this thread holds
 * it already (a signal handler on top of the holder). Spins otherwise. */
int mtpl_maps_lock(struct mtpl_maps *m);
void mtpl_maps_unlock(struct mtpl_maps *m);

/* In the child of a fork, before anything else here. */
void mtpl_maps_atfork_child(struct mtpl_maps *m);

/* How many objects the loader has unloaded so far (dlpi_subs): the
 * addresses of an unloaded object may name another one's code since. */
unsigned long long mtpl_maps_unloads(void);

/* 1 when objects were loaded or unloaded since the last snapshot written
 * (or none was), else 0. */
int mtpl_maps_changed(const struct mtpl_maps *m);

/*
 * Write into buf the MTKM records of pid's executable mappings that were
 * not sent yet (an object unloaded since: all of them again, so that the
 * newest mapping of a reused address wins in the report), after an exec
 * record with MTPL_MAPS_EXEC. Returns the bytes written (0: nothing new)
 * and adds the record count to *records; or -ENOSPC, *need set to the
 * bytes it takes, nothing written or marked sent: call again with a
 * buffer that large.
 */
ssize_t mtpl_maps_write(struct mtpl_maps *m, uint32_t pid, unsigned flags,
			void *buf, size_t cap, uint32_t *records,
			size_t *need);

/* The fork record (9 bytes): child has parent's mappings. Returns its
 * size, or 0 when cap is too small. */
size_t mtpl_maps_fork_record(void *buf, size_t cap, uint32_t child,
			     uint32_t parent);

#endif /* MTPL_STACK_MAPS_H */
