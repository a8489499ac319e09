/* SPDX-License-Identifier: MIT */
/*
 * plugins/preload/interpose-stacks.h - call stacks in the interposer
 * (--stacks): what interpose.c calls, and the one thing it provides back.
 * Everything here is hidden inside libmemtrack-preload.so.
 */
#ifndef MT_PRELOAD_INTERPOSE_STACKS_H
#define MT_PRELOAD_INTERPOSE_STACKS_H

#include <stdint.h>

#include <memtrack/event.h>

#include "shm.h"

/* 1 once pl_stk_attach() has set stacks up; read on every allocation. */
extern int pl_stk_on;

/*
 * With shm->stack_depth set, set the stack machinery up (libunwind, the
 * stack table, the mappings), register its fork handlers and send the
 * exec record and the mappings of this process. Called once per process
 * image by attach(), after the process is attached and before pl_stk_on
 * can be seen set. Without stacks it returns at once and nothing of
 * libunwind runs. Returns 0 or a negative errno (stacks stay off).
 */
int pl_stk_attach(struct pl_shm *shm, int32_t pid);

/*
 * The calling allocation's stack: unwound, interned, and, if it is new,
 * its record (after any mappings not sent yet) put in the ring. Returns
 * the id to put in the event, or 0 for none. Call it at the outermost
 * allocator entry, before calling the real allocator (so before any lock
 * of the allocator's: the fork gate may hold us), with the thread's depth
 * raised (a reentrant allocation goes untraced), and never while the
 * thread is inside pl_ring_put (a signal handler that interrupted it).
 * Async-signal-safe otherwise.
 */
uint32_t pl_stk_capture(void);

/* interpose.c: put one slot through the event path (handlers' pending
 * events, the consumer gone). 0, or -1: the process is untraced now. */
int pl_put_slot(const struct mt_event *ev);

/* interpose.c: put payload[0..len) as one metadata record through the
 * event path, under a fresh id (meta.c, M1..M5). 0, or -1 as above. */
int pl_put_record(const void *payload, size_t len);

#endif /* MT_PRELOAD_INTERPOSE_STACKS_H */
