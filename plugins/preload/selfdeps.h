/* SPDX-License-Identifier: MIT */
/*
 * plugins/preload/selfdeps.h - which of the interposer's own libraries the
 * traced program needs too (shm.h: struct pl_verdict), for the BPF mode's
 * filter of the preload machinery's mappings (syscalls.bpf.c).
 */
#ifndef MT_PRELOAD_SELFDEPS_H
#define MT_PRELOAD_SELFDEPS_H

#include <stddef.h>
#include <stdint.h>

#include "shm.h"

/* Whether a DT_NEEDED name is one of the interposer's libraries that
 * every dynamic program has anyway (libc, the loader): not counted. */
int pl_self_dep_common(const char *name);

/* In memtrack: the interposer lib's libraries as numbered above (its
 * DT_NEEDED in order, the common ones left out, at most PL_SELF_DEPS),
 * NUL-separated into out; returns how many, or -1 (not a readable ELF64
 * file). */
int pl_self_deps_of(const char *lib, char *out, size_t len);

/* In the traced process, at attach: write this image's verdict. No
 * allocation (runs inside the interposer's bootstrap). */
void pl_self_deps_note(struct pl_shm *shm, int32_t pid);

#endif /* MT_PRELOAD_SELFDEPS_H */
