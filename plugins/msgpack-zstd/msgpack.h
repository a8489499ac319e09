/* SPDX-License-Identifier: MIT */
/*
 * msgpack.h - the MessagePack side of the CodSpeed memtrack format, internal
 * to the msgpack-zstd plugin (nothing here is exported from the .so).
 *
 * One event is one map, keys in this order (see
 * tests/fixtures/codspeed-format/README.md):
 *   pid, tid, timestamp, addr, type, [old_addr], [size], [stack]
 * Free has no size; Realloc has old_addr only with MT_EVF_OLD_ADDR; stack
 * (our extension, ignored by the reference reader) only with MT_EVF_STACK.
 * Integers use the smallest form, as rmp_serde writes them, so the output is
 * byte-identical to the reference serializer.
 *
 * Threading: every function is pure (no global state); any thread may call
 * them on its own buffers.
 */
#ifndef MT_MSGPACK_H
#define MT_MSGPACK_H

#include <stddef.h>
#include <stdint.h>
#include <memtrack/event.h>

/*
 * Upper bound of one encoded event: map header, keys, 9-byte integers and
 * the longest type name add up to 113 bytes. The writer also stores a few
 * whole 8- or 16-byte words past the end of what it writes (overlapping
 * stores are cheaper than exact-length copies), so a destination needs
 * MT_MSGPACK_EVENT_MAX bytes free for each event it may receive.
 */
#define MT_MSGPACK_EVENT_MAX 144

/* The largest record the writer produces (no slack): for output bounds. */
#define MT_MSGPACK_RECORD_MAX 113

/*
 * Serialize events[0..count) into dst, stopping before an event that might
 * not fit in cap bytes (cap counts the slack above: the writer never stores
 * at or beyond dst + cap) and before an event whose kind is not a known
 * enum mt_event_kind (it has no name in the format). *done receives the
 * number of events written; done < count with events[done] valid and room
 * left means that event's kind is invalid: the caller reports it.
 * Returns the number of bytes produced.
 */
size_t mt_msgpack_pack(uint8_t *dst, size_t cap, const struct mt_event *events,
		       size_t count, size_t *done);

/* Result of mt_msgpack_unpack(). */
enum mt_msgpack_status {
	MT_MSGPACK_OK = 0,        /* one event decoded */
	MT_MSGPACK_MORE = 1,      /* the record continues past the buffer */
	MT_MSGPACK_ERROR = -1,    /* malformed record: see err */
};

/* Why a record was refused, for the caller's message. */
struct mt_msgpack_error {
	size_t offset;     /* from the start of the record */
	char msg[160];     /* human-readable reason */
	int unknown_type;  /* the record's "type" is not one we know */
};

/*
 * Decode one record starting at src (len bytes available). On MT_MSGPACK_OK
 * *ev is filled (reserved fields zeroed) and *used is the record's length.
 * MT_MSGPACK_MORE says nothing is wrong so far but the record is longer than
 * len: call again from the same start with more bytes. Unknown keys are
 * skipped whatever their value (as the reference reader does); an unknown
 * "type" is an error with err->unknown_type set.
 */
enum mt_msgpack_status mt_msgpack_unpack(const uint8_t *src, size_t len,
					 struct mt_event *ev, size_t *used,
					 struct mt_msgpack_error *err);

/*
 * Bytes a buffer must hold from src for mt_msgpack_unpack_fast(): the
 * longest record it accepts plus what its fixed-width loads read past it.
 */
#define MT_MSGPACK_FAST_MIN 160

/*
 * Decode one record laid out exactly as mt_msgpack_pack() writes it (keys
 * in the writer's order, integers in the forms the writer picks), with at
 * least MT_MSGPACK_FAST_MIN bytes readable from src. Returns the record's
 * length with *ev filled exactly as mt_msgpack_unpack() would, or 0 for
 * anything else (another key order, unknown keys, other integer forms,
 * errors): the caller then uses mt_msgpack_unpack(), which knows why. No
 * byte at or past src + MT_MSGPACK_FAST_MIN is read.
 */
size_t mt_msgpack_unpack_fast(const uint8_t *src, struct mt_event *ev);

/*
 * mt_msgpack_unpack_fast() over consecutive records of src[0..len) into
 * ev[0..max), while MT_MSGPACK_FAST_MIN bytes are left: returns the number
 * of events decoded, *used the bytes they took. It stops at the first
 * record the fast reader does not take, which is the generic reader's.
 */
size_t mt_msgpack_unpack_run(const uint8_t *src, size_t len,
			     struct mt_event *ev, size_t max, size_t *used);

#endif /* MT_MSGPACK_H */
