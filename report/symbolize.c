/* SPDX-License-Identifier: MIT */
/*
 * Offline symbolization (see symbolize.h).
 *
 * A stack arrives as return addresses of a process. Each is turned at once
 * into (module, file offset) through the process's mappings as the
 * recording knows them at that point (mappings come before the stacks that
 * use them, and an exec or a fork changes them later), and named only when
 * an output asks: the module's ELF file is opened once, its function
 * symbols (.symtab and .dynsym) sorted once, and each name demangled once.
 * A file whose build-id differs from the recorded one is not used (its
 * symbols would lie): its frames show as "file+0xoffset".
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

#include "log.h"
#include "report-map.h"
#include "sym-maps.h"
#include "symbolize.h"
#ifdef HAVE_LIBELF
#include "array.h"
#include "elf-build-id.h"
#include "elf-symbols.h"
#include "open-regular.h"
#endif

#define META_HDR 16
#define MAX_STACK_ID (1u << 26) /* more is damage, not a recording */
#define MAX_FRAMES 127

/* MTKM record types (plugins/ebpf/stacks.c) */
#define MAPS_EXEC 1
#define MAPS_MAP 2
#define MAPS_FORK 3

struct fsym {
	uint64_t addr, size;
	const char *name; /* in the ELF string table */
	char *shown;      /* demangled, lazily */
};

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
	struct fsym *syms;
	size_t nsyms, syms_cap;
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
};

struct stack {
	uint32_t n;
	struct frame *f;
	char **names; /* resolved, lazily */
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

		for (j = 0; j < m->nsyms; j++) {
			free(m->syms[j].shown);
		}
		free(m->syms);
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
		if (s->stacks[i].names) {
			for (j = 0; j < s->stacks[i].n; j++) {
				free(s->stacks[i].names[j]);
			}
			free(s->stacks[i].names);
		}
		free(s->stacks[i].f);
	}
	free(s->stacks);
	free(s->stack_idx.slots);
	if (s->cxx) {
		dlclose(s->cxx);
	}
	free(s);
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
	struct frame f = { -1, addr };
	const struct mt_map *m;

	if (!pr) {
		return f;
	}
	/* the latest mapping wins: an address reused after munmap */
	m = mt_maps_find(&pr->maps, addr);
	if (m) {
		f.mod = (int32_t)m->mod;
		f.val = addr - m->start + m->off;
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

static int fsym_cmp(const void *a, const void *b)
{
	const struct fsym *x = a, *y = b;

	if (x->addr != y->addr) {
		return x->addr < y->addr ? -1 : 1;
	}
	/* a sized symbol before its unsized aliases */
	return (x->size == 0) - (y->size == 0);
}

#ifdef HAVE_LIBELF

/* One function symbol of m's file, named. */
static int module_sym(const GElf_Sym *sym, const char *name, void *arg)
{
	struct module *m = arg;
	struct fsym *f;

	if (!*name) {
		return 0;
	}
	f = mt_array_grow(m->syms, &m->syms_cap, m->nsyms + 1, sizeof(*f));
	if (!f) {
		return -ENOMEM;
	}
	m->syms = f;
	m->syms[m->nsyms++] = (struct fsym){ sym->st_value, sym->st_size,
					     name, NULL };
	return 0;
}

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
	/* out of memory: the symbols read so far still name frames */
	(void)mt_elf_for_each_func(m->elf, module_sym, m);
	if (m->nsyms) {
		/* a file without function symbols: syms is NULL */
		qsort(m->syms, m->nsyms, sizeof(*m->syms), fsym_cmp);
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

/* The function containing file offset off of m, or NULL. */
static struct fsym *module_find(struct module *m, uint64_t off)
{
	uint64_t va = 0;
	size_t i, lo, hi;
	bool found = false;

	if (!m->loaded) {
		module_load(m);
	}
	if (!m->usable) {
		return NULL;
	}
	for (i = 0; i < m->nloads; i++) {
		const struct load *l = &m->loads[i];

		if (off >= l->off && off < l->off + l->filesz) {
			va = off - l->off + l->vaddr;
			found = true;
			break;
		}
	}
	if (!found || !m->nsyms || va < m->syms[0].addr) {
		return NULL;
	}
	/* the last symbol starting at or below va */
	lo = 0;
	hi = m->nsyms;
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;

		if (m->syms[mid].addr <= va) {
			lo = mid;
		} else {
			hi = mid;
		}
	}
	while (lo > 0 && m->syms[lo - 1].addr == m->syms[lo].addr) {
		lo--; /* the sized one of aliases */
	}
	if (m->syms[lo].size && va >= m->syms[lo].addr + m->syms[lo].size) {
		return NULL;
	}
	return &m->syms[lo];
}

static const char *shown_name(struct mt_sym *s, struct fsym *f)
{
	if (f->shown) {
		return f->shown;
	}
	if (!strncmp(f->name, "_Z", 2)) {
		if (!s->demangle_tried) {
			s->demangle_tried = true;
			s->cxx = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
			if (s->cxx) {
				*(void **)&s->demangle =
					dlsym(s->cxx, "__cxa_demangle");
			}
		}
		if (s->demangle) {
			int status = -1;

			f->shown = s->demangle(f->name, NULL, NULL, &status);
			if (status != 0) {
				free(f->shown);
				f->shown = NULL;
			}
		}
	}
	if (!f->shown) {
		f->shown = strdup(f->name);
	}
	return f->shown ? f->shown : f->name;
}

static char *frame_name(struct mt_sym *s, const struct frame *fr)
{
	char buf[512];

	if (fr->mod >= 0) {
		struct module *m = &s->mods[fr->mod];
		/* a return address: the call is the byte before it */
		struct fsym *f = module_find(m, fr->val ? fr->val - 1 : 0);
		const char *base;

		if (f) {
			return strdup(shown_name(s, f));
		}
		base = strrchr(m->path, '/');
		snprintf(buf, sizeof(buf), "%s+0x%" PRIx64,
			 base ? base + 1 : m->path, fr->val);
	} else {
		snprintf(buf, sizeof(buf), "0x%" PRIx64, fr->val);
	}
	return strdup(buf);
}

size_t mt_sym_frames(struct mt_sym *s, uint32_t id, char *names, size_t len,
		     size_t max)
{
	struct stack *st;
	int64_t at;
	size_t i, n;

	if (!s || !len || (at = mt_idx_get(&s->stack_idx, id)) < 0 ||
	    !s->stacks[at].n) {
		return 0;
	}
	st = &s->stacks[at];
	if (!st->names) {
		st->names = calloc(st->n, sizeof(*st->names));
		if (!st->names) {
			return 0;
		}
		for (i = 0; i < st->n; i++) {
			st->names[i] = frame_name(s, &st->f[i]);
		}
	}
	/* the stack is innermost first; the output root first, and when it
	 * must be cut, the innermost frames are the ones kept */
	n = st->n < max ? st->n : max;
	for (i = 0; i < n; i++) {
		const char *nm = st->names[n - 1 - i];

		snprintf(names + i * len, len, "%s", nm ? nm : "?");
	}
	return n;
}
