/* SPDX-License-Identifier: MIT */
/*
 * plugins/replay/json-event.c - see json-event.h.
 *
 * A small strict reader of its own rather than a JSON library: the fields
 * are 64-bit unsigned (addresses, sizes, timestamps up to 2^64 - 1, which
 * jansson's signed json_int_t cannot hold), a key given twice must be
 * refused (json-c keeps the last one silently), an error must name the key
 * and column, and a flat object is all there is to read. It takes the whole
 * JSON grammar (nested values of unknown keys are checked and skipped,
 * strings are checked for escapes, surrogates and UTF-8) in one pass,
 * without allocating.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <memtrack/plugin.h>

#include "event-finish.h"
#include "json-event.h"

/* Deeper than any real extension key needs, and bounds the recursion. */
#define MAX_DEPTH 64

struct jp {
	const char *start, *p, *end;
	char *why;
	size_t why_size;
};

static int fail(struct jp *j, const char *fmt, ...) MT_PRINTF(2, 3);

static int fail(struct jp *j, const char *fmt, ...)
{
	va_list ap;

	if (j->why_size) {
		va_start(ap, fmt);
		vsnprintf(j->why, j->why_size, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static int syntax(struct jp *j, const char *what)
{
	return fail(j, "not JSON: %s at column %zu", what,
		    (size_t)(j->p - j->start) + 1);
}

static void ws(struct jp *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' ||
				 *j->p == '\n' || *j->p == '\r')) {
		j->p++;
	}
}

static int peek(const struct jp *j)
{
	return j->p < j->end ? (unsigned char)*j->p : -1;
}

static void put(char *out, size_t cap, size_t *n, unsigned int c)
{
	if (out && *n < cap) {
		out[*n] = (char)c;
	}
	(*n)++;
}

static void put_utf8(char *out, size_t cap, size_t *n, uint32_t cp)
{
	if (cp < 0x80) {
		put(out, cap, n, cp);
	} else if (cp < 0x800) {
		put(out, cap, n, 0xc0 | (cp >> 6));
		put(out, cap, n, 0x80 | (cp & 0x3f));
	} else if (cp < 0x10000) {
		put(out, cap, n, 0xe0 | (cp >> 12));
		put(out, cap, n, 0x80 | ((cp >> 6) & 0x3f));
		put(out, cap, n, 0x80 | (cp & 0x3f));
	} else {
		put(out, cap, n, 0xf0 | (cp >> 18));
		put(out, cap, n, 0x80 | ((cp >> 12) & 0x3f));
		put(out, cap, n, 0x80 | ((cp >> 6) & 0x3f));
		put(out, cap, n, 0x80 | (cp & 0x3f));
	}
}

static int hex4(struct jp *j, uint32_t *out)
{
	uint32_t v = 0;
	int i;

	for (i = 0; i < 4; i++) {
		int c = peek(j);

		v <<= 4;
		if (c >= '0' && c <= '9') {
			v |= (uint32_t)(c - '0');
		} else if (c >= 'a' && c <= 'f') {
			v |= (uint32_t)(c - 'a' + 10);
		} else if (c >= 'A' && c <= 'F') {
			v |= (uint32_t)(c - 'A' + 10);
		} else {
			return syntax(j, "bad \\u escape");
		}
		j->p++;
	}
	*out = v;
	return 0;
}

/* \uXXXX, a surrogate pair taken whole; j->p is after the 'u'. */
static int unicode_escape(struct jp *j, uint32_t *cp)
{
	uint32_t lo;
	int err = hex4(j, cp);

	if (err) {
		return err;
	}
	if (*cp >= 0xdc00 && *cp <= 0xdfff) {
		return syntax(j, "lone low surrogate");
	}
	if (*cp < 0xd800 || *cp > 0xdbff) {
		return 0;
	}
	if (j->end - j->p < 2 || j->p[0] != '\\' || j->p[1] != 'u') {
		return syntax(j, "high surrogate without its low half");
	}
	j->p += 2;
	err = hex4(j, &lo);
	if (err) {
		return err;
	}
	if (lo < 0xdc00 || lo > 0xdfff) {
		return syntax(j, "high surrogate without its low half");
	}
	*cp = 0x10000 + ((*cp - 0xd800) << 10) + (lo - 0xdc00);
	return 0;
}

/* One UTF-8 sequence starting at j->p (a byte >= 0x80), copied to out. */
static int utf8_seq(struct jp *j, char *out, size_t cap, size_t *n)
{
	const unsigned char *s = (const unsigned char *)j->p;
	size_t len, i;
	uint32_t cp, min;

	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		len = 2, cp = s[0] & 0x1f, min = 0x80;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		len = 3, cp = s[0] & 0x0f, min = 0x800;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		len = 4, cp = s[0] & 0x07, min = 0x10000;
	} else {
		return syntax(j, "invalid UTF-8");
	}
	if ((size_t)(j->end - j->p) < len) {
		return syntax(j, "invalid UTF-8");
	}
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80) {
			return syntax(j, "invalid UTF-8");
		}
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
		return syntax(j, "invalid UTF-8");
	}
	for (i = 0; i < len; i++) {
		put(out, cap, n, s[i]);
	}
	j->p += len;
	return 0;
}

/*
 * A string at j->p (on its '"'): checked whole, decoded into out (at most
 * cap bytes; out may be NULL). *len is the decoded length, even past cap.
 */
static int string(struct jp *j, char *out, size_t cap, size_t *len)
{
	static const char esc_in[] = "\"\\/bfnrt", esc_out[] = "\"\\/\b\f\n\r\t";
	size_t n = 0;
	int err;

	j->p++;
	for (;;) {
		int c = peek(j);
		const char *e;
		uint32_t cp;

		if (c < 0) {
			return syntax(j, "unterminated string");
		}
		if (c == '"') {
			j->p++;
			break;
		}
		if (c < 0x20) {
			return syntax(j, "control character in a string");
		}
		if (c >= 0x80) {
			err = utf8_seq(j, out, cap, &n);
			if (err) {
				return err;
			}
			continue;
		}
		j->p++;
		if (c != '\\') {
			put(out, cap, &n, (unsigned int)c);
			continue;
		}
		c = peek(j);
		if (c == 'u') {
			j->p++;
			err = unicode_escape(j, &cp);
			if (err) {
				return err;
			}
			put_utf8(out, cap, &n, cp);
			continue;
		}
		e = c > 0 ? strchr(esc_in, c) : NULL;
		if (!e) {
			return syntax(j, "bad escape");
		}
		j->p++;
		put(out, cap, &n, (unsigned char)esc_out[e - esc_in]);
	}
	*len = n;
	return 0;
}

struct num {
	const char *text;
	size_t text_len;
	bool is_int;   /* no fraction, no exponent */
	bool neg;
	bool overflow; /* the magnitude does not fit in 64 bits */
	uint64_t mag;
};

static bool digit(int c)
{
	return c >= '0' && c <= '9';
}

/* -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static int number(struct jp *j, struct num *n)
{
	memset(n, 0, sizeof(*n));
	n->text = j->p;
	n->is_int = true;
	if (peek(j) == '-') {
		n->neg = true;
		j->p++;
	}
	if (!digit(peek(j))) {
		return syntax(j, "bad number");
	}
	if (peek(j) == '0') {
		j->p++;
		if (digit(peek(j))) {
			return syntax(j, "leading zero in a number");
		}
	} else {
		while (digit(peek(j))) {
			unsigned int d = (unsigned int)(*j->p - '0');

			if (n->mag > (UINT64_MAX - d) / 10) {
				n->overflow = true;
			}
			n->mag = n->mag * 10 + d;
			j->p++;
		}
	}
	if (peek(j) == '.') {
		n->is_int = false;
		j->p++;
		if (!digit(peek(j))) {
			return syntax(j, "bad number");
		}
		while (digit(peek(j))) {
			j->p++;
		}
	}
	if (peek(j) == 'e' || peek(j) == 'E') {
		n->is_int = false;
		j->p++;
		if (peek(j) == '+' || peek(j) == '-') {
			j->p++;
		}
		if (!digit(peek(j))) {
			return syntax(j, "bad number");
		}
		while (digit(peek(j))) {
			j->p++;
		}
	}
	n->text_len = (size_t)(j->p - n->text);
	return 0;
}

static int literal(struct jp *j, const char *word)
{
	size_t len = strlen(word);

	if ((size_t)(j->end - j->p) < len || memcmp(j->p, word, len)) {
		return syntax(j, "unexpected character");
	}
	j->p += len;
	return 0;
}

static int value(struct jp *j, int depth);

/* An object's key and its ':', white space after: string() into out. */
static int key(struct jp *j, char *out, size_t cap, size_t *len)
{
	int err;

	if (peek(j) != '"') {
		return syntax(j, "expected a key");
	}
	err = string(j, out, cap, len);
	if (err) {
		return err;
	}
	ws(j);
	if (peek(j) != ':') {
		return syntax(j, "expected ':'");
	}
	j->p++;
	ws(j);
	return 0;
}

/* An object or array at j->p, checked and skipped. */
static int container(struct jp *j, int depth)
{
	char close = *j->p == '{' ? '}' : ']';
	bool object = close == '}';
	size_t len;
	int err;

	if (depth >= MAX_DEPTH) {
		return fail(j, "not accepted: nested deeper than %d at column %zu",
			    MAX_DEPTH, (size_t)(j->p - j->start) + 1);
	}
	j->p++;
	ws(j);
	if (peek(j) == close) {
		j->p++;
		return 0;
	}
	for (;;) {
		if (object) {
			err = key(j, NULL, 0, &len);
			if (err) {
				return err;
			}
		}
		err = value(j, depth + 1);
		if (err) {
			return err;
		}
		ws(j);
		if (peek(j) == ',') {
			j->p++;
			ws(j);
			continue;
		}
		if (peek(j) != close) {
			return syntax(j, object ? "expected ',' or '}'" :
						  "expected ',' or ']'");
		}
		j->p++;
		return 0;
	}
}

/* Any JSON value at j->p, checked and skipped. */
static int value(struct jp *j, int depth)
{
	struct num n;
	size_t len;

	switch (peek(j)) {
	case '{':
	case '[':
		return container(j, depth);
	case '"':
		return string(j, NULL, 0, &len);
	case 't':
		return literal(j, "true");
	case 'f':
		return literal(j, "false");
	case 'n':
		return literal(j, "null");
	case -1:
		return syntax(j, "line ends where a value was expected");
	default:
		if (peek(j) == '-' || digit(peek(j))) {
			return number(j, &n);
		}
		return syntax(j, "unexpected character");
	}
}

static const char *value_type(int c)
{
	switch (c) {
	case '"':
		return "a string";
	case '{':
		return "an object";
	case '[':
		return "an array";
	case 't':
	case 'f':
		return "a boolean";
	case 'n':
		return "null";
	default:
		return "something else";
	}
}

enum field {
	F_PID, F_TID, F_TIMESTAMP, F_ADDR, F_TYPE, F_OLD_ADDR, F_SIZE, F_STACK,
	F_UNKNOWN,
};

static const char *const field_names[] = {
	"pid", "tid", "timestamp", "addr", "type", "old_addr", "size", "stack",
};

static enum field field_of(const char *key, size_t len)
{
	unsigned int f;

	for (f = 0; f < F_UNKNOWN; f++) {
		if (strlen(field_names[f]) == len &&
		    !memcmp(field_names[f], key, len)) {
			return (enum field)f;
		}
	}
	return F_UNKNOWN;
}

/* An integer value of a known key, within [-neg_max, max]. */
static int int_value(struct jp *j, enum field f, uint64_t neg_max,
		     uint64_t max, uint64_t *out)
{
	const char *key = field_names[f];
	struct num n;
	int c = peek(j), err;

	if (c != '-' && !digit(c)) {
		err = value(j, 0);
		return err ? err :
			     fail(j, "key \"%s\": want an integer, got %s", key,
				  value_type(c));
	}
	err = number(j, &n);
	if (err) {
		return err;
	}
	if (!n.is_int) {
		return fail(j, "key \"%s\": want an integer, got %.*s", key,
			    (int)(n.text_len > 40 ? 40 : n.text_len), n.text);
	}
	if (n.overflow || (n.neg ? n.mag > neg_max : n.mag > max)) {
		if (n.neg && !neg_max) {
			return fail(j, "key \"%s\": %.*s is negative", key,
				    (int)(n.text_len > 40 ? 40 : n.text_len),
				    n.text);
		}
		return fail(j, "key \"%s\": %.*s is out of range (%s%" PRIu64
			    " to %" PRIu64 ")",
			    key, (int)(n.text_len > 40 ? 40 : n.text_len),
			    n.text, neg_max ? "-" : "", neg_max, max);
	}
	*out = n.neg ? (uint64_t)0 - n.mag : n.mag;
	return 0;
}

static bool printable(const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		if (s[i] < 0x20 || s[i] > 0x7e || s[i] == '"' || s[i] == '\\') {
			return false;
		}
	}
	return true;
}

static int type_value(struct jp *j, int *kind)
{
	char name[32];
	size_t len;
	unsigned int k;
	int c = peek(j), err;

	if (c != '"') {
		err = value(j, 0);
		return err ? err :
			     fail(j, "key \"type\": want a string, got %s",
				  value_type(c));
	}
	err = string(j, name, sizeof(name), &len);
	if (err) {
		return err;
	}
	for (k = 0; k < MT_EV_KIND_COUNT && len <= sizeof(name); k++) {
		const char *kn = mt_event_kind_name(k);

		if (strlen(kn) == len && !memcmp(kn, name, len)) {
			*kind = (int)k;
			return 0;
		}
	}
	if (len <= sizeof(name) && printable(name, len)) {
		return fail(j, "unknown type \"%.*s\"", (int)len, name);
	}
	return fail(j, "unknown type (a string of %zu bytes)", len);
}

static int member(struct jp *j, struct mt_event *ev, unsigned int *seen,
		  int *kind)
{
	char name[16];
	size_t klen;
	enum field f;
	uint64_t v;
	int err;

	err = key(j, name, sizeof(name), &klen);
	if (err) {
		return err;
	}
	f = klen <= sizeof(name) ? field_of(name, klen) : F_UNKNOWN;
	if (f != F_UNKNOWN && (*seen & (1u << f))) {
		return fail(j, "key \"%s\" given twice", field_names[f]);
	}
	switch (f) {
	case F_PID:
	case F_TID:
		err = int_value(j, f, (uint64_t)INT32_MAX + 1, INT32_MAX, &v);
		if (f == F_PID) {
			ev->pid = (int32_t)(uint32_t)v;
		} else {
			ev->tid = (int32_t)(uint32_t)v;
		}
		break;
	case F_TIMESTAMP:
		err = int_value(j, f, 0, UINT64_MAX, &ev->timestamp);
		break;
	case F_ADDR:
		err = int_value(j, f, 0, UINT64_MAX, &ev->addr);
		break;
	case F_OLD_ADDR:
		err = int_value(j, f, 0, UINT64_MAX, &ev->old_addr);
		break;
	case F_SIZE:
		err = int_value(j, f, 0, UINT64_MAX, &ev->size);
		break;
	case F_STACK:
		err = int_value(j, f, 0, UINT32_MAX, &v);
		ev->stack_id = (uint32_t)v;
		break;
	case F_TYPE:
		err = type_value(j, kind);
		break;
	default:
		/* the format's room for extensions (and events.jsonl's
		 * msgpack_hex): skipped, as the reference reader does */
		err = value(j, 0);
		break;
	}
	if (f != F_UNKNOWN) {
		*seen |= 1u << f;
	}
	return err;
}

int mt_json_event_parse(const char *line, size_t len, struct mt_event *ev,
			char *why, size_t why_size)
{
	struct jp j = {
		.start = line, .p = line, .end = line + len,
		.why = why, .why_size = why_size,
	};
	unsigned int seen = 0, need, f;
	int kind = -1, err;

	memset(ev, 0, sizeof(*ev));
	ws(&j);
	if (peek(&j) != '{') {
		return syntax(&j, "expected an object");
	}
	j.p++;
	ws(&j);
	if (peek(&j) == '}') {
		j.p++;
	} else {
		for (;;) {
			err = member(&j, ev, &seen, &kind);
			if (err) {
				return err;
			}
			ws(&j);
			if (peek(&j) == ',') {
				j.p++;
				ws(&j);
				continue;
			}
			if (peek(&j) != '}') {
				return syntax(&j, "expected ',' or '}'");
			}
			j.p++;
			break;
		}
	}
	ws(&j);
	if (j.p != j.end) {
		return syntax(&j, "text after the object");
	}

	/* the keys the msgpack reader requires, and the same leniency: a
	 * Free's size and a non-Realloc's old_addr are dropped */
	need = (1u << F_PID) | (1u << F_TID) | (1u << F_TIMESTAMP) |
	       (1u << F_ADDR) | (1u << F_TYPE);
	if (kind >= 0 && kind != MT_EV_FREE) {
		need |= 1u << F_SIZE;
	}
	for (f = 0; f < F_UNKNOWN; f++) {
		if ((need & ~seen) & (1u << f)) {
			return fail(&j, "no \"%s\"", field_names[f]);
		}
	}
	mt_event_finish(ev, kind, seen & (1u << F_OLD_ADDR),
			seen & (1u << F_STACK));
	return 0;
}
