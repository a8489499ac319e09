/* SPDX-License-Identifier: MIT */
/*
 * The growable array: one way to make room for the next elements of a
 * malloc'ed array, used by the report, the symbolizer and the eBPF source.
 */
#ifndef MT_COMMON_ARRAY_H
#define MT_COMMON_ARRAY_H

#include <stddef.h>

/*
 * Makes room in arr (*cap elements of elem bytes each) for at least need
 * elements, doubling the capacity from 16; the new elements are zeroed.
 * Returns the array, moved or not, and updates *cap; NULL with errno set
 * when memory runs out, in which case arr and *cap stay as they were (the
 * caller still owns arr).
 */
void *mt_array_grow(void *arr, size_t *cap, size_t need, size_t elem);

#endif /* MT_COMMON_ARRAY_H */
