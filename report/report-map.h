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
#ifndef MT_REPORT_MAP_H
#define MT_REPORT_MAP_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

static inline uint64_t mt_map_hash(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return h;
}

/*
 * The one growth of both maps: a table twice as large (first slots of
 * size bytes for the first one, a power of two) holding the occupied slots
 * of slots, whose mask is *mask. full() says whether a slot is occupied,
 * hash() where it wants to be. Returns the new table and frees the old one
 * (updating *mask), or returns NULL and leaves both as they were.
 */
static inline void *mt_map_grow(void *slots, size_t *mask, size_t first,
				size_t size, bool (*full)(const void *slot),
				uint64_t (*hash)(const void *slot))
{
	size_t old_cap = slots ? *mask + 1 : 0;
	size_t cap = old_cap ? old_cap * 2 : first, i, j;
	char *grown = calloc(cap, size);

	if (!grown) {
		return NULL;
	}
	for (i = 0; i < old_cap; i++) {
		const char *s = (const char *)slots + i * size;

		if (!full(s)) {
			continue;
		}
		j = hash(s) & (cap - 1);
		while (full(grown + j * size)) {
			j = (j + 1) & (cap - 1);
		}
		memcpy(grown + j * size, s, size);
	}
	free(slots);
	*mask = cap - 1;
	return grown;
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

static inline uint64_t mt_live_hash(int32_t pid, uint64_t addr)
{
	return mt_map_hash(addr ^ ((uint64_t)(uint32_t)pid << 47));
}

static inline size_t mt_live_home(const struct mt_live_map *m, int32_t pid,
				  uint64_t addr)
{
	return mt_live_hash(pid, addr) & m->mask;
}

static inline bool mt_live_slot_full(const void *slot)
{
	return ((const struct mt_live_slot *)slot)->addr != 0;
}

static inline uint64_t mt_live_slot_hash(const void *slot)
{
	const struct mt_live_slot *s = slot;

	return mt_live_hash(s->pid, s->addr);
}

static inline int mt_live_grow(struct mt_live_map *m)
{
	struct mt_live_slot *slots = mt_map_grow(m->slots, &m->mask, 4096,
						 sizeof(*slots),
						 mt_live_slot_full,
						 mt_live_slot_hash);

	if (!slots) {
		return -ENOMEM;
	}
	m->slots = slots;
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

static inline bool mt_idx_slot_full(const void *slot)
{
	return ((const struct mt_idx_slot *)slot)->idx1 != 0;
}

static inline uint64_t mt_idx_slot_hash(const void *slot)
{
	return mt_map_hash(((const struct mt_idx_slot *)slot)->key);
}

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
		struct mt_idx_slot *slots;

		slots = mt_map_grow(m->slots, &m->mask, 256, sizeof(*slots),
				    mt_idx_slot_full, mt_idx_slot_hash);
		if (!slots) {
			return -ENOMEM;
		}
		m->slots = slots;
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

/*
 * Strings as keys of an mt_idx_map: the key is a hash of the string, and a
 * collision takes the next key, so keys stay unique. Find or add:
 *
 *	for (key = mt_map_str_hash(seed, s, len);
 *	     (i = mt_idx_get(&m, key)) >= 0; key++) {
 *		if (item i holds s) return i;
 *	}
 *	add the item, then mt_idx_put(&m, key, its index);
 *
 * The seed comes from the kernel (mt_map_seed()), so that a recording
 * cannot choose strings whose hashes collide.
 */
static inline uint64_t mt_map_str_hash(uint64_t seed, const void *s,
				       size_t len)
{
	const unsigned char *p = s;
	uint64_t h = 14695981039346656037ULL ^ seed;
	size_t i;

	for (i = 0; i < len; i++) {
		h = (h ^ p[i]) * 1099511628211ULL;
	}
	return h;
}

static inline uint64_t mt_map_seed(void)
{
	const unsigned char *rnd =
		(const unsigned char *)getauxval(AT_RANDOM);
	uint64_t seed = 0;

	if (rnd) {
		memcpy(&seed, rnd + 8, sizeof(seed));
	}
	return seed;
}

#endif /* MT_REPORT_MAP_H */
