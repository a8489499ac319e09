/* SPDX-License-Identifier: MIT */
/*
 * memtrack report --format collapsed, and the flamegraph layout the svg and
 * html formats draw: both come from the sites' frames (pid, then size class
 * today; pid, then the call stack once stacks are recorded), weighted by
 * bytes allocated or by number of allocations (--weight).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "report-map.h"
#include "report-model.h"

uint64_t mt_rep_site_weight(const struct mt_rep_site *s,
			    const struct mt_report_opts *o)
{
	return o->weight == MT_REPORT_COUNT ? s->count : s->bytes;
}

struct site_order {
	int32_t pid;
	uint32_t id;
	size_t idx;
};

static int cmp_site(const void *a, const void *b)
{
	const struct site_order *x = a, *y = b;

	if (x->pid != y->pid) {
		return x->pid < y->pid ? -1 : 1;
	}
	if (x->id != y->id) {
		return x->id < y->id ? -1 : 1;
	}
	return 0;
}

/* Site indices in a stable order (pid, then id), so outputs are the same
 * from run to run; NULL when out of memory. */
static struct site_order *sorted_sites(const struct mt_rep *r)
{
	struct site_order *o = malloc((r->nsites + 1) * sizeof(*o));
	size_t i;

	if (!o) {
		return NULL;
	}
	for (i = 0; i < r->nsites; i++) {
		o[i] = (struct site_order){ r->sites[i].pid, r->sites[i].id,
					    i };
	}
	qsort(o, r->nsites, sizeof(*o), cmp_site);
	return o;
}

int mt_rep_collapsed(FILE *out, struct mt_rep *r,
		     const struct mt_report_opts *o)
{
	struct site_order *order = sorted_sites(r);
	struct mt_rep_frames f = { 0 };
	const char *stack;
	size_t i;
	int err = 0;

	if (!order) {
		return -ENOMEM;
	}
	/* the format has no room for a note (a line that is not "stack
	 * weight" is an error to flamegraph.pl and inferno): stderr says it */
	if (r->sample_bytes) {
		mt_warn("%s: sampled recording (one allocation per %" PRIu64 " B on average): the weights are estimates",
			r->path, r->sample_bytes);
	}
	for (i = 0; i < r->nsites; i++) {
		const struct mt_rep_site *s = &r->sites[order[i].idx];
		uint64_t w = mt_rep_site_weight(s, o);

		if (!w) {
			continue;
		}
		if (mt_rep_site_frames(r, s, &f) < 0 ||
		    !(stack = mt_rep_frames_join(&f, 0))) {
			err = -ENOMEM;
			break;
		}
		fprintf(out, "%s %" PRIu64 "\n", stack, w);
	}
	mt_rep_frames_free(&f);
	free(order);
	return err ? err : ferror(out) ? -EIO : 0;
}

struct node {
	char *name; /* owned */
	uint64_t weight;
	size_t child, next; /* 0: none (node 0 is the root) */
	size_t last;        /* the last child, where the next one goes */
	size_t parent;
};

struct tree {
	struct node *n;
	size_t len, cap;
	/* (parent, name) to a node: a frame with 100,000 distinct callees
	 * must not scan its siblings for each */
	struct mt_idx_map idx;
	uint64_t seed;
};

static int64_t add_child(struct tree *t, size_t parent, const char *name)
{
	uint64_t key = mt_map_str_hash(t->seed ^ mt_map_hash(parent), name,
				       strlen(name));
	size_t c, last;
	struct node *nn;
	int64_t i;

	for (; (i = mt_idx_get(&t->idx, key)) >= 0; key++) {
		if (t->n[i].parent == parent &&
		    strcmp(t->n[i].name, name) == 0) {
			return i;
		}
	}
	if (t->len == t->cap) {
		nn = realloc(t->n, t->cap * 2 * sizeof(*nn));
		if (!nn) {
			return -ENOMEM;
		}
		t->n = nn;
		t->cap *= 2;
	}
	if (mt_idx_put(&t->idx, key, (uint32_t)t->len) < 0) {
		return -ENOMEM;
	}
	c = t->len;
	memset(&t->n[c], 0, sizeof(t->n[c]));
	t->n[c].name = strdup(name);
	if (!t->n[c].name) {
		return -ENOMEM;
	}
	t->len++;
	t->n[c].parent = parent;
	/* appended: the sites come sorted, so siblings stay in order */
	last = t->n[parent].last;
	if (last) {
		t->n[last].next = c;
	} else {
		t->n[parent].child = c;
	}
	t->n[parent].last = c;
	return (int64_t)c;
}

static unsigned int layout(const struct tree *t, size_t i, unsigned int depth,
			   double x, uint64_t total, mt_rep_flame_fn fn,
			   void *ctx)
{
	unsigned int deepest = depth + 1, d;
	size_t c;

	fn(ctx, t->n[i].name, depth, x, (double)t->n[i].weight / total,
	   t->n[i].weight, total);
	for (c = t->n[i].child; c; c = t->n[c].next) {
		d = layout(t, c, depth + 1, x, total, fn, ctx);
		if (d > deepest) {
			deepest = d;
		}
		x += (double)t->n[c].weight / total;
	}
	return deepest;
}

int mt_rep_flame(const struct mt_rep *r, const struct mt_report_opts *o,
		 mt_rep_flame_fn fn, void *ctx)
{
	struct site_order *order = sorted_sites(r);
	struct mt_rep_frames f = { 0 };
	struct tree t = { 0 };
	int ret = 0, n;
	size_t i, j;

	t.cap = 64;
	t.n = calloc(t.cap, sizeof(*t.n));
	t.seed = mt_map_seed();
	if (!order || !t.n) {
		ret = -ENOMEM;
		goto end;
	}
	t.n[0].name = strdup("all");
	if (!t.n[0].name) {
		ret = -ENOMEM;
		goto end;
	}
	t.len = 1;
	for (i = 0; i < r->nsites; i++) {
		const struct mt_rep_site *s = &r->sites[order[i].idx];
		uint64_t w = mt_rep_site_weight(s, o);
		size_t at = 0;

		if (!w) {
			continue;
		}
		n = mt_rep_site_frames(r, s, &f);
		if (n < 0) {
			ret = n;
			goto end;
		}
		/* saturated, a frame's sum is never below a callee's (a
		 * frame wider than the whole graph) */
		t.n[0].weight = mt_rep_sat_add(t.n[0].weight, w);
		for (j = 0; j < (size_t)n; j++) {
			int64_t c = add_child(&t, at, f.name[j]);

			if (c < 0) {
				ret = (int)c;
				goto end;
			}
			at = (size_t)c;
			t.n[at].weight = mt_rep_sat_add(t.n[at].weight, w);
		}
	}
	ret = t.n[0].weight ? (int)layout(&t, 0, 0, 0.0, t.n[0].weight, fn,
					  ctx) : 0;
end:
	for (i = 0; i < t.len; i++) {
		free(t.n[i].name);
	}
	free(t.n);
	free(t.idx.slots);
	free(order);
	mt_rep_frames_free(&f);
	return ret;
}
