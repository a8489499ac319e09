/* SPDX-License-Identifier: MIT */
/*
 * plugins/preload/selfdeps.c - in the traced process: which libraries of
 * the interposer (its DT_NEEDED but libc and the loader, numbered in
 * order) another loaded object needs too. Those are the program's own:
 * in BPF mode their Mmap records stay; the others came only with the
 * interposer and are dropped (syscalls.c), so that the file matches an
 * eBPF recording. Read from the dynamic sections ld.so has in memory, at
 * attach, when everything the program links is mapped (a later dlopen
 * finds the library there and maps nothing).
 */
#include "config.h"

#include <dlfcn.h>
#include <link.h>
#include <string.h>
#include <time.h>

#include "selfdeps.h"

int pl_self_dep_common(const char *name)
{
	return !strncmp(name, "libc.so", 7) || !strncmp(name, "ld-", 3);
}

struct scan {
	uintptr_t self_base;
	const char *deps[PL_SELF_DEPS];
	unsigned int ndeps;
	uint32_t shared;
	int pass; /* 0: our own DT_NEEDED; 1: everybody else's */
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

static void own_needed(struct scan *sc, const char *name)
{
	if (!pl_self_dep_common(name) && sc->ndeps < PL_SELF_DEPS) {
		sc->deps[sc->ndeps++] = name;
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
	if (sc->pass == 0) {
		if (self) {
			each_needed(info, own_needed, sc);
			return 1;
		}
		return 0;
	}
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
	dl_iterate_phdr(visit, &sc);
	sc.pass = 1;
	dl_iterate_phdr(visit, &sc);

	i = __atomic_fetch_add(&shm->verdict_next, 1, __ATOMIC_ACQ_REL);
	if (i >= PL_VERDICTS) {
		return; /* the source keeps the records (syscalls.c) */
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	v = &shm->verdicts[i];
	v->pid = pid;
	v->ts = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	v->shared = sc.shared;
	__atomic_store_n(&v->ready, 1, __ATOMIC_RELEASE);
}
