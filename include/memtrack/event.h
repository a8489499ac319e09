/* SPDX-License-Identifier: MIT */
/*
 * memtrack/event.h - the allocation event record, part of the plugin ABI.
 *
 * One record per allocator call as the traced program saw it. The layout is
 * fixed for ABI major 1: 64 bytes, naturally aligned, explicit padding. New
 * information goes into the reserved tail and is announced by a flag bit, so
 * an older plugin that ignores the bit stays correct.
 */
#ifndef MEMTRACK_EVENT_H
#define MEMTRACK_EVENT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Event kinds. The numbering is ABI; the names are the "type" strings of the
 * CodSpeed memtrack artifact format (see mt_event_kind_name()).
 */
enum mt_event_kind {
	MT_EV_MALLOC = 0,
	MT_EV_FREE = 1,
	MT_EV_REALLOC = 2,
	MT_EV_CALLOC = 3,
	MT_EV_ALIGNED_ALLOC = 4,
	MT_EV_MMAP = 5,
	MT_EV_MUNMAP = 6,
	MT_EV_BRK = 7,
	MT_EV_KIND_COUNT
};

/* mt_event.flags */
#define MT_EVF_OLD_ADDR (1u << 0) /* old_addr is known (Realloc only) */
#define MT_EVF_STACK (1u << 1)    /* stack_id is valid */

/* The last frame of a stack in a stack table ("MTKT"), at its root end,
 * when the stack was cut short there: the walk could not go on without
 * guessing. Never a user-space address; a reader that does not know it
 * shows an address outside every mapping. */
#define MT_FRAME_TRUNCATED 0xffffffffffffffffull

struct mt_event {
	uint64_t timestamp; /* ns, CLOCK_MONOTONIC (bpf_ktime_get_ns) */
	uint64_t addr;      /* block address; Brk: the new break */
	uint64_t size;      /* bytes; Free carries 0 */
	uint64_t old_addr;  /* Realloc: previous block, when MT_EVF_OLD_ADDR */
	int32_t pid;        /* process id as the program sees it */
	int32_t tid;        /* thread id as the program sees it */
	uint8_t kind;       /* enum mt_event_kind */
	uint8_t flags;      /* MT_EVF_* */
	uint16_t reserved0; /* zero */
	uint32_t stack_id;  /* when MT_EVF_STACK */
	uint64_t reserved[2]; /* zero; room to grow without a major bump */
};

/* C11 and C++11 spell it differently; the header is for both (since 1.1). */
#ifdef __cplusplus
static_assert(sizeof(struct mt_event) == 64, "mt_event is ABI: 64 bytes");
#else
_Static_assert(sizeof(struct mt_event) == 64, "mt_event is ABI: 64 bytes");
#endif

static inline const char *mt_event_kind_name(unsigned int kind)
{
	static const char *const names[MT_EV_KIND_COUNT] = {
		"Malloc", "Free", "Realloc", "Calloc",
		"AlignedAlloc", "Mmap", "Munmap", "Brk",
	};

	return kind < MT_EV_KIND_COUNT ? names[kind] : NULL;
}

#ifdef __cplusplus
}
#endif

#endif /* MEMTRACK_EVENT_H */
