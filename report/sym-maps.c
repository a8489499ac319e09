/* SPDX-License-Identifier: MIT */
/*
 * A process's mappings as layers of disjoint intervals (see sym-maps.h).
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "array.h"
#include "sym-maps.h"

struct mt_maps_layer {
	size_t refs;
	size_t n;
	struct mt_map m[]; /* sorted by start, disjoint */
};

static struct mt_maps_layer *layer_new(size_t cap)
{
	struct mt_maps_layer *l;

	if (cap > (SIZE_MAX - sizeof(*l)) / sizeof(l->m[0])) {
		return NULL;
	}
	l = malloc(sizeof(*l) + cap * sizeof(l->m[0]));
	if (l) {
		l->refs = 1;
		l->n = 0;
	}
	return l;
}

static void layer_put(struct mt_maps_layer *l)
{
	if (l && --l->refs == 0) {
		free(l);
	}
}

/* The part [start, end) of b, with its file offset. */
static struct mt_map piece(const struct mt_map *b, uint64_t start,
			   uint64_t end)
{
	return (struct mt_map){ start, end, b->off + (start - b->start),
				b->mod };
}

/* Append p to out, after the intervals of up that start before it. */
static void emit(struct mt_maps_layer *out, const struct mt_maps_layer *up,
		 size_t *u, struct mt_map p)
{
	while (*u < up->n && up->m[*u].start < p.start) {
		out->m[out->n++] = up->m[(*u)++];
	}
	out->m[out->n++] = p;
}

/*
 * One layer of down overridden by up: up's intervals whole, and the parts
 * of down's they do not cover, in order. Each interval of up cuts at most
 * one extra piece out of down (where it starts inside an interval), so
 * the result has at most down->n + 2 * up->n intervals.
 */
static struct mt_maps_layer *layer_merge(const struct mt_maps_layer *down,
					 const struct mt_maps_layer *up)
{
	struct mt_maps_layer *out = layer_new(down->n + 2 * up->n);
	size_t i, j = 0, k, u = 0;

	if (!out) {
		return NULL;
	}
	for (i = 0; i < down->n; i++) {
		const struct mt_map *b = &down->m[i];
		uint64_t cur = b->start;

		/* up is sorted by start and by end alike (disjoint) */
		while (j < up->n && up->m[j].end <= b->start) {
			j++;
		}
		for (k = j; k < up->n && up->m[k].start < b->end; k++) {
			if (up->m[k].start > cur) {
				emit(out, up, &u, piece(b, cur,
							up->m[k].start));
			}
			if (up->m[k].end > cur) {
				cur = up->m[k].end;
			}
		}
		if (cur < b->end) {
			emit(out, up, &u, piece(b, cur, b->end));
		}
	}
	while (u < up->n) {
		out->m[out->n++] = up->m[u++];
	}
	return out;
}

static const struct mt_map *layer_find(const struct mt_maps_layer *l,
				       uint64_t addr)
{
	size_t lo = 0, hi = l->n;

	/* the first interval starting above addr */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (l->m[mid].start <= addr) {
			lo = mid + 1;
		} else {
			hi = mid;
		}
	}
	if (lo && addr < l->m[lo - 1].end) {
		return &l->m[lo - 1];
	}
	return NULL;
}

int mt_maps_add(struct mt_maps *t, const struct mt_map *m)
{
	struct mt_maps_layer *l, **layers;

	layers = mt_array_grow(t->layers, &t->cap, t->n + 1,
			       sizeof(*layers));
	if (!layers) {
		return -ENOMEM;
	}
	t->layers = layers;
	l = layer_new(1);
	if (!l) {
		return -ENOMEM;
	}
	l->m[0] = *m;
	l->n = 1;
	t->layers[t->n++] = l;
	/* keep sizes at least doubling downwards: O(log n) layers */
	while (t->n >= 2 &&
	       t->layers[t->n - 1]->n * 2 >= t->layers[t->n - 2]->n) {
		struct mt_maps_layer *merged =
			layer_merge(t->layers[t->n - 2], t->layers[t->n - 1]);

		if (!merged) {
			return -ENOMEM; /* m is in, one layer deeper */
		}
		layer_put(t->layers[t->n - 1]);
		layer_put(t->layers[t->n - 2]);
		t->layers[t->n - 2] = merged;
		t->n--;
	}
	return 0;
}

const struct mt_map *mt_maps_find(const struct mt_maps *t, uint64_t addr)
{
	size_t i;

	for (i = t->n; i-- > 0;) {
		const struct mt_map *m = layer_find(t->layers[i], addr);

		if (m) {
			return m;
		}
	}
	return NULL;
}

int mt_maps_copy(struct mt_maps *dst, const struct mt_maps *src)
{
	struct mt_maps_layer **layers;
	size_t i;

	if (dst == src) {
		return 0;
	}
	mt_maps_clear(dst);
	if (!src->n) {
		return 0;
	}
	layers = mt_array_grow(dst->layers, &dst->cap, src->n,
			       sizeof(*layers));
	if (!layers) {
		return -ENOMEM;
	}
	dst->layers = layers;
	for (i = 0; i < src->n; i++) {
		src->layers[i]->refs++;
		dst->layers[i] = src->layers[i];
	}
	dst->n = src->n;
	return 0;
}

void mt_maps_clear(struct mt_maps *t)
{
	while (t->n) {
		layer_put(t->layers[--t->n]);
	}
}

void mt_maps_free(struct mt_maps *t)
{
	mt_maps_clear(t);
	free(t->layers);
	t->layers = NULL;
	t->cap = 0;
}
