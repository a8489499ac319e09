/* SPDX-License-Identifier: MIT */
/*
 * plugins/preload/interposer/addr-set.h - a set of nonzero addresses that
 * grows, for the interposer's per-object bookkeeping (the objects bound
 * already, optional.c; the code segments whose mappings were sent,
 * stack-maps.c). Both used to be fixed tables that, once full, made every
 * later dlopen look at every object again, or send every mapping again:
 * quadratic past a thousand libraries (issue 24).
 *
 * Open addressing, linear probing, at most half full. The interposer
 * cannot call malloc (it is malloc), so the slots are its own anonymous
 * mappings (pl_self_map()); a table outgrown is left mapped rather than
 * unmapped, since a munmap would reach the recording as one of the
 * program's own (root mode traces the system call). What that leaves is
 * less than the table in use: 256 KiB in all for 16,384 entries.
 *
 * Not thread-safe: each user holds its own lock around it.
 */
#ifndef MT_PRELOAD_ADDR_SET_H
#define MT_PRELOAD_ADDR_SET_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../selfmap.h"

struct pl_addr_set {
	uint64_t *slot;	/* nslots entries, 0: empty */
	size_t nslots;	/* a power of two, 0 before the first add */
	size_t n;
};

static inline size_t pl_addr_set_at(const struct pl_addr_set *s,
				    uint64_t key)
{
	return (size_t)((key >> 4) * 0x9e3779b97f4a7c15ull >> 32) &
	       (s->nslots - 1);
}

static inline int pl_addr_set_has(const struct pl_addr_set *s, uint64_t key)
{
	size_t i;

	if (!s->nslots) {
		return 0;
	}
	for (i = pl_addr_set_at(s, key); s->slot[i];
	     i = (i + 1) & (s->nslots - 1)) {
		if (s->slot[i] == key) {
			return 1;
		}
	}
	return 0;
}

static inline void pl_addr_set_put(struct pl_addr_set *s, uint64_t key)
{
	size_t i;

	for (i = pl_addr_set_at(s, key); s->slot[i];
	     i = (i + 1) & (s->nslots - 1)) {
		if (s->slot[i] == key) {
			return;
		}
	}
	s->slot[i] = key;
	s->n++;
}

/* Add key (nonzero); 0, or -1 when the table could not grow (key then
 * not added: the caller's fallback is to look again, which is right) */
static inline int pl_addr_set_add(struct pl_addr_set *s, uint64_t key)
{
	if (s->n + 1 > s->nslots / 2) {
		size_t want = s->nslots ? s->nslots * 2 : 1024, i;
		struct pl_addr_set g = { NULL, want, 0 };

		g.slot = (uint64_t *)pl_self_map(want * sizeof(uint64_t), 0);
		if (!g.slot) {
			return -1;
		}
		for (i = 0; i < s->nslots; i++) {
			if (s->slot[i]) {
				pl_addr_set_put(&g, s->slot[i]);
			}
		}
		*s = g; /* the old slots stay mapped: see above */
	}
	pl_addr_set_put(s, key);
	return 0;
}

static inline void pl_addr_set_clear(struct pl_addr_set *s)
{
	if (s->n) {
		memset(s->slot, 0, s->nslots * sizeof(uint64_t));
		s->n = 0;
	}
}

#endif
