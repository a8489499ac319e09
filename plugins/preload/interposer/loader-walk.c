/* SPDX-License-Identifier: MIT */
/*
 * plugins/preload/interposer/loader-walk.c - see loader-walk.h.
 *
 * Everything here runs inside a dl_iterate_phdr() callback: the loader's
 * list lock (dl_load_write_lock) is held, so no object joins or leaves the
 * list while it is read, and two threads never run this at once. The same
 * thread may come back (a signal handler's allocation rescans): the walk
 * in progress then keeps the remembered places to itself (in_walk) and
 * the nested one walks plainly.
 *
 * What is trusted about the loader:
 *   - _r_debug.r_map is the first object of the base namespace, and the
 *     l_next chain is dl_iterate_phdr()'s order. Checked at calibration
 *     for every object (the same l_addr and l_name pointer, the same
 *     length), and for the first object at every fast walk.
 *   - Objects join the base namespace's list at its end only (ld.so's
 *     _dl_add_to_namespace_list; dlmopen's go to lists of their own) and
 *     every unload raises dlpi_subs: while dlpi_subs is the same, the
 *     object remembered at index i is still there, at index i.
 *   - l_phdr and l_phnum are at the offsets calibration found, one of
 *     each that holds for every object of the start-up (at least
 *     CALIB_MIN of them with distinct headers); each object a fast walk
 *     passes on is checked again: its PT_DYNAMIC is at its l_ld.
 */
#include "config.h"

#include <elf.h>
#include <link.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "loader-walk.h"

/* ld.so's, the debuggers' interface; absent under another loader */
#pragma weak _r_debug

/* where the private part of struct link_map may hold l_phdr and l_phnum
 * (glibc 2.36, x86-64: 704 and 720) */
#define OFF_MIN (offsetof(struct link_map, l_prev) + sizeof(void *))
#define OFF_MAX 1024
#define CALIB_MIN 3
#define PHNUM_MAX 4096
#define CACHED 4

enum { LAYOUT_UNKNOWN, LAYOUT_KNOWN, LAYOUT_NONE };
static int layout;
static size_t phdr_off, phnum_off;
static int in_walk;

/* objects met by earlier fast walks, by index: valid while dlpi_subs is
 * cache_subs */
static struct {
	size_t idx;
	struct link_map *lm;
} cache[CACHED];
static unsigned long long cache_subs;

static const ElfW(Phdr) *lm_phdr(const struct link_map *l)
{
	const ElfW(Phdr) *p;

	memcpy(&p, (const char *)l + phdr_off, sizeof(p));
	return p;
}

static ElfW(Half) lm_phnum(const struct link_map *l)
{
	ElfW(Half) n;

	memcpy(&n, (const char *)l + phnum_off, sizeof(n));
	return n;
}

static int has_counters(size_t size)
{
	return size >= offsetof(struct dl_phdr_info, dlpi_subs) +
			       sizeof(((struct dl_phdr_info *)0)->dlpi_subs);
}

/* ------------------------------------------------------------------ */
/* Calibration: one plain walk, each object's link_map beside it        */
/* ------------------------------------------------------------------ */

#define NPTR ((OFF_MAX - OFF_MIN) / sizeof(void *))
#define NHALF ((OFF_MAX - OFF_MIN) / sizeof(ElfW(Half)))

struct calib {
	struct link_map *lm; /* the link_map of the next object */
	size_t n, distinct;
	const void *last_phdr;
	int bad;
	unsigned char ptr_ok[NPTR];
	unsigned char half_ok[NHALF];
};

static int calib_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct calib *c = data;
	struct link_map *l = c->n ? c->lm : _r_debug.r_map;
	size_t i;

	(void)size;
	if (!l || l->l_addr != info->dlpi_addr ||
	    l->l_name != info->dlpi_name) {
		c->bad = 1;
		return 1;
	}
	c->lm = l->l_next;
	c->n++;
	if (info->dlpi_phdr && info->dlpi_phdr != c->last_phdr) {
		c->distinct++;
		c->last_phdr = info->dlpi_phdr;
	}
	for (i = 0; i < NPTR; i++) {
		const void *w;

		memcpy(&w, (const char *)l + OFF_MIN + i * sizeof(void *),
		       sizeof(w));
		if (w != (const void *)info->dlpi_phdr) {
			c->ptr_ok[i] = 0;
		}
	}
	for (i = 0; i < NHALF; i++) {
		ElfW(Half) h;

		memcpy(&h, (const char *)l + OFF_MIN + i * sizeof(h),
		       sizeof(h));
		if (h != info->dlpi_phnum) {
			c->half_ok[i] = 0;
		}
	}
	return 0;
}

/* Called with the loader's lock held (its walk nests in the caller's). */
static void calibrate(void)
{
	struct calib c;
	size_t i, n = 0, at = 0, nh = 0, hat = 0, after;

	layout = LAYOUT_NONE;
	if (!&_r_debug) {
		return;
	}
	memset(&c, 0, sizeof(c));
	memset(c.ptr_ok, 1, sizeof(c.ptr_ok));
	memset(c.half_ok, 1, sizeof(c.half_ok));
	dl_iterate_phdr(calib_cb, &c);
	if (c.bad || c.lm || c.distinct < CALIB_MIN) {
		return;
	}
	for (i = 0; i < NPTR; i++) {
		if (c.ptr_ok[i]) {
			n++;
			at = i;
		}
	}
	if (n != 1) {
		return;
	}
	phdr_off = OFF_MIN + at * sizeof(void *);
	/* glibc's: l_phdr, l_entry, l_phnum; else the one place that fits */
	after = (phdr_off + 2 * sizeof(void *) - OFF_MIN) / sizeof(ElfW(Half));
	for (i = 0; i < NHALF; i++) {
		if (c.half_ok[i]) {
			nh++;
			hat = i;
		}
	}
	if (after < NHALF && c.half_ok[after]) {
		hat = after;
	} else if (nh != 1) {
		return;
	}
	phnum_off = OFF_MIN + hat * sizeof(ElfW(Half));
	layout = LAYOUT_KNOWN;
}

/* ------------------------------------------------------------------ */
/* The walk                                                             */
/* ------------------------------------------------------------------ */

struct walk {
	int (*cb)(struct dl_phdr_info *, size_t, void *);
	void *data;
	size_t *idx, skip;
	int ret;
	int first_done;
	int fast; /* the objects after the first were walked here */
};

/* The object at index target, from the nearest remembered one before it. */
static struct link_map *lm_at(size_t target,
			      const struct dl_phdr_info *first)
{
	struct link_map *l = _r_debug.r_map;
	size_t at = 0, i;

	if (!l || l->l_addr != first->dlpi_addr ||
	    l->l_name != first->dlpi_name) {
		return NULL;
	}
	if (cache_subs != first->dlpi_subs) {
		memset(cache, 0, sizeof(cache));
		cache_subs = first->dlpi_subs;
	}
	for (i = 0; i < CACHED; i++) {
		if (cache[i].lm && cache[i].idx <= target &&
		    cache[i].idx > at) {
			at = cache[i].idx;
			l = cache[i].lm;
		}
	}
	for (; l && at < target; at++) {
		l = l->l_next;
	}
	return l;
}

static void remember(size_t idx, struct link_map *lm)
{
	size_t i, low = 0;

	for (i = 0; i < CACHED; i++) {
		if (cache[i].lm == lm && cache[i].idx == idx) {
			return;
		}
		if (!cache[i].lm) {
			low = i;
			break;
		}
		if (cache[i].idx < cache[low].idx) {
			low = i;
		}
	}
	cache[low].idx = idx;
	cache[low].lm = lm;
}

/* Each object from l on has sane program headers, its PT_DYNAMIC at its
 * l_ld. */
static int tail_sane(const struct link_map *l)
{
	for (; l; l = l->l_next) {
		const ElfW(Phdr) *ph = lm_phdr(l);
		ElfW(Half) n = lm_phnum(l), i;

		if (!ph || ((uintptr_t)ph & (sizeof(void *) - 1)) || !n ||
		    n > PHNUM_MAX || !l->l_ld) {
			return 0;
		}
		for (i = 0; i < n; i++) {
			if (ph[i].p_type == PT_DYNAMIC &&
			    l->l_addr + ph[i].p_vaddr == (uintptr_t)l->l_ld) {
				break;
			}
		}
		if (i == n) {
			return 0;
		}
	}
	return 1;
}

static int walk_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct walk *w = data;
	struct link_map *l, *from, *last = NULL;
	size_t i, last_i = 0;
	int r;

	if (w->first_done) {
		return w->cb(info, size, w->data); /* the plain walk */
	}
	w->first_done = 1;
	r = w->cb(info, size, w->data);
	if (r) {
		return r;
	}
	if (w->skip < 3 || in_walk || !has_counters(size)) {
		return 0;
	}
	if (layout == LAYOUT_UNKNOWN) {
		calibrate(); /* with the lock held: recursive */
	}
	if (layout != LAYOUT_KNOWN) {
		return 0;
	}
	from = lm_at(w->skip - 1, info);
	if (!from || !tail_sane(from)) {
		return 0;
	}
	in_walk = 1;
	r = 0;
	for (l = from, i = w->skip - 1; l; l = l->l_next, i++) {
		struct dl_phdr_info in;

		memset(&in, 0, sizeof(in));
		in.dlpi_addr = l->l_addr;
		in.dlpi_name = l->l_name;
		in.dlpi_phdr = lm_phdr(l);
		in.dlpi_phnum = lm_phnum(l);
		in.dlpi_adds = info->dlpi_adds;
		in.dlpi_subs = info->dlpi_subs;
		*w->idx = i;
		last = l;
		last_i = i;
		r = w->cb(&in, sizeof(in), w->data);
		if (r) {
			break;
		}
	}
	remember(w->skip - 1, from);
	if (last) {
		remember(last_i, last);
	}
	in_walk = 0;
	w->ret = r;
	w->fast = 1;
	return 1; /* done: glibc's walk stops here */
}

int pl_dl_walk(int (*cb)(struct dl_phdr_info *, size_t, void *),
	       void *data, size_t *idx, size_t skip)
{
	struct walk w = { .cb = cb, .data = data, .idx = idx, .skip = skip };
	int r = dl_iterate_phdr(walk_cb, &w);

	return w.fast ? w.ret : r;
}
