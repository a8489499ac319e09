/* SPDX-License-Identifier: MIT */
/*
 * Source "replay:FILE": events from a file instead of a live process.
 *
 * FILE is either a memtrack artifact (read through the host's decoder of
 * the default encoder) or JSON lines with the fields of the format
 * ({"pid":1,"tid":1,"timestamp":5,"addr":4096,"type":"Malloc","size":8},
 * read strictly by json-event.c), told apart by the first non-blank byte.
 * "-" reads standard input.
 *
 * An artifact is decoded in the first read() call: the decoder pushes
 * events as it goes, so the chunk limit does not apply to it. Replay has no
 * producers to keep waiting, so that costs nothing.
 *
 * Every metadata frame of an artifact (the stack table and mappings of a
 * --stacks recording, a run summary, any skippable frame) is carried into
 * the output at its place among the events, through mt_emitter.meta: a
 * stack's frames are named through the mappings that came before it, so
 * the copy reports what the original reports. The payload is kept byte
 * for byte; the frame's magic variant becomes the host's.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <memtrack/plugin.h>

#include "json-event.h"

#define PLUGIN "replay"

struct replay {
	const struct mt_host *host;
	char *path;
	int fd;
	FILE *json;   /* JSON lines, once detected */
	char *line;
	size_t line_cap;
	unsigned long lineno;
	struct mt_emitter *em; /* during decode */
	int emit_err;
	bool meta_unsupported; /* said once */
};

static int replay_create(const struct mt_host *host, const char *args,
			 void **state)
{
	struct replay *r;
	int err;

	if (!args || !*args) {
		host->log(host, MT_LOG_ERROR, PLUGIN,
			  "needs a file: --source replay:FILE");
		return -EINVAL;
	}
	r = calloc(1, sizeof(*r));
	if (!r || !(r->path = strdup(args))) {
		free(r);
		return -ENOMEM;
	}
	r->host = host;
	r->fd = strcmp(args, "-") == 0 ? dup(STDIN_FILENO) :
					 open(args, O_RDONLY | O_CLOEXEC);
	if (r->fd < 0) {
		err = -errno;
		host->log(host, MT_LOG_ERROR, PLUGIN, "%s: %s", args,
			  strerror(errno));
		free(r->path);
		free(r);
		return err;
	}
	*state = r;
	return 0;
}

static int replay_start(void *state, const struct mt_target *target)
{
	return 0;
}

static int replay_poll_fd(void *state)
{
	return -1;
}

static int emit_events(void *ctx, const struct mt_event *events, size_t n)
{
	struct replay *r = ctx;
	size_t i;

	for (i = 0; i < n; i++) {
		struct mt_event *ev = mt_emit(r->em);

		if (!ev) {
			r->emit_err = -EPIPE;
			return 1;
		}
		*ev = events[i];
	}
	return 0;
}

static int emit_meta(void *ctx, unsigned int variant, const void *data,
		     size_t len)
{
	struct replay *r = ctx;
	int err;

	(void)variant;
	if (!r->em->meta) {
		return 0; /* a host without metadata: nothing to keep it in */
	}
	err = r->em->meta(r->em, data, len);
	if (err == -ENOTSUP) {
		/* an encoder without metadata (a CSV, say): the events are
		 * what it writes, and stacks stay ids */
		if (!r->meta_unsupported) {
			r->host->log(r->host, MT_LOG_WARN, PLUGIN,
				     "%s: the encoder cannot store metadata: its frames are not copied",
				     r->path);
			r->meta_unsupported = true;
		}
		return 0;
	}
	if (err < 0) {
		r->host->log(r->host, MT_LOG_ERROR, PLUGIN,
			     "%s: a metadata frame of %zu bytes cannot be copied: %s",
			     r->path, len, strerror(-err));
		r->emit_err = err;
		return 1;
	}
	return 0;
}

static int read_json(struct replay *r, struct mt_emitter *em, size_t max,
		     uint32_t *flags)
{
	size_t n = 0;

	while (n < max) {
		ssize_t len = getline(&r->line, &r->line_cap, r->json);
		struct mt_event *ev, parsed;
		char why[160];
		int err;

		if (len < 0) {
			if (ferror(r->json)) {
				r->host->log(r->host, MT_LOG_ERROR, PLUGIN,
					     "%s: %s", r->path,
					     strerror(errno));
				return -EIO;
			}
			*flags |= MT_SOURCE_EOF;
			break;
		}
		r->lineno++;
		if (strspn(r->line, " \t\r\n") == (size_t)len) {
			continue;
		}
		/* the line's end is not part of its JSON */
		if (r->line[len - 1] == '\n') {
			len--;
		}
		/* the whole line first: a refused line writes nothing */
		err = mt_json_event_parse(r->line, (size_t)len, &parsed, why,
					  sizeof(why));
		if (err < 0) {
			r->host->log(r->host, MT_LOG_ERROR, PLUGIN,
				     "%s:%lu: %s", r->path, r->lineno, why);
			return err;
		}
		ev = mt_emit(em);
		if (!ev) {
			return -EPIPE;
		}
		*ev = parsed;
		n++;
	}
	return (int)n;
}

/* First non-blank byte: '{' is JSON lines, anything else an artifact. */
static int sniff(struct replay *r, char *first)
{
	ssize_t n;

	do {
		n = read(r->fd, first, 1);
	} while ((n == 1 && isspace((unsigned char)*first)) ||
		 (n < 0 && errno == EINTR));
	if (n < 0) {
		r->host->log(r->host, MT_LOG_ERROR, PLUGIN, "%s: %s", r->path,
			     strerror(errno));
		return -errno;
	}
	return (int)n;
}

static int replay_read(void *state, struct mt_emitter *em, size_t max,
		       uint32_t *flags)
{
	struct replay *r = state;
	char first;
	int n, err;

	if (r->json) {
		return read_json(r, em, max, flags);
	}
	if (r->fd < 0) {
		*flags |= MT_SOURCE_EOF;
		return 0;
	}
	n = sniff(r, &first);
	if (n < 0) {
		return n;
	}
	if (n == 0) {
		r->host->log(r->host, MT_LOG_ERROR, PLUGIN,
			     "%s: empty file, not a recording", r->path);
		return -ENODATA;
	}
	if (first == '{') {
		r->json = fdopen(r->fd, "r");
		if (!r->json) {
			return -errno;
		}
		r->fd = -1;
		ungetc(first, r->json);
		return read_json(r, em, max, flags);
	}
	/* An artifact: rewind the byte we peeked at, or refuse pipes. */
	if (lseek(r->fd, -1, SEEK_CUR) < 0) {
		r->host->log(r->host, MT_LOG_ERROR, PLUGIN,
			     "%s: artifacts must be seekable files: %s",
			     r->path, strerror(errno));
		return -ESPIPE;
	}
	r->em = em;
	err = r->host->decode(r->host, NULL, r->fd, r->path, emit_events,
			      emit_meta, r);
	close(r->fd);
	r->fd = -1;
	*flags |= MT_SOURCE_EOF;
	if (r->emit_err) {
		return r->emit_err;
	}
	return err < 0 ? err : 0;
}

static void replay_destroy(void *state)
{
	struct replay *r = state;

	if (r->json) {
		fclose(r->json);
	} else if (r->fd >= 0) {
		close(r->fd);
	}
	free(r->line);
	free(r->path);
	free(r);
}

static const struct mt_source_ops replay_ops = {
	MT_OPS_HEADER(mt_source_ops),
	.flags = MT_SOURCE_NO_COMMAND,
	.create = replay_create,
	.start = replay_start,
	.poll_fd = replay_poll_fd,
	.read = replay_read,
	.destroy = replay_destroy,
};

static const struct mt_plugin_desc replay_desc = {
	MT_OPS_HEADER(mt_plugin_desc),
	.kind = MT_PLUGIN_SOURCE,
	.name = "replay",
	.description = "events from an artifact or JSON lines file (replay:FILE)",
	.version = PACKAGE_VERSION,
	.ops.source = &replay_ops,
};

MT_PLUGIN_DEFINE(replay_desc)
