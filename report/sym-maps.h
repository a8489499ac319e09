/* SPDX-License-Identifier: MIT */
/*
 * The executable mappings of one process as a recording tells them
 * (MTKM records, plugins/ebpf/README.md), for symbolize.c: which module a
 * return address is in. The newest mapping of an address wins (an address
 * reused after munmap), an exec empties the table, a fork gives the child
 * the parent's table as it is at that moment.
 *
 * A recording is input, not trust: memory and time stay proportional to
 * it whatever it holds. So a table is a stack of immutable layers, each a
 * sorted array of disjoint intervals, newer layers on top:
 *   - add: push a layer of one interval, then merge the two top layers
 *     while the upper is at least half the size of the lower one (newer
 *     intervals cut the older ones they overlap). Layer sizes at least
 *     double going down, so there are O(log n) of them, and each interval
 *     is copied O(log n) times: O(log n) amortized per add;
 *   - find: a binary search per layer from the top, the first hit wins:
 *     O(log^2 n);
 *   - fork: the child takes references to the parent's layers, O(log n),
 *     not a copy of its table (forks that copied turned a 140 KB recording
 *     into 515 MB). A layer is freed with its last reference.
 *
 * Not thread-safe: symbolize.c uses it from one thread.
 */
#ifndef MT_REPORT_SYM_MAPS_H
#define MT_REPORT_SYM_MAPS_H

#include <stddef.h>
#include <stdint.h>

struct mt_map {
	uint64_t start, end; /* [start, end), start < end */
	uint64_t off;        /* file offset of start */
	uint32_t mod;        /* symbolize.c's module index */
};

struct mt_maps_layer;

struct mt_maps {
	struct mt_maps_layer **layers; /* bottom (oldest) first */
	size_t n, cap;
};

/* Add m; newer than everything already there. 0 or -ENOMEM (then the
 * table is as it was). */
int mt_maps_add(struct mt_maps *t, const struct mt_map *m);

/* The newest mapping holding addr, or NULL. */
const struct mt_map *mt_maps_find(const struct mt_maps *t, uint64_t addr);

/* dst becomes a snapshot of src (what dst held is dropped); dst may be
 * src. 0 or -ENOMEM (then dst is empty). */
int mt_maps_copy(struct mt_maps *dst, const struct mt_maps *src);

/* Empty the table (exec), and free what only it used. */
void mt_maps_clear(struct mt_maps *t);

/* mt_maps_clear() and free the layer array. */
void mt_maps_free(struct mt_maps *t);

#endif /* MT_REPORT_SYM_MAPS_H */
