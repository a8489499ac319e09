/* SPDX-License-Identifier: MIT */
/*
 * plugins/preload/source/pidns.h - the pids of processes in other pid
 * namespaces, as memtrack's namespace sees them (the source's side; one
 * thread).
 *
 * A traced process in a pid namespace of its own (a container, unshare,
 * bwrap) knows only its ids there: pid 1 for the first. Its events carry
 * them, tagged with the inode of its namespace (reserved[1],
 * interposer/interpose.c), and a hello record (PL_HELLO_TAG, shm.h) when
 * each of its threads first records. The source turns the ids into memtrack's through /proc (NSpid
 * of the processes whose ns/pid is that inode), when the hello comes,
 * while the thread lives, and remembers them: so each process has one pid
 * in the recording, the one memtrack's namespace sees, whether the
 * interposer or BPF recorded the event.
 */
#ifndef MT_PRELOAD_PIDNS_H
#define MT_PRELOAD_PIDNS_H

#include <stdint.h>

#include <memtrack/event.h>

struct pl_pidns;

/* NULL on ENOMEM. */
struct pl_pidns *pl_pidns_new(void);
void pl_pidns_free(struct pl_pidns *x);

/* A hello: thread tid of process pid, in namespace ns, has started (a new
 * process or thread, perhaps with a reused id): look both up now. */
void pl_pidns_hello(struct pl_pidns *x, uint64_t ns, int32_t pid,
		    int32_t tid);

/* ev->pid and ev->tid, ids of namespace ns, into memtrack's. Ids that
 * cannot be found (the thread was gone before its hello was read) stay
 * as they are, counted in pl_pidns_untranslated(). */
void pl_pidns_xlate(struct pl_pidns *x, uint64_t ns, struct mt_event *ev);

/* Where else to look an id up first (syscalls.c: the map BPF fills at
 * every fork of the tree, which knows threads that are gone): returns
 * memtrack's id of id in ns, or 0. */
void pl_pidns_set_lookup(struct pl_pidns *x,
			 int32_t (*lookup)(void *ctx, uint64_t ns, int32_t id),
			 void *ctx);

/* Events whose ids stayed the namespace's. */
uint64_t pl_pidns_untranslated(const struct pl_pidns *x);

#endif /* MT_PRELOAD_PIDNS_H */
