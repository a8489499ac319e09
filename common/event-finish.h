/* SPDX-License-Identifier: MIT */
/*
 * The last step of reading an event, whatever it was read from (the
 * msgpack decoder, replay's JSON lines): the same leniency everywhere. A
 * Free's size and a non-Realloc's old_addr are dropped; the flags say
 * which optional keys the record had.
 */
#ifndef MT_COMMON_EVENT_FINISH_H
#define MT_COMMON_EVENT_FINISH_H

#include <stdbool.h>

#include <memtrack/event.h>

static inline void mt_event_finish(struct mt_event *ev, int kind,
				   bool has_old_addr, bool has_stack)
{
	ev->kind = (uint8_t)kind;
	if (kind == MT_EV_FREE) {
		ev->size = 0;
	}
	if (kind == MT_EV_REALLOC && has_old_addr) {
		ev->flags |= MT_EVF_OLD_ADDR;
	} else {
		ev->old_addr = 0;
	}
	if (has_stack) {
		ev->flags |= MT_EVF_STACK;
	}
}

#endif /* MT_COMMON_EVENT_FINISH_H */
