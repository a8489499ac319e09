/* SPDX-License-Identifier: MIT */
/*
 * A site the way a person reads a stack (issue 29), for every output that
 * lists sites for a person: the text report, the text --diff and the html
 * report's top sites. The frame that names the site (mt_rep_site_name())
 * comes first, then the rest of its frames innermost first, as
 * heaptrack_print does: "via" the wrappers it allocated through, "from"
 * its callers, "in" the process. How many callers: --stack-lines N, or by
 * default as many as tell the sites of the list apart, MIN_CALLERS at
 * least; "..." says how many more there are.
 *
 * "Tell apart": a site whose first callers are those of another site of
 * the list shows one more than they share. The text report's lists are
 * ten sites, but a diff lists every site of two recordings (100,000 in
 * tests/test-report-hostile.sh), so the sites are not compared pairwise:
 * each site's frames from its naming one outward become a sequence of
 * hashes, the sequences are sorted, and what a site shares most with any
 * other it shares with a neighbour in that order: O(n log n) comparisons
 * of sequences. A hash stands for a name (mt_map_str_hash(), seeded by
 * the kernel, so a recording cannot choose names that collide); two names
 * that collided would show too few callers, never a wrong frame.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "report-map.h"
#include "report-model.h"

#define MIN_CALLERS 3

int mt_rep_apart_add(struct mt_rep_apart *a, const struct mt_rep_frames *f,
		     size_t at, bool by_process)
{
	size_t need = a->nkeys + at + 1, j;
	uint64_t *keys;
	size_t *start;

	if (!a->seed) {
		a->seed = mt_map_seed() | 1;
	}
	if (need > a->kcap) {
		keys = mt_array_grow(a->keys, &a->kcap, need, sizeof(*keys));
		if (!keys) {
			return -ENOMEM;
		}
		a->keys = keys;
	}
	if (a->n + 2 > a->scap) {
		start = mt_array_grow(a->start, &a->scap, a->n + 2,
				      sizeof(*start));
		if (!start) {
			return -ENOMEM;
		}
		a->start = start;
	}
	a->start[a->n] = a->nkeys;
	/* the process first: sites of two processes share nothing (the
	 * text report tells them apart by their "in") */
	if (by_process && f->n) {
		a->keys[a->nkeys++] = mt_map_str_hash(a->seed, f->name[0],
						      strlen(f->name[0]));
	}
	a->by_process = by_process;
	/* frame 0 is the process: never a caller */
	for (j = at; j > 0 && j < f->n; j--) {
		a->keys[a->nkeys++] = mt_map_str_hash(a->seed, f->name[j],
						      strlen(f->name[j]));
	}
	a->start[++a->n] = a->nkeys;
	return 0;
}

struct seq {
	const uint64_t *k;
	size_t len, row;
};

static int cmp_seq(const void *x, const void *y)
{
	const struct seq *a = x, *b = y;
	size_t i, n = a->len < b->len ? a->len : b->len;

	for (i = 0; i < n; i++) {
		if (a->k[i] != b->k[i]) {
			return a->k[i] < b->k[i] ? -1 : 1;
		}
	}
	if (a->len != b->len) {
		return a->len < b->len ? -1 : 1;
	}
	return a->row < b->row ? -1 : a->row > b->row;
}

static size_t common(const struct seq *a, const struct seq *b)
{
	size_t i, n = a->len < b->len ? a->len : b->len;

	for (i = 0; i < n && a->k[i] == b->k[i]; i++) {
	}
	return i;
}

int mt_rep_apart_done(struct mt_rep_apart *a)
{
	struct seq *s;
	size_t i, skip = a->by_process ? 1 : 0;

	a->shared = calloc(a->n + 1, sizeof(*a->shared));
	s = calloc(a->n + 1, sizeof(*s));
	if (!a->shared || !s) {
		free(s);
		free(a->shared);
		a->shared = NULL;
		return -ENOMEM;
	}
	for (i = 0; i < a->n; i++) {
		s[i] = (struct seq){ a->keys + a->start[i],
				     a->start[i + 1] - a->start[i], i };
	}
	if (a->n) {
		qsort(s, a->n, sizeof(*s), cmp_seq);
	}
	for (i = 0; i + 1 < a->n; i++) {
		size_t k = common(&s[i], &s[i + 1]);

		/* a different process: nothing shared */
		k = k > skip ? k - skip : 0;
		if (k > a->shared[s[i].row]) {
			a->shared[s[i].row] = k;
		}
		if (k > a->shared[s[i + 1].row]) {
			a->shared[s[i + 1].row] = k;
		}
	}
	free(s);
	return 0;
}

size_t mt_rep_apart_callers(const struct mt_rep_apart *a, size_t row,
			    int stack_lines)
{
	size_t k;

	if (stack_lines >= 0) {
		return (size_t)stack_lines;
	}
	/* out of memory in mt_rep_apart_done(): the least */
	k = a->shared && row < a->n ? a->shared[row] : 0;
	return k > MIN_CALLERS ? k : MIN_CALLERS;
}

void mt_rep_apart_free(struct mt_rep_apart *a)
{
	free(a->keys);
	free(a->start);
	free(a->shared);
	memset(a, 0, sizeof(*a));
}

void mt_rep_stack_lines(const struct mt_rep_frames *f, size_t at,
			size_t callers, int stack_lines, bool in,
			mt_rep_line_fn fn, void *ctx)
{
	size_t j, shown = 0;

	for (j = f->n; j-- > 0;) {
		if (j == at || (j == 0 && !in)) {
			continue;
		}
		/* one frame left is shown, not counted */
		if (j > 1 && j < at && stack_lines && shown++ == callers) {
			fn(ctx, "...", NULL, j);
			j = 1; /* the process comes next */
			continue;
		}
		fn(ctx, j > at ? "via" : j ? "from" : "in", f->name[j], 0);
	}
}

void mt_rep_text_line(void *ctx, const char *word, const char *name,
		      size_t more)
{
	FILE *out = ctx;

	if (!name) {
		fprintf(out, "%14s %zu more frame%s (--stack-lines 0: all)\n",
			word, more, more == 1 ? "" : "s");
		return;
	}
	fprintf(out, "%14s ", word);
	mt_rep_line_str(out, name);
	fputc('\n', out);
}
