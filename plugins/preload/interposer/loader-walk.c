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

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

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

/* l has sane program headers, its PT_DYNAMIC at its l_ld. */
static int obj_sane(const struct link_map *l)
{
	const ElfW(Phdr) *ph = lm_phdr(l);
	ElfW(Half) n = lm_phnum(l), i;

	if (!ph || ((uintptr_t)ph & (sizeof(void *) - 1)) || !n ||
	    n > PHNUM_MAX || !l->l_ld) {
		return 0;
	}
	for (i = 0; i < n; i++) {
		if (ph[i].p_type == PT_DYNAMIC &&
		    l->l_addr + ph[i].p_vaddr == (uintptr_t)l->l_ld) {
			return 1;
		}
	}
	return 0;
}

/* So is each object from l on. */
static int tail_sane(const struct link_map *l)
{
	for (; l; l = l->l_next) {
		if (!obj_sane(l)) {
			return 0;
		}
	}
	return 1;
}

/* What dl_iterate_phdr() would say of l, its counters those it said of
 * the first object (no TLS fields). */
static void lm_info(const struct link_map *l,
		    const struct dl_phdr_info *first, struct dl_phdr_info *in)
{
	memset(in, 0, sizeof(*in));
	in->dlpi_addr = l->l_addr;
	in->dlpi_name = l->l_name;
	in->dlpi_phdr = lm_phdr(l);
	in->dlpi_phnum = lm_phnum(l);
	in->dlpi_adds = first->dlpi_adds;
	in->dlpi_subs = first->dlpi_subs;
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

		lm_info(l, info, &in);
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

/* ------------------------------------------------------------------ */
/* libunwind's lookups: the object holding the address first            */
/* ------------------------------------------------------------------ */

#ifdef DLFO_EH_SEGMENT_TYPE /* glibc 2.35: _dl_find_object() */

struct guess {
	int (*cb)(struct dl_phdr_info *, size_t, void *);
	void *data;
	int first_done;
	const void *tried; /* the program headers of the object offered */
};

static int guess_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct guess *g = data;

	if (!g->first_done) {
		uintptr_t ip;
		struct dl_find_object fo;

		g->first_done = 1;
		memcpy(&ip, g->data, sizeof(ip));
		if (layout == LAYOUT_UNKNOWN && !in_walk) {
			calibrate();
		}
		if (layout == LAYOUT_KNOWN && has_counters(size) &&
		    _dl_find_object((void *)ip, &fo) == 0 && fo.dlfo_link_map &&
		    fo.dlfo_link_map->l_addr != info->dlpi_addr) {
			struct link_map *l = fo.dlfo_link_map;
			struct dl_phdr_info in;
			int r;

			if (obj_sane(l)) {
				lm_info(l, info, &in);
				g->tried = in.dlpi_phdr;
				r = g->cb(&in, sizeof(in), g->data);
				if (r) {
					return r;
				}
			}
		}
	} else if (g->tried && info->dlpi_phdr == g->tried) {
		return 0; /* offered first already */
	}
	return g->cb(info, size, g->data);
}

struct find_phdr {
	const struct link_map *lm;
	const ElfW(Phdr) *phdr;
	ElfW(Half) phnum;
};

static int find_phdr_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct find_phdr *f = data;

	(void)size;
	if (info->dlpi_addr != f->lm->l_addr ||
	    info->dlpi_name != f->lm->l_name) {
		return 0;
	}
	f->phdr = info->dlpi_phdr;
	f->phnum = info->dlpi_phnum;
	return 1;
}

/* Is addr in a writable PT_LOAD of lm, outside the pages ld.so made
 * read-only after relocation (PT_GNU_RELRO, taken whole pages)? */
static int writable(const struct link_map *lm, uintptr_t addr)
{
	struct find_phdr f = { .lm = lm };
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	int in_w = 0, in_relro = 0;
	ElfW(Half) i;

	dl_iterate_phdr(find_phdr_cb, &f);
	for (i = 0; f.phdr && i < f.phnum; i++) {
		const ElfW(Phdr) *ph = &f.phdr[i];
		uintptr_t a = lm->l_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_W) &&
		    addr >= a && addr + sizeof(void *) <= a + ph->p_memsz) {
			in_w = 1;
		} else if (ph->p_type == PT_GNU_RELRO &&
			   addr >= (a & ~(page - 1)) &&
			   addr < ((a + ph->p_memsz + page - 1) & ~(page - 1))) {
			in_relro = 1;
		}
	}
	return in_w && !in_relro;
}

static int iterate_ip_first(int (*cb)(struct dl_phdr_info *, size_t, void *),
			    void *data)
{
	struct guess g = { .cb = cb, .data = data };

	if (!data) {
		return dl_iterate_phdr(cb, data);
	}
	return dl_iterate_phdr(guess_cb, &g);
}

int pl_dl_redirect_iterate(void *handle)
{
	struct link_map *lm = NULL;
	const ElfW(Dyn) *d;
	const ElfW(Sym) *symtab = NULL;
	const char *strtab = NULL;
	const ElfW(Rela) *rel[2] = { NULL, NULL };
	size_t nrel[2] = { 0, 0 }, k, i;
	int pltrel_rela = 1;

	if (dlinfo(handle, RTLD_DI_LINKMAP, &lm) || !lm || !lm->l_ld) {
		return -1;
	}
	for (d = lm->l_ld; d->d_tag != DT_NULL; d++) {
		switch (d->d_tag) {
		case DT_SYMTAB:
			symtab = (const ElfW(Sym) *)d->d_un.d_ptr;
			break;
		case DT_STRTAB:
			strtab = (const char *)d->d_un.d_ptr;
			break;
		case DT_JMPREL:
			rel[0] = (const ElfW(Rela) *)d->d_un.d_ptr;
			break;
		case DT_PLTRELSZ:
			nrel[0] = d->d_un.d_val / sizeof(ElfW(Rela));
			break;
		case DT_PLTREL:
			pltrel_rela = d->d_un.d_val == DT_RELA;
			break;
		case DT_RELA:
			rel[1] = (const ElfW(Rela) *)d->d_un.d_ptr;
			break;
		case DT_RELASZ:
			nrel[1] = d->d_un.d_val / sizeof(ElfW(Rela));
			break;
		default:
			break;
		}
	}
	/* ld.so relocated the d_ptrs of a writable dynamic section */
	if (!symtab || !strtab || !pltrel_rela ||
	    (uintptr_t)symtab < lm->l_addr || (uintptr_t)strtab < lm->l_addr) {
		return -1;
	}
	for (k = 0; k < 2; k++) {
		for (i = 0; rel[k] && i < nrel[k]; i++) {
			const ElfW(Rela) *r = &rel[k][i];
			unsigned type = (unsigned)ELF64_R_TYPE(r->r_info);
			uint32_t si = (uint32_t)ELF64_R_SYM(r->r_info);
			void **slot = (void **)(lm->l_addr + r->r_offset);

			if ((type != R_X86_64_JUMP_SLOT &&
			     type != R_X86_64_GLOB_DAT) || !si ||
			    strcmp(strtab + symtab[si].st_name,
				   "dl_iterate_phdr")) {
				continue;
			}
			if (!writable(lm, (uintptr_t)slot) ||
			    __atomic_load_n(slot, __ATOMIC_ACQUIRE) !=
				    (void *)dl_iterate_phdr) {
				return -1;
			}
			__atomic_store_n(slot, (void *)iterate_ip_first,
					 __ATOMIC_RELEASE);
			return 0;
		}
	}
	return -1;
}

#else

int pl_dl_redirect_iterate(void *handle)
{
	(void)handle;
	return -1;
}

#endif
