/* SPDX-License-Identifier: MIT */
/*
 * msgpack-read-fast.c - the reader of records laid out as the writer
 * (msgpack-write.c) lays them out.
 *
 * What the generic reader spends its time on for a record of ours is
 * dispatch: a function call per value, a tag switch, a key search and a
 * name search. Records written by mt_msgpack_pack() all have one layout,
 * so this reader checks that layout with fixed-width loads compared with
 * constants (the keys, the type name through a perfect hash), and reads
 * each integer with one big-endian load after a switch on its tag. Anything
 * else makes it give up and the generic reader take the record: the two
 * agree on every record the fast one accepts (tests/test-msgpack.c checks
 * that on random records, reordered and extended ones included).
 *
 * Decoding is one long dependency chain (a record starts where the last
 * one ended), so what counts is how soon the next position is known:
 * branches that predict well (forms of pids, timestamps, addresses barely
 * change) put it there at once, where a table lookup or a branch-free
 * select would wait for a load. Measured: branch-free tails and table
 * lookups were 1.1x to 1.8x slower than this on a 1M-event trace.
 *
 * Reads stay below src + MT_MSGPACK_FAST_MIN: while the layout holds the
 * position is at most 117 bytes in (the largest values it accepts), and no
 * load reads more than 16 bytes from there; the first mismatch stops it.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "msgpack.h"

static inline uint64_t ld64(const void *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static inline uint32_t ld32(const void *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static inline uint16_t ld16(const void *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return v;
}

static inline uint64_t ld_be64(const uint8_t *p)
{
	return __builtin_bswap64(ld64(p));
}

/*
 * An unsigned value (positive fixint, uint 8..64); NULL for any other tag.
 * Branches, not a table: the next field's position hangs on this one's
 * length, and a predicted branch gives it at once where a lookup would
 * put a load on the path from one record to the next. Timestamps and
 * addresses keep one form for long runs, so the branches predict well.
 */
static inline __attribute__((always_inline)) const uint8_t *
fast_uint(const uint8_t *p, uint64_t *v)
{
	unsigned int tag = p[0];

	if (tag < 0x80) {
		*v = tag;
		return p + 1;
	}
	switch (tag) {
	case 0xcf:
		*v = ld_be64(p + 1);
		return p + 9;
	case 0xce:
		*v = ld_be64(p + 1) >> 32;
		return p + 5;
	case 0xcd:
		*v = ld_be64(p + 1) >> 48;
		return p + 3;
	case 0xcc:
		*v = p[1];
		return p + 2;
	default:
		return NULL;
	}
}

/* An int32 in any form the writer uses for one (put_i32); NULL else. */
static inline __attribute__((always_inline)) const uint8_t *
fast_i32(const uint8_t *p, int32_t *v)
{
	unsigned int tag = p[0];
	uint64_t u;

	if (tag < 0x80 || tag >= 0xe0) {
		*v = (int8_t)tag;
		return p + 1;
	}
	switch (tag) {
	case 0xcc:
	case 0xcd:
	case 0xce:
		p = fast_uint(p, &u);
		if (u > INT32_MAX) {
			return NULL;
		}
		*v = (int32_t)u;
		return p;
	case 0xd0:
		*v = (int8_t)p[1];
		return p + 2;
	case 0xd1:
		*v = (int16_t)(ld_be64(p + 1) >> 48);
		return p + 3;
	case 0xd2:
		*v = (int32_t)(ld_be64(p + 1) >> 32);
		return p + 5;
	default:
		return NULL;
	}
}

/*
 * The "type" values, tag included, found by a perfect hash of their first
 * three bytes (tag and two letters): ((b0 | b1 << 8 | b2 << 16) *
 * TYPE_HASH_MUL) >> 29 is a distinct slot for each of the eight. The
 * slot's bytes and mask then check the whole name.
 */
#define TYPE_HASH_MUL 0x3a5a1869u

struct type_slot {
	uint8_t name[16];
	uint8_t mask[16];
	uint8_t len;  /* tag + name */
	uint8_t kind;
};

#define M4 { 0xff, 0xff, 0xff, 0xff }
#define M5 { 0xff, 0xff, 0xff, 0xff, 0xff }
#define M7 { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff }
#define M8 { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff }
#define M13 { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, \
	      0xff, 0xff, 0xff, 0xff, 0xff }

static const struct type_slot type_slots[8] = {
	[0] = { "\xa6Munmap", M7, 7, MT_EV_MUNMAP },
	[1] = { "\xa6Malloc", M7, 7, MT_EV_MALLOC },
	[2] = { "\xa3" "Brk", M4, 4, MT_EV_BRK },
	[3] = { "\xac" "AlignedAlloc", M13, 13, MT_EV_ALIGNED_ALLOC },
	[4] = { "\xa7Realloc", M8, 8, MT_EV_REALLOC },
	[5] = { "\xa6" "Calloc", M7, 7, MT_EV_CALLOC },
	[6] = { "\xa4Mmap", M5, 5, MT_EV_MMAP },
	[7] = { "\xa4" "Free", M5, 5, MT_EV_FREE },
};

static inline int lit_eq64(const uint8_t *p, const char *lit)
{
	return ld64(p) == ld64(lit);
}

static inline __attribute__((always_inline)) size_t
unpack_fast(const uint8_t *src, struct mt_event *ev)
{
	const uint8_t *p = src;
	const struct type_slot *t;
	unsigned int left, h, flags;
	uint64_t ts, addr, old_addr, size, stack;
	int32_t pid, tid;

	left = (unsigned int)p[0] - 0x85; /* optional pairs: 0..3 */
	if (left > 3 || ld32(p + 1) != ld32("\xa3pid")) {
		return 0;
	}
	p = fast_i32(p + 5, &pid);
	if (!p || ld32(p) != ld32("\xa3tid")) {
		return 0;
	}
	p = fast_i32(p + 4, &tid);
	if (!p || !lit_eq64(p, "\xa9timesta") || ld16(p + 8) != ld16("mp")) {
		return 0;
	}
	p = fast_uint(p + 10, &ts);
	if (!p || ld32(p) != ld32("\xa4" "add") ||
	    ld32(p + 1) != ld32("addr")) {
		return 0;
	}
	p = fast_uint(p + 5, &addr);
	if (!p || ld32(p) != ld32("\xa4typ") || ld32(p + 1) != ld32("type")) {
		return 0;
	}
	p += 5;
	h = (((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16) *
	     TYPE_HASH_MUL) >> 29;
	t = &type_slots[h];
	if (((ld64(p) & ld64(t->mask)) != ld64(t->name)) |
	    ((ld64(p + 8) & ld64(t->mask + 8)) != ld64(t->name + 8))) {
		return 0;
	}
	/* the length from the tag, not from the slot: one load less on the
	 * way to the next field (the check above makes them agree) */
	p += (p[0] & 0x1f) + 1;

	/* the optional tail, in the writer's order; what the generic reader
	 * would refuse or rewrite (a size on a Free, an old_addr on another
	 * kind, a stack beyond 32 bits) is left to it */
	flags = 0;
	old_addr = size = stack = 0;
	if (left && lit_eq64(p, "\xa8old_add") && p[8] == 'r') {
		if (t->kind != MT_EV_REALLOC) {
			return 0; /* the generic reader drops it */
		}
		p = fast_uint(p + 9, &old_addr);
		if (!p) {
			return 0;
		}
		flags |= MT_EVF_OLD_ADDR;
		left--;
	}
	if (t->kind != MT_EV_FREE) {
		if (!left || ld32(p) != ld32("\xa4siz") ||
		    ld32(p + 1) != ld32("size")) {
			return 0;
		}
		p = fast_uint(p + 5, &size);
		if (!p) {
			return 0;
		}
		left--;
	}
	if (left) {
		if (left > 1 || ld32(p) != ld32("\xa5sta") ||
		    ld16(p + 4) != ld16("ck")) {
			return 0;
		}
		p = fast_uint(p + 6, &stack);
		if (!p || stack > UINT32_MAX) {
			return 0;
		}
		flags |= MT_EVF_STACK;
	}
	ev->timestamp = ts;
	ev->addr = addr;
	ev->size = size;
	ev->old_addr = old_addr;
	ev->pid = pid;
	ev->tid = tid;
	ev->kind = t->kind;
	ev->flags = (uint8_t)flags;
	ev->reserved0 = 0;
	ev->stack_id = (uint32_t)stack;
	ev->reserved[0] = 0;
	ev->reserved[1] = 0;
	return (size_t)(p - src);
}

size_t mt_msgpack_unpack_fast(const uint8_t *src, struct mt_event *ev)
{
	return unpack_fast(src, ev);
}

size_t mt_msgpack_unpack_run(const uint8_t *src, size_t len,
			     struct mt_event *ev, size_t max, size_t *used)
{
	size_t pos = 0, n = 0, r;

	while (n < max && len - pos >= MT_MSGPACK_FAST_MIN) {
		r = unpack_fast(src + pos, &ev[n]);
		if (!r) {
			break;
		}
		pos += r;
		n++;
	}
	*used = pos;
	return n;
}
