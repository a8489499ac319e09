/* SPDX-License-Identifier: MIT */
/*
 * msgpack-write.c - the hand-rolled MessagePack writer of memtrack events.
 *
 * The writer is the hot path of the encoder: a generic msgpack library would
 * spend more time on dispatch than zstd level 1 spends compressing, so every
 * constant part of a record (map header, keys, type name) is a precomputed
 * byte string stored with fixed-width overlapping copies, and integers take
 * their smallest form from a table, without a branch on their size.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "msgpack.h"

/*
 * The constant part of a record after the "addr" value, up to the next
 * value: "type" key, type name, then the key of the value that follows
 * ("size", or "old_addr" for a Realloc that knows it). Indexed by
 * kind + MT_EV_KIND_COUNT * has_old (only Realloc has a second row entry).
 */
struct kind_tail {
	uint8_t len;
	uint8_t has_size; /* the record carries a size value */
	uint8_t bytes[30];
};

#define TYPE_KEY "\xa4type"
#define SIZE_KEY "\xa4size"
#define OLD_KEY "\xa8old_addr"

static const struct kind_tail kind_tails[2 * MT_EV_KIND_COUNT] = {
	[MT_EV_MALLOC] = { 5 + 7 + 5, 1, TYPE_KEY "\xa6Malloc" SIZE_KEY },
	[MT_EV_FREE] = { 5 + 5, 0, TYPE_KEY "\xa4" "Free" },
	[MT_EV_REALLOC] = { 5 + 8 + 5, 1, TYPE_KEY "\xa7Realloc" SIZE_KEY },
	[MT_EV_CALLOC] = { 5 + 7 + 5, 1, TYPE_KEY "\xa6" "Calloc" SIZE_KEY },
	[MT_EV_ALIGNED_ALLOC] = { 5 + 13 + 5, 1,
				  TYPE_KEY "\xac" "AlignedAlloc" SIZE_KEY },
	[MT_EV_MMAP] = { 5 + 5 + 5, 1, TYPE_KEY "\xa4Mmap" SIZE_KEY },
	[MT_EV_MUNMAP] = { 5 + 7 + 5, 1, TYPE_KEY "\xa6Munmap" SIZE_KEY },
	[MT_EV_BRK] = { 5 + 4 + 5, 1, TYPE_KEY "\xa3" "Brk" SIZE_KEY },
	[MT_EV_KIND_COUNT + MT_EV_REALLOC] = { 5 + 8 + 9, 1,
					       TYPE_KEY "\xa7Realloc" OLD_KEY },
};

/*
 * How an unsigned value >= 128 is written, by its number of significant
 * bits: tag (0 for a positive fixint, which is the value itself), bytes
 * after the tag, and the left shift that puts those bytes first.
 */
struct uint_form {
	uint8_t tag;
	uint8_t len;
	uint8_t shift;
	uint8_t fixmask; /* 0xff for positive fixint: the value is the tag */
};

#define FIX { 0, 0, 0, 0xff }
#define U8 { 0xcc, 1, 56, 0 }
#define U16 { 0xcd, 2, 48, 0 }
#define U32 { 0xce, 4, 32, 0 }
#define U64 { 0xcf, 8, 0, 0 }

static const struct uint_form uint_forms[65] = {
	FIX, FIX, FIX, FIX, FIX, FIX, FIX, FIX,         /* 0..7 bits */
	U8,                                             /* 8 */
	U16, U16, U16, U16, U16, U16, U16, U16,         /* 9..16 */
	U32, U32, U32, U32, U32, U32, U32, U32,         /* 17..32 */
	U32, U32, U32, U32, U32, U32, U32, U32,
	U64, U64, U64, U64, U64, U64, U64, U64,         /* 33..64 */
	U64, U64, U64, U64, U64, U64, U64, U64,
	U64, U64, U64, U64, U64, U64, U64, U64,
	U64, U64, U64, U64, U64, U64, U64, U64,
};

static inline void store_be64(uint8_t *p, uint64_t v)
{
	v = __builtin_bswap64(v);
	memcpy(p, &v, 8);
}

/*
 * Smallest msgpack form of an unsigned value, without a branch: sizes and
 * kinds vary from one event to the next, and a mispredicted branch costs
 * more than the whole store. Always stores 9 bytes (the caller's slack) and
 * advances by the real length.
 */
static inline uint8_t *put_uint(uint8_t *p, uint64_t v)
{
	const struct uint_form *f = &uint_forms[64 - __builtin_clzll(v | 1)];

	p[0] = (uint8_t)(f->tag | (v & f->fixmask));
	store_be64(p + 1, v << f->shift);
	return p + 1 + f->len;
}

/* put_uint() for values that are almost always 2^32 or more (timestamps
 * in ns since boot, heap and mapping addresses): a branch that predicts,
 * instead of the table. */
static inline uint8_t *put_uint_wide(uint8_t *p, uint64_t v)
{
	if (__builtin_expect(v >> 32 != 0, 1)) {
		p[0] = 0xcf;
		store_be64(p + 1, v);
		return p + 9;
	}
	return put_uint(p, v);
}

/* Smallest signed form, as rmp's write_sint: non-negative values use the
 * unsigned forms, negative ones negative fixint, int8, int16 or int32.
 * pids are non-negative in practice, so the branch predicts well. */
static inline uint8_t *put_i32(uint8_t *p, int32_t v)
{
	uint32_t be;

	if (__builtin_expect(v >= 0, 1)) {
		return put_uint(p, (uint64_t)v);
	}
	if (v >= -32) {
		*p = (uint8_t)v;
		return p + 1;
	}
	if (v >= -128) {
		p[0] = 0xd0;
		p[1] = (uint8_t)v;
		return p + 2;
	}
	if (v >= -32768) {
		p[0] = 0xd1;
		p[1] = (uint8_t)((uint16_t)v >> 8);
		p[2] = (uint8_t)v;
		return p + 3;
	}
	p[0] = 0xd2;
	be = __builtin_bswap32((uint32_t)v);
	memcpy(p + 1, &be, 4);
	return p + 5;
}

/* Events to prefetch ahead: measured 2.5x faster serialization from a
 * batch in DRAM (32 ns -> 12 ns per event); 16..64 all do. */
#define MSGPACK_PREFETCH 32

/* p when cond is 0, q when it is 1, without a branch. */
static inline uint8_t *pick(uint8_t *p, uint8_t *q, uintptr_t cond)
{
	uintptr_t mask = (uintptr_t)0 - cond;

	return (uint8_t *)(((uintptr_t)p & ~mask) | ((uintptr_t)q & mask));
}

size_t mt_msgpack_pack(uint8_t *dst, size_t cap, const struct mt_event *events,
		       size_t count, size_t *done)
{
	static const uint8_t pid_key[8] = "\xa3pid";
	static const uint8_t tid_key[8] = "\xa3tid";
	static const uint8_t ts_key[16] = "\xa9timestamp";
	static const uint8_t addr_key[8] = "\xa4" "addr";
	static const uint8_t size_key[8] = SIZE_KEY;
	static const uint8_t stack_key[8] = "\xa5stack";
	uint8_t *p = dst;
	uint8_t *limit;
	size_t i;
	/* "pid" and "tid" with their values, as last written: threads
	 * allocate in bursts, so most records repeat the previous pair */
	uint8_t ids[32];
	size_t ids_len = 0;
	int32_t last_pid = 0, last_tid = 0;

	if (cap < MT_MSGPACK_EVENT_MAX) {
		*done = 0;
		return 0;
	}
	limit = dst + cap - MT_MSGPACK_EVENT_MAX;

	for (i = 0; i < count && p <= limit; i++) {
		const struct mt_event *ev = &events[i];
		const struct kind_tail *t;
		uintptr_t has_old, has_stack;
		uint8_t *q;

		/* one event is one cache line and the batch usually comes
		 * from memory: ask for it early (prefetching past the end of
		 * the array is harmless, prefetches do not fault) */
		__builtin_prefetch(ev + MSGPACK_PREFETCH);
		if (__builtin_expect(ev->kind >= MT_EV_KIND_COUNT, 0)) {
			break;
		}
		has_old = ev->kind == MT_EV_REALLOC &&
			  (ev->flags & MT_EVF_OLD_ADDR);
		has_stack = (ev->flags & MT_EVF_STACK) != 0;
		t = &kind_tails[ev->kind + MT_EV_KIND_COUNT * has_old];

		p[0] = (uint8_t)(0x85 + t->has_size + has_old + has_stack);
		if (__builtin_expect(!ids_len || ev->pid != last_pid ||
				     ev->tid != last_tid, 0)) {
			uint8_t *r;

			memcpy(ids, pid_key, 8);
			r = put_i32(ids + 4, ev->pid);
			memcpy(r, tid_key, 8);
			r = put_i32(r + 4, ev->tid);
			ids_len = (size_t)(r - ids);
			last_pid = ev->pid;
			last_tid = ev->tid;
		}
		memcpy(p + 1, ids, 32);
		p += 1 + ids_len;
		memcpy(p, ts_key, 16);
		p = put_uint_wide(p + 10, ev->timestamp);
		memcpy(p, addr_key, 8);
		p = put_uint_wide(p + 5, ev->addr);
		memcpy(p, t->bytes, sizeof(t->bytes));
		p += t->len;
		/*
		 * Whether a size follows depends on the kind, and frees and
		 * allocations interleave: that one is written and then kept
		 * or not, without a branch. old_addr (a realloc that moved,
		 * a few % of events) and the stack id (every event or none,
		 * with --stacks) predict well as branches; writing them
		 * always, like the size, made serializing 1.5x slower.
		 */
		if (__builtin_expect(has_old, 0)) {
			q = put_uint_wide(p, ev->old_addr);
			memcpy(q, size_key, 8);
			p = q + 5;
		}
		q = put_uint(p, ev->size);
		p = pick(p, q, t->has_size);
		if (__builtin_expect(has_stack, 0)) {
			memcpy(p, stack_key, 8);
			p = put_uint(p + 6, ev->stack_id);
		}
	}
	*done = i;
	return (size_t)(p - dst);
}
