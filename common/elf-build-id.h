/* SPDX-License-Identifier: MIT */
/*
 * The GNU build-id of an ELF file. Self-contained (libelf only), so that
 * the eBPF source plugin, which records build-ids, compiles the same file
 * as the host, which checks them when it symbolizes.
 */
#ifndef MT_COMMON_ELF_BUILD_ID_H
#define MT_COMMON_ELF_BUILD_ID_H

#include <stddef.h>

#include <libelf.h>

/* Copies at most max bytes of elf's build-id into out; returns how many
 * (0: the file has none). */
size_t mt_elf_build_id(Elf *elf, unsigned char *out, size_t max);

#endif /* MT_COMMON_ELF_BUILD_ID_H */
