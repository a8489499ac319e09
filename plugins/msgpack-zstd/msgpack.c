/* SPDX-License-Identifier: MIT */
/*
 * msgpack.c - hand-rolled MessagePack writer and reader for memtrack events.
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

/* ------------------------------------------------------------------ */
/* Reader                                                              */
/* ------------------------------------------------------------------ */

/* Internal result of a read step: 0 ok, MORE, or ERROR (err filled). */
#define RD_OK 0
#define RD_MORE 1
#define RD_ERROR (-1)

struct reader {
	const uint8_t *start;
	const uint8_t *p;
	const uint8_t *end;
	struct mt_msgpack_error *err;
};

static int rd_fail(struct reader *rd, const uint8_t *at, const char *fmt,
		   ...) __attribute__((format(printf, 3, 4)));

static int rd_fail(struct reader *rd, const uint8_t *at, const char *fmt, ...)
{
	va_list ap;

	rd->err->offset = (size_t)(at - rd->start);
	va_start(ap, fmt);
	vsnprintf(rd->err->msg, sizeof(rd->err->msg), fmt, ap);
	va_end(ap);
	return RD_ERROR;
}

static inline uint64_t load_be(const uint8_t *p, unsigned int n)
{
	uint64_t v = 0;
	unsigned int i;

	for (i = 0; i < n; i++) {
		v = (v << 8) | p[i];
	}
	return v;
}

/*
 * Length of the head of the value at rd->p (tag plus fixed fields) and, for
 * containers and byte strings, the count of what follows. Sets *kind to
 * 'i' (int, value in *u or *s), 's' (str/bin: *u bytes follow), 'a' (array:
 * *u items), 'm' (map: *u pairs), 'x' (anything else without children whose
 * whole size is the head plus *u bytes).
 */
static int rd_head(struct reader *rd, char *kind, uint64_t *u, int64_t *s,
		   int *neg)
{
	const uint8_t *p = rd->p;
	unsigned int tag, n;

	if (p >= rd->end) {
		return RD_MORE;
	}
	tag = *p;
	*neg = 0;
	if (tag < 0x80) {
		*kind = 'i';
		*u = tag;
		rd->p = p + 1;
		return RD_OK;
	}
	if (tag >= 0xe0) {
		*kind = 'i';
		*neg = 1;
		*s = (int8_t)tag;
		rd->p = p + 1;
		return RD_OK;
	}
	if (tag <= 0x8f) {
		*kind = 'm';
		*u = tag & 0x0f;
		rd->p = p + 1;
		return RD_OK;
	}
	if (tag <= 0x9f) {
		*kind = 'a';
		*u = tag & 0x0f;
		rd->p = p + 1;
		return RD_OK;
	}
	if (tag <= 0xbf) {
		*kind = 's';
		*u = tag & 0x1f;
		rd->p = p + 1;
		return RD_OK;
	}

	/* tags with a fixed-size field after them */
	switch (tag) {
	case 0xc0: /* nil */
	case 0xc2: /* false */
	case 0xc3: /* true */
		*kind = 'x';
		*u = 0;
		rd->p = p + 1;
		return RD_OK;
	case 0xc4: case 0xc5: case 0xc6: /* bin 8/16/32 */
	case 0xd9: case 0xda: case 0xdb: /* str 8/16/32 */
		n = (tag <= 0xc6) ? 1u << (tag - 0xc4) : 1u << (tag - 0xd9);
		if (rd->end - p < 1 + (long)n) {
			return RD_MORE;
		}
		*kind = 's';
		*u = load_be(p + 1, n);
		rd->p = p + 1 + n;
		return RD_OK;
	case 0xc7: case 0xc8: case 0xc9: /* ext 8/16/32: length, type, data */
		n = 1u << (tag - 0xc7);
		if (rd->end - p < 2 + (long)n) {
			return RD_MORE;
		}
		*kind = 'x';
		*u = load_be(p + 1, n);
		rd->p = p + 2 + n;
		return RD_OK;
	case 0xca: /* float32 */
	case 0xcb: /* float64 */
		*kind = 'x';
		*u = tag == 0xca ? 4 : 8;
		rd->p = p + 1;
		return RD_OK;
	case 0xcc: case 0xcd: case 0xce: case 0xcf: /* uint 8..64 */
		n = 1u << (tag - 0xcc);
		if (rd->end - p < 1 + (long)n) {
			return RD_MORE;
		}
		*kind = 'i';
		*u = load_be(p + 1, n);
		rd->p = p + 1 + n;
		return RD_OK;
	case 0xd0: case 0xd1: case 0xd2: case 0xd3: /* int 8..64 */
		n = 1u << (tag - 0xd0);
		if (rd->end - p < 1 + (long)n) {
			return RD_MORE;
		}
		*kind = 'i';
		*u = load_be(p + 1, n);
		/* sign-extend from n bytes */
		if (n < 8) {
			*s = (int64_t)(*u << (64 - 8 * n)) >> (64 - 8 * n);
		} else {
			*s = (int64_t)*u;
		}
		if (*s < 0) {
			*neg = 1;
		} else {
			*u = (uint64_t)*s;
		}
		rd->p = p + 1 + n;
		return RD_OK;
	case 0xd4: case 0xd5: case 0xd6: case 0xd7: case 0xd8: /* fixext */
		*kind = 'x';
		*u = 1 + (1u << (tag - 0xd4)); /* type byte + data */
		rd->p = p + 1;
		return RD_OK;
	case 0xdc: case 0xdd: /* array 16/32 */
	case 0xde: case 0xdf: /* map 16/32 */
		n = (tag & 1) ? 4 : 2;
		if (rd->end - p < 1 + (long)n) {
			return RD_MORE;
		}
		*kind = tag <= 0xdd ? 'a' : 'm';
		*u = load_be(p + 1, n);
		rd->p = p + 1 + n;
		return RD_OK;
	default: /* 0xc1: never used */
		return rd_fail(rd, p, "invalid MessagePack tag 0x%02x", tag);
	}
}

/* Skip one value of any type, nested ones included, without recursion. */
static int rd_skip(struct reader *rd)
{
	uint64_t pending = 1; /* values still to skip */
	uint64_t u;
	int64_t s;
	int neg, ret;
	char kind;

	while (pending > 0) {
		ret = rd_head(rd, &kind, &u, &s, &neg);
		if (ret != RD_OK) {
			return ret;
		}
		pending--;
		switch (kind) {
		case 'a':
			pending += u;
			break;
		case 'm':
			pending += 2 * u;
			break;
		case 's':
		case 'x':
			if ((uint64_t)(rd->end - rd->p) < u) {
				return RD_MORE;
			}
			rd->p += u;
			break;
		default:
			break;
		}
	}
	return RD_OK;
}

/* A string (or bin, which the reference's serde visitor also accepts). */
static int rd_str(struct reader *rd, const char *what, const uint8_t **str,
		  size_t *len)
{
	const uint8_t *at = rd->p;
	uint64_t u;
	int64_t s;
	int neg, ret;
	char kind;

	ret = rd_head(rd, &kind, &u, &s, &neg);
	if (ret != RD_OK) {
		return ret;
	}
	if (kind != 's') {
		return rd_fail(rd, at, "%s is not a string (tag 0x%02x)", what,
			       *at);
	}
	if ((uint64_t)(rd->end - rd->p) < u) {
		return RD_MORE;
	}
	*str = rd->p;
	*len = (size_t)u;
	rd->p += u;
	return RD_OK;
}

/* An integer within [min, max] (as signed when min < 0). */
static int rd_int(struct reader *rd, const char *key, int64_t min,
		  uint64_t max, uint64_t *out)
{
	const uint8_t *at = rd->p;
	uint64_t u;
	int64_t s;
	int neg, ret;
	char kind;

	ret = rd_head(rd, &kind, &u, &s, &neg);
	if (ret != RD_OK) {
		return ret;
	}
	if (kind != 'i') {
		return rd_fail(rd, at, "value of \"%s\" is not an integer (tag 0x%02x)",
			       key, *at);
	}
	if (neg) {
		if (s < min) {
			return rd_fail(rd, at, "value of \"%s\" out of range: %lld",
				       key, (long long)s);
		}
		*out = (uint64_t)s;
		return RD_OK;
	}
	if (u > max) {
		return rd_fail(rd, at, "value of \"%s\" out of range: %llu", key,
			       (unsigned long long)u);
	}
	*out = u;
	return RD_OK;
}

enum field {
	F_PID, F_TID, F_TIMESTAMP, F_ADDR, F_TYPE, F_OLD_ADDR, F_SIZE, F_STACK,
	F_UNKNOWN,
};

static enum field field_of(const uint8_t *k, size_t len)
{
	switch (len) {
	case 3:
		if (!memcmp(k, "pid", 3)) {
			return F_PID;
		}
		if (!memcmp(k, "tid", 3)) {
			return F_TID;
		}
		break;
	case 4:
		if (!memcmp(k, "addr", 4)) {
			return F_ADDR;
		}
		if (!memcmp(k, "type", 4)) {
			return F_TYPE;
		}
		if (!memcmp(k, "size", 4)) {
			return F_SIZE;
		}
		break;
	case 5:
		if (!memcmp(k, "stack", 5)) {
			return F_STACK;
		}
		break;
	case 8:
		if (!memcmp(k, "old_addr", 8)) {
			return F_OLD_ADDR;
		}
		break;
	case 9:
		if (!memcmp(k, "timestamp", 9)) {
			return F_TIMESTAMP;
		}
		break;
	default:
		break;
	}
	return F_UNKNOWN;
}

static int kind_of(const uint8_t *name, size_t len)
{
	unsigned int k;

	for (k = 0; k < MT_EV_KIND_COUNT; k++) {
		const char *n = mt_event_kind_name(k);

		if (strlen(n) == len && !memcmp(n, name, len)) {
			return (int)k;
		}
	}
	return -1;
}

static const char *const field_names[] = {
	"pid", "tid", "timestamp", "addr", "type", "old_addr", "size", "stack",
};

/* The body of mt_msgpack_unpack(), in RD_* terms. */
static int unpack(struct reader *rd, struct mt_event *ev)
{
	unsigned int seen = 0, need;
	uint64_t pairs, i, v;
	int64_t s;
	int neg, ret, kind = -1;
	char vkind;
	const uint8_t *at = rd->p;

	ret = rd_head(rd, &vkind, &pairs, &s, &neg);
	if (ret != RD_OK) {
		return ret;
	}
	if (vkind != 'm') {
		return rd_fail(rd, at, "record is not a map (tag 0x%02x)", *at);
	}

	for (i = 0; i < pairs; i++) {
		const uint8_t *key, *name;
		size_t klen, nlen;
		enum field f;

		ret = rd_str(rd, "map key", &key, &klen);
		if (ret != RD_OK) {
			return ret;
		}
		f = field_of(key, klen);
		switch (f) {
		case F_PID:
		case F_TID:
			ret = rd_int(rd, field_names[f], INT32_MIN, INT32_MAX,
				     &v);
			if (f == F_PID) {
				ev->pid = (int32_t)v;
			} else {
				ev->tid = (int32_t)v;
			}
			break;
		case F_TIMESTAMP:
			ret = rd_int(rd, "timestamp", 0, UINT64_MAX,
				     &ev->timestamp);
			break;
		case F_ADDR:
			ret = rd_int(rd, "addr", 0, UINT64_MAX, &ev->addr);
			break;
		case F_OLD_ADDR:
			ret = rd_int(rd, "old_addr", 0, UINT64_MAX,
				     &ev->old_addr);
			break;
		case F_SIZE:
			ret = rd_int(rd, "size", 0, UINT64_MAX, &ev->size);
			break;
		case F_STACK:
			ret = rd_int(rd, "stack", 0, UINT32_MAX, &v);
			ev->stack_id = (uint32_t)v;
			break;
		case F_TYPE:
			at = rd->p;
			ret = rd_str(rd, "value of \"type\"", &name, &nlen);
			if (ret != RD_OK) {
				break;
			}
			kind = kind_of(name, nlen);
			if (kind < 0) {
				rd->err->unknown_type = 1;
				return rd_fail(rd, at, "unknown event type \"%.*s\"",
					       (int)(nlen > 64 ? 64 : nlen),
					       (const char *)name);
			}
			break;
		default:
			/* the reference reader ignores keys it does not know:
			 * that is the format's room for extensions */
			ret = rd_skip(rd);
			break;
		}
		if (ret != RD_OK) {
			return ret;
		}
		if (f != F_UNKNOWN) {
			seen |= 1u << f;
		}
	}

	need = (1u << F_PID) | (1u << F_TID) | (1u << F_TIMESTAMP) |
	       (1u << F_ADDR) | (1u << F_TYPE);
	if (kind >= 0 && kind != MT_EV_FREE) {
		need |= 1u << F_SIZE;
	}
	if ((seen & need) != need) {
		unsigned int f;

		for (f = 0; !(~seen & need & (1u << f)); f++) {
			;
		}
		return rd_fail(rd, rd->start, "record has no \"%s\"",
			       field_names[f]);
	}
	ev->kind = (uint8_t)kind;
	if (kind == MT_EV_FREE) {
		ev->size = 0;
	}
	if (kind == MT_EV_REALLOC && (seen & (1u << F_OLD_ADDR))) {
		ev->flags |= MT_EVF_OLD_ADDR;
	} else {
		ev->old_addr = 0;
	}
	if (seen & (1u << F_STACK)) {
		ev->flags |= MT_EVF_STACK;
	}
	return RD_OK;
}

enum mt_msgpack_status mt_msgpack_unpack(const uint8_t *src, size_t len,
					 struct mt_event *ev, size_t *used,
					 struct mt_msgpack_error *err)
{
	struct reader rd = {
		.start = src, .p = src, .end = src + len, .err = err,
	};
	int ret;

	memset(ev, 0, sizeof(*ev));
	err->unknown_type = 0;
	ret = unpack(&rd, ev);
	if (ret == RD_MORE) {
		return MT_MSGPACK_MORE;
	}
	if (ret != RD_OK) {
		return MT_MSGPACK_ERROR;
	}
	*used = (size_t)(rd.p - src);
	return MT_MSGPACK_OK;
}

/* ------------------------------------------------------------------ */
/* Fast reader: the writer's own layout                                */
/* ------------------------------------------------------------------ */

/*
 * What the generic reader spends its time on for a record of ours is
 * dispatch: a function call per value, a tag switch, a key search and a
 * name search. Records written by mt_msgpack_pack() all have one layout,
 * so this reader checks that layout with fixed-width loads compared with
 * constants (the keys, the type name through a perfect hash), and reads
 * each integer with one big-endian load after a switch on its tag. Anything
 * else makes it give up and the generic reader take the record: the two
 * agree on every record the fast one accepts (tests/test-encoder.c checks
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
