/* SPDX-License-Identifier: MIT */
/*
 * plugins/preload/selfdeps.c - in the traced process: which libraries of
 * the interposer (the source's list in shm->self_deps, shm.h) another
 * loaded object needs too. Those are the program's own: in BPF mode their Mmap records stay; the others came only with the
 * interposer and are dropped (syscalls.c), so that the file matches an
 * eBPF recording. Read from the dynamic sections ld.so has in memory, at
 * attach, when everything the program links is mapped (a later dlopen
 * finds the library there and maps nothing).
 */
#include "config.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "selfdeps.h"
#include "interposer/stack-unwind.h"

int pl_self_dep_common(const char *name)
{
	return !strncmp(name, "libc.so", 7) || !strncmp(name, "ld-", 3);
}

struct scan {
	uintptr_t self_base;
	const char *deps[PL_SELF_DEPS]; /* the source's list, shm->self_deps */
	unsigned int ndeps;
	uint32_t shared;
};

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* DT_NEEDED names through cb; the string table's address may or may not
 * have been relocated by ld.so (x86-64 does, some ports keep .dynamic
 * read-only) */
static void each_needed(const struct dl_phdr_info *info,
			void (*cb)(struct scan *, const char *),
			struct scan *sc)
{
	const ElfW(Dyn) *dyn = NULL, *d;
	uintptr_t strtab = 0;
	int i;

	for (i = 0; i < info->dlpi_phnum; i++) {
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC) {
			dyn = (const ElfW(Dyn) *)(info->dlpi_addr +
						  info->dlpi_phdr[i].p_vaddr);
		}
	}
	if (!dyn) {
		return;
	}
	for (d = dyn; d->d_tag != DT_NULL; d++) {
		if (d->d_tag == DT_STRTAB) {
			strtab = d->d_un.d_ptr;
		}
	}
	if (!strtab) {
		return;
	}
	if (strtab < info->dlpi_addr) {
		strtab += info->dlpi_addr;
	}
	for (d = dyn; d->d_tag != DT_NULL; d++) {
		if (d->d_tag == DT_NEEDED) {
			cb(sc, (const char *)strtab + d->d_un.d_val);
		}
	}
}

static void other_needed(struct scan *sc, const char *name)
{
	unsigned int i;

	for (i = 0; i < sc->ndeps; i++) {
		if (!strcmp(name, sc->deps[i])) {
			sc->shared |= 1u << i;
		}
	}
}

static int is_own_dep(const struct scan *sc, const char *path)
{
	unsigned int i;

	for (i = 0; i < sc->ndeps; i++) {
		if (!strcmp(base_name(path), sc->deps[i])) {
			return 1;
		}
	}
	return 0;
}

static int visit(struct dl_phdr_info *info, size_t size, void *data)
{
	struct scan *sc = data;
	int self = info->dlpi_addr == sc->self_base;

	(void)size;
	/* the libraries themselves do not count: they are here for us */
	if (!self && !is_own_dep(sc, info->dlpi_name)) {
		each_needed(info, other_needed, sc);
	}
	return 0;
}

void pl_self_deps_note(struct pl_shm *shm, int32_t pid)
{
	struct scan sc = { 0 };
	struct pl_verdict *v;
	struct timespec ts;
	Dl_info di;
	uint32_t i;

	if (!dladdr((void *)pl_self_deps_note, &di)) {
		return;
	}
	sc.self_base = (uintptr_t)di.dli_fbase;
	sc.ndeps = shm->nself_deps < PL_SELF_DEPS ? shm->nself_deps :
						    PL_SELF_DEPS;
	for (i = 0; i < sc.ndeps; i++) {
		sc.deps[i] = shm->self_deps[i];
	}
	dl_iterate_phdr(visit, &sc);

	/* a ring of verdicts: each is needed only for the records of its
	 * process's first moments (syscalls.c, HOLD_NS), so the oldest is
	 * written over; never a table that fills after PL_VERDICTS
	 * processes */
	i = __atomic_fetch_add(&shm->verdict_next, 1, __ATOMIC_ACQ_REL);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	v = &shm->verdicts[i % PL_VERDICTS];
	__atomic_store_n(&v->ready, 0, __ATOMIC_RELEASE); /* being written */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&v->pid, pid, __ATOMIC_RELAXED);
	__atomic_store_n(&v->ts,
			 (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&v->shared, sc.shared, __ATOMIC_RELAXED);
	/* which claim wrote it, never 0: a reader that sees the same value
	 * before and after its reads read one verdict whole */
	__atomic_store_n(&v->ready, i + 1 ? i + 1 : 1, __ATOMIC_RELEASE);
}

/* ------------------------------------------------------------------ */
/* In memtrack: the same list, from the interposer's file              */
/* ------------------------------------------------------------------ */

/* The DT_NEEDED names of an ELF64 file, NUL-separated into out; returns
 * how many, or -1. */
static int elf_needed(const char *path, char *out, size_t len)
{
	const Elf64_Ehdr *eh;
	const Elf64_Phdr *ph;
	const Elf64_Dyn *dyn = NULL;
	uint64_t strtab = 0, strsz = 0, stroff = 0;
	size_t used = 0, ndyn = 0, i;
	struct stat sb;
	uint8_t *map;
	int fd, count = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &sb) || (size_t)sb.st_size < sizeof(*eh)) {
		if (fd >= 0) {
			close(fd);
		}
		return -1;
	}
	map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED) {
		return -1;
	}
	eh = (const Elf64_Ehdr *)map;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_phoff + (uint64_t)eh->e_phnum * sizeof(*ph) >
		    (uint64_t)sb.st_size) {
		goto error;
	}
	ph = (const Elf64_Phdr *)(map + eh->e_phoff);
	for (i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type == PT_DYNAMIC &&
		    ph[i].p_offset + ph[i].p_filesz <= (uint64_t)sb.st_size) {
			dyn = (const Elf64_Dyn *)(map + ph[i].p_offset);
			ndyn = ph[i].p_filesz / sizeof(*dyn);
		}
	}
	for (i = 0; dyn && i < ndyn && dyn[i].d_tag != DT_NULL; i++) {
		if (dyn[i].d_tag == DT_STRTAB) {
			strtab = dyn[i].d_un.d_ptr;
		} else if (dyn[i].d_tag == DT_STRSZ) {
			strsz = dyn[i].d_un.d_val;
		}
	}
	/* the string table's address to its file offset */
	for (i = 0; strtab && i < eh->e_phnum; i++) {
		if (ph[i].p_type == PT_LOAD && strtab >= ph[i].p_vaddr &&
		    strtab < ph[i].p_vaddr + ph[i].p_filesz) {
			stroff = strtab - ph[i].p_vaddr + ph[i].p_offset;
			break;
		}
	}
	if (!stroff || stroff + strsz > (uint64_t)sb.st_size) {
		goto error;
	}
	for (i = 0; i < ndyn && dyn[i].d_tag != DT_NULL; i++) {
		const char *name;
		size_t l;

		if (dyn[i].d_tag != DT_NEEDED || dyn[i].d_un.d_val >= strsz) {
			continue;
		}
		name = (const char *)map + stroff + dyn[i].d_un.d_val;
		l = strnlen(name, strsz - dyn[i].d_un.d_val);
		if (used + l + 1 > len) {
			break;
		}
		memcpy(out + used, name, l);
		out[used + l] = '\0';
		used += l + 1;
		count++;
	}
	munmap(map, (size_t)sb.st_size);
	return count;
error:
	munmap(map, (size_t)sb.st_size);
	return -1;
}

/* Appends the non-common names of `names` (n of them) to out, once each. */
static void add_names(const char *names, int n, char *out, size_t len,
		      size_t *used, int *count)
{
	const char *name, *o;
	size_t l;
	int i, j, dup;

	for (i = 0, name = names; i < n; i++, name += strlen(name) + 1) {
		l = strlen(name);
		dup = 0;
		for (j = 0, o = out; j < *count; j++, o += strlen(o) + 1) {
			dup |= !strcmp(o, name);
		}
		if (dup || pl_self_dep_common(name) ||
		    *count == PL_SELF_DEPS || *used + l + 1 > len) {
			continue;
		}
		memcpy(out + *used, name, l + 1);
		*used += l + 1;
		(*count)++;
	}
}

/* The file our loader finds for a library name (the command's loader
 * searches the same way for a library without RUNPATH). */
static int resolve(const char *name, char *path, size_t len)
{
	struct link_map *lm = NULL;
	void *h = dlopen(name, RTLD_LAZY | RTLD_LOCAL);
	int err = -1;

	if (!h) {
		return -1;
	}
	if (!dlinfo(h, RTLD_DI_LINKMAP, &lm) && lm && lm->l_name &&
	    strlen(lm->l_name) < len) {
		strcpy(path, lm->l_name);
		err = 0;
	}
	dlclose(h);
	return err;
}

int pl_self_deps_of(const char *lib, char *out, size_t len)
{
	char names[1024], path[4096];
	const char *name;
	size_t used = 0;
	int n, i, count = 0;

	n = elf_needed(lib, names, sizeof(names));
	if (n < 0) {
		return n;
	}
	add_names(names, n, out, len, &used, &count);
	/* opened with --stacks (stack-unwind.c), not a DT_NEEDED */
	add_names(MTPL_UNWIND_SONAME, 1, out, len, &used, &count);
	/* breadth first: what the libraries need comes with us too */
	for (i = 0, name = out; i < count; i++, name += strlen(name) + 1) {
		if (resolve(name, path, sizeof(path))) {
			continue;
		}
		n = elf_needed(path, names, sizeof(names));
		if (n > 0) {
			add_names(names, n, out, len, &used, &count);
		}
	}
	return count;
}
