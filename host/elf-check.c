/* SPDX-License-Identifier: MIT */
/*
 * Plugin files checked before dlopen() (see elf-check.h). Only the native
 * class is parsed: ld.so refuses any other before it maps anything, and so
 * do we, with a message of our own.
 */
#include "config.h"

#include <elf.h>
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <link.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf-check.h"
#include "log.h"

#if __ELF_NATIVE_CLASS == 64
#define NATIVE_CLASS ELFCLASS64
#else
#define NATIVE_CLASS ELFCLASS32
#endif

#if __BYTE_ORDER == __LITTLE_ENDIAN
#define NATIVE_DATA ELFDATA2LSB
#else
#define NATIVE_DATA ELFDATA2MSB
#endif

static int refuse(char *why, size_t len, const char *fmt, ...)
	MT_PRINTF(3, 4);

static int refuse(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
	return -ENOEXEC;
}

/* All of [off, off + size) inside a file of file_size bytes, without
 * overflow whatever the header says. */
static bool inside(uint64_t off, uint64_t size, uint64_t file_size)
{
	return off <= file_size && size <= file_size - off;
}

/* Read exactly len bytes at off; -EIO for a short read. */
static int read_at(int fd, void *buf, size_t len, off_t off)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = pread(fd, (char *)buf + got, len - got,
				  off + (off_t)got);

		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n < 0) {
			return -errno;
		}
		if (n == 0) {
			return -EIO;
		}
		got += (size_t)n;
	}
	return 0;
}

static int check_sections(int fd, const ElfW(Ehdr) *eh, uint64_t size,
			  char *why, size_t len)
{
	uint64_t count = eh->e_shnum;
	ElfW(Shdr) sh0;
	int err;

	if (!eh->e_shoff) {
		return 0; /* no section table: ld.so does not need one */
	}
	if (eh->e_shentsize != sizeof(ElfW(Shdr))) {
		return refuse(why, len,
			      "damaged ELF file: section headers of %u bytes, want %zu",
			      eh->e_shentsize, sizeof(ElfW(Shdr)));
	}
	if (!inside(eh->e_shoff, sizeof(sh0), size)) {
		return refuse(why, len,
			      "truncated ELF file: the section headers start at byte %" PRIu64
			      ", the file has %" PRIu64 " bytes",
			      (uint64_t)eh->e_shoff, size);
	}
	if (!count) {
		/* 65280 sections or more: section 0 holds the count */
		err = read_at(fd, &sh0, sizeof(sh0), (off_t)eh->e_shoff);
		if (err < 0) {
			return err;
		}
		count = sh0.sh_size;
	}
	if (count > size / sizeof(ElfW(Shdr)) ||
	    !inside(eh->e_shoff, count * sizeof(ElfW(Shdr)), size)) {
		return refuse(why, len,
			      "truncated ELF file: %" PRIu64
			      " section headers at byte %" PRIu64
			      " end past its %" PRIu64 " bytes",
			      count, (uint64_t)eh->e_shoff, size);
	}
	return 0;
}

static int check_segments(int fd, const ElfW(Ehdr) *eh, uint64_t size,
			  char *why, size_t len)
{
	uint64_t table = (uint64_t)eh->e_phnum * sizeof(ElfW(Phdr));
	unsigned int i;
	int err;

	if (!eh->e_phnum) {
		return refuse(why, len,
			      "damaged ELF file: no program headers, nothing to load");
	}
	if (eh->e_phentsize != sizeof(ElfW(Phdr))) {
		return refuse(why, len,
			      "damaged ELF file: program headers of %u bytes, want %zu",
			      eh->e_phentsize, sizeof(ElfW(Phdr)));
	}
	if (!inside(eh->e_phoff, table, size)) {
		return refuse(why, len,
			      "truncated ELF file: %u program headers at byte %" PRIu64
			      " end past its %" PRIu64 " bytes",
			      eh->e_phnum, (uint64_t)eh->e_phoff, size);
	}
	for (i = 0; i < eh->e_phnum; i++) {
		ElfW(Phdr) ph;

		err = read_at(fd, &ph, sizeof(ph),
			      (off_t)(eh->e_phoff + i * sizeof(ph)));
		if (err < 0) {
			return err;
		}
		if (ph.p_type != PT_LOAD) {
			continue;
		}
		if (!inside(ph.p_offset, ph.p_filesz, size)) {
			return refuse(why, len,
				      "truncated ELF file: segment %u (bytes %" PRIu64
				      "+%" PRIu64 ") ends past its %" PRIu64
				      " bytes",
				      i, (uint64_t)ph.p_offset,
				      (uint64_t)ph.p_filesz, size);
		}
	}
	return 0;
}

int mt_elf_check_loadable(int fd, char *why, size_t len)
{
	ElfW(Ehdr) eh;
	struct stat st;
	uint64_t size;
	int err;

	if (fstat(fd, &st) < 0) {
		return -errno;
	}
	size = (uint64_t)st.st_size;
	if (size < EI_NIDENT || read_at(fd, &eh, EI_NIDENT, 0) < 0 ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) {
		return refuse(why, len, "not an ELF shared object");
	}
	if (eh.e_ident[EI_CLASS] != NATIVE_CLASS ||
	    eh.e_ident[EI_DATA] != NATIVE_DATA) {
		return refuse(why, len,
			      "not an ELF object of this machine (class %u, byte order %u)",
			      eh.e_ident[EI_CLASS], eh.e_ident[EI_DATA]);
	}
	if (size < sizeof(eh)) {
		return refuse(why, len,
			      "truncated ELF file: %" PRIu64
			      " bytes, its header alone is %zu",
			      size, sizeof(eh));
	}
	err = read_at(fd, &eh, sizeof(eh), 0);
	if (err < 0) {
		return err;
	}
	if (eh.e_type != ET_DYN) {
		return refuse(why, len, "not an ELF shared object (type %u)",
			      eh.e_type);
	}
	err = check_segments(fd, &eh, size, why, len);
	if (err) {
		return err;
	}
	return check_sections(fd, &eh, size, why, len);
}
