/* SPDX-License-Identifier: MIT */
/*
 * Hash maps of 'memtrack report', header-only so the per-event paths of
 * report.c inline them: the analysis does one or two lookups per event and
 * must stay O(1) amortized with no allocation per event.
 *
 *   mt_live_map   live blocks keyed by (pid, addr): size and site
 *   mt_idx_map    a 64-bit key to an index (processes, threads, sites)
 *
 * Both are open addressing with linear probing, grown at 3/4 load.
 */
#ifndef MT_CORE_REPORT_MAP_H
#define MT_CORE_REPORT_MAP_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

static inline uint64_t mt_map_hash(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return h;
}

struct mt_live_slot {
	uint64_t addr; /* 0: empty (address 0 is never a live block) */
	uint64_t size;
	int32_t pid;
	uint32_t thread; /* the allocating thread (report.c's index) */
	uint32_t site;
};

struct mt_live_map {
	struct mt_live_slot *slots;
	size_t mask;
	size_t used;
};

static inline size_t mt_live_home(const struct mt_live_map *m, int32_t pid,
				  uint64_t addr)
{
	return mt_map_hash(addr ^ ((uint64_t)(uint32_t)pid << 47)) & m->mask;
}

static inline int mt_live_grow(struct mt_live_map *m)
{
	size_t cap = m->slots ? (m->mask + 1) * 2 : 4096, i;
	size_t old_cap = m->slots ? m->mask + 1 : 0;
	struct mt_live_slot *old = m->slots;

	m->slots = calloc(cap, sizeof(*m->slots));
	if (!m->slots) {
		m->slots = old;
		return -ENOMEM;
	}
	m->mask = cap - 1;
	for (i = 0; i < old_cap; i++) {
		if (old[i].addr) {
			size_t j = mt_live_home(m, old[i].pid, old[i].addr);

			while (m->slots[j].addr) {
				j = (j + 1) & m->mask;
			}
			m->slots[j] = old[i];
		}
	}
	free(old);
	return 0;
}

/* The slot of (pid, addr), or the empty slot where it would go. Only call
 * with room for one more (mt_live_reserve()). */
static inline struct mt_live_slot *mt_live_find(struct mt_live_map *m,
						int32_t pid, uint64_t addr)
{
	size_t j = mt_live_home(m, pid, addr);

	while (m->slots[j].addr &&
	       !(m->slots[j].addr == addr && m->slots[j].pid == pid)) {
		j = (j + 1) & m->mask;
	}
	return &m->slots[j];
}

static inline int mt_live_reserve(struct mt_live_map *m)
{
	if (!m->slots || m->used * 4 >= (m->mask + 1) * 3) {
		return mt_live_grow(m);
	}
	return 0;
}

/* Remove a slot mt_live_find() returned occupied. Backward shift: later
 * members of the run move into the hole, so no tombstones pile up. */
static inline void mt_live_remove(struct mt_live_map *m,
				  struct mt_live_slot *slot)
{
	size_t j = (size_t)(slot - m->slots), k;

	for (k = (j + 1) & m->mask; m->slots[k].addr; k = (k + 1) & m->mask) {
		size_t home = mt_live_home(m, m->slots[k].pid,
					   m->slots[k].addr);

		if (((k - home) & m->mask) >= ((k - j) & m->mask)) {
			m->slots[j] = m->slots[k];
			j = k;
		}
	}
	m->slots[j].addr = 0;
	m->used--;
}

struct mt_idx_slot {
	uint64_t key;
	uint32_t idx1; /* index + 1; 0: empty */
};

struct mt_idx_map {
	struct mt_idx_slot *slots;
	size_t mask;
	size_t used;
};

/* Index of key, or -1 when absent. */
static inline int64_t mt_idx_get(const struct mt_idx_map *m, uint64_t key)
{
	size_t j;

	if (!m->slots) {
		return -1;
	}
	for (j = mt_map_hash(key) & m->mask; m->slots[j].idx1;
	     j = (j + 1) & m->mask) {
		if (m->slots[j].key == key) {
			return (int64_t)m->slots[j].idx1 - 1;
		}
	}
	return -1;
}

/* Insert a key known to be absent. */
static inline int mt_idx_put(struct mt_idx_map *m, uint64_t key, uint32_t idx)
{
	size_t j;

	if (!m->slots || m->used * 4 >= (m->mask + 1) * 3) {
		size_t cap = m->slots ? (m->mask + 1) * 2 : 256, i;
		size_t old_cap = m->slots ? m->mask + 1 : 0;
		struct mt_idx_slot *old = m->slots;

		m->slots = calloc(cap, sizeof(*m->slots));
		if (!m->slots) {
			m->slots = old;
			return -ENOMEM;
		}
		m->mask = cap - 1;
		for (i = 0; i < old_cap; i++) {
			if (old[i].idx1) {
				j = mt_map_hash(old[i].key) & m->mask;
				while (m->slots[j].idx1) {
					j = (j + 1) & m->mask;
				}
				m->slots[j] = old[i];
			}
		}
		free(old);
	}
	j = mt_map_hash(key) & m->mask;
	while (m->slots[j].idx1) {
		j = (j + 1) & m->mask;
	}
	m->slots[j].key = key;
	m->slots[j].idx1 = idx + 1;
	m->used++;
	return 0;
}

#endif /* MT_CORE_REPORT_MAP_H */
