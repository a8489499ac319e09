/* SPDX-License-Identifier: MIT */
/*
 * plugins/ebpf/attach.c - find the allocator entry points of the files a
 * traced process maps and attach the uprobes.
 *
 * A process stopped by BPF (it exec'd or mapped an executable file nobody
 * handled yet) is scanned through /proc/PID/maps. Each executable file is
 * handled once, identified by (dev, inode): its ELF symbol tables (.symtab
 * and .dynsym, so static executables and statically linked allocators are
 * found too) are matched against the table below, and every entry point
 * gets a uprobe (and a uretprobe for allocations) on the file: trapping in
 * the traced tree only (scope.c), or for every process (pid -1) where that
 * cannot be; the BPF programs filter by tracked tgid either way. The file is
 * opened through /proc/PID/map_files/, which reaches it even in another
 * mount namespace or after it was deleted.
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <link.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <memtrack/event.h>

#include "memtrack.h"
#include "memtrack.skel.h"
#include "ebpf.h"
#include "key-index.h"
#include "array.h"
#include "elf-symbols.h"
#include "interposer-path.h"
#include "kernel-dev.h"

struct alloc_sym {
	const char *name;
	uint64_t cookie;
};

#define M(n, shape) { n, MT_COOKIE(MT_EV_MALLOC, MT_SH_##shape) }
#define C(n, shape) { n, MT_COOKIE(MT_EV_CALLOC, MT_SH_##shape) }
#define R(n, shape) { n, MT_COOKIE(MT_EV_REALLOC, MT_SH_##shape) }
#define A(n, shape) { n, MT_COOKIE(MT_EV_ALIGNED_ALLOC, MT_SH_##shape) }
#define F(n) { n, MT_COOKIE(MT_EV_FREE, MT_SH_FREE) }
/* C++ operator new: no uretprobe (see MT_CK_NORET) */
#define N(n, kind) { n, MT_COOKIE(MT_EV_##kind, MT_SH_SIZE1) | MT_CK_NORET }
#define X(n, shape) { n, MT_COOKIE(MT_KIND_DERIVED, MT_SH_##shape) }

/* The C allocator API: glibc, and the same names in jemalloc (plain, je_
 * and _rjem_ prefixed), mimalloc and tcmalloc overrides. */
#define C_API(p)                                                       \
	M(p "malloc", SIZE1), C(p "calloc", MUL12),                     \
	R(p "realloc", REALLOC), R(p "reallocarray", REALLOCARRAY),      \
	F(p "free"), F(p "cfree"), F(p "free_sized"),                   \
	F(p "free_aligned_sized"),                                      \
	A(p "aligned_alloc", SIZE2), A(p "memalign", SIZE2),            \
	A(p "posix_memalign", POSIX_MEMALIGN),                          \
	A(p "valloc", SIZE1), A(p "pvalloc", SIZE1)

#define JE_API(p)                                                      \
	X(p "mallocx", MALLOCX), R(p "rallocx", RALLOCX),               \
	R(p "xallocx", XALLOCX), F(p "dallocx"), F(p "sdallocx")

static struct alloc_sym syms[] = {
	C_API(""),
	C_API("je_"),
	C_API("_rjem_"),
	JE_API(""),
	JE_API("je_"),
	JE_API("_rjem_"),

	/* C++ operators (libstdc++ and libc++ share the Itanium mangling).
	 * Aligned new is a Malloc, as the reference (the CodSpeed runner's
	 * memtrack) writes it: the same program gives the same file. */
	N("_Znwm", MALLOC),
	N("_Znam", MALLOC),
	N("_ZnwmRKSt9nothrow_t", MALLOC),
	N("_ZnamRKSt9nothrow_t", MALLOC),
	N("_ZnwmSt11align_val_t", MALLOC),
	N("_ZnamSt11align_val_t", MALLOC),
	N("_ZnwmSt11align_val_tRKSt9nothrow_t", MALLOC),
	N("_ZnamSt11align_val_tRKSt9nothrow_t", MALLOC),
	F("_ZdlPv"),
	F("_ZdaPv"),
	F("_ZdlPvm"),
	F("_ZdaPvm"),
	F("_ZdlPvRKSt9nothrow_t"),
	F("_ZdaPvRKSt9nothrow_t"),
	F("_ZdlPvSt11align_val_t"),
	F("_ZdaPvSt11align_val_t"),
	F("_ZdlPvmSt11align_val_t"),
	F("_ZdaPvmSt11align_val_t"),
	F("_ZdlPvSt11align_val_tRKSt9nothrow_t"),
	F("_ZdaPvSt11align_val_tRKSt9nothrow_t"),

	/* mimalloc. Its aligned malloc, zalloc and new are a Malloc, a
	 * Calloc and a Malloc, as the reference writes mi_malloc_aligned
	 * and mi_zalloc_aligned (and aligned operator new) */
	M("mi_malloc", SIZE1),
	M("mi_malloc_small", SIZE1),
	M("mi_mallocn", MUL12),
	C("mi_calloc", MUL12),
	C("mi_zalloc", SIZE1),
	C("mi_zalloc_small", SIZE1),
	R("mi_realloc", REALLOC),
	R("mi_reallocn", REALLOCARRAY),
	R("mi_reallocf", REALLOC),
	R("mi_reallocarray", REALLOCARRAY),
	R("mi_recalloc", REALLOCN_NZ),
	R("mi_rezalloc", REALLOC_NZ),
	M("mi_malloc_aligned", SIZE1),
	M("mi_malloc_aligned_at", SIZE1),
	C("mi_zalloc_aligned", SIZE1),
	C("mi_zalloc_aligned_at", SIZE1),
	C("mi_calloc_aligned", MUL12),
	C("mi_calloc_aligned_at", MUL12),
	R("mi_realloc_aligned", REALLOC_NZ),
	R("mi_realloc_aligned_at", REALLOC_NZ),
	A("mi_memalign", SIZE2),
	A("mi_aligned_alloc", SIZE2),
	A("mi_posix_memalign", POSIX_MEMALIGN),
	A("mi_valloc", SIZE1),
	A("mi_pvalloc", SIZE1),
	M("mi_new", SIZE1),
	M("mi_new_nothrow", SIZE1),
	M("mi_new_n", MUL12),
	M("mi_new_aligned", SIZE1),
	M("mi_new_aligned_nothrow", SIZE1),
	R("mi_new_realloc", REALLOC_NZ),
	R("mi_new_reallocn", REALLOCN_NZ),
	F("mi_free"),
	F("mi_cfree"),
	F("mi_free_size"),
	F("mi_free_aligned"),
	F("mi_free_size_aligned"),

	/* tcmalloc (gperftools) */
	M("tc_malloc", SIZE1),
	M("tc_malloc_skip_new_handler", SIZE1),
	C("tc_calloc", MUL12),
	R("tc_realloc", REALLOC),
	F("tc_free"),
	F("tc_cfree"),
	F("tc_free_sized"),
	A("tc_memalign", SIZE2),
	A("tc_posix_memalign", POSIX_MEMALIGN),
	A("tc_valloc", SIZE1),
	A("tc_pvalloc", SIZE1),
	M("tc_new", SIZE1),
	M("tc_newarray", SIZE1),
	M("tc_new_nothrow", SIZE1),
	M("tc_newarray_nothrow", SIZE1),
	A("tc_new_aligned", SIZE1),
	A("tc_newarray_aligned", SIZE1),
	A("tc_new_aligned_nothrow", SIZE1),
	A("tc_newarray_aligned_nothrow", SIZE1),
	F("tc_delete"),
	F("tc_deletearray"),
	F("tc_delete_nothrow"),
	F("tc_deletearray_nothrow"),
	F("tc_delete_sized"),
	F("tc_deletearray_sized"),
	F("tc_delete_aligned"),
	F("tc_deletearray_aligned"),
	F("tc_delete_sized_aligned"),
	F("tc_deletearray_sized_aligned"),
	F("tc_delete_aligned_nothrow"),
	F("tc_deletearray_aligned_nothrow"),
};

#define NSYMS (sizeof(syms) / sizeof(syms[0]))

static int sym_cmp(const void *a, const void *b)
{
	const struct alloc_sym *x = a, *y = b;

	return strcmp(x->name, y->name);
}

void ebpf_symbols_init(void)
{
	static int sorted;

	if (!sorted) {
		qsort(syms, NSYMS, sizeof(syms[0]), sym_cmp);
		sorted = 1;
	}
}

static const struct alloc_sym *sym_find(const char *name)
{
	struct alloc_sym key = { .name = name };

	/* cheap filter: every name starts with one of these */
	switch (name[0]) {
	case 'm': case 'c': case 'r': case 'f': case 'a': case 'p':
	case 'v': case 'j': case 'x': case 'd': case 's': case 't':
	case '_':
		break;
	default:
		return NULL;
	}
	return bsearch(&key, syms, NSYMS, sizeof(syms[0]), sym_cmp);
}

int ebpf_file_known(struct ebpf_state *st, uint64_t dev, uint64_t ino)
{
	uint32_t i;

	return mt_key_get(&st->files_idx, dev, ino, &i) == 0;
}

static int file_add(struct ebpf_state *st, uint64_t dev, uint64_t ino)
{
	struct mt_file_key key = { .dev = dev, .ino = ino };
	uint32_t one = 1;
	void *p = mt_array_grow(st->files, &st->files_cap, st->nfiles + 1,
				sizeof(*st->files));

	if (!p) {
		return -ENOMEM;
	}
	st->files = p;
	if (mt_key_put(&st->files_idx, dev, ino, (uint32_t)st->nfiles)) {
		return -ENOMEM;
	}
	st->files[st->nfiles].dev = dev;
	st->files[st->nfiles].ino = ino;
	st->nfiles++;
	/* BPF stops nobody for this file any more */
	if (bpf_map_update_elem(bpf_map__fd(st->skel->maps.known), &key, &one,
				BPF_ANY)) {
		/* every process mapping it stops, and is let go */
		ebpf_log(st, MT_LOG_WARN,
			 "cannot mark file %llu:%llu attached: %s",
			 (unsigned long long)dev, (unsigned long long)ino,
			 strerror(errno));
	}
	return 0;
}

static int link_add(struct ebpf_state *st, struct bpf_link *link)
{
	void *p = mt_array_grow(st->links, &st->links_cap, st->nlinks + 1,
				sizeof(*st->links));

	if (!p) {
		return -ENOMEM;
	}
	st->links = p;
	st->links[st->nlinks++] = link;
	return 0;
}

struct probe {
	uint64_t offset;
	uint64_t cookie;
	const char *name;
};

/* One uprobe or uretprobe (opts says which) on probe p of the file at
 * path. A refusal is a warning naming the probe: the others still count.
 * Returns 0, the attach error (negative), or 1 when the link could not be
 * kept (out of memory: the caller stops). */
static int attach_one(struct ebpf_state *st, struct bpf_program *prog,
		      const char *path, const struct probe *p,
		      const struct bpf_uprobe_opts *opts, const char *shown)
{
	struct bpf_link *link = NULL;
	int err = 0;

	if (st->scope_ok) {
		/* trapping in the tree only, once ebpf_scope_cover() ran */
		err = ebpf_scope_attach(st, prog, path, p->offset,
					opts->retprobe, opts->bpf_cookie,
					&link);
	} else {
		link = bpf_program__attach_uprobe_opts(prog, -1, path,
						       p->offset, opts);
		err = link ? 0 : -errno;
	}
	if (err) {
		if (err == -ENOMEM) {
			return 1;
		}
		if (err != -ESRCH && err != -ENOENT) {
			ebpf_log(st, MT_LOG_WARN,
				 "cannot attach %s %s in %s: %s",
				 opts->retprobe ? "uretprobe" : "uprobe",
				 p->name, shown, strerror(-err));
		}
		return err;
	}
	if (!link) {
		return 0; /* a probe added to an event of the tree's */
	}
	if (link_add(st, link)) {
		bpf_link__destroy(link);
		return 1;
	}
	return 0;
}

static int probe_cmp(const void *a, const void *b)
{
	const struct probe *x = a, *y = b;

	if (x->offset != y->offset) {
		return x->offset < y->offset ? -1 : 1;
	}
	/* an alias with a uretprobe first: mimalloc's operator new is
	 * mi_new, whose inner calls are inlined */
	return (int)!!(x->cookie & MT_CK_NORET) -
	       (int)!!(y->cookie & MT_CK_NORET);
}

/* File offset of virtual address addr, from the executable PT_LOADs. */
static int vaddr_to_offset(Elf *elf, size_t phnum, uint64_t addr,
			   uint64_t *off)
{
	size_t i;

	for (i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD ||
		    !(ph.p_flags & PF_X)) {
			continue;
		}
		if (addr >= ph.p_vaddr && addr < ph.p_vaddr + ph.p_memsz) {
			*off = addr - ph.p_vaddr + ph.p_offset;
			return 0;
		}
	}
	return -ENOENT;
}

struct probe_list {
	Elf *elf;
	size_t phnum;
	struct probe *probes;
	size_t n, cap;
	uint64_t flags; /* or'ed into every cookie (MT_CK_PROG) */
};

/* Whether the ELF file has a DT_SONAME: a library. */
static int elf_has_soname(Elf *elf)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC ||
		    !sh.sh_entsize || !(d = elf_getdata(scn, NULL))) {
			continue;
		}
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Dyn dyn;

			if (!gelf_getdyn(d, (int)i, &dyn) ||
			    dyn.d_tag == DT_NULL) {
				break;
			}
			if (dyn.d_tag == DT_SONAME) {
				return 1;
			}
		}
	}
	return 0;
}

static int elf_has_interp(Elf *elf, size_t phnum)
{
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, i, &ph) && ph.p_type == PT_INTERP) {
			return 1;
		}
	}
	return 0;
}

/* A program file: an executable (ET_EXEC), or one with an interpreter
 * that is not a library (libc.so.6 has an interpreter: it runs). */
static int elf_is_program(Elf *elf, size_t phnum)
{
	GElf_Ehdr eh;

	if (!gelf_getehdr(elf, &eh)) {
		return 0;
	}
	if (eh.e_type == ET_EXEC) {
		return 1;
	}
	return elf_has_interp(elf, phnum) && !elf_has_soname(elf);
}

/* One symbol: a probe when it is an exported allocator entry point. */
static int probe_sym(const GElf_Sym *sym, const char *name, void *arg)
{
	struct probe_list *pl = arg;
	const struct alloc_sym *as;
	struct probe *p;
	uint64_t off;

	if ((GELF_ST_BIND(sym->st_info) != STB_GLOBAL &&
	     GELF_ST_BIND(sym->st_info) != STB_WEAK) ||
	    !(as = sym_find(name)) ||
	    vaddr_to_offset(pl->elf, pl->phnum, sym->st_value, &off)) {
		return 0;
	}
	p = mt_array_grow(pl->probes, &pl->cap, pl->n + 1, sizeof(*p));
	if (!p) {
		return -ENOMEM;
	}
	pl->probes = p;
	p[pl->n].offset = off;
	/* C++'s operators in a program file (a static libstdc++'s) call
	 * malloc through the PLT, where the interposer sees them: trapping
	 * on each would cost an auto recording of cc1 4 s in 6 */
	p[pl->n].cookie = as->cookie | (name[0] == '_' && name[1] == 'Z' ?
						0 : pl->flags);
	p[pl->n].name = as->name;
	pl->n++;
	return 0;
}

/* Collect the allocator entry points of an ELF file. */
static int elf_probes(struct ebpf_state *st, const char *path,
		      const char *shown, struct probe **out, size_t *nout)
{
	struct probe_list pl = { 0 };
	int fd, err = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		/* ESRCH, ENOENT: the process exited or unmapped the file
		 * since its maps were read; nothing of it to probe */
		if (err != -ESRCH && err != -ENOENT) {
			ebpf_log(st, MT_LOG_WARN, "cannot open %s (%s): %s",
				 shown, path, strerror(errno));
		}
		return err;
	}
	pl.elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!pl.elf || elf_kind(pl.elf) != ELF_K_ELF ||
	    elf_getphdrnum(pl.elf, &pl.phnum)) {
		/* not ELF (a script interpreter's input, ...): nothing here */
		goto end;
	}
	if (st->handover && elf_is_program(pl.elf, pl.phnum) &&
	    elf_has_interp(pl.elf, pl.phnum) &&
	    ebpf_elf_defines(pl.elf, "malloc") != 1) {
		/* no interposer sees its calls inside (MT_CK_PROG). Not a
		 * static program, nor one with a malloc of its own, which
		 * no interposer records (the interposer's test, early.c's):
		 * their probes join the libraries' events. Chromium's
		 * processes carried 19 filter events each, not 10, for
		 * each context switch and clone to go through */
		pl.flags = MT_CK_PROG;
	}
	err = mt_elf_for_each_func(pl.elf, probe_sym, &pl);
end:
	if (pl.elf) {
		elf_end(pl.elf);
	}
	close(fd);
	if (err) {
		free(pl.probes);
		return err;
	}
	*out = pl.probes;
	*nout = pl.n;
	return 0;
}

/* One entry point: the entry program, then the exit program unless the
 * function has none. Returns 0, 1 when memory ran out (stop), or a
 * negative errno for this entry point alone. */
static int attach_entry_point(struct ebpf_state *st, const char *path,
			      const struct probe *p, const char *shown)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts);
	LIBBPF_OPTS(bpf_uprobe_opts, ropts);
	int is_free = MT_COOKIE_SHAPE(p->cookie) == MT_SH_FREE;
	struct bpf_program *prog = is_free ? st->skel->progs.free_enter :
					     st->skel->progs.alloc_enter;
	int ret;

	opts.bpf_cookie = p->cookie;
	opts.retprobe = false;
	ret = attach_one(st, prog, path, p, &opts, shown);
	if (ret || is_free || (p->cookie & MT_CK_NORET)) {
		return ret;
	}
	/* the exit program reads what the entry stored */
	ropts.retprobe = true;
	/* read by nobody, but a program file's returns are an event of
	 * their own (scope.c) */
	ropts.bpf_cookie = p->cookie & MT_CK_PROG;
	ret = attach_one(st, st->skel->progs.alloc_exit, path, p, &ropts,
			 shown);
	if (!ret) {
		st->attach_count++;
	}
	return ret;
}

/* The file offset of the section named name of the ELF file at fd. */
static int section_offset(int fd, const char *name, uint64_t *off)
{
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	int err = -ENOENT;

	if (!elf || elf_kind(elf) != ELF_K_ELF ||
	    elf_getshdrstrndx(elf, &shstrndx)) {
		err = -ENOEXEC;
		goto end;
	}
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *n;

		if (!gelf_getshdr(scn, &sh) ||
		    !(n = elf_strptr(elf, shstrndx, sh.sh_name)) ||
		    strcmp(n, name) || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_EXECINSTR)) {
			continue;
		}
		*off = sh.sh_offset;
		err = 0;
		break;
	}
end:
	if (elf) {
		elf_end(elf);
	}
	return err;
}

/*
 * Handover (--source auto): the preload source's interposer, known by its
 * section "memtrack_hello" (a section survives strip; a symbol would be
 * one more in the program's address space), gets the hello uprobe at the
 * function the section holds, and no allocator probe: its hooks forward
 * to the allocator that the probes of the other files see. Returns 1 when
 * path is not the interposer, else attach_one()'s result.
 */
static int attach_hello(struct ebpf_state *st, const char *path,
			const char *shown)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts);
	struct probe p = { .name = "hello" };
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		return 1; /* elf_probes() says why */
	}
	err = section_offset(fd, "memtrack_hello", &p.offset);
	if (!err) {
		ebpf_early_interposer(st, fd); /* early.c knows it mapped */
	}
	close(fd);
	if (err) {
		return 1;
	}
	err = attach_one(st, st->skel->progs.hello_enter, path, &p, &opts,
			 shown);
	if (!err) {
		ebpf_log(st, MT_LOG_DEBUG, "%s: the interposer's hello", shown);
	}
	return err;
}

static int attach_file(struct ebpf_state *st, const char *path,
		       const char *shown)
{
	struct probe *probes = NULL;
	size_t n = 0, i, nlinks = st->nlinks;
	size_t scope_from = ebpf_scope_nevs(st);
	int err, ret;

	if (st->handover && (ret = attach_hello(st, path, shown)) != 1) {
		if (ret > 0 || ret == -ENOMEM) {
			return -ENOMEM;
		}
		if (ret == -ESRCH || ret == -ENOENT) {
			return ret;
		}
		if (ebpf_scope_cover(st, scope_from) == -ENOMEM) {
			return -ENOMEM;
		}
		return 0;
	}
	err = elf_probes(st, path, shown, &probes, &n);
	if (err) {
		/* only running out of memory stops the attach, and a process
		 * gone meanwhile ends it (the caller tells them apart); any
		 * other file that cannot be read has no probes */
		return err == -ENOMEM || err == -ESRCH || err == -ENOENT ? err
									 : 0;
	}
	/* aliases (free/cfree, memalign/aligned_alloc, a symbol in both
	 * tables) share an address: one probe each, or events double.
	 * A file without allocator symbols has none: probes is NULL, which
	 * qsort() must not get, even for 0 elements (UBSan) */
	if (n) {
		qsort(probes, n, sizeof(*probes), probe_cmp);
	}
	for (i = 0; i < n; i++) {
		if (i && probes[i].offset == probes[i - 1].offset) {
			continue;
		}
		ret = attach_entry_point(st, path, &probes[i], shown);
		if (ret > 0) {
			err = -ENOMEM;
			break;
		}
		if (ret == -ESRCH || ret == -ENOENT) {
			/* the process or its mapping went away while we
			 * attached: undo this file's probes, so that the next
			 * process mapping it attaches them all, once. Scoped,
			 * a probe cannot leave its shared event: the next
			 * attach finds those made (EEXIST), and the events
			 * made now, other files' probes to come, must trap
			 * in the tree */
			if (st->scope_ok) {
				ebpf_scope_cover(st, scope_from);
			}
			while (!st->scope_ok && st->nlinks > nlinks) {
				bpf_link__destroy(st->links[--st->nlinks]);
			}
			free(probes);
			return ret;
		}
		if (ret < 0) {
			err = ret;
		}
	}
	/* the tree's threads, and all they make from now on, trap */
	if (err != -ENOMEM && ebpf_scope_cover(st, scope_from) == -ENOMEM) {
		err = -ENOMEM;
	}
	if (n && st->host->log_level >= MT_LOG_DEBUG) {
		ebpf_log(st, MT_LOG_DEBUG, "%s: %zu allocator entry points",
			 shown, n);
	}
	free(probes);
	return err == -ENOMEM ? err : 0;
}

int ebpf_parse_exec_map(const char *line, struct ebpf_map_line *ml)
{
	unsigned int major, minor;
	char perms[8];

	ml->name_at = 0;
	if (sscanf(line, "%lx-%lx %7s %lx %x:%x %lu %n", &ml->start, &ml->end,
		   perms, &ml->off, &major, &minor, &ml->inode,
		   &ml->name_at) < 7) {
		return -1;
	}
	if (perms[2] != 'x' || !ml->inode || line[ml->name_at] != '/') {
		return -1;
	}
	ml->dev = mt_kernel_dev(major, minor);
	return 0;
}

/*
 * Handle every executable file mapped by pid that is new to us. dev/ino:
 * the file BPF stopped the process for (0/0: none); marked handled even if
 * it is gone from the maps by now, so that it stops nobody again.
 */
int ebpf_attach_file(struct ebpf_state *st, const char *path,
		     const char *shown, uint64_t dev, uint64_t ino)
{
	int err = 1;

	pthread_mutex_lock(&st->attach_lock);
	if (!ebpf_file_known(st, dev, ino)) {
		err = attach_file(st, path, shown);
		if (!err) {
			err = file_add(st, dev, ino);
		}
	}
	pthread_mutex_unlock(&st->attach_lock);
	return err;
}

static int attach_process(struct ebpf_state *st, pid_t pid, uint64_t dev,
			  uint64_t ino)
{
	char path[64], line[4096];
	size_t lines = 0;
	FILE *maps;
	int err = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	maps = fopen(path, "re");
	if (!maps) {
		/* it exited meanwhile: nothing to do */
		return 0;
	}
	__atomic_fetch_add(&st->maps_reads, 1, __ATOMIC_RELAXED);
	while (fgets(line, sizeof(line), maps)) {
		struct ebpf_map_line ml;
		char file[64];

		lines++;
		if (ebpf_parse_exec_map(line, &ml) ||
		    ebpf_file_known(st, ml.dev, ml.inode)) {
			continue;
		}
		line[strcspn(line, "\n")] = '\0';
		snprintf(file, sizeof(file), "/proc/%d/map_files/%lx-%lx",
			 (int)pid, ml.start, ml.end);
		err = attach_file(st, file, line + ml.name_at);
		if (err == -ENOENT) {
			/* unmapped since the maps were read: not probed, so
			 * not known; the next process mapping it stops */
			err = 0;
			continue;
		}
		if (err) {
			break;
		}
		err = file_add(st, ml.dev, ml.inode);
		if (err) {
			break;
		}
	}
	fclose(maps);
	if (!lines && !err) {
		err = -ESRCH; /* a zombie's maps are empty */
	}
	if (err == -ESRCH) {
		/* killed or exited while held (a forwarded SIGTERM ends a
		 * stopped process too): not an error of memtrack's, and what
		 * it had mapped stays unknown for the next process */
		return 0;
	}
	if (!err && (dev || ino) && !ebpf_file_known(st, dev, ino)) {
		err = file_add(st, dev, ino);
	}
	return err;
}

int ebpf_attach_known(struct ebpf_state *st, uint64_t dev, uint64_t ino)
{
	int known;

	pthread_mutex_lock(&st->attach_lock);
	known = ebpf_file_known(st, dev, ino);
	pthread_mutex_unlock(&st->attach_lock);
	return known;
}

int ebpf_attach_process(struct ebpf_state *st, pid_t pid, uint64_t dev,
			uint64_t ino)
{
	int err;

	pthread_mutex_lock(&st->attach_lock);
	err = attach_process(st, pid, dev, ino);
	pthread_mutex_unlock(&st->attach_lock);
	return err;
}

/* ------------------------------------------------------------------ */
/* Files attached ahead, beside the BPF object's load (handover)        */
/* ------------------------------------------------------------------ */

/*
 * The first uprobe registered after a quiet spell takes ~16 ms here (strace
 * -T: its perf_event_open), the ones that follow 0.1-0.25 ms: most likely
 * an RCU grace period, waited for by the first writer of the kernel's
 * dup_mmap_sem, which every registration takes. Under auto, the first
 * were at the command's first exec: the interposer's hello and libc,
 * both at every start. The files every tree maps first, memtrack's own
 * libc and the interposer the preload half will put in LD_PRELOAD, get
 * their events made and held on a thread while the BPF object loads;
 * ebpf_preattach_finish() gives them their programs and marks the files
 * known. At the exec the gate finds them
 * known and covers their events for the process (ebpf_scope_cover_exec(),
 * as every exec under handover). A file that is not the tree's (another
 * libc in a chroot, another interposer) costs its probes and nothing
 * else. Only with scoped uprobes: a system-wide attach needs the loaded
 * program at once.
 */
static void *preattach_main(void *arg)
{
	struct ebpf_state *st = arg;
	uint64_t t0 = ebpf_now_ns();

	for (size_t i = 0; i < st->pre_nfiles; i++) {
		struct ebpf_pre_file *f = &st->pre_files[i];

		pthread_mutex_lock(&st->attach_lock);
		f->err = attach_file(st, f->path, f->path);
		pthread_mutex_unlock(&st->attach_lock);
	}
	st->pre_ns = ebpf_now_ns() - t0;
	return NULL;
}

static int pre_add(struct ebpf_state *st, const char *path)
{
	struct ebpf_pre_file *f = &st->pre_files[st->pre_nfiles];
	struct stat sb;

	if (st->pre_nfiles == sizeof(st->pre_files) / sizeof(st->pre_files[0]) ||
	    !realpath(path, f->path) || stat(f->path, &sb) ||
	    !S_ISREG(sb.st_mode)) {
		return -1;
	}
	f->dev = mt_kernel_dev(major(sb.st_dev), minor(sb.st_dev));
	f->ino = sb.st_ino;
	st->pre_nfiles++;
	return 0;
}

static int find_libc(struct dl_phdr_info *info, size_t size, void *data)
{
	const char *name = info->dlpi_name, *base;

	(void)size;
	base = name ? strrchr(name, '/') : NULL;
	if (base && !strncmp(base + 1, "libc.so.", 8)) {
		snprintf(data, PATH_MAX, "%s", name);
		return 1;
	}
	return 0;
}

void ebpf_preattach_start(struct ebpf_state *st)
{
	char libc[PATH_MAX] = "", cand[MT_INTERPOSER_CANDS][PATH_MAX];
	size_t n, i;

	if (!st->handover || !st->scope_ok) {
		return;
	}
	/* the interposer, the first of the files the preload source tries
	 * that is there */
	n = mt_interposer_candidates((void *)ebpf_preattach_start,
				     MT_PRELOAD_LIBDIR, cand);
	for (i = 0; i < n && access(cand[i], R_OK); i++) {
	}
	if (i < n) {
		pre_add(st, cand[i]);
	}
	dl_iterate_phdr(find_libc, libc);
	if (libc[0]) {
		pre_add(st, libc);
	}
	if (!st->pre_nfiles) {
		return;
	}
	st->scope_defer = 1;
	if (pthread_create(&st->pre_thread, NULL, preattach_main, st)) {
		st->scope_defer = 0;
		st->pre_nfiles = 0;
		return;
	}
	st->pre_running = 1;
}

/* After the load (or its failure: then only the thread is joined and
 * the events closed). Returns 0 or a negative errno. */
int ebpf_preattach_finish(struct ebpf_state *st)
{
	int err;

	if (!st->pre_running) {
		return 0;
	}
	pthread_join(st->pre_thread, NULL);
	st->pre_running = 0;
	err = ebpf_scope_undefer(st, link_add);
	for (size_t i = 0; !err && i < st->pre_nfiles; i++) {
		const struct ebpf_pre_file *f = &st->pre_files[i];

		if (f->err) {
			/* attached at the exec, as without this */
			ebpf_log(st, MT_LOG_DEBUG,
				 "%s: not attached beside the load: %s", f->path,
				 strerror(f->err < 0 ? -f->err : ENOMEM));
			continue;
		}
		pthread_mutex_lock(&st->attach_lock);
		if (!ebpf_file_known(st, f->dev, f->ino)) {
			err = file_add(st, f->dev, f->ino);
		}
		pthread_mutex_unlock(&st->attach_lock);
		ebpf_log(st, MT_LOG_DEBUG, "%s: attached beside the load",
			 f->path);
	}
	ebpf_log(st, MT_LOG_DEBUG,
		 "%zu files attached beside the load, in %.1f ms",
		 st->pre_nfiles, (double)st->pre_ns / 1e6);
	return err;
}

/* A create that failed after ebpf_preattach_start(): the thread joined,
 * the events it made left (closed: nobody holds them, the next remover
 * takes them). */
void ebpf_preattach_drop(struct ebpf_state *st)
{
	if (st->pre_running) {
		pthread_join(st->pre_thread, NULL);
		st->pre_running = 0;
	}
	ebpf_scope_drop_deferred(st);
}
