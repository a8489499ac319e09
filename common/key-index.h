/* SPDX-License-Identifier: MIT */
/*
 * A hash index from a pair of 64-bit keys (a file's dev and inode, a pid
 * and 0) to a 32-bit value (an index into the caller's array): the eBPF
 * source finds its files, build-ids, unwind tables and processes with it,
 * in constant time however many there are (issue 24: linear searches made
 * thousands of libraries or processes cost quadratic time). Open
 * addressing, linear probing, grown to twice the size at half full; no
 * removal (what the source indexes stays until its end).
 */
#ifndef MT_COMMON_KEY_INDEX_H
#define MT_COMMON_KEY_INDEX_H

#include <stddef.h>
#include <stdint.h>

struct mt_key_slot {
	uint64_t a, b;
	uint32_t val;
	uint32_t used;
};

struct mt_key_index {
	struct mt_key_slot *slots;
	size_t cap; /* a power of two, or 0 */
	size_t n;
};

/* The value of (a, b): 0 and *val, or -1 when absent. */
int mt_key_get(const struct mt_key_index *x, uint64_t a, uint64_t b,
	       uint32_t *val);

/* Set (a, b) to val (added, or replaced): 0 or -ENOMEM (then x is as it
 * was). */
int mt_key_put(struct mt_key_index *x, uint64_t a, uint64_t b, uint32_t val);

void mt_key_free(struct mt_key_index *x);

#endif /* MT_COMMON_KEY_INDEX_H */
