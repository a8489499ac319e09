/* SPDX-License-Identifier: MIT */
/*
 * plugins/preload/interposer/stack-table.h - each distinct call stack crosses
 * to memtrack once: a per-process table of the stacks already sent, giving
 * each a 32-bit id (the event's stack_id), and the encoder of the MTKT record
 * that sends a new one (format in plugins/ebpf/README.md, "Call stacks").
 *
 * Memory: mmap only (MAP_NORESERVE: pages are touched as stacks arrive),
 * never malloc; the bound is 24 bytes per slot plus the frame arena,
 * both fixed at init. A full table (3/4 of the slots, or the arena used
 * up) does not fail: a stack not found gets a fresh id and is sent again,
 * as the eBPF source does with a full map.
 *
 * Ids come from a counter the caller provides, so that they can be unique
 * across every process of the traced tree (it lives in the shared memory
 * memtrack reads): ids start at 1 and stay below MTPL_STACK_ID_MAX, the
 * largest the report takes.
 *
 * Threads and signals: lock-free; every function may run in any thread
 * and in a signal handler. A thread that finds a stack another thread is
 * still sending waits for it (a bounded spin, then sched_yield) so that
 * it never writes an event whose stack record is not yet in the ring.
 * A sender that is runnable (merely preempted, however long) is waited
 * for; one seen asleep for 10 ms in all (waiting for room in the ring,
 * or for a lock the waiter holds) is not: the waiter sends the stack
 * again under a fresh id instead, so that no cycle of waits can hang the
 * program. A signal handler on top of a thread that is sending a stack
 * does so at once (it could be waiting for itself).
 *
 * Fork: the child keeps its parent's table (MAP_PRIVATE memory is
 * copied). Its ids stay valid: the report ties a stack's addresses to the
 * mappings of the process that sent it, at the point it was sent, and the
 * child's address space is that same one until it maps something else.
 * Keeping them spares the child from sending again every stack of the
 * parent's code it runs. The child must call mtpl_stack_table_atfork_child()
 * before its first intern: a stack another thread of the parent was
 * sending at the fork is then taken over by the first thread of the child
 * that meets it, instead of being waited for forever.
 */
#ifndef MTPL_STACK_TABLE_H
#define MTPL_STACK_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "stack-ids.h"

/* Ids beyond this are refused by `memtrack report` (report/symbolize.c) */
#define MTPL_STACK_ID_MAX MT_STACK_ID_MAX

/* The bytes of the MTKT/MTKM payload header (mtpl_meta_seal) */
#define MTPL_META_HDR 16

struct mtpl_stack_slot;

struct mtpl_stack_table {
	struct mtpl_stack_slot *slots;
	uint64_t *arena;
	uint32_t mask;  /* slots - 1 */
	uint32_t limit; /* most slots used before the table counts as full */
	uint64_t arena_words;
	uint32_t *next_id; /* the caller's counter (shared memory) */
	uint32_t max_id;   /* the last id it may give: MTPL_STACK_ID_MAX
			    * unless the caller lowers it after init */
	/* below: updated atomically */
	uint32_t used;
	uint32_t gen; /* fork generation of this process's copy */
	int full;
	uint64_t arena_used;
	uint64_t resent; /* stacks sent again: table full, or a wait gave up */
};

/* What mtpl_stack_intern() found or reserved; passed to publish. */
struct mtpl_stack_ref {
	uint32_t id;
	uint32_t slot;  /* UINT32_MAX: not in the table (nothing to publish) */
	uint64_t claim; /* the slot's value while this caller owns it */
};

enum {
	MTPL_STACK_KNOWN = 0, /* ref->id may be used now */
	MTPL_STACK_NEW = 1,   /* send ref->id's record, then publish */
};

/*
 * Map the table: 2^slots_log2 slots (10..28) and arena_bytes of frames
 * (at least 8 per frame of every stack kept), next_id the id counter
 * (initially 0, shared by every process that writes the same file).
 * Defaults for a profiler: 20 and 256 MiB, bounding the table at 24 MiB +
 * 256 MiB of address space for 786,432 stacks. Returns 0 or -errno.
 */
int mtpl_stack_table_init(struct mtpl_stack_table *t, unsigned slots_log2,
			  size_t arena_bytes, uint32_t *next_id);

/* Unmap the table (not needed at exit or exec). */
void mtpl_stack_table_destroy(struct mtpl_stack_table *t);

/*
 * Look frames[0..n) up. MTPL_STACK_KNOWN: ref->id was sent already (its
 * record is in the ring ahead of anything this thread writes next).
 * MTPL_STACK_NEW: this caller alone must send the MTKT record of ref->id
 * (mtpl_stack_record), then call mtpl_stack_publish(); until then every
 * other thread asking for the same stack waits. -ENOSPC: ids are used up,
 * ref->id is 0: write the event without a stack.
 */
int mtpl_stack_intern(struct mtpl_stack_table *t, const uint64_t *frames,
		      uint32_t n, struct mtpl_stack_ref *ref);

/*
 * After the record of a MTPL_STACK_NEW ref has its place in the ring
 * (reserved ahead of any event that uses the id), let other threads use
 * the id. Always call it for a NEW ref, even if sending failed.
 */
void mtpl_stack_publish(struct mtpl_stack_table *t,
			const struct mtpl_stack_ref *ref);

/* In the child of a fork, before its first intern (see above). */
void mtpl_stack_table_atfork_child(struct mtpl_stack_table *t);

/*
 * Encode the MTKT record (u32 id, u32 pid, u32 n, u64 frames[n],
 * little-endian) into buf. Returns its size, 12 + 8 n, or 0 when cap is
 * smaller than that (nothing written).
 */
size_t mtpl_stack_record(void *buf, size_t cap, uint32_t id, uint32_t pid,
			 const uint64_t *frames, uint32_t n);

/*
 * Turn len bytes of payload (MTPL_META_HDR bytes left free at its start,
 * then records records) into an MTKT or MTKM payload for mt_emitter.meta:
 * tag ("MTKT" or "MTKM"), version 1, the record count and the FNV-1a-32
 * of the records.
 */
void mtpl_meta_seal(void *payload, size_t len, const char *tag,
		    uint32_t records);

#endif /* MTPL_STACK_TABLE_H */
