/* SPDX-License-Identifier: MIT */
/*
 * Which frame names a site. The innermost frame of an allocation's stack
 * is mostly an allocator wrapper (jq's jv_mem_alloc, xmalloc, g_malloc,
 * operator new): a table of top sites named by it reads the same name on
 * every row. A person names a site by the first frame out from there that
 * is the program's own work, as heaptrack shows the caller of the
 * allocator.
 *
 * Skipped, innermost first:
 *   - frames in the C and C++ runtimes and the allocator libraries
 *     (libc, libstdc++, jemalloc...), by their module's file name;
 *   - the program's allocator wrappers, found from the recording: a
 *     function called from at least two places (by name), which, at
 *     every place it is seen in every stack, has inside it only
 *     skipped frames. It passes allocations through; which of its
 *     callers allocated is what tells its sites apart. A wrapper of a
 *     wrapper (xstrdup over xmalloc) is found the same way, round after
 *     round until no new one appears.
 * A function seen in one place only is never skipped: there its name
 * tells the site as well as its caller's would.
 *
 * Cost: once per report, the stacks of its sites flattened to function
 * indices (4 bytes a frame), then at most one pass over them per round.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "report-map.h"
#include "report-model.h"
#include "symbolize.h"

/* codes of frames that are no function of the program */
#define RUNTIME (-1) /* skipped */
#define UNNAMED (-2) /* nothing names it: never skipped */
#define ROOT (-3)    /* the caller of a stack's outermost frame */
#define NO_CALLER (-4) /* none seen yet */

struct fn {
	const char *name; /* r->sym's */
	int32_t caller;   /* the first caller seen: its code */
	bool callers;     /* another caller seen */
	bool blocked;     /* this round: seen with a kept frame inside */
	bool wrapper;
};

struct mt_rep_wrappers {
	struct fn *fn;
	size_t nfn, fn_cap;
	struct mt_idx_map idx; /* hash of the name: index in fn */
	uint64_t seed;
};

/* File names (their start) of the libraries whose frames never name a
 * site. */
static bool runtime_module(const struct mt_rep *r, int32_t mod)
{
	static const char *const libs[] = {
		"libc.so", "libc-", "libstdc++.so", "libc++.so",
		"libc++abi.so", "libgcc_s.so", "ld-linux", "libjemalloc.so",
		"libtcmalloc", "libmimalloc.so", "libmemtrack",
	};
	const unsigned char *bid;
	size_t bidlen, i;
	const char *path = mod >= 0 ? mt_sym_module(r->sym, mod, &bid, &bidlen) :
				      NULL;
	const char *base;

	if (!path) {
		return false;
	}
	base = strrchr(path, '/');
	base = base ? base + 1 : path;
	for (i = 0; i < sizeof(libs) / sizeof(libs[0]); i++) {
		if (!strncmp(base, libs[i], strlen(libs[i]))) {
			return true;
		}
	}
	return false;
}

/* The index of function name; add: a new one when it is not known yet
 * (-ENOMEM), else -ENOENT. */
static int64_t fn_of(struct mt_rep_wrappers *w, const char *name, bool add)
{
	uint64_t key = mt_map_str_hash(w->seed, name, strlen(name));
	struct fn *f;
	int64_t at;

	for (; (at = mt_idx_get(&w->idx, key)) >= 0; key++) {
		if (!strcmp(w->fn[at].name, name)) {
			return at;
		}
	}
	if (!add) {
		return -ENOENT;
	}
	f = mt_array_grow(w->fn, &w->fn_cap, w->nfn + 1, sizeof(*f));
	if (!f) {
		return -ENOMEM;
	}
	w->fn = f;
	if (mt_idx_put(&w->idx, key, (uint32_t)w->nfn) < 0) {
		return -ENOMEM;
	}
	w->fn[w->nfn] = (struct fn){ .name = name, .caller = NO_CALLER };
	return (int64_t)w->nfn++;
}

/* Every stack site's frames, innermost first, as codes (an index in
 * w->fn, or RUNTIME, UNNAMED) into *codes; (*ends)[i] is where stack i
 * ends. Returns how many stacks, or -ENOMEM. */
static int64_t flatten(const struct mt_rep *r, struct mt_rep_wrappers *w,
		       int32_t **codes, size_t **ends)
{
	size_t ncodes = 0, codes_cap = 0, nst = 0, ends_cap = 0, i, j, k;

	for (i = 0; i < r->nsites; i++) {
		const struct mt_rep_site *s = &r->sites[i];
		const struct mt_sym_loc *locs;
		size_t nl, *e;

		if (!(s->id & MT_REP_STACK_SITE)) {
			continue;
		}
		nl = mt_sym_stack(r->sym, s->id & ~MT_REP_STACK_SITE, &locs);
		for (j = 0; j < nl; j++) {
			const struct mt_sym_loc *l = &locs[j];
			bool rt = runtime_module(r, l->mod);

			for (k = 0; k < (l->nfuncs ? l->nfuncs : 1); k++) {
				int32_t *c = mt_array_grow(*codes, &codes_cap,
							   ncodes + 1,
							   sizeof(*c));
				int64_t at = UNNAMED;

				if (!c) {
					return -ENOMEM;
				}
				*codes = c;
				if (rt) {
					at = RUNTIME;
				} else if (l->nfuncs) {
					at = fn_of(w, l->funcs[k].name, true);
					if (at < 0) {
						return at;
					}
				}
				(*codes)[ncodes++] = (int32_t)at;
			}
		}
		e = mt_array_grow(*ends, &ends_cap, nst + 1, sizeof(*e));
		if (!e) {
			return -ENOMEM;
		}
		*ends = e;
		(*ends)[nst++] = ncodes;
	}
	return (int64_t)nst;
}

/* Notes each function's callers: two different ones make it a candidate. */
static void note_callers(struct mt_rep_wrappers *w, const int32_t *codes,
			 const size_t *ends, size_t nst)
{
	size_t i, j, from = 0;

	for (i = 0; i < nst; from = ends[i++]) {
		for (j = from; j < ends[i]; j++) {
			int32_t caller = j + 1 < ends[i] ? codes[j + 1] : ROOT;
			struct fn *f;

			if (codes[j] < 0) {
				continue;
			}
			f = &w->fn[codes[j]];
			if (f->caller == NO_CALLER) {
				f->caller = caller;
			} else if (f->caller != caller) {
				f->callers = true;
			}
		}
	}
}

/* One round: returns whether a new wrapper was found. */
static bool round_of(struct mt_rep_wrappers *w, const int32_t *codes,
		     const size_t *ends, size_t nst)
{
	size_t i, j, from = 0;
	bool found = false;

	for (i = 0; i < w->nfn; i++) {
		w->fn[i].blocked = false;
	}
	for (i = 0; i < nst; from = ends[i++]) {
		bool inside_skipped = true;

		for (j = from; j < ends[i]; j++) {
			int32_t c = codes[j];

			if (c >= 0 && !inside_skipped) {
				w->fn[c].blocked = true;
			}
			inside_skipped = inside_skipped &&
					 (c == RUNTIME ||
					  (c >= 0 && w->fn[c].wrapper));
		}
	}
	for (i = 0; i < w->nfn; i++) {
		struct fn *f = &w->fn[i];

		if (!f->wrapper && !f->blocked && f->callers) {
			f->wrapper = true;
			found = true;
		}
	}
	return found;
}

static void find_wrappers(struct mt_rep *r)
{
	struct mt_rep_wrappers *w;
	int32_t *codes = NULL;
	size_t *ends = NULL;
	int64_t nst;
	unsigned int rounds = 0;

	r->wrappers_done = true;
	if (!r->sym || !(w = calloc(1, sizeof(*w)))) {
		return;
	}
	w->seed = mt_map_seed();
	nst = flatten(r, w, &codes, &ends);
	if (nst < 0) {
		free(w->fn);
		free(w->idx.slots);
		free(w);
		goto end;
	}
	note_callers(w, codes, ends, (size_t)nst);
	/* each round finds wrappers one call further out: no more rounds
	 * than frames */
	while (rounds++ < MT_REP_MAX_FRAMES &&
	       round_of(w, codes, ends, (size_t)nst)) {
	}
	r->wrappers = w;
end:
	free(codes);
	free(ends);
}

size_t mt_rep_site_name(struct mt_rep *r, const struct mt_rep_frames *f)
{
	size_t i;

	if (!r->wrappers_done) {
		find_wrappers(r);
	}
	/* frame 0 is the process */
	for (i = f->n; i-- > 1;) {
		int64_t at;

		if (runtime_module(r, f->mod[i])) {
			continue;
		}
		if (!f->func[i] || !r->wrappers) {
			return i;
		}
		at = fn_of(r->wrappers, f->func[i], false);
		if (at < 0 || !r->wrappers->fn[at].wrapper) {
			return i;
		}
	}
	return f->n ? f->n - 1 : 0;
}

void mt_rep_wrappers_free(struct mt_rep *r)
{
	if (r->wrappers) {
		free(r->wrappers->fn);
		free(r->wrappers->idx.slots);
		free(r->wrappers);
		r->wrappers = NULL;
	}
	r->wrappers_done = false;
}
