/* SPDX-License-Identifier: MIT */
/*
 * Offline symbolization (see symbolize.h).
 *
 * A stack arrives as return addresses of a process. Each is turned at once
 * into (module, file offset) through the process's mappings as the
 * recording knows them at that point (mappings come before the stacks that
 * use them, and an exec or a fork changes them later), and named only when
 * an output asks: the module's file is opened once (one libdw handle per
 * file, report/sym-dwarf.c) and each (module, offset) is looked up once,
 * whatever the number of stacks through it (the `resolved` cache). A file
 * whose build-id differs from the recorded one is not used (its symbols
 * would lie): its frames show as "file+0xoffset".
 *
 * Every recorded address is a return address (both sources put the
 * allocator's caller's return address first, see plugins/ebpf/README.md
 * and plugins/preload/interposer/stack-unwind.c): the call is the instruction
 * before it, so each is looked up at address - 1, which also keeps a call
 * that ends a function (noreturn) from being named after the next one.
 *
 * C++ names are demangled with libstdc++'s __cxa_demangle, looked up at
 * run time so that memtrack does not link libstdc++; without it the
 * mangled name is kept.
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef HAVE_LIBELF
#include <gelf.h>
#include <libelf.h>
#endif

#include <memtrack/event.h> /* MT_FRAME_TRUNCATED */

#include "array.h"
#include "log.h"
#include "report-map.h"
#include "stack-ids.h"
#include "sym-dwarf.h"
#include "sym-maps.h"
#include "symbolize.h"
#ifdef HAVE_LIBELF
#include "elf-build-id.h"
#include "open-regular.h"
#endif

#define META_HDR 16
/* more is damage, not a recording (common/stack-ids.h) */
#define MAX_STACK_ID (MT_STACK_ID_MAX + 1)
#define MAX_FRAMES 127
#define MAX_INLINED 16 /* functions named at one address */

/* MTKM record types (plugins/ebpf/stacks.c) */
#define MAPS_EXEC 1
#define MAPS_MAP 2
#define MAPS_FORK 3

struct load {
	uint64_t off, filesz, vaddr;
};

struct module {
	char *path;
	unsigned char bid[32];
	size_t bidlen;
	dev_t dev;    /* the file path names here, when it exists */
	ino_t ino;
	bool has_ino;
	bool loaded, usable;
	int fd;
#ifdef HAVE_LIBELF
	Elf *elf;
#endif
	struct mt_dw *dw;
	struct load *loads;
	size_t nloads;
};

struct proc {
	int32_t pid;
	struct mt_maps maps; /* shared with its forks (sym-maps.h) */
};

struct frame {
	int32_t mod;  /* -1: the address is outside every known mapping */
	uint64_t val; /* file offset in mod, or the address */
	uint64_t addr, map_start, map_end, map_off;
};

/* What one (module, offset) names, shared by every stack through it. */
struct resolved {
	size_t n;
	struct mt_sym_func *funcs;
	uint32_t same; /* the first entry (index) naming exactly the same */
};

struct stack {
	uint32_t id;
	uint32_t n;
	uint32_t canon; /* mt_sym_canon(), 0: not computed */
	struct frame *f;
	struct mt_sym_loc *locs; /* resolved, lazily */
};

struct mt_sym {
	struct module *mods;
	size_t nmods, mods_cap;
	struct mt_idx_map mod_idx;  /* hash of path and build-id: index */
	struct mt_idx_map file_idx; /* hash of device, inode, build-id */
	struct mt_idx_map proc_idx; /* pid: index */
	uint64_t seed;              /* of the module hash */
	struct proc *procs;
	size_t nprocs, procs_cap;
	size_t last_proc;
	/* in arrival order; stack_idx maps an id to its index, so memory
	 * follows the stacks there are, not the ids they carry */
	struct stack *stacks;
	size_t stacks_cap, nstacks;
	struct mt_idx_map stack_idx;
	bool warned_damage;
	size_t ndamaged; /* payloads left out */
	/* (module, offset) -> resolved */
	struct mt_idx_map res_idx;
	struct resolved **res;
	size_t nres, res_cap;
	struct resolved unnamed; /* nothing names it */
	struct mt_idx_map same_idx; /* content hash -> first such entry */
	bool canon_done;
	char *(*demangle)(const char *, char *, size_t *, int *);
	void *cxx;
	bool demangle_tried;
};

struct mt_sym *mt_sym_new(void)
{
	struct mt_sym *s;

#ifdef HAVE_LIBELF
	elf_version(EV_CURRENT);
#endif
	s = calloc(1, sizeof(*s));
	if (s) {
		s->seed = mt_map_seed();
	}
	return s;
}

void mt_sym_free(struct mt_sym *s)
{
	size_t i, j;

	if (!s) {
		return;
	}
	for (i = 0; i < s->nmods; i++) {
		struct module *m = &s->mods[i];

		mt_dw_close(m->dw);
		free(m->loads);
#ifdef HAVE_LIBELF
		if (m->elf) {
			elf_end(m->elf);
		}
#endif
		if (m->loaded && m->fd >= 0) {
			close(m->fd);
		}
		free(m->path);
	}
	free(s->mods);
	free(s->mod_idx.slots);
	free(s->file_idx.slots);
	free(s->proc_idx.slots);
	for (i = 0; i < s->nprocs; i++) {
		mt_maps_free(&s->procs[i].maps);
	}
	free(s->procs);
	for (i = 0; i < s->nstacks; i++) {
		free(s->stacks[i].locs);
		free(s->stacks[i].f);
	}
	free(s->stacks);
	for (i = 0; i < s->nres; i++) {
		struct resolved *r = s->res[i];

		for (j = 0; j < r->n; j++) {
			free((char *)r->funcs[j].name);
			free((char *)r->funcs[j].file);
		}
		free(r->funcs);
		free(r);
	}
	free(s->res);
	free(s->res_idx.slots);
	free(s->same_idx.slots);
	free(s->stack_idx.slots);
	if (s->cxx) {
		dlclose(s->cxx);
	}
	free(s);
}

size_t mt_sym_damaged(const struct mt_sym *s)
{
	return s ? s->ndamaged : 0;
}

size_t mt_sym_nstacks(const struct mt_sym *s)
{
	return s ? s->nstacks : 0;
}

static uint32_t checksum(const unsigned char *p, size_t n)
{
	uint32_t h = 2166136261u;

	while (n--) {
		h = (h ^ *p++) * 16777619u;
	}
	return h;
}

static uint32_t rd32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static uint64_t rd64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static struct proc *proc_get(struct mt_sym *s, int32_t pid, bool add)
{
	struct proc *p;
	int64_t i;

	if (s->last_proc < s->nprocs && s->procs[s->last_proc].pid == pid) {
		return &s->procs[s->last_proc];
	}
	i = mt_idx_get(&s->proc_idx, (uint32_t)pid);
	if (i >= 0) {
		s->last_proc = (size_t)i;
		return &s->procs[i];
	}
	if (!add) {
		return NULL;
	}
	p = mt_array_grow(s->procs, &s->procs_cap, s->nprocs + 1, sizeof(*p));
	if (!p) {
		return NULL;
	}
	s->procs = p;
	if (mt_idx_put(&s->proc_idx, (uint32_t)pid, (uint32_t)s->nprocs) < 0) {
		return NULL;
	}
	p = &s->procs[s->nprocs];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	s->last_proc = s->nprocs++;
	return p;
}

static int64_t module_get(struct mt_sym *s, const char *path, size_t plen,
			  const unsigned char *bid, size_t bidlen)
{
	struct module *m;
	uint64_t key, fkey = 0;
	bool have_file = false;
	struct stat st;
	char *dup;
	int64_t i;

	if (bidlen > sizeof(m->bid)) {
		bidlen = sizeof(m->bid);
	}
	/* a hash collision takes the next key: keys stay unique */
	key = mt_map_str_hash(mt_map_str_hash(s->seed, bid, bidlen), path,
			      plen);
	for (; (i = mt_idx_get(&s->mod_idx, key)) >= 0; key++) {
		m = &s->mods[i];
		if (strnlen(m->path, plen + 1) == plen &&
		    !memcmp(m->path, path, plen) && m->bidlen == bidlen &&
		    !memcmp(m->bid, bid, bidlen)) {
			return i;
		}
	}
	dup = strndup(path, plen);
	if (!dup) {
		return -ENOMEM;
	}
	/* the same file under another spelling ("//lib/x", "/lib/./x", a
	 * link) is the same module, loaded once: 2000 spellings of libc
	 * took 737 MB and 13 s */
	if (!stat(dup, &st) && S_ISREG(st.st_mode)) {
		uint64_t id[2] = { st.st_dev, st.st_ino };

		fkey = mt_map_str_hash(mt_map_str_hash(~s->seed, bid, bidlen),
				       id, sizeof(id));
		for (; (i = mt_idx_get(&s->file_idx, fkey)) >= 0; fkey++) {
			m = &s->mods[i];
			if (m->dev == st.st_dev && m->ino == st.st_ino &&
			    m->bidlen == bidlen &&
			    !memcmp(m->bid, bid, bidlen)) {
				free(dup);
				return i;
			}
		}
		have_file = true;
	}
	m = mt_array_grow(s->mods, &s->mods_cap, s->nmods + 1, sizeof(*m));
	if (m) {
		s->mods = m;
	}
	if (!m || mt_idx_put(&s->mod_idx, key, (uint32_t)s->nmods) < 0 ||
	    (have_file &&
	     mt_idx_put(&s->file_idx, fkey, (uint32_t)s->nmods) < 0)) {
		free(dup);
		return -ENOMEM;
	}
	m = &s->mods[s->nmods];
	memset(m, 0, sizeof(*m));
	m->fd = -1;
	m->path = dup;
	if (have_file) {
		m->dev = st.st_dev;
		m->ino = st.st_ino;
		m->has_ino = true;
	}
	memcpy(m->bid, bid, bidlen);
	m->bidlen = bidlen;
	return (int64_t)s->nmods++;
}

static void damaged(struct mt_sym *s, const char *name, const char *what)
{
	s->ndamaged++;
	if (!s->warned_damage) {
		mt_warn("%s: damaged %s metadata ignored: stacks may show unnamed or missing frames",
			name, what);
		s->warned_damage = true;
	}
}

/* Check an MTKT/MTKM header; returns the record count or -1. */
static int64_t check_header(const unsigned char *p, size_t len)
{
	if (len < META_HDR || rd32(p + 4) != 1 ||
	    rd32(p + 12) != checksum(p + META_HDR, len - META_HDR)) {
		return -1;
	}
	return rd32(p + 8);
}

static int maps_meta(struct mt_sym *s, const unsigned char *p, size_t len,
		     const char *name)
{
	int64_t count = check_header(p, len);
	size_t at = META_HDR;

	if (count < 0) {
		damaged(s, name, "mappings");
		return 0;
	}
	while (count-- > 0) {
		struct proc *pr, *par;
		uint32_t type;

		if (at + 5 > len) {
			goto bad;
		}
		type = p[at];
		pr = proc_get(s, (int32_t)rd32(p + at + 1), true);
		if (!pr) {
			return -ENOMEM;
		}
		at += 5;
		switch (type) {
		case MAPS_EXEC:
			mt_maps_clear(&pr->maps);
			break;
		case MAPS_FORK: {
			int32_t child = pr->pid;

			if (at + 4 > len) {
				goto bad;
			}
			par = proc_get(s, (int32_t)rd32(p + at), false);
			at += 4;
			pr = proc_get(s, child, false);
			if (!par) {
				mt_maps_clear(&pr->maps);
				break;
			}
			/* shared, not copied: a fork costs no memory */
			if (mt_maps_copy(&pr->maps, &par->maps) < 0) {
				return -ENOMEM;
			}
			break;
		}
		case MAPS_MAP: {
			uint64_t start, end, off;
			size_t bidlen, plen;
			const unsigned char *bid;
			struct mt_map m;
			int64_t mod;

			if (at + 25 > len) {
				goto bad;
			}
			start = rd64(p + at);
			end = rd64(p + at + 8);
			off = rd64(p + at + 16);
			bidlen = p[at + 24];
			at += 25;
			if (at + bidlen + 2 > len) {
				goto bad;
			}
			bid = p + at;
			at += bidlen;
			plen = (size_t)p[at] | (size_t)p[at + 1] << 8;
			at += 2;
			if (at + plen > len || end <= start) {
				goto bad;
			}
			mod = module_get(s, (const char *)p + at, plen, bid,
					 bidlen);
			at += plen;
			if (mod < 0) {
				return (int)mod;
			}
			m = (struct mt_map){ start, end, off, (uint32_t)mod };
			if (mt_maps_add(&pr->maps, &m) < 0) {
				return -ENOMEM;
			}
			break;
		}
		default:
			goto bad;
		}
	}
	return 0;
bad:
	damaged(s, name, "mappings");
	return 0;
}

static struct frame locate(struct mt_sym *s, struct proc *pr, uint64_t addr)
{
	struct frame f = { -1, addr, addr, 0, 0, 0 };
	const struct mt_map *m;

	if (!pr) {
		return f;
	}
	/* the latest mapping wins: an address reused after munmap */
	m = mt_maps_find(&pr->maps, addr);
	if (m) {
		f.mod = (int32_t)m->mod;
		f.val = addr - m->start + m->off;
		f.map_start = m->start;
		f.map_end = m->end;
		f.map_off = m->off;
	}
	(void)s;
	return f;
}

static int stacks_meta(struct mt_sym *s, const unsigned char *p, size_t len,
		       const char *name)
{
	int64_t count = check_header(p, len);
	size_t at = META_HDR;

	if (count < 0) {
		damaged(s, name, "stack table");
		return 0;
	}
	while (count-- > 0) {
		uint32_t id, pid, n, i;
		struct stack *st;
		struct proc *pr;

		if (at + 12 > len) {
			goto bad;
		}
		id = rd32(p + at);
		pid = rd32(p + at + 4);
		n = rd32(p + at + 8);
		at += 12;
		if (!id || id >= MAX_STACK_ID || n > MAX_FRAMES ||
		    at + (size_t)n * 8 > len) {
			goto bad;
		}
		if (mt_idx_get(&s->stack_idx, id) >= 0) {
			at += (size_t)n * 8; /* sent twice: the first holds */
			continue;
		}
		st = mt_array_grow(s->stacks, &s->stacks_cap, s->nstacks + 1,
				   sizeof(*st));
		if (!st) {
			return -ENOMEM;
		}
		s->stacks = st;
		st = &s->stacks[s->nstacks];
		memset(st, 0, sizeof(*st));
		st->id = id;
		st->f = calloc(n ? n : 1, sizeof(*st->f));
		if (!st->f ||
		    mt_idx_put(&s->stack_idx, id, (uint32_t)s->nstacks) < 0) {
			free(st->f);
			st->f = NULL;
			return -ENOMEM;
		}
		pr = proc_get(s, (int32_t)pid, false);
		for (i = 0; i < n; i++) {
			st->f[i] = locate(s, pr, rd64(p + at));
			at += 8;
		}
		st->n = n;
		s->nstacks++;
	}
	return 0;
bad:
	damaged(s, name, "stack table");
	return 0;
}

int mt_sym_meta(struct mt_sym *s, const void *data, size_t len,
		const char *name)
{
	if (len < 4) {
		return 0;
	}
	if (!memcmp(data, "MTKM", 4)) {
		return maps_meta(s, data, len, name);
	}
	if (!memcmp(data, "MTKT", 4)) {
		return stacks_meta(s, data, len, name);
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Names                                                               */
/* ------------------------------------------------------------------ */

#ifdef HAVE_LIBELF
static void module_load(struct module *m)
{
	unsigned char bid[32];
	size_t phnum, i, cap = 0;

	m->loaded = true;
	/* a recording is input, not trust: a FIFO named there must not
	 * hang the report */
	m->fd = mt_open_regular(m->path);
	if (m->fd < 0) {
		mt_warn("%s: %s: its frames are shown as offsets", m->path,
			m->fd == -EINVAL ? "not a regular file" :
					   strerror(-m->fd));
		m->fd = -1;
		return;
	}
	m->elf = elf_begin(m->fd, ELF_C_READ_MMAP, NULL);
	if (!m->elf || elf_kind(m->elf) != ELF_K_ELF ||
	    elf_getphdrnum(m->elf, &phnum)) {
		goto unusable;
	}
	if (m->bidlen && (mt_elf_build_id(m->elf, bid, sizeof(bid)) !=
				  m->bidlen ||
			  memcmp(bid, m->bid, m->bidlen))) {
		mt_warn("%s: not the file that was recorded (build-id differs): its frames are shown as offsets",
			m->path);
		goto unusable;
	}
	for (i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		struct load *l;

		if (!gelf_getphdr(m->elf, i, &ph) || ph.p_type != PT_LOAD) {
			continue;
		}
		l = mt_array_grow(m->loads, &cap, m->nloads + 1, sizeof(*l));
		if (!l) {
			return;
		}
		m->loads = l;
		m->loads[m->nloads++] = (struct load){ ph.p_offset,
						       ph.p_filesz,
						       ph.p_vaddr };
	}
	/* libdw reads the file through the descriptor checked above */
	m->dw = mt_dw_open(m->path, m->fd);
	if (!m->dw) {
		goto unusable;
	}
	m->usable = true;
	return;

unusable:
	/* nothing to keep: a recording naming one file under 5000
	 * build-ids must not hold 5000 mappings of it */
	if (m->elf) {
		elf_end(m->elf);
		m->elf = NULL;
	}
	close(m->fd);
	m->fd = -1;
}
#else
static void module_load(struct module *m)
{
	m->loaded = true;
}
#endif

/* The ELF virtual address of file offset off of m; false: not loaded. */
static bool module_vaddr(struct module *m, uint64_t off, uint64_t *va)
{
	size_t i;

	if (!m->loaded) {
		module_load(m);
	}
	if (!m->usable) {
		return false;
	}
	for (i = 0; i < m->nloads; i++) {
		const struct load *l = &m->loads[i];

		if (off >= l->off && off < l->off + l->filesz) {
			*va = off - l->off + l->vaddr;
			return true;
		}
	}
	return false;
}

/* name, demangled when it is a C++ name, malloc'd (NULL: no memory) */
static char *demangled(struct mt_sym *s, char *name)
{
	char *d;
	int status = -1;

	if (strncmp(name, "_Z", 2)) {
		return name;
	}
	if (!s->demangle_tried) {
		s->demangle_tried = true;
		s->cxx = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
		if (s->cxx) {
			*(void **)&s->demangle =
				dlsym(s->cxx, "__cxa_demangle");
		}
	}
	if (!s->demangle) {
		return name;
	}
	d = s->demangle(name, NULL, NULL, &status);
	if (status != 0 || !d) {
		free(d);
		return name;
	}
	free(name);
	return d;
}

/* What offset off of module mod names (frames: the address - 1). */
static struct resolved *resolve_new(struct mt_sym *s, int32_t mod,
				    uint64_t off)
{
	struct mt_dw_func f[MAX_INLINED];
	struct resolved *r;
	uint64_t va;
	size_t n = 0, i;

	if (mod >= 0 && module_vaddr(&s->mods[mod], off ? off - 1 : 0, &va)) {
		n = mt_dw_lookup(s->mods[mod].dw, va, f, MAX_INLINED);
	}
	r = calloc(1, sizeof(*r));
	if (r && n) {
		r->funcs = calloc(n, sizeof(*r->funcs));
	}
	if (!r || (n && !r->funcs)) {
		for (i = 0; i < n; i++) {
			free(f[i].name);
			free(f[i].file);
		}
		free(r);
		return NULL;
	}
	for (i = 0; i < n; i++) {
		r->funcs[i] = (struct mt_sym_func){ demangled(s, f[i].name),
						    f[i].file, f[i].line,
						    f[i].inlined };
	}
	r->n = n;
	return r;
}

static uint64_t str_hash(uint64_t h, const char *p)
{
	for (; p && *p; p++) {
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	}
	return (h ^ 0xff) * 1099511628211ull;
}

static bool same_funcs(const struct resolved *a, const struct resolved *b)
{
	size_t i;

	if (a->n != b->n) {
		return false;
	}
	for (i = 0; i < a->n; i++) {
		const struct mt_sym_func *x = &a->funcs[i], *y = &b->funcs[i];

		if (x->line != y->line || x->inlined != y->inlined ||
		    strcmp(x->name, y->name) || !x->file != !y->file ||
		    (x->file && strcmp(x->file, y->file))) {
			return false;
		}
	}
	return true;
}

/* r->same: the first entry that names exactly what r names (so shows
 * alike), found by a hash of the names, files and lines. */
static void note_same(struct mt_sym *s, struct resolved *r)
{
	uint64_t h = 14695981039346656037ull;
	size_t i;
	int64_t j;

	if (!r->n) {
		return; /* shown by its module and offset: like no other */
	}
	for (i = 0; i < r->n; i++) {
		h = str_hash(h, r->funcs[i].name);
		h = str_hash(h, r->funcs[i].file);
		h = (h ^ r->funcs[i].line ^ (uint64_t)r->funcs[i].inlined << 32) *
		    1099511628211ull;
	}
	for (; (j = mt_idx_get(&s->same_idx, h)) >= 0; h++) {
		if (same_funcs(s->res[j], r)) {
			r->same = s->res[j]->same;
			return;
		}
	}
	/* no memory: r stays apart, its stacks unmerged */
	(void)mt_idx_put(&s->same_idx, h, r->same);
}

static const struct resolved *resolve(struct mt_sym *s, const struct frame *fr)
{
	struct resolved *r, **rs;
	uint64_t key;
	int64_t i;

	if (fr->mod < 0) {
		return &s->unnamed;
	}
	/* a module index and an offset that fit the key are the cache's;
	 * anything else is damage (no file is 16 TiB), left unnamed */
	key = (uint64_t)fr->mod << 44 | fr->val;
	if ((uint64_t)fr->mod >= (1u << 20) || fr->val >= (1ull << 44)) {
		return &s->unnamed;
	}
	i = mt_idx_get(&s->res_idx, key);
	if (i >= 0) {
		return s->res[i];
	}
	r = resolve_new(s, fr->mod, fr->val);
	if (!r) {
		return NULL;
	}
	rs = mt_array_grow(s->res, &s->res_cap, s->nres + 1, sizeof(*rs));
	if (!rs || mt_idx_put(&s->res_idx, key, (uint32_t)s->nres) < 0) {
		if (rs) {
			s->res = rs;
		}
		free(r->funcs);
		free(r);
		return NULL;
	}
	s->res = rs;
	r->same = (uint32_t)s->nres;
	s->res[s->nres++] = r;
	note_same(s, r);
	return r;
}

/* The stack of id; NULL: not in the table (or empty). */
static struct stack *stack_of(struct mt_sym *s, uint32_t id)
{
	int64_t at = s ? mt_idx_get(&s->stack_idx, id) : -1;

	return at >= 0 && s->stacks[at].n ? &s->stacks[at] : NULL;
}

size_t mt_sym_stack(struct mt_sym *s, uint32_t id,
		    const struct mt_sym_loc **locs)
{
	struct stack *st = stack_of(s, id);
	size_t i;

	if (!st) {
		return 0;
	}
	if (!st->locs) {
		struct mt_sym_loc *l = calloc(st->n, sizeof(*l));

		if (!l) {
			return 0;
		}
		for (i = 0; i < st->n; i++) {
			const struct frame *f = &st->f[i];
			const struct resolved *r = resolve(s, f);

			l[i] = (struct mt_sym_loc){ f->mod, f->addr, f->val,
						    f->map_start, f->map_end,
						    f->map_off, r ? r->n : 0,
						    r ? r->funcs : NULL };
		}
		st->locs = l;
	}
	*locs = st->locs;
	return st->n;
}

const char *mt_sym_module(const struct mt_sym *s, int32_t mod,
			  const unsigned char **bid, size_t *bidlen)
{
	if (!s || mod < 0 || (size_t)mod >= s->nmods) {
		*bid = NULL;
		*bidlen = 0;
		return NULL;
	}
	*bid = s->mods[mod].bid;
	*bidlen = s->mods[mod].bidlen;
	return s->mods[mod].path;
}

/* "function (file.c:12)": the file's last component, as a debugger's
 * backtrace shows it */
static int func_shown(const struct mt_sym_func *f, char *buf, size_t len)
{
	const char *file = f->file ? strrchr(f->file, '/') : NULL;
	const char *tag = f->inlined ? " [inlined]" : "";

	file = file ? file + 1 : f->file;
	if (file && f->line) {
		return snprintf(buf, len, "%s (%s:%u)%s", f->name, file,
				f->line, tag);
	}
	if (file) {
		return snprintf(buf, len, "%s (%s)%s", f->name, file, tag);
	}
	return snprintf(buf, len, "%s%s", f->name, tag);
}

static int loc_unnamed(const struct mt_sym *s, const struct mt_sym_loc *l,
		       char *buf, size_t len)
{
	if (l->mod >= 0) {
		const char *path = s->mods[l->mod].path;
		const char *base = strrchr(path, '/');

		return snprintf(buf, len, "%s+0x%" PRIx64,
				base ? base + 1 : path, l->off);
	}
	if (l->addr == MT_FRAME_TRUNCATED) {
		/* the source's mark: the walk stopped short of the root */
		return snprintf(buf, len, "[truncated]");
	}
	return snprintf(buf, len, "0x%" PRIx64, l->addr);
}

size_t mt_sym_frame_name(const struct mt_sym *s, const struct mt_sym_loc *l,
			 size_t k, char *buf, size_t len)
{
	int n = l->nfuncs ? func_shown(&l->funcs[k], buf, len) :
			    loc_unnamed(s, l, buf, len);

	return n > 0 ? (size_t)n : 0;
}

size_t mt_sym_frames(struct mt_sym *s, uint32_t id, char *names, size_t len,
		     size_t max)
{
	const struct mt_sym_loc *locs;
	size_t nl = mt_sym_stack(s, id, &locs), total = 0, i, k, at;

	if (!nl || !len || !max) {
		return 0;
	}
	for (i = 0; i < nl; i++) {
		total += locs[i].nfuncs ? locs[i].nfuncs : 1;
	}
	/* root first; when the stack must be cut, the innermost frames are
	 * the ones kept: skip total - max from the root end */
	at = 0;
	for (i = nl; i-- > 0;) {
		const struct mt_sym_loc *l = &locs[i];
		size_t nf = l->nfuncs ? l->nfuncs : 1;

		for (k = nf; k-- > 0;) {
			if (total > max) {
				total--;
				continue;
			}
			mt_sym_frame_name(s, l, k, names + at * len, len);
			at++;
		}
	}
	return at;
}

/*
 * What a stack shows, as numbers: per frame, the first resolved entry
 * naming the same functions, files and lines (note_same()); a frame
 * nothing names is shown by its module and offset, or its address. Two
 * stacks show alike when their keys are equal. Into key[2 * n]; returns
 * its FNV-1a hash.
 */
static uint64_t stack_key(struct mt_sym *s, const struct stack *st,
			  uint64_t *key)
{
	uint64_t h = 14695981039346656037ull;
	size_t i, k;

	for (i = 0; i < st->n; i++) {
		const struct frame *f = &st->f[i];
		const struct resolved *r = resolve(s, f);

		if (r && r->n) {
			key[2 * i] = 1;
			key[2 * i + 1] = r->same;
		} else if (f->mod >= 0) {
			key[2 * i] = 2 | (uint64_t)(uint32_t)f->mod << 8;
			key[2 * i + 1] = f->val;
		} else {
			key[2 * i] = 3;
			key[2 * i + 1] = f->addr;
		}
		for (k = 2 * i; k < 2 * i + 2; k++) {
			h = (h ^ key[k]) * 1099511628211ull;
		}
	}
	return h;
}

static void canon_all(struct mt_sym *s)
{
	struct mt_idx_map seen = { 0 };
	uint64_t *a = malloc(4 * MAX_FRAMES * sizeof(*a));
	uint64_t *b = a ? a + 2 * MAX_FRAMES : NULL;
	size_t i;

	s->canon_done = true;
	if (!a) {
		return;
	}
	for (i = 0; i < s->nstacks; i++) {
		struct stack *st = &s->stacks[i];
		uint64_t h;
		int64_t other;

		if (!st->n) {
			continue;
		}
		st->canon = st->id;
		h = stack_key(s, st, a);
		/* open chain on the hash: a collision (checked by
		 * comparing the keys) moves to the next slot */
		for (; (other = mt_idx_get(&seen, h)) >= 0; h++) {
			struct stack *o = &s->stacks[other];

			(void)stack_key(s, o, b);
			if (o->n == st->n &&
			    !memcmp(a, b, 2 * st->n * sizeof(*a))) {
				st->canon = o->id;
				break;
			}
		}
		if (other < 0 && mt_idx_put(&seen, h, (uint32_t)i) < 0) {
			break; /* no memory: the rest stay apart */
		}
	}
	free(seen.slots);
	free(a);
}

uint32_t mt_sym_canon(struct mt_sym *s, uint32_t id)
{
	struct stack *st = stack_of(s, id);

	if (!st) {
		return id;
	}
	if (!s->canon_done) {
		canon_all(s);
	}
	return st->canon ? st->canon : id;
}
