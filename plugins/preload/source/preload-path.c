/* SPDX-License-Identifier: MIT */
/*
 * plugins/preload/source/preload-path.c - LD_PRELOAD is a list: ld.so splits
 * it at spaces and colons, and expands $ORIGIN, $LIB and $PLATFORM in its
 * names (ld.so(8)). The interposer under "~/My Projects/" or a --prefix with
 * a space was two names that do not exist: ld.so said so on the program's
 * stderr, ignored both, and memtrack recorded nothing and exited 0 (issue 27,
 * item 10).
 *
 * Such a path is given to ld.so through a symbolic link, named as the
 * interposer (execcheck.c looks for that name in LD_PRELOAD), in a
 * directory made for it by mkdtemp() under $TMPDIR, else /tmp, when their
 * own path has none of those characters. Mode 0711: the command may run
 * as another user (sudo, spawn.c) and must reach the link; it cannot list
 * the directory, and only we can change it. A link, not a copy: the
 * interposer stays the same file, which is how the root mode knows its
 * mappings (syscalls.c). When no directory will do, the source refuses to
 * start, naming the path: a recording without events is never made in
 * silence.
 *
 * The directory is removed by this plugin's destructor, at dlclose() or
 * exit, so that processes of the tree that exec after tracing stopped
 * still find the link. A memtrack killed with SIGKILL leaves it behind.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "preload-path.h"

#define NAME "preload"
/* what ld.so does not read literally in LD_PRELOAD (ld.so(8)) */
#define LD_PRELOAD_SPECIAL " :$"

static char made_dir[PATH_MAX];
static char made_link[PATH_MAX];

static __attribute__((destructor)) void remove_made(void)
{
	if (made_link[0]) {
		unlink(made_link);
		made_link[0] = '\0';
	}
	if (made_dir[0]) {
		rmdir(made_dir);
		made_dir[0] = '\0';
	}
}

static int plain(const char *path)
{
	return path[strcspn(path, LD_PRELOAD_SPECIAL)] == '\0';
}

static int same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	return !stat(a, &sa) && !stat(b, &sb) && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

/* A link to lib in a new directory under base; 0 or -errno. */
static int link_under(const char *base, const char *lib)
{
	char dir[PATH_MAX], link[PATH_MAX];
	const char *slash = strrchr(lib, '/');
	const char *name = slash ? slash + 1 : lib;
	int err;

	if (!base || base[0] != '/' || !plain(base)) {
		return -EINVAL;
	}
	if ((size_t)snprintf(dir, sizeof(dir), "%s/memtrack-XXXXXX", base) >=
	    sizeof(dir)) {
		return -ENAMETOOLONG;
	}
	if (!mkdtemp(dir)) {
		return -errno;
	}
	if ((size_t)snprintf(link, sizeof(link), "%s/%s", dir, name) >=
	    sizeof(link)) {
		err = -ENAMETOOLONG;
		goto error;
	}
	if (chmod(dir, 0711) || symlink(lib, link)) {
		err = -errno;
		goto error;
	}
	if (!same_file(link, lib)) {
		err = -ENOENT;
		unlink(link);
		goto error;
	}
	snprintf(made_dir, sizeof(made_dir), "%s", dir);
	snprintf(made_link, sizeof(made_link), "%s", link);
	return 0;
error:
	rmdir(dir);
	return err;
}

int pl_preload_path(const struct mt_host *host, const char *lib, char *out,
		    size_t size)
{
	const char *tmpdir = getenv("TMPDIR");
	int err;

	if (plain(lib)) {
		if ((size_t)snprintf(out, size, "%s", lib) >= size) {
			return -ENAMETOOLONG;
		}
		return 0;
	}
	/* made already (a second create): the same link will do */
	if (!made_link[0] || !same_file(made_link, lib)) {
		remove_made();
		err = link_under(tmpdir, lib);
		if (err) {
			err = link_under("/tmp", lib);
		}
		if (err) {
			host->log(host, MT_LOG_ERROR, NAME,
				  "%s: LD_PRELOAD cannot name this path (ld.so splits its list at spaces and colons, and expands '$'), and no link to it could be made under $TMPDIR or /tmp (%s); install memtrack under a path without them, or set MEMTRACK_PRELOAD_LIB to a copy of the interposer there",
				  lib, strerror(-err));
			return err;
		}
	}
	if ((size_t)snprintf(out, size, "%s", made_link) >= size) {
		return -ENAMETOOLONG;
	}
	host->log(host, MT_LOG_DEBUG, NAME,
		  "%s has a space, a colon or a '$': LD_PRELOAD names it through %s",
		  lib, made_link);
	return 0;
}
