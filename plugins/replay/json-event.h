/* SPDX-License-Identifier: MIT */
/*
 * plugins/replay/json-event.h - one line of a JSON lines recording as one
 * event, read strictly (RFC 8259). No state, no allocation: the replay
 * source and a fuzzer call it the same way.
 */
#ifndef MT_REPLAY_JSON_EVENT_H
#define MT_REPLAY_JSON_EVENT_H

#include <stddef.h>

#include <memtrack/event.h>

/*
 * Parse line[0..len) (one JSON object, blanks around it allowed) into *ev.
 * The keys are those of `memtrack dump`: pid, tid, timestamp, addr, type,
 * size (not for a Free), optional old_addr (Realloc) and stack; other keys
 * are skipped whatever their value, as the reference reader skips unknown
 * map keys. Integers must be JSON integers in the range of their field;
 * a key given twice, a missing key, an unknown type and anything after the
 * object are refused.
 *
 * Returns 0, or -EINVAL with why[] saying what (naming the key, and the
 * column when the text is not JSON); *ev is then undefined.
 */
int mt_json_event_parse(const char *line, size_t len, struct mt_event *ev,
			char *why, size_t why_size);

#endif /* MT_REPLAY_JSON_EVENT_H */
