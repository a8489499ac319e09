/* SPDX-License-Identifier: MIT */
/*
 * plugins/preload/interposer/optional.c - hooks of optional allocators,
 * bound per object instead of exported.
 *
 * The interposer used to export every name the eBPF source probes. For
 * the glibc family and C++'s operators that is harmless: every process
 * has them. For jemalloc's mallocx family (and its je_, _rjem_ prefixed
 * C API), mimalloc and tcmalloc it was not: a program that asks whether
 * the allocator is there (a weak reference, dlsym(RTLD_DEFAULT,
 * "mallocx")) found our hook, which had nothing to call and returned
 * NULL (issue 27, item 9). So those hooks are hidden, and put where the
 * process already binds the name:
 *
 *   - After ld.so has relocated an object, every GOT entry of an
 *     optional name (R_*_JUMP_SLOT, R_*_GLOB_DAT, and R_*_ABS64 with no
 *     addend: a pointer in data) holds what the object binds: the
 *     definition, a lazy PLT stub of its own, or 0 for a weak reference
 *     to a name no object defines. The first two get the hook's address
 *     (a lazy stub only when some loaded object defines the name: else
 *     the call would have failed at binding, and still may); 0 stays 0.
 *     The hook finds the real function as every hook does (RTLD_NEXT,
 *     else the calling object's scope: interpose.c, resolve()).
 *   - Objects are looked at when memtrack attaches (every object of the
 *     start-up is relocated by then) and after each dlopen: the exported
 *     dlopen is a jump to libc's that only marks the objects dirty (a
 *     wrapper that called it would make itself dlopen's caller, whose
 *     RUNPATH and $ORIGIN ld.so uses), and the next allocation entry
 *     point, or any later one, rescans. An object that ld.so lists but
 *     has not relocated yet (an allocation made by ld.so during that
 *     dlopen) is not marked seen and keeps the objects dirty; it is
 *     bound at the first entry after its relocation (its constructors'
 *     allocations included); dlsym(handle, ...), which usually follows a
 *     dlopen, rescans too. A rescan that finds nothing new (ld.so
 *     allocates before it maps, and a dlopen may load nothing) keeps the
 *     objects dirty for IDLE_MAX more.
 *   - A fork waits for a rescan in another thread to end (an atfork
 *     handler): ld.so's list lock, held by a thread the fork leaves
 *     behind, would stay held in the child, whose next walk of the list
 *     (ours, libunwind's) would wait for ever.
 *
 * Why not LD_AUDIT's la_symbind, which sees every binding as ld.so makes
 * it: an audit library is loaded in a namespace of its own with a second
 * copy of libc in every traced process (mapped, initialised, visible in
 * /proc/PID/maps and to every tool that reads them), its bindings of
 * BIND_NOW objects depend on the glibc version (2.35+), and a second
 * variable in the environment would have to be carried across exec as
 * LD_PRELOAD is.
 * The GOT is what ld.so wrote; rewriting the entries it bound costs one
 * pass over the relocations of each object, once.
 *
 * Limits: calls through a pointer taken before the object was bound here
 * go untraced (dlsym(RTLD_DEFAULT) of these names hands out a recording
 * trampoline, interpose.c, unless only the caller's local scope has the
 * name), as do an allocator's calls of its own functions that ld.so
 * does not bind through the GOT, objects with DT_TEXTREL, and, outside
 * x86-64 (no dlopen trampoline), objects loaded after start-up. A weak
 * reference bound to 0 before its allocator was dlopen'd RTLD_GLOBAL
 * stays 0, as it does without memtrack.
 *
 * Cost: per new object one walk of its relocations with a binary search
 * per candidate and a hash lookup per optional name; per allocation one
 * load of pl_opt_dirty. RELRO pages are made writable for the store and
 * read-only again (mprotect, as ld.so does at every dlopen), nothing
 * else: no allocation, no lock of the program's, no file.
 */
#include "config.h"

#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "optional.h"
#include "loader-walk.h"
#include "addr-set.h"

#if defined(__x86_64__)
#define R_JUMP_SLOT R_X86_64_JUMP_SLOT
#define R_GLOB_DAT R_X86_64_GLOB_DAT
#define R_ABS64 R_X86_64_64
#define R_RELATIVE R_X86_64_RELATIVE
#elif defined(__aarch64__)
#define R_JUMP_SLOT R_AARCH64_JUMP_SLOT
#define R_GLOB_DAT R_AARCH64_GLOB_DAT
#define R_ABS64 R_AARCH64_ABS64
#define R_RELATIVE R_AARCH64_RELATIVE
#else
#error "optional.c knows the GOT relocations of x86-64 and AArch64 only"
#endif

#define OPT_MAX 256

int pl_opt_dirty;

static const struct pl_opt_hook *tab;
static size_t ntab;
static uintptr_t self_addr;
static uintptr_t page_size;
static const uint32_t *filtered;
/* some loaded object defines tab[i] (a lazy stub may get the hook), and
 * the first such definition found, in load order (what a lazy stub's
 * hook calls when nothing better is known) */
static unsigned char defined[OPT_MAX];
static void *def_addr[OPT_MAX];
/* 1 while a thread rescans, and from a fork's prepare to its end: a
 * child must not inherit ld.so's list lock held by a thread of ours that
 * the fork left behind (glibc does not reset it in the child) */
static int busy;
/* rescans in a row that found an object not relocated yet: ld.so
 * relocates within its dlopen, so past this an object is taken as it
 * is (its relocation test misled), rather than rescanned for ever */
#define UNSETTLED_MAX 4096
static unsigned unsettled_runs;
/* rescans in a row that found no object to bind since the last dlopen:
 * its objects may not be listed yet (ld.so allocates before it maps), or
 * it loaded nothing new (the object was there, RTLD_NOLOAD) */
#define IDLE_MAX 64
static unsigned idle_runs;
/* objects bound already, by program header table (addr-set.h: it grows;
 * when it cannot, an object is scanned again, its entries bound already
 * skipped) */
static struct pl_addr_set seen;
static unsigned long long seen_subs;
/* the loader's count of objects added (dlpi_adds) when a pass last found
 * every object listed relocated: while it is the same, a rescan has
 * nothing to look at and stops at the first object (else each of the
 * allocations ld.so makes within a dlopen walked every object: quadratic
 * in the number of libraries, issue 24) */
static unsigned long long settled_adds;
static int settled;
/*
 * The first seen_prefix objects of the loader's list were all seen by the
 * last pass, the last of them with program headers prefix_phdr. Objects
 * are only added to the list, after a dlopen at its end of the base
 * namespace, or removed (dlpi_subs, which forgets all): while the object
 * at seen_prefix - 1 is still that one, none came before it, and a pass
 * skips those objects without touching them (each touched every object,
 * 5,000 libraries walked 5,000 times: issue 24). When it is another
 * object, something was inserted (dlmopen), and the pass starts again,
 * looking at each.
 */
static size_t seen_prefix;
static const void *prefix_phdr;

static inline void cpu_relax(void)
{
#if defined(__x86_64__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield" ::: "memory");
#endif
}

/* this thread holds busy: in a rescan, or between a fork's prepare and
 * its end */
static __thread int holding __attribute__((tls_model("initial-exec")));

static void fork_prepare(void)
{
	if (holding) {
		return; /* a handler that forks on top of our own rescan */
	}
	/* a rescan takes microseconds and waits for nothing of ours */
	while (__atomic_exchange_n(&busy, 1, __ATOMIC_ACQUIRE)) {
		cpu_relax();
	}
	holding = 2;
}

static void fork_done(void)
{
	if (holding == 2) {
		holding = 0;
		__atomic_store_n(&busy, 0, __ATOMIC_RELEASE);
	}
}

void pl_opt_init(struct pl_opt_hook *t, size_t n, const void *self,
		 const uint32_t *filter_word)
{
	size_t i, j;

	if (n > OPT_MAX) {
		n = OPT_MAX;
	}
	/* insertion sort: a hundred names, once per process image */
	for (i = 1; i < n; i++) {
		struct pl_opt_hook h = t[i];

		for (j = i; j > 0 && strcmp(t[j - 1].name, h.name) > 0; j--) {
			t[j] = t[j - 1];
		}
		t[j] = h;
	}
	tab = t;
	ntab = n;
	filtered = filter_word;
	self_addr = (uintptr_t)self;
	page_size = (uintptr_t)getauxval(AT_PAGESZ);
	if (!page_size) {
		page_size = 4096;
	}
	pthread_atfork(fork_prepare, fork_done, fork_done);
	__atomic_store_n(&pl_opt_dirty, 2, __ATOMIC_RELEASE);
}

static int find(const char *name)
{
	size_t lo = 0, hi = ntab;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(name, tab[mid].name);

		if (!c) {
			return (int)mid;
		}
		if (c < 0) {
			hi = mid;
		} else {
			lo = mid + 1;
		}
	}
	return -1;
}

static int was_seen(uintptr_t key)
{
	return pl_addr_set_has(&seen, key);
}

static void mark_seen(uintptr_t key)
{
	/* when the table cannot grow: scanned again next time, still right */
	(void)pl_addr_set_add(&seen, key);
}

static void forget_seen(void)
{
	seen_prefix = 0;
	pl_addr_set_clear(&seen);
}

/* What one object is, from its program headers and dynamic section. */
struct obj {
	uintptr_t base, lo, hi;      /* load bias, mapped range */
	uintptr_t relro_lo, relro_hi; /* pages ld.so made read-only */
	const ElfW(Phdr) *phdr;
	uint16_t phnum;
	const ElfW(Sym) *symtab;
	const char *strtab;
	size_t strsz;
	const uint32_t *gnu_hash, *sysv_hash;
	const ElfW(Rela) *rela, *jmprel;
	size_t relasz, jmprelsz;
};

/* A d_ptr as ld.so left it: adjusted by the load bias in place, except
 * where the dynamic section is read-only (the vDSO). */
static uintptr_t dyn_ptr(const struct obj *o, uintptr_t v)
{
	return v < o->base ? v + o->base : v;
}

static int obj_parse(struct dl_phdr_info *info, struct obj *o)
{
	const ElfW(Dyn) *dyn = NULL, *d;
	uint16_t i;
	int pltrel_rela = 1;

	memset(o, 0, sizeof(*o));
	o->base = info->dlpi_addr;
	o->phdr = info->dlpi_phdr;
	o->phnum = info->dlpi_phnum;
	o->lo = UINTPTR_MAX;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t a = o->base + ph->p_vaddr;

		if (ph->p_type == PT_LOAD) {
			if (a < o->lo) {
				o->lo = a;
			}
			if (a + ph->p_memsz > o->hi) {
				o->hi = a + ph->p_memsz;
			}
		} else if (ph->p_type == PT_DYNAMIC) {
			dyn = (const ElfW(Dyn) *)a;
		} else if (ph->p_type == PT_GNU_RELRO) {
			o->relro_lo = a & ~(page_size - 1);
			o->relro_hi = (a + ph->p_memsz) & ~(page_size - 1);
		}
	}
	if (!dyn || o->lo >= o->hi) {
		return -1;
	}
	for (d = dyn; d->d_tag != DT_NULL; d++) {
		switch (d->d_tag) {
		case DT_SYMTAB:
			o->symtab = (const ElfW(Sym) *)dyn_ptr(o, d->d_un.d_ptr);
			break;
		case DT_STRTAB:
			o->strtab = (const char *)dyn_ptr(o, d->d_un.d_ptr);
			break;
		case DT_STRSZ:
			o->strsz = d->d_un.d_val;
			break;
		case DT_GNU_HASH:
			o->gnu_hash = (const uint32_t *)dyn_ptr(o, d->d_un.d_ptr);
			break;
		case DT_HASH:
			o->sysv_hash = (const uint32_t *)dyn_ptr(o, d->d_un.d_ptr);
			break;
		case DT_RELA:
			o->rela = (const ElfW(Rela) *)dyn_ptr(o, d->d_un.d_ptr);
			break;
		case DT_RELASZ:
			o->relasz = d->d_un.d_val / sizeof(ElfW(Rela));
			break;
		case DT_JMPREL:
			o->jmprel = (const ElfW(Rela) *)dyn_ptr(o, d->d_un.d_ptr);
			break;
		case DT_PLTRELSZ:
			o->jmprelsz = d->d_un.d_val / sizeof(ElfW(Rela));
			break;
		case DT_PLTREL:
			pltrel_rela = d->d_un.d_val == DT_RELA;
			break;
		case DT_TEXTREL:
			return -1; /* entries in text: not ours to write */
		default:
			break;
		}
	}
	if (!pltrel_rela) {
		o->jmprel = NULL;
		o->jmprelsz = 0;
	}
	return o->symtab && o->strtab ? 0 : -1;
}

static const char *sym_name(const struct obj *o, uint32_t idx)
{
	uint32_t off = o->symtab[idx].st_name;

	return off < o->strsz ? o->strtab + off : NULL;
}

static const ElfW(Sym) *sym_defines(const ElfW(Sym) *s)
{
	unsigned t = ELF64_ST_TYPE(s->st_info);

	return s->st_shndx != SHN_UNDEF && s->st_value &&
	       (t == STT_FUNC || t == STT_GNU_IFUNC) ? s : NULL;
}

/* The function o exports as name, or NULL. */
static const ElfW(Sym) *obj_defines(const struct obj *o, const char *name)
{
	if (o->gnu_hash) {
		const uint32_t *g = o->gnu_hash;
		uint32_t nb = g[0], symoff = g[1], nbloom = g[2], shift = g[3];
		const ElfW(Addr) *bloom = (const ElfW(Addr) *)(g + 4);
		const uint32_t *buckets = (const uint32_t *)(bloom + nbloom);
		const uint32_t *chain = buckets + nb;
		const unsigned bits = sizeof(ElfW(Addr)) * 8;
		uint32_t h = 5381, i;
		ElfW(Addr) w, m;
		const unsigned char *p;

		if (!nb || !nbloom) {
			return NULL;
		}
		for (p = (const unsigned char *)name; *p; p++) {
			h = h * 33 + *p;
		}
		w = bloom[(h / bits) % nbloom];
		m = ((ElfW(Addr))1 << (h % bits)) |
		    ((ElfW(Addr))1 << ((h >> shift) % bits));
		if ((w & m) != m) {
			return NULL;
		}
		i = buckets[h % nb];
		if (i < symoff) {
			return NULL;
		}
		for (;; i++) {
			uint32_t h2 = chain[i - symoff];
			const char *n;

			if ((h | 1) == (h2 | 1) && (n = sym_name(o, i)) &&
			    !strcmp(n, name)) {
				return sym_defines(&o->symtab[i]);
			}
			if (h2 & 1) {
				return NULL;
			}
		}
	}
	if (o->sysv_hash) {
		const uint32_t *hs = o->sysv_hash;
		uint32_t nb = hs[0], nchain = hs[1], h = 0, g, i;
		const uint32_t *bucket = hs + 2, *chain = bucket + nb;
		const unsigned char *p;

		if (!nb) {
			return NULL;
		}
		for (p = (const unsigned char *)name; *p; p++) {
			h = (h << 4) + *p;
			g = h & 0xf0000000u;
			if (g) {
				h ^= g >> 24;
			}
			h &= ~g;
		}
		for (i = bucket[h % nb]; i && i < nchain; i = chain[i]) {
			const char *n = sym_name(o, i);

			if (n && !strcmp(n, name)) {
				return sym_defines(&o->symtab[i]);
			}
		}
	}
	return NULL;
}

/*
 * Has ld.so relocated o? A relative relocation in RELRO (which the
 * program cannot have written since) holds base + addend once applied,
 * the link-time contents before; else a PLT slot holds an address at or
 * past the load bias once applied. Without either to look at, or with no
 * load bias (a non-PIE executable, relocated before any code of ours
 * runs), it is taken as relocated.
 */
static int obj_relocated(const struct obj *o)
{
	size_t i;

	if (!o->base) {
		return 1;
	}
	for (i = 0; i < o->relasz; i++) {
		const ElfW(Rela) *r = &o->rela[i];
		uintptr_t a = o->base + r->r_offset;

		if (ELF64_R_TYPE(r->r_info) == R_RELATIVE &&
		    a >= o->relro_lo && a < o->relro_hi) {
			return *(const uintptr_t *)a ==
			       o->base + (uintptr_t)r->r_addend;
		}
	}
	if (o->jmprelsz) {
		/* before: the stub's link-time address; after: the stub at
		 * its load address, or the function bound */
		uintptr_t v = *(const uintptr_t *)(o->base +
						   o->jmprel[0].r_offset);

		return v < o->lo - o->base || v >= o->hi - o->base;
	}
	return 1;
}

/* Is addr in a writable PT_LOAD of o? */
static int obj_writable(const struct obj *o, uintptr_t addr)
{
	uint16_t i;

	for (i = 0; i < o->phnum; i++) {
		const ElfW(Phdr) *ph = &o->phdr[i];
		uintptr_t a = o->base + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && addr >= a &&
		    addr + sizeof(void *) <= a + ph->p_memsz) {
			return (ph->p_flags & PF_W) != 0;
		}
	}
	return 0;
}

static void store(const struct obj *o, void **slot, void *hook)
{
	uintptr_t a = (uintptr_t)slot, page = a & ~(page_size - 1);
	int relro = a >= o->relro_lo && a < o->relro_hi;

	if (relro && ((filtered && __atomic_load_n(filtered,
						    __ATOMIC_RELAXED)) ||
		      syscall(SYS_mprotect, page, page_size,
			      PROT_READ | PROT_WRITE))) {
		/* under a seccomp filter, or refused: that entry stays
		 * untraced */
		return;
	}
	__atomic_store_n(slot, hook, __ATOMIC_RELEASE);
	if (relro) {
		syscall(SYS_mprotect, page, page_size, PROT_READ);
	}
}

static void bind_rels(const struct obj *o, const ElfW(Rela) *rel, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned type = (unsigned)ELF64_R_TYPE(rel[i].r_info);
		uint32_t si = (uint32_t)ELF64_R_SYM(rel[i].r_info);
		uintptr_t a = o->base + rel[i].r_offset;
		const char *name;
		void *cur;
		int k;

		if (!si || (type != R_JUMP_SLOT && type != R_GLOB_DAT &&
			    (type != R_ABS64 || rel[i].r_addend))) {
			continue;
		}
		name = sym_name(o, si);
		if (!name || (k = find(name)) < 0 || !obj_writable(o, a)) {
			continue;
		}
		cur = __atomic_load_n((void **)a, __ATOMIC_ACQUIRE);
		if (cur == tab[k].hook || !cur) {
			continue; /* bound here already, or to nothing */
		}
		if (type == R_JUMP_SLOT && (uintptr_t)cur >= o->lo &&
		    (uintptr_t)cur < o->hi) {
			if (!defined[k]) {
				continue; /* a lazy stub of a name nobody
					   * defines */
			}
			cur = def_addr[k]; /* what it would bind, roughly */
		}
		if (cur && tab[k].real) {
			void *none = NULL;

			__atomic_compare_exchange_n(tab[k].real, &none, cur, 0,
						    __ATOMIC_ACQ_REL,
						    __ATOMIC_RELAXED);
		}
		store(o, (void **)a, tab[k].hook);
	}
}

struct pass {
	int grew;      /* a name got its first definition */
	int unsettled; /* an object not relocated yet */
	int bound;     /* an object looked at for the first time */
	int first;
	int same;      /* nothing loaded since the last settled pass */
	unsigned long long adds; /* the loader's count of objects added */
	size_t idx;    /* of the object the walk is at */
	size_t skip;   /* seen_prefix when the walk began; 0: none skipped */
	int broken;    /* the prefix's last object is another one */
	size_t contig; /* objects from the first on seen after this pass */
	const void *contig_phdr;
};

/* 1: object idx of a walk is in the prefix seen already; the walk's
 * callback returns at once. The first object is always looked at (its
 * counters), and the prefix's last is checked. */
static int skipped(struct pass *p, const struct dl_phdr_info *info)
{
	size_t i = p->idx++;

	if (!p->skip || i == 0 || i + 1 > p->skip) {
		return 0;
	}
	if (i + 1 < p->skip) {
		p->contig = i + 1;
		return 1;
	}
	if (info->dlpi_phdr != prefix_phdr) {
		p->broken = 1;
		return 0;
	}
	/* the objects before it, the prefix, may not have been passed to
	 * the callback (loader-walk.h) */
	p->contig = i;
	return 0;
}

struct prog_q {
	const char *name;
	int found;
};

static int prog_defines_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct prog_q *q = data;
	struct obj o;

	(void)size;
	q->found = obj_parse(info, &o) ? -1 : obj_defines(&o, q->name) != NULL;
	return 1; /* the first object is the program */
}

int pl_opt_program_defines(const char *name)
{
	struct prog_q q = { .name = name, .found = -1 };

	dl_iterate_phdr(prog_defines_cb, &q);
	return q.found;
}

static int is_self(const struct obj *o)
{
	return self_addr >= o->lo && self_addr < o->hi;
}

/* Pass 1: what the new objects define. */
static int note_defs(struct dl_phdr_info *info, size_t size, void *data)
{
	struct pass *p = data;
	struct obj o;
	size_t k;

	if (p->first) {
		p->first = 0;
		if (size >= offsetof(struct dl_phdr_info, dlpi_subs) +
				    sizeof(info->dlpi_subs) &&
		    info->dlpi_subs != seen_subs) {
			/* something was unloaded: its address may be
			 * another object's now */
			seen_subs = info->dlpi_subs;
			forget_seen();
			p->skip = 0; /* nothing is known seen any more */
			settled = 0;
		}
		if (size >= offsetof(struct dl_phdr_info, dlpi_adds) +
				    sizeof(info->dlpi_adds)) {
			p->adds = info->dlpi_adds;
			if (settled && info->dlpi_adds == settled_adds) {
				p->same = 1;
				return 1; /* ends the walk */
			}
		}
	}
	if (skipped(p, info)) {
		return 0;
	}
	if (p->broken) {
		return 1; /* walked again from the start */
	}
	if (was_seen((uintptr_t)info->dlpi_phdr) || obj_parse(info, &o) ||
	    is_self(&o)) {
		return 0;
	}
	for (k = 0; k < ntab; k++) {
		const ElfW(Sym) *s;

		if (defined[k] || !(s = obj_defines(&o, tab[k].name))) {
			continue;
		}
		defined[k] = 1;
		p->grew = 1;
		/* an IFUNC's value is its resolver, not the function */
		if (ELF64_ST_TYPE(s->st_info) == STT_FUNC) {
			def_addr[k] = (void *)(o.base + s->st_value);
		}
	}
	return 0;
}

/* Pass 2: bind the new objects' entries. */
static int bind_obj(struct dl_phdr_info *info, size_t size, void *data)
{
	struct pass *p = data;
	struct obj o;

	(void)size;
	if (skipped(p, info)) {
		return 0;
	}
	if (p->broken) {
		return 1; /* walked again from the start */
	}
	if (was_seen((uintptr_t)info->dlpi_phdr)) {
		goto seen_now;
	}
	if (obj_parse(info, &o) || is_self(&o)) {
		mark_seen((uintptr_t)info->dlpi_phdr);
		goto seen_now;
	}
	if (unsettled_runs < UNSETTLED_MAX && !obj_relocated(&o)) {
		p->unsettled = 1;
		return 0;
	}
	bind_rels(&o, o.jmprel, o.jmprelsz);
	bind_rels(&o, o.rela, o.relasz);
	mark_seen((uintptr_t)info->dlpi_phdr);
	p->bound = 1;
seen_now:
	/* the prefix grows while every object is in the set (which may
	 * not have grown: then the object is looked at each time) */
	if (p->contig + 1 == p->idx && was_seen((uintptr_t)info->dlpi_phdr)) {
		p->contig = p->idx;
		p->contig_phdr = info->dlpi_phdr;
	}
	return 0;
}

/* A walk with cb, skipping the prefix seen; again from the start, each
 * object looked at, when the prefix turned out to be another. */
static void walk(int (*cb)(struct dl_phdr_info *, size_t, void *),
		 struct pass *p)
{
	p->idx = 0;
	p->skip = seen_prefix;
	p->broken = 0;
	p->contig = 0;
	pl_dl_walk(cb, p, &p->idx, p->skip);
	if (p->broken) {
		seen_prefix = 0;
		p->idx = 0;
		p->skip = 0;
		p->broken = 0;
		p->contig = 0;
		p->first = 1;
		p->same = 0;
		pl_dl_walk(cb, p, &p->idx, 0);
	}
}

void pl_opt_rescan(void)
{
	struct pass p = { .first = 1 };

	if (!ntab || __atomic_exchange_n(&busy, 1, __ATOMIC_ACQUIRE)) {
		return; /* another thread's rescan does the work */
	}
	holding = 1;
	/* before looking: a dlopen from now on marks it again; 2 is a
	 * dlopen's own mark (interpose.c), 1 a rescan's to come back */
	if (__atomic_exchange_n(&pl_opt_dirty, 0, __ATOMIC_SEQ_CST) == 2) {
		idle_runs = 0;
	}
	walk(note_defs, &p);
	if (p.grew) {
		/* lazy stubs of objects bound before may get hooks now */
		forget_seen();
	}
	if (!p.same) {
		walk(bind_obj, &p);
		seen_prefix = p.contig;
		prefix_phdr = p.contig_phdr;
	}
	if (p.unsettled) {
		unsettled_runs++;
		settled = 0;
		__atomic_store_n(&pl_opt_dirty, 1, __ATOMIC_RELEASE);
	} else {
		unsettled_runs = 0;
		/* the count read before the walk: an object added during it
		 * makes it differ next time */
		if (!p.same && p.adds) {
			settled_adds = p.adds;
			settled = 1;
		}
	}
	if (p.bound || p.unsettled) {
		idle_runs = 0;
	} else if (++idle_runs < IDLE_MAX) {
		/* not listed yet, maybe: look again at the next entry */
		__atomic_store_n(&pl_opt_dirty, 1, __ATOMIC_RELEASE);
	}
	holding = 0;
	__atomic_store_n(&busy, 0, __ATOMIC_RELEASE);
}
