/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "open-output.h"

#define NOT_REGULAR "memtrack writes only a regular file or a character device such as /dev/null"
#define FIFO "a FIFO: " NOT_REGULAR "; for a pipe, write to standard output (file:-) and use the shell's |"

/* open(2) refused the name: say why in words when it was our flags (a
 * symlink gives ELOOP, a FIFO without a reader ENXIO). */
static const char *open_refusal(const char *path, int err)
{
	struct stat st;

	if (lstat(path, &st) < 0) {
		return NULL;
	}
	if (err == ELOOP && S_ISLNK(st.st_mode)) {
		return "a symbolic link: memtrack does not write through one (it could lead anywhere); remove it or name the file it points to";
	}
	if (err == ENXIO && S_ISFIFO(st.st_mode)) {
		return FIFO;
	}
	if (err == EISDIR && S_ISDIR(st.st_mode)) {
		return "a directory: " NOT_REGULAR;
	}
	return NULL;
}

static const char *kind_refusal(const struct stat *st)
{
	if (S_ISFIFO(st->st_mode)) {
		return FIFO;
	}
	if (!S_ISREG(st->st_mode) && !S_ISCHR(st->st_mode)) {
		return "not a regular file: " NOT_REGULAR;
	}
	if (st->st_nlink > 1) {
		return "has other names (hard links): memtrack does not overwrite a file reached by more than one name; remove this name or write elsewhere";
	}
	return NULL;
}

int mt_open_output(const char *path, const char **why)
{
	struct stat st;
	int fd, flags, err;

	*why = NULL;
	/* no O_TRUNC: nothing is cut before the file is known to be ours to
	 * cut */
	fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK |
				O_NOCTTY | O_CLOEXEC,
		  0644);
	if (fd < 0) {
		err = errno;
		*why = open_refusal(path, err);
		return -err;
	}
	if (fstat(fd, &st) < 0) {
		err = -errno;
		goto fail;
	}
	*why = kind_refusal(&st);
	if (*why) {
		err = S_ISREG(st.st_mode) ? -EMLINK : -EINVAL;
		goto fail;
	}
	if (S_ISREG(st.st_mode) && st.st_size > 0 && ftruncate(fd, 0) < 0) {
		err = -errno;
		goto fail;
	}
	/* writes wait for room as they always did (a terminal, a full
	 * device); only the open had to not wait */
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0) {
		err = -errno;
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return err;
}
