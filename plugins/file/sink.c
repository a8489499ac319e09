/* SPDX-License-Identifier: MIT */
/*
 * Sink "file:PATH": frames written in order to one file ("-": stdout).
 *
 * A failed write never leaves half a frame behind when it can be helped:
 * the file is cut back to the end of the last complete frame, so what is
 * on disk stays a valid stream.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <memtrack/plugin.h>

#include "open-output.h"

#define PLUGIN "file"

struct file_sink {
	const struct mt_host *host;
	char *path;
	int fd;
	off_t good; /* bytes of complete frames written */
	int failed;
};

static int file_open(const struct mt_host *host, const char *args,
		     void **state)
{
	struct file_sink *s;
	const char *why;
	int err;

	if (!args || !*args) {
		host->log(host, MT_LOG_ERROR, PLUGIN,
			  "needs a path: --sink file:PATH");
		return -EINVAL;
	}
	s = calloc(1, sizeof(*s));
	if (!s || !(s->path = strdup(args))) {
		free(s);
		return -ENOMEM;
	}
	s->host = host;
	if (strcmp(args, "-") == 0) {
		s->fd = STDOUT_FILENO;
	} else {
		/* no symlink, no FIFO, no planted hard link (open-output.h) */
		s->fd = mt_open_output(args, &why);
		if (s->fd < 0) {
			err = s->fd;
			host->log(host, MT_LOG_ERROR, PLUGIN, "%s: %s", args,
				  why ? why : strerror(-err));
			free(s->path);
			free(s);
			return err;
		}
	}
	*state = s;
	return 0;
}

static int file_write(void *state, const void *data, size_t len)
{
	struct file_sink *s = state;
	const char *p = data;
	size_t done = 0;

	while (done < len) {
		ssize_t n = write(s->fd, p + done, len - done);

		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n <= 0) {
			int err = n < 0 ? errno : EIO;

			s->host->log(s->host, MT_LOG_ERROR, PLUGIN, "%s: %s",
				     s->path, strerror(err));
			/* Keep the file valid up to its last complete frame.
			 * On a pipe or a device this fails: nothing to do. */
			if (done > 0 && ftruncate(s->fd, s->good) < 0) {
				(void)0;
			}
			s->failed = 1;
			return -err;
		}
		done += (size_t)n;
	}
	s->good += (off_t)len;
	return 0;
}

static int file_close(void *state)
{
	struct file_sink *s = state;
	int err = 0;

	if (s->fd != STDOUT_FILENO && close(s->fd) < 0 && !s->failed) {
		err = -errno;
		s->host->log(s->host, MT_LOG_ERROR, PLUGIN, "%s: %s", s->path,
			     strerror(errno));
	}
	free(s->path);
	free(s);
	return err;
}

static const struct mt_sink_ops file_ops = {
	MT_OPS_HEADER(mt_sink_ops),
	.open = file_open,
	.write = file_write,
	.close = file_close,
};

static const struct mt_plugin_desc file_desc = {
	MT_OPS_HEADER(mt_plugin_desc),
	.kind = MT_PLUGIN_SINK,
	.name = "file",
	.description = "writes frames in order to a file (file:PATH, - for stdout)",
	.version = PACKAGE_VERSION,
	.ops.sink = &file_ops,
};

MT_PLUGIN_DEFINE(file_desc)
