/* SPDX-License-Identifier: MIT */
/*
 * common/key-index.c - see key-index.h.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "key-index.h"

static size_t slot_of(uint64_t a, uint64_t b, size_t mask)
{
	/* splitmix64's finalizer over both halves */
	uint64_t h = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull);

	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebull;
	h ^= h >> 31;
	return (size_t)h & mask;
}

static struct mt_key_slot *find(const struct mt_key_index *x, uint64_t a,
				uint64_t b)
{
	size_t mask = x->cap - 1, i = slot_of(a, b, mask);

	while (x->slots[i].used &&
	       (x->slots[i].a != a || x->slots[i].b != b)) {
		i = (i + 1) & mask;
	}
	return &x->slots[i];
}

int mt_key_get(const struct mt_key_index *x, uint64_t a, uint64_t b,
	       uint32_t *val)
{
	const struct mt_key_slot *s;

	if (!x->cap) {
		return -1;
	}
	s = find(x, a, b);
	if (!s->used) {
		return -1;
	}
	*val = s->val;
	return 0;
}

static int grow(struct mt_key_index *x)
{
	struct mt_key_index bigger = { NULL, x->cap ? x->cap * 2 : 64, 0 };
	size_t i;

	bigger.slots = calloc(bigger.cap, sizeof(*bigger.slots));
	if (!bigger.slots) {
		return -ENOMEM;
	}
	for (i = 0; i < x->cap; i++) {
		if (x->slots[i].used) {
			*find(&bigger, x->slots[i].a, x->slots[i].b) =
				x->slots[i];
			bigger.n++;
		}
	}
	free(x->slots);
	*x = bigger;
	return 0;
}

int mt_key_put(struct mt_key_index *x, uint64_t a, uint64_t b, uint32_t val)
{
	struct mt_key_slot *s;

	if ((x->n + 1) * 2 > x->cap && grow(x)) {
		return -ENOMEM;
	}
	s = find(x, a, b);
	if (!s->used) {
		s->a = a;
		s->b = b;
		s->used = 1;
		x->n++;
	}
	s->val = val;
	return 0;
}

void mt_key_free(struct mt_key_index *x)
{
	free(x->slots);
	x->slots = NULL;
	x->cap = 0;
	x->n = 0;
}
