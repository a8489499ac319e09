/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <elf.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "execcheck.h"
#include "shm.h"

#define INTERPOSER_NAME "libmemtrack-preload.so"

static int env_has(char *const envp[], const char *name, const char *needle)
{
	size_t len = strlen(name);
	size_t i;

	for (i = 0; envp[i]; i++) {
		if (strncmp(envp[i], name, len) == 0 && envp[i][len] == '=') {
			return !needle || strstr(envp[i] + len + 1, needle);
		}
	}
	return 0;
}

/* 1 when an ELF file has no PT_INTERP: nothing loads LD_PRELOAD there. */
static int elf_is_static(int fd)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	unsigned int i;

	if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_phentsize != sizeof(ph)) {
		return 0; /* a script, or not ours to judge */
	}
	for (i = 0; i < eh.e_phnum; i++) {
		if (pread(fd, &ph, sizeof(ph),
			  (off_t)(eh.e_phoff + (uint64_t)i * sizeof(ph))) !=
		    (ssize_t)sizeof(ph)) {
			return 0;
		}
		if (ph.p_type == PT_INTERP) {
			return 0;
		}
	}
	return 1;
}

/* Would exec change our credentials (the loader's secure mode)? */
static int changes_ids(int fd)
{
	struct statvfs vfs;
	struct stat st;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		return 0;
	}
	if (!((st.st_mode & S_ISUID) && st.st_uid != geteuid()) &&
	    !((st.st_mode & S_ISGID) && st.st_gid != getegid())) {
		return 0;
	}
	/* a nosuid mount ignores the bits */
	return !(fstatvfs(fd, &vfs) == 0 && (vfs.f_flag & ST_NOSUID));
}

int pl_exec_check(const char *path, int fd, char *const envp[])
{
	int own = -1, why = 0;

	if (fd < 0) {
		struct stat st;

		/* exec runs only regular files and says so itself (EACCES);
		 * a FIFO's open(2) would wait for a writer forever, a
		 * device's may do anything: neither is opened. O_NONBLOCK
		 * for a file swapped for a FIFO in between. */
		if (stat(path, &st) < 0 || !S_ISREG(st.st_mode)) {
			return 0;
		}
		own = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
		if (own < 0) {
			return 0;
		}
		fd = own;
	}
	if (changes_ids(fd)) {
		why = PL_NOTE_SETID;
	} else if (elf_is_static(fd)) {
		why = PL_NOTE_STATIC;
	} else if (envp && (!env_has(envp, "LD_PRELOAD", INTERPOSER_NAME) ||
			    !env_has(envp, PL_ENV_SHM, NULL))) {
		why = PL_NOTE_NO_PRELOAD;
	}
	if (own >= 0) {
		close(own);
	}
	return why;
}

int pl_exec_find(const char *file, const char *pathvar, char *out,
		 size_t size)
{
	const char *p;
	size_t flen = strlen(file);

	if (strchr(file, '/') || !pathvar) {
		pathvar = strchr(file, '/') ? "" : "/bin:/usr/bin";
	}
	if (!*pathvar) {
		if (flen >= size) {
			return -1;
		}
		memcpy(out, file, flen + 1);
		return access(out, X_OK) == 0 ? 0 : -1;
	}
	for (p = pathvar;; p++) {
		const char *end = strchr(p, ':');
		size_t dlen = end ? (size_t)(end - p) : strlen(p);

		/* an empty entry is the current directory */
		if (dlen + 1 + flen < size) {
			if (dlen) {
				memcpy(out, p, dlen);
				out[dlen] = '/';
				memcpy(out + dlen + 1, file, flen + 1);
			} else {
				memcpy(out, file, flen + 1);
			}
			if (access(out, X_OK) == 0) {
				return 0;
			}
		}
		if (!end) {
			break;
		}
		p = end;
	}
	if (flen < size) {
		memcpy(out, file, flen + 1);
	}
	return -1;
}
