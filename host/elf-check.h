/* SPDX-License-Identifier: MIT */
/*
 * Is a file a shared object dlopen() can map without reading past its end?
 *
 * dlopen() trusts the program headers: it maps each PT_LOAD segment from
 * the file and reads it, so a segment that ends past the end of the file
 * (a truncated copy, a half-written install) kills the process with SIGBUS
 * before any error can be returned. The checks here read only with
 * pread(2), so a bad file is an error message, never a signal.
 */
#ifndef MT_HOST_ELF_CHECK_H
#define MT_HOST_ELF_CHECK_H

#include <stddef.h>

/*
 * Check the open file fd: an ELF shared object of this machine's class,
 * byte order and architecture whose header tables and PT_LOAD segments
 * all lie inside the file. Returns 0, or -ENOEXEC with a reason (no file
 * name, no newline) in why[len], or another negative errno when fd cannot
 * be read.
 */
int mt_elf_check_loadable(int fd, char *why, size_t len);

#endif /* MT_HOST_ELF_CHECK_H */
