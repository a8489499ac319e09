/* SPDX-License-Identifier: MIT */
/*
 * msgpack-read.c - the generic MessagePack reader of memtrack events: any
 * key order, any integer form, unknown keys skipped, as the reference
 * reader accepts them, and a message that says why a record is refused.
 * The fast reader (msgpack-read-fast.c) hands it every record it does not
 * take.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "event-finish.h"
#include "msgpack.h"

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
	mt_event_finish(ev, kind, seen & (1u << F_OLD_ADDR),
			seen & (1u << F_STACK));
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
