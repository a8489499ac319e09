/* SPDX-License-Identifier: MIT */
/*
 * memtrack report: the analysis. Reads events in file order and keeps, per
 * process and in total, what the output formats print (report-model.h).
 *
 * Heap accounting follows the blocks: an allocation adds its size to the
 * live heap of its process, a free subtracts the size recorded for that
 * address. A free of an address never seen allocated (allocated before
 * recording began) counts as unmatched and changes nothing; in a process
 * with an attach mark (memtrack --pid, report-attach.h) it is the free of
 * a block allocated before the attach. A realloc is the
 * free of old_addr followed by an allocation. An allocation at address 0
 * (a failed call, realloc(p, 0)) is not an allocation.
 *
 * Temporary allocation (heaptrack's definition, per thread): a block freed
 * before the thread that allocated it made any other allocation, i.e. the
 * free of X (by any thread; a realloc frees its old block) comes while X is
 * still the latest allocation of X's thread.
 *
 * Byte sums saturate (mt_rep_sat_add()); the levels that go up and down
 * (live, mapped) are kept exact in 128 bits and saturated once, at the
 * end (mt_rep_finish()), so that a part is never more than its whole.
 *
 * A sampled recording (an MTKR payload, memtrack --sample-bytes N) holds
 * the allocations that crossed a sample point of a Poisson process of
 * mean N over the bytes allocated, and the frees of those blocks: an
 * allocation of s bytes was recorded with probability p = 1 - exp(-s/N)
 * and stands for 1/p allocations and s/p bytes (Go's runtime unbiases its
 * heap profile so). Its estimated bytes, rounded once, go wherever its
 * size goes when every allocation is recorded, and its 1/p wherever a 1
 * goes, in fixed point (struct fx): a block's free takes away exactly what
 * its allocation added, figured again from its size, and fractions add up
 * instead of rounding at each event. An unsampled recording never takes
 * those paths: its figures are what they always were.
 *
 * Per event: two or three hash lookups (process and thread cached, the live
 * block, its site), no allocation except when a table grows.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "log.h"
#include "report-analyze.h"
#include "report-attach.h"
#include "report-map.h"
#include "report-model.h"
#include "symbolize.h"

#define MAX_PROCS 65536
/* Timeline buckets of all processes together: a fixed allowance, then 16
 * per event read. Without a budget, 70,000 processes of one event each
 * (a 113 KB recording) took 1024 buckets each: 1.1 GB. Processes past it
 * are left out of the charts, as when memory runs out. */
#define SERIES_BASE (1u << 20)
#define SERIES_PER_EVENT 16
#define PREFETCH 8 /* events ahead */

struct thread {
	uint64_t last_alloc; /* address of its latest allocation, 0: none */
};

/*
 * Counts of a sampled recording, in FX_ONE-ths of an allocation: exact
 * sums of the weights, rounded once by mt_rep_finish(). A weight is at
 * most 2^32 + 1 allocations (FX_MAX), so 2^59 blocks, more than memory
 * holds, still fit a level.
 */
#define FX_ONE ((mt_rep_level)1 << 32)
#define FX_MAX (FX_ONE + ((mt_rep_level)1 << 64))
#define MTKR_LEN 40

struct fx_proc {
	mt_rep_level allocs, frees, temporary, live_blocks;
};

struct fx_site {
	mt_rep_level count, temporary, live_blocks, snap_blocks;
};

/* What one recorded allocation stands for. */
struct weight {
	uint64_t bytes;  /* estimated, rounded, saturated */
	mt_rep_level n;  /* allocations, FX_ONE-ths */
};

struct mt_rep_state {
	struct mt_rep rep;
	const struct mt_report_opts *opts;
	struct mt_live_map live;
	struct mt_idx_map proc_idx, thread_idx, site_idx;
	size_t procs_cap, sites_cap, threads_cap, nthreads;
	struct thread *threads;
	uint32_t *class_site; /* [proc * MT_REP_CLASSES + class]: site + 1 */
	/* the last process and thread seen: consecutive events mostly share
	 * them */
	int64_t cur_proc;
	int32_t cur_pid;
	uint64_t cur_tkey;
	struct thread *cur_thread;
	uint64_t series_buckets; /* allocated, all processes */
	/* the decoder's thread fills it, mt_rep_finish() applies it */
	struct mt_rep_marks marks;
	struct mt_rep_marks recorders; /* MTKW */
	/* a sampled recording's counts, parallel to rep.procs and
	 * rep.sites (NULL when not sampled) */
	struct fx_proc *fxp;
	struct fx_site *fxs;
	size_t fxp_cap, fxs_cap;
	mt_rep_level fx_hist[MT_REP_CLASSES];
	uint64_t sample_damaged; /* MTKR payloads left out */
	bool sample_warned, sample_warned_bad;
	int err;
};

/*
 * The weight of a recorded allocation of size bytes: 1/p allocations and
 * size/p bytes, p = 1 - exp(-size/N). 1/p is 1 + 1/expm1(size/N): the
 * part over the allocation itself keeps its precision for every size (a
 * size of 2^63 stays exact, where size/p in a double would not). A size
 * of 0 never crosses a sample point; if one is recorded all the same it
 * stands for itself.
 */
static struct weight weigh(const struct mt_rep *r, uint64_t size)
{
	struct weight w = { size, FX_ONE };
	double more, extra;

	if (!r->sample_bytes || !size) {
		return w;
	}
	more = 1.0 / expm1((double)size / (double)r->sample_bytes);
	extra = (double)size * more + 0.5;
	w.bytes = extra >= 0x1p64 ? UINT64_MAX :
				    mt_rep_sat_add(size, (uint64_t)extra);
	more = more * 0x1p32 + 0.5;
	w.n = more >= 0x1p64 ? FX_MAX : FX_ONE + (mt_rep_level)more;
	return w;
}

/* A count from FX_ONE-ths, rounded to the nearest, saturated. */
static uint64_t fx_count(mt_rep_level v)
{
	return mt_rep_sat((v + FX_ONE / 2) >> 32);
}

/* Room in the fixed-point counts for every process and site so far. */
static int fx_room(struct mt_rep_state *st)
{
	struct mt_rep *r = &st->rep;
	void *g;

	/* (at least one of each: a NULL fxp says "not sampled") */
	g = mt_array_grow(st->fxp, &st->fxp_cap, r->nprocs + 1,
			  sizeof(*st->fxp));
	if (!g) {
		return -ENOMEM;
	}
	st->fxp = g;
	g = mt_array_grow(st->fxs, &st->fxs_cap, r->nsites + 1,
			  sizeof(*st->fxs));
	if (!g) {
		return -ENOMEM;
	}
	st->fxs = g;
	return 0;
}

unsigned int mt_rep_class(uint64_t size)
{
	return size ? 64 - (unsigned int)__builtin_clzll(size) : 0;
}

void mt_rep_class_bounds(unsigned int cls, uint64_t *lo, uint64_t *hi)
{
	if (cls == 0) {
		*lo = *hi = 0;
		return;
	}
	*lo = 1ULL << (cls - 1);
	*hi = cls == 64 ? UINT64_MAX : (1ULL << cls) - 1;
}

void mt_rep_class_label(unsigned int cls, char *buf, size_t len)
{
	uint64_t lo, hi;

	mt_rep_class_bounds(cls, &lo, &hi);
	if (lo == hi) {
		snprintf(buf, len, "%" PRIu64 " B", lo);
	} else {
		snprintf(buf, len, "%" PRIu64 "-%" PRIu64 " B", lo, hi);
	}
}

/* Room in f->text for need more bytes. */
static int text_room(struct mt_rep_frames *f, size_t need)
{
	size_t cap = f->cap ? f->cap : 1024;
	char *t;

	if (f->len + need <= f->cap) {
		return 0;
	}
	while (cap < f->len + need) {
		cap *= 2;
	}
	t = realloc(f->text, cap);
	if (!t) {
		return -ENOMEM;
	}
	f->text = t;
	f->cap = cap;
	return 0;
}

/* Appends "fmt..." as the next frame. */
__attribute__((format(printf, 2, 3)))
static int frame_printf(struct mt_rep_frames *f, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || f->n == MT_REP_MAX_FRAMES ||
	    text_room(f, (size_t)n + 1) < 0) {
		return -ENOMEM;
	}
	va_start(ap, fmt);
	vsnprintf(f->text + f->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	f->func[f->n] = NULL;
	f->mod[f->n] = -1;
	f->off[f->n++] = f->len;
	f->len += (size_t)n + 1;
	return 0;
}

/* Appends the frames of stack id, root first, the innermost kept when
 * there are more than f has room for; 0 frames when id is unknown. */
static int stack_frames(const struct mt_rep *r, uint32_t id,
			struct mt_rep_frames *f)
{
	const struct mt_sym_loc *locs;
	size_t nl = mt_sym_stack(r->sym, id, &locs), total = 0, i, k;
	size_t room = MT_REP_MAX_FRAMES - f->n;

	for (i = 0; i < nl; i++) {
		total += locs[i].nfuncs ? locs[i].nfuncs : 1;
	}
	for (i = nl; i-- > 0;) {
		const struct mt_sym_loc *l = &locs[i];

		for (k = l->nfuncs ? l->nfuncs : 1; k-- > 0;) {
			size_t n;

			if (total > room) {
				total--;
				continue;
			}
			n = mt_sym_frame_name(r->sym, l, k, NULL, 0);
			if (text_room(f, n + 1) < 0) {
				return -ENOMEM;
			}
			mt_sym_frame_name(r->sym, l, k, f->text + f->len, n + 1);
			f->func[f->n] = l->nfuncs ? l->funcs[k].name : NULL;
			f->mod[f->n] = l->mod;
			f->off[f->n++] = f->len;
			f->len += n + 1;
		}
	}
	return 0;
}

int mt_rep_site_frames(const struct mt_rep *r, const struct mt_rep_site *s,
		       struct mt_rep_frames *f)
{
	uint32_t id = s->id & ~MT_REP_STACK_SITE;
	char label[48];
	size_t i;
	int err;

	f->n = 0;
	f->len = 0;
	err = frame_printf(f, "pid %d", (int)s->pid);
	/* a stack: the process, then its frames root first */
	if (!err && (s->id & MT_REP_STACK_SITE)) {
		err = r->sym ? stack_frames(r, id, f) : 0;
		if (!err && f->n == 1) {
			err = frame_printf(f, "[stack %u not in the recording]",
					   id);
		}
	} else if (!err) {
		/* without stacks the id is a size class */
		mt_rep_class_label(s->id, label, sizeof(label));
		err = frame_printf(f, "size %s", label);
	}
	for (i = 0; i < f->n; i++) {
		f->name[i] = f->text + f->off[i];
	}
	return err < 0 ? err : (int)f->n;
}

const char *mt_rep_frames_join(struct mt_rep_frames *f, size_t from)
{
	size_t need = 1, at = 0, i;

	/* an escaped byte takes at most 4 */
	for (i = from; i < f->n; i++) {
		need += 4 * strlen(f->name[i]) + 1;
	}
	if (need > f->joined_cap) {
		char *j = realloc(f->joined, need);

		if (!j) {
			return NULL;
		}
		f->joined = j;
		f->joined_cap = need;
	}
	f->joined[0] = '\0';
	for (i = from; i < f->n; i++) {
		if (i > from) {
			f->joined[at++] = ';';
		}
		/* a ';' or a newline in a name must not split it */
		at += mt_rep_frame_esc(f->joined + at, need - at, f->name[i]);
	}
	f->joined[at] = '\0';
	return f->joined;
}

void mt_rep_frames_free(struct mt_rep_frames *f)
{
	free(f->text);
	free(f->joined);
	*f = (struct mt_rep_frames){ 0 };
}

const char *mt_rep_rank_name(enum mt_rep_rank rank)
{
	static const char *const names[MT_REP_RANKS] = {
		"bytes", "count", "peak", "leaks",
	};

	return names[rank];
}

uint64_t mt_rep_site_value(const struct mt_rep_site *s, enum mt_rep_rank rank)
{
	switch (rank) {
	case MT_REP_BY_BYTES:
		return s->bytes;
	case MT_REP_BY_COUNT:
		return s->count;
	case MT_REP_BY_PEAK:
		return s->at_peak;
	case MT_REP_BY_LEAK:
		return s->live;
	default:
		return 0;
	}
}

size_t mt_rep_top_sites(const struct mt_rep *r, enum mt_rep_rank rank,
			size_t *idx, size_t max)
{
	size_t n = 0, i, j;

	/* insertion into a short sorted list: max is MT_REP_TOP-ish */
	for (i = 0; i < r->nsites; i++) {
		uint64_t v = mt_rep_site_value(&r->sites[i], rank);

		if (!v) {
			continue;
		}
		if (n == max &&
		    v <= mt_rep_site_value(&r->sites[idx[n - 1]], rank)) {
			continue;
		}
		j = n < max ? n++ : n - 1;
		while (j > 0 &&
		       mt_rep_site_value(&r->sites[idx[j - 1]], rank) < v) {
			idx[j] = idx[j - 1];
			j--;
		}
		idx[j] = i;
	}
	return n;
}

void mt_rep_total(const struct mt_rep *r, struct mt_rep_proc *t)
{
	size_t i;
	unsigned int k;

	memset(t, 0, sizeof(*t));
	for (i = 0; i < r->nprocs; i++) {
		const struct mt_rep_proc *p = &r->procs[i];

		for (k = 0; k < MT_EV_KIND_COUNT; k++) {
			t->by_kind[k] += p->by_kind[k];
		}
		t->events += p->events;
		t->allocs += p->allocs;
		t->frees += p->frees;
		t->unmatched_frees += p->unmatched_frees;
		t->frees_before_attach += p->frees_before_attach;
		t->temporary += p->temporary;
		t->bytes_allocated = mt_rep_sat_add(t->bytes_allocated,
						    p->bytes_allocated);
		t->bytes_freed = mt_rep_sat_add(t->bytes_freed,
						p->bytes_freed);
		t->live = mt_rep_sat_add(t->live, p->live);
		t->live_blocks += p->live_blocks;
		t->bytes_mmapped = mt_rep_sat_add(t->bytes_mmapped,
						  p->bytes_mmapped);
		t->bytes_munmapped = mt_rep_sat_add(t->bytes_munmapped,
						    p->bytes_munmapped);
		if (p->has_brk) {
			t->has_brk = true;
			t->brk_max = mt_rep_sat_add(t->brk_max,
						    p->brk_max - p->brk_first);
			t->brk_last = mt_rep_sat_add(
				t->brk_last, p->brk_last > p->brk_first ?
						     p->brk_last - p->brk_first :
						     0);
		}
		if (i == 0 || p->last_ts > t->last_ts) {
			t->last_ts = p->last_ts;
		}
	}
	/* processes peak at different moments: the total's peak is the
	 * highest sum at one moment, not the sum of the peaks */
	t->peak = r->peak;
	t->peak_ts = r->peak_ts;
	t->mapped = r->mapped;
	t->peak_mapped = r->peak_mapped;
	t->peak_mapped_ts = r->peak_mapped_ts;
}

bool mt_rep_saturated(const struct mt_rep *r)
{
	struct mt_rep_proc t;
	size_t i;
	unsigned int k;

	mt_rep_total(r, &t);
	if (t.bytes_allocated == UINT64_MAX || t.bytes_freed == UINT64_MAX ||
	    t.live == UINT64_MAX || t.peak == UINT64_MAX ||
	    t.peak_mapped == UINT64_MAX || t.bytes_mmapped == UINT64_MAX ||
	    t.bytes_munmapped == UINT64_MAX || t.brk_max == UINT64_MAX) {
		return true;
	}
	/* a part saturated makes its whole saturate: the total says it for
	 * the processes, but a size class or a site sums on its own */
	for (k = 0; k < MT_REP_CLASSES; k++) {
		if (r->hist_bytes[k] == UINT64_MAX) {
			return true;
		}
	}
	for (i = 0; i < r->nsites; i++) {
		if (r->sites[i].bytes == UINT64_MAX) {
			return true;
		}
	}
	return false;
}

void mt_rep_human(uint64_t v, char *buf, size_t len)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB",
					     "PiB" };
	double d = (double)v;
	int u = 0;

	while (d >= 1024 && u < 5) {
		d /= 1024;
		u++;
	}
	if (u == 0) {
		snprintf(buf, len, "%" PRIu64 " B", v);
	} else {
		snprintf(buf, len, "%.1f %s", d, units[u]);
	}
}

void mt_rep_human_count(uint64_t v, char *buf, size_t len)
{
	static const char units[] = "kMGTPE";
	double d = (double)v;
	int u = -1;

	if (v < 1000) {
		snprintf(buf, len, "%" PRIu64, v);
		return;
	}
	/* 999,960 is "1.0M", not "1000.0k" */
	while (d >= 999.95 && u < 5) {
		d /= 1000;
		u++;
	}
	snprintf(buf, len, "%.1f%c", d, units[u]);
}

/* ------------------------------------------------------------------ */
/* Timeline                                                            */
/* ------------------------------------------------------------------ */

/* Halve the resolution: pairs of buckets become one, keeping maxima. */
static void series_halve(struct mt_rep_series *s)
{
	size_t i;

	for (i = 0; i < s->n; i += 2) {
		struct mt_rep_sample a = s->s[i];

		if (i + 1 < s->n) {
			if (s->s[i + 1].heap > a.heap) {
				a.heap = s->s[i + 1].heap;
			}
			if (s->s[i + 1].mapped > a.mapped) {
				a.mapped = s->s[i + 1].mapped;
			}
		}
		s->s[i / 2] = a;
	}
	s->n = (s->n + 1) / 2;
	s->step *= 2;
	s->shift++;
}

/* Room for need buckets in s, within the budget; else s is left out of
 * the charts for good. */
static int series_grow(struct mt_rep_state *st, struct mt_rep_series *s,
		       size_t need)
{
	size_t cap = s->cap ? s->cap : 16;
	struct mt_rep_sample *b;

	while (cap < need) {
		cap *= 2;
	}
	if (cap > MT_REP_SERIES) {
		cap = MT_REP_SERIES;
	}
	if (st->series_buckets + (cap - s->cap) >
		    SERIES_BASE + SERIES_PER_EVENT * st->rep.events ||
	    !(b = realloc(s->s, cap * sizeof(*b)))) {
		st->series_buckets -= s->cap;
		free(s->s);
		*s = (struct mt_rep_series){ .left_out = true };
		return -ENOMEM;
	}
	st->series_buckets += cap - s->cap;
	s->s = b;
	s->cap = cap;
	return 0;
}

/* Record the process's levels after an event at ts (relative). */
static void series_note(struct mt_rep_state *st, struct mt_rep_proc *p,
			uint64_t ts)
{
	struct mt_rep_series *s = &p->series;
	struct mt_rep_sample *b;
	uint64_t i, heap, mapped;

	if (s->left_out) {
		return; /* no memory for it: the chart leaves it out */
	}
	/* a shift, not a division: this runs for every event */
	i = ts >> s->shift;
	while (i >= MT_REP_SERIES) {
		series_halve(s);
		i = ts >> s->shift;
	}
	if (s->n && i < s->n - 1) {
		i = s->n - 1; /* out of order: time never goes back here */
	}
	if (i >= s->cap && series_grow(st, s, (size_t)i + 1) < 0) {
		return;
	}
	/* buckets with no event hold the level the last event left */
	while (s->n <= i) {
		s->s[s->n++] = s->level;
	}
	b = &s->s[i];
	heap = mt_rep_sat(p->lv_live);
	mapped = mt_rep_sat(p->lv_mapped);
	if (heap > b->heap) {
		b->heap = heap;
	}
	if (mapped > b->mapped) {
		b->mapped = mapped;
	}
	s->level = (struct mt_rep_sample){ heap, mapped };
}

uint64_t mt_rep_align_series(struct mt_rep *r)
{
	uint64_t step = 0;
	size_t i;

	for (i = 0; i < r->nprocs; i++) {
		if (r->procs[i].series.s && r->procs[i].series.n &&
		    r->procs[i].series.step > step) {
			step = r->procs[i].series.step;
		}
	}
	for (i = 0; i < r->nprocs; i++) {
		struct mt_rep_series *s = &r->procs[i].series;

		while (s->s && s->n && s->step < step) {
			series_halve(s);
		}
	}
	return step;
}

/* ------------------------------------------------------------------ */
/* Per event                                                           */
/* ------------------------------------------------------------------ */

static struct mt_rep_proc *get_proc(struct mt_rep_state *st, int32_t pid)
{
	struct mt_rep *r = &st->rep;
	struct mt_rep_proc *p;
	int64_t i;

	if (st->cur_proc >= 0 && st->cur_pid == pid) {
		return &r->procs[st->cur_proc];
	}
	i = mt_idx_get(&st->proc_idx, (uint32_t)pid);
	if (i < 0) {
		if (r->nprocs == MAX_PROCS) {
			r->too_many = true;
			return NULL;
		}
		if (r->nprocs == st->procs_cap) {
			size_t cap = st->procs_cap;
			uint32_t *cs;

			p = mt_array_grow(r->procs, &st->procs_cap,
					  r->nprocs + 1, sizeof(*p));
			if (!p) {
				st->err = -ENOMEM;
				return NULL;
			}
			r->procs = p;
			cs = mt_array_grow(st->class_site, &cap, r->nprocs + 1,
					   MT_REP_CLASSES * sizeof(*cs));
			if (!cs) {
				st->err = -ENOMEM;
				return NULL;
			}
			st->class_site = cs;
		}
		if (st->fxp && fx_room(st) < 0) {
			st->err = -ENOMEM;
			return NULL;
		}
		if (mt_idx_put(&st->proc_idx, (uint32_t)pid,
			       (uint32_t)r->nprocs) < 0) {
			st->err = -ENOMEM;
			return NULL;
		}
		p = &r->procs[r->nprocs];
		memset(p, 0, sizeof(*p));
		p->pid = pid;
		p->series.step = 1024;
		p->series.shift = 10;
		/* the timeline's buckets come as the process needs them
		 * (series_grow()) */
		i = (int64_t)r->nprocs++;
	}
	st->cur_proc = i;
	st->cur_pid = pid;
	return &r->procs[i];
}

static struct thread *get_thread(struct mt_rep_state *st, int32_t pid,
				 int32_t tid)
{
	uint64_t key = (uint64_t)(uint32_t)pid << 32 | (uint32_t)tid;
	struct thread *t;
	int64_t i;

	if (st->cur_thread && st->cur_tkey == key) {
		return st->cur_thread;
	}
	i = mt_idx_get(&st->thread_idx, key);
	if (i < 0) {
		if (st->nthreads == st->threads_cap) {
			t = mt_array_grow(st->threads, &st->threads_cap,
					  st->nthreads + 1, sizeof(*t));
			if (!t) {
				st->err = -ENOMEM;
				return NULL;
			}
			st->threads = t;
		}
		if (mt_idx_put(&st->thread_idx, key,
			       (uint32_t)st->nthreads) < 0) {
			st->err = -ENOMEM;
			return NULL;
		}
		i = (int64_t)st->nthreads++;
	}
	st->cur_tkey = key;
	st->cur_thread = &st->threads[i];
	return st->cur_thread;
}

static int64_t get_site(struct mt_rep_state *st, int32_t pid, uint32_t id)
{
	uint64_t key = (uint64_t)(uint32_t)pid << 32 | id;
	struct mt_rep *r = &st->rep;
	int64_t i = mt_idx_get(&st->site_idx, key);
	struct mt_rep_site *s;

	if (i >= 0) {
		return i;
	}
	if (r->nsites == st->sites_cap) {
		s = mt_array_grow(r->sites, &st->sites_cap, r->nsites + 1,
				  sizeof(*s));
		if (!s) {
			return -ENOMEM;
		}
		r->sites = s;
	}
	if (st->fxp && fx_room(st) < 0) {
		return -ENOMEM;
	}
	if (mt_idx_put(&st->site_idx, key, (uint32_t)r->nsites) < 0) {
		return -ENOMEM;
	}
	s = &r->sites[r->nsites];
	memset(s, 0, sizeof(*s));
	s->pid = pid;
	s->id = id;
	s->gen = r->peak_gen;
	return (int64_t)r->nsites++;
}

/*
 * Bytes live at the peak, per site, in O(1) per change: each new peak gets
 * a number (peak_gen). A site about to change that has not changed since
 * the latest peak still holds what it held at that peak: remember it.
 * At the end, a site unchanged since the latest peak holds it now.
 */
static inline void note_site_change(struct mt_rep_state *st,
				    struct mt_rep_site *s)
{
	struct mt_rep *r = &st->rep;

	if (s->gen != r->peak_gen) {
		s->lv_snap = s->lv_live;
		s->snap_blocks = s->live_blocks;
		s->gen = r->peak_gen;
		if (st->fxs) {
			struct fx_site *x = &st->fxs[s - r->sites];

			x->snap_blocks = x->live_blocks;
		}
	}
}

/* Halve the checkpoints' resolution: checkpoint k then ends where 2k + 1
 * did. A site's figures from cp_last on are still its live bytes. */
static void cp_halve(struct mt_rep *r)
{
	size_t i, k;

	for (i = 0; i < r->nsites; i++) {
		struct mt_rep_site *s = &r->sites[i];

		if (!s->cp) {
			continue;
		}
		for (k = 0; 2 * k + 1 < s->cp_last; k++) {
			s->cp[k] = s->cp[2 * k + 1];
		}
		s->cp_last >>= 1;
	}
	r->cp_n = (r->cp_n + 1) / 2;
	r->cp_shift++;
}

static void cp_drop(struct mt_rep *r)
{
	size_t i;

	for (i = 0; i < r->nsites; i++) {
		free(r->sites[i].cp);
		r->sites[i].cp = NULL;
	}
	r->cp_failed = true;
	r->want_cp = false;
}

/*
 * Before a change of s's live bytes at ts: the checkpoints that ended
 * since s last changed held what it holds now. O(1) amortized per change
 * (each checkpoint is written once per resolution).
 */
static void cp_note(struct mt_rep *r, struct mt_rep_site *s, uint64_t ts)
{
	uint64_t k = ts >> r->cp_shift, v;

	while (k >= MT_REP_CP) {
		cp_halve(r);
		k = ts >> r->cp_shift;
	}
	if (k >= r->cp_n) {
		r->cp_n = (size_t)k + 1;
	}
	if (!s->cp) {
		s->cp = calloc(MT_REP_CP, sizeof(*s->cp));
		if (!s->cp) {
			cp_drop(r);
			return;
		}
		/* nothing was live before the site's first allocation */
		s->cp_last = (uint32_t)k;
		return;
	}
	if (k > s->cp_last) {
		v = mt_rep_sat(s->lv_live);
		for (; s->cp_last < k; s->cp_last++) {
			s->cp[s->cp_last] = v;
		}
	}
}

/* A live block of s (the allocation the slot holds) is gone: freed, or
 * its address allocated again. Returns the bytes it took off. */
static uint64_t block_gone(struct mt_rep_state *st, struct mt_rep_proc *p,
			   struct mt_rep_site *s, const struct mt_live_slot *slot,
			   struct weight *w)
{
	struct mt_rep *r = &st->rep;

	/* the slot keeps the recorded size: weighed again, it takes off
	 * exactly what its allocation added */
	*w = (struct weight){ slot->size, FX_ONE };
	if (st->fxp) {
		*w = weigh(r, slot->size);
		st->fxs[s - r->sites].live_blocks -= w->n;
		st->fxp[p - r->procs].live_blocks -= w->n;
	} else {
		s->live_blocks--;
		p->live_blocks--;
	}
	s->lv_live -= w->bytes;
	p->lv_live -= w->bytes;
	r->lv_live -= w->bytes;
	return w->bytes;
}

/* of_realloc: the old block of a realloc, which a sampled recording
 * need not hold (only the new block crossed a sample point) */
static void on_free(struct mt_rep_state *st, struct mt_rep_proc *p,
		    uint64_t addr, uint64_t ts, bool of_realloc)
{
	struct mt_rep *r = &st->rep;
	struct mt_live_slot *slot;
	struct mt_rep_site *s;
	struct thread *t;
	struct weight w;

	if (addr == 0) {
		return;
	}
	if (!st->live.slots) {
		if (!(of_realloc && st->fxp)) {
			p->unmatched_frees++;
		}
		return;
	}
	slot = mt_live_find(&st->live, p->pid, addr);
	if (!slot->addr) {
		if (!(of_realloc && st->fxp)) {
			p->unmatched_frees++;
		}
		return;
	}
	s = &r->sites[slot->site];
	note_site_change(st, s);
	if (r->want_cp) {
		cp_note(r, s, ts);
	}
	p->bytes_freed = mt_rep_sat_add(p->bytes_freed,
					block_gone(st, p, s, slot, &w));
	/* the allocating thread by index: no lookup on the free path */
	t = &st->threads[slot->thread];
	if (st->fxp) {
		struct fx_proc *x = &st->fxp[p - r->procs];

		x->frees += w.n;
		if (t->last_alloc == addr) {
			x->temporary += w.n;
			st->fxs[s - r->sites].temporary += w.n;
			t->last_alloc = 0;
		}
	} else {
		p->frees++;
		if (t->last_alloc == addr) {
			p->temporary++;
			s->temporary++;
			t->last_alloc = 0;
		}
	}
	mt_live_remove(&st->live, slot);
}

static void note_big(struct mt_rep *r, const struct mt_event *ev,
		     uint64_t ts)
{
	size_t j;

	if (r->nbig == MT_REP_TOP && ev->size <= r->big[MT_REP_TOP - 1].size) {
		return;
	}
	j = r->nbig < MT_REP_TOP ? r->nbig++ : MT_REP_TOP - 1;
	/* ties keep the earlier allocation first */
	while (j > 0 && r->big[j - 1].size < ev->size) {
		r->big[j] = r->big[j - 1];
		j--;
	}
	r->big[j] = (struct mt_rep_big){ ev->size, ts, ev->pid, ev->tid,
					 ev->kind };
}

static int on_alloc(struct mt_rep_state *st, struct mt_rep_proc *p,
		    const struct mt_event *ev, uint64_t ts)
{
	struct mt_rep *r = &st->rep;
	unsigned int cls = mt_rep_class(ev->size);
	struct weight w = { ev->size, FX_ONE }, gone;
	struct mt_live_slot *slot;
	struct mt_rep_site *s;
	struct thread *t;
	int64_t si;

	if (ev->addr == 0) {
		return 0;
	}
	if (st->fxp) {
		w = weigh(r, ev->size);
		st->fxp[p - r->procs].allocs += w.n;
		st->fx_hist[cls] += w.n;
	} else {
		p->allocs++;
		r->hist_count[cls]++;
	}
	p->bytes_allocated = mt_rep_sat_add(p->bytes_allocated, w.bytes);
	r->hist_bytes[cls] = mt_rep_sat_add(r->hist_bytes[cls], w.bytes);
	/* the largest are the allocations recorded, as they were */
	if (r->nbig < MT_REP_TOP || ev->size > r->big[MT_REP_TOP - 1].size) {
		note_big(r, ev, ts);
	}
	t = get_thread(st, ev->pid, ev->tid);
	if (!t) {
		return st->err;
	}
	/* without stacks a site is (process, class): a direct table per
	 * process saves the site lookup; with one it is (process, stack) */
	if (ev->flags & MT_EVF_STACK) {
		si = get_site(st, p->pid, MT_REP_STACK_SITE | ev->stack_id);
		if (si < 0) {
			return (int)si;
		}
	} else if ((si = (int64_t)st->class_site[st->cur_proc *
						  MT_REP_CLASSES + cls] -
		    1) < 0) {
		si = get_site(st, p->pid, cls);
		if (si < 0) {
			return (int)si;
		}
		st->class_site[st->cur_proc * MT_REP_CLASSES + cls] =
			(uint32_t)si + 1;
	}
	s = &r->sites[si];
	if (st->fxp) {
		st->fxs[si].count += w.n;
	} else {
		s->count++;
	}
	s->bytes = mt_rep_sat_add(s->bytes, w.bytes);
	if (mt_live_reserve(&st->live) < 0) {
		return -ENOMEM;
	}
	slot = mt_live_find(&st->live, p->pid, ev->addr);
	if (slot->addr) {
		/* the same address again without a free: the old block is
		 * gone (its free was not recorded) */
		struct mt_rep_site *o = &r->sites[slot->site];

		note_site_change(st, o);
		if (r->want_cp) {
			cp_note(r, o, ts);
		}
		block_gone(st, p, o, slot, &gone);
	} else {
		st->live.used++;
	}
	*slot = (struct mt_live_slot){ ev->addr, ev->size, p->pid,
				       (uint32_t)(t - st->threads),
				       (uint32_t)si };
	note_site_change(st, s);
	if (r->want_cp) {
		cp_note(r, s, ts);
	}
	if (st->fxp) {
		st->fxs[si].live_blocks += w.n;
		st->fxp[p - r->procs].live_blocks += w.n;
	} else {
		s->live_blocks++;
		p->live_blocks++;
	}
	s->lv_live += w.bytes;
	p->lv_live += w.bytes;
	r->lv_live += w.bytes;
	if (p->lv_live > p->lv_peak) {
		p->lv_peak = p->lv_live;
		p->peak_ts = ts;
	}
	if (r->lv_live > r->lv_peak) {
		r->lv_peak = r->lv_live;
		r->peak_ts = ts;
		r->peak_gen++;
	}
	t->last_alloc = ev->addr;
	return 0;
}

static void on_map(struct mt_rep *r, struct mt_rep_proc *p,
		   const struct mt_event *ev, uint64_t ts)
{
	mt_rep_level n;

	if (ev->kind == MT_EV_MMAP) {
		p->lv_mapped += ev->size;
		p->bytes_mmapped = mt_rep_sat_add(p->bytes_mmapped, ev->size);
		r->lv_mapped += ev->size;
		if (p->lv_mapped > p->lv_peak_mapped) {
			p->lv_peak_mapped = p->lv_mapped;
			p->peak_mapped_ts = ts;
		}
		if (r->lv_mapped > r->lv_peak_mapped) {
			r->lv_peak_mapped = r->lv_mapped;
			r->peak_mapped_ts = ts;
		}
		return;
	}
	/* an unmap of what was mapped before recording began takes the
	 * level no lower than zero */
	n = ev->size < p->lv_mapped ? ev->size : p->lv_mapped;
	p->lv_mapped -= n;
	r->lv_mapped -= n;
	p->bytes_munmapped = mt_rep_sat_add(p->bytes_munmapped, ev->size);
}

static void on_brk(struct mt_rep_proc *p, uint64_t brk)
{
	if (!p->has_brk) {
		p->has_brk = true;
		p->brk_first = p->brk_max = brk;
	}
	p->brk_last = brk;
	if (brk > p->brk_max) {
		p->brk_max = brk;
	}
}

int mt_rep_on_events(void *ctx, const struct mt_event *ev, size_t n)
{
	struct mt_rep_state *st = ctx;
	struct mt_rep *r = &st->rep;
	const struct mt_report_opts *o = st->opts;
	size_t i;
	int err;

	for (i = 0; i < n; i++, ev++) {
		struct mt_rep_proc *p;
		uint64_t ts;

		/* the block table is bigger than the caches and addresses
		 * hash at random: ask for the slot of a later event now, so
		 * it has arrived when that event gets there */
		if (i + PREFETCH < n && st->live.slots) {
			const struct mt_event *ahead = ev + PREFETCH;
			uint64_t a = ahead->kind == MT_EV_REALLOC ?
					     ahead->old_addr : ahead->addr;

			__builtin_prefetch(&st->live.slots[mt_live_home(
				&st->live, ahead->pid, a)]);
		}
		if (ev->kind >= MT_EV_KIND_COUNT ||
		    (o->has_pid && ev->pid != o->pid)) {
			continue;
		}
		p = get_proc(st, ev->pid);
		if (!p) {
			if (st->err) {
				return st->err;
			}
			continue;
		}
		if (!r->have_t0) {
			r->have_t0 = true;
			r->t0 = ev->timestamp;
		}
		/* times are relative to the first event; an event stamped
		 * before it (per-CPU buffers) counts as time 0 */
		ts = ev->timestamp > r->t0 ? ev->timestamp - r->t0 : 0;
		if (!p->events++) {
			p->first_ts = ts;
		}
		p->last_ts = ts;
		p->by_kind[ev->kind]++;
		r->events++;
		switch (ev->kind) {
		case MT_EV_FREE:
			on_free(st, p, ev->addr, ts, false);
			break;
		case MT_EV_REALLOC:
			if (ev->flags & MT_EVF_OLD_ADDR) {
				on_free(st, p, ev->old_addr, ts, true);
			}
			/* fall through */
		case MT_EV_MALLOC:
		case MT_EV_CALLOC:
		case MT_EV_ALIGNED_ALLOC:
			err = on_alloc(st, p, ev, ts);
			if (err < 0) {
				return err;
			}
			break;
		case MT_EV_MMAP:
		case MT_EV_MUNMAP:
			on_map(r, p, ev, ts);
			break;
		case MT_EV_BRK:
			on_brk(p, ev->addr);
			break;
		default:
			break;
		}
		if (st->err) {
			return st->err;
		}
		series_note(st, p, ts);
	}
	return 0;
}

bool mt_rep_meta_ordered(const void *data, size_t len)
{
	return len >= 4 && !memcmp(data, "MTKR", 4);
}

static uint64_t rd64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static uint32_t rd32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

/*
 * The sampling record (memtrack --sample-bytes), little-endian:
 *
 *   "MTKR", u32 version (1), u32 records (1), u32 FNV-1a-32 of the
 *   record, then u64 mean_bytes (N > 0), u64 seed, u32 flags (bit 0: a
 *   seed was given), u32 reserved (0)
 *
 * checked whole, as the attach marks are: one that fails is left out
 * (counted, a warning). It comes before the recording's first event; one
 * after an allocation was counted comes too late to weigh it, and is left
 * out the same way rather than weighing half the recording.
 */
static int sample_meta(struct mt_rep_state *st, const unsigned char *p,
		       size_t len)
{
	struct mt_rep *r = &st->rep;
	bool ok = len == MTKR_LEN && rd32(p + 4) == 1 && rd32(p + 8) == 1 &&
		  rd32(p + 12) == mt_rep_fnv1a(p + 16, MTKR_LEN - 16) &&
		  rd64(p + 16) != 0;
	uint64_t mean = ok ? rd64(p + 16) : 0;

	if (!ok || (!r->sample_bytes && r->nsites)) {
		st->sample_damaged++;
		if (!st->sample_warned_bad) {
			mt_warn("%s: %s sampling metadata ignored: if the recording is sampled, its allocation figures are of the sampled allocations alone, not estimates",
				r->path, ok ? "late (after an allocation)" :
					      "damaged");
			st->sample_warned_bad = true;
		}
		return 0;
	}
	if (r->sample_bytes) {
		/* one recording, one rate: the first holds */
		if (mean != r->sample_bytes && !st->sample_warned) {
			mt_warn("%s: a second sampling rate (one allocation per %" PRIu64 " B) ignored: the first, one per %" PRIu64 " B, holds",
				r->path, mean, r->sample_bytes);
			st->sample_warned = true;
		}
		return 0;
	}
	r->sample_bytes = mean;
	r->sample_seed = rd64(p + 24);
	r->sample_has_seed = rd32(p + 32) & 1;
	return fx_room(st);
}

int mt_rep_on_meta(void *ctx, unsigned int variant, const void *data,
		   size_t len)
{
	struct mt_rep_state *st = ctx;

	(void)variant;
	if (mt_rep_meta_ordered(data, len)) {
		return sample_meta(st, data, len);
	}
	if (len >= 4 && !memcmp(data, "MTKA", 4)) {
		return mt_rep_marks_meta(&st->marks, data, len, st->rep.path);
	}
	if (len >= 4 && !memcmp(data, "MTKW", 4)) {
		st->recorders.recorders = true;
		return mt_rep_marks_meta(&st->recorders, data, len,
					 st->rep.path);
	}
	if (len < 4 || (memcmp(data, "MTKT", 4) && memcmp(data, "MTKM", 4))) {
		return 0;
	}
	if (!st->rep.sym) {
		st->rep.sym = mt_sym_new();
		if (!st->rep.sym) {
			return -ENOMEM;
		}
	}
	return mt_sym_meta(st->rep.sym, data, len, st->rep.path);
}

struct mt_rep_state *mt_rep_begin(const struct mt_report_opts *o,
				  const char *path)
{
	struct mt_rep_state *st = calloc(1, sizeof(*st));

	if (!st) {
		return NULL;
	}
	st->opts = o;
	st->rep.path = path;
	st->rep.want_cp = o->format == MT_REPORT_HTML;
	st->rep.cp_shift = 10;
	st->cur_proc = -1;
	return st;
}

struct mt_rep *mt_rep_finish(struct mt_rep_state *st)
{
	struct mt_rep *r = &st->rep;
	size_t i;

	/* a sampled recording's counts, once: a count is the sum of its
	 * weights rounded, not a sum of rounded weights */
	for (i = 0; st->fxp && i < r->nsites; i++) {
		struct mt_rep_site *s = &r->sites[i];
		const struct fx_site *x = &st->fxs[i];

		s->count = fx_count(x->count);
		s->temporary = fx_count(x->temporary);
		s->live_blocks = fx_count(x->live_blocks);
		s->snap_blocks = fx_count(x->snap_blocks);
	}
	for (i = 0; st->fxp && i < r->nprocs; i++) {
		struct mt_rep_proc *p = &r->procs[i];
		const struct fx_proc *x = &st->fxp[i];

		p->allocs = fx_count(x->allocs);
		p->frees = fx_count(x->frees);
		p->temporary = fx_count(x->temporary);
		p->live_blocks = fx_count(x->live_blocks);
	}
	for (i = 0; st->fxp && i < MT_REP_CLASSES; i++) {
		r->hist_count[i] = fx_count(st->fx_hist[i]);
	}
	free(st->fxp);
	free(st->fxs);
	st->fxp = NULL;
	st->fxs = NULL;
	for (i = 0; i < r->nsites; i++) {
		struct mt_rep_site *s = &r->sites[i];

		s->live = mt_rep_sat(s->lv_live);
		s->at_peak = mt_rep_sat(s->gen == r->peak_gen ? s->lv_snap :
								 s->lv_live);
		s->at_peak_blocks = s->gen == r->peak_gen ? s->snap_blocks :
							    s->live_blocks;
		for (; s->cp && s->cp_last < r->cp_n; s->cp_last++) {
			s->cp[s->cp_last] = s->live;
		}
	}
	for (i = 0; i < r->nprocs; i++) {
		struct mt_rep_proc *p = &r->procs[i];

		p->live = mt_rep_sat(p->lv_live);
		p->peak = mt_rep_sat(p->lv_peak);
		p->mapped = mt_rep_sat(p->lv_mapped);
		p->peak_mapped = mt_rep_sat(p->lv_peak_mapped);
	}
	r->live = mt_rep_sat(r->lv_live);
	r->peak = mt_rep_sat(r->lv_peak);
	r->mapped = mt_rep_sat(r->lv_mapped);
	r->peak_mapped = mt_rep_sat(r->lv_peak_mapped);
	mt_rep_marks_apply(&st->marks, r);
	mt_rep_recorders_apply(&st->recorders, r);
	r->damaged_meta = st->marks.damaged + st->sample_damaged +
			  mt_sym_damaged(r->sym);
	/* the block tables are only needed while reading */
	free(st->live.slots);
	free(st->proc_idx.slots);
	free(st->thread_idx.slots);
	free(st->site_idx.slots);
	free(st->threads);
	free(st->class_site);
	st->class_site = NULL;
	memset(&st->live, 0, sizeof(st->live));
	st->proc_idx.slots = st->thread_idx.slots = st->site_idx.slots = NULL;
	st->threads = NULL;
	return r;
}

void mt_rep_free(struct mt_rep_state *st)
{
	size_t i;

	if (!st) {
		return;
	}
	mt_rep_finish(st);
	for (i = 0; i < st->rep.nprocs; i++) {
		free(st->rep.procs[i].series.s);
	}
	free(st->rep.procs);
	for (i = 0; i < st->rep.nsites; i++) {
		free(st->rep.sites[i].cp);
	}
	free(st->rep.sites);
	mt_rep_wrappers_free(&st->rep);
	mt_sym_free(st->rep.sym);
	mt_rep_marks_free(&st->marks);
	mt_rep_marks_free(&st->recorders);
	free(st);
}
