/* SPDX-License-Identifier: MIT */
/*
 * An example third-party encoder: one JSON object per event, one frame per
 * batch. Built out of tree against the installed headers:
 *
 *   cc $(pkg-config --cflags memtrack) -shared -fPIC -fvisibility=hidden \
 *      -o encoder-jsonl.so encoder.c
 *   MEMTRACK_PLUGIN_PATH=. memtrack --encoder jsonl --source replay:in.mt \
 *      --sink file:out.jsonl
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <memtrack/plugin.h>

static int jsonl_create(const struct mt_host *host, const char *args,
			void **state)
{
	if (args && *args) {
		host->log(host, MT_LOG_ERROR, "jsonl", "takes no options: '%s'",
			  args);
		return -EINVAL;
	}
	*state = NULL;
	return 0;
}

static int jsonl_encode(void *state, const struct mt_event *ev, size_t count,
			struct mt_frame *out)
{
	/* 160 bytes hold the longest line: seven 20-digit numbers and keys. */
	char *buf = malloc(count * 160 + 1);
	size_t len = 0, i;

	if (!buf) {
		return -ENOMEM;
	}
	for (i = 0; i < count; i++, ev++) {
		len += (size_t)sprintf(buf + len,
				       "{\"pid\":%" PRId32 ",\"tid\":%" PRId32
				       ",\"timestamp\":%" PRIu64
				       ",\"addr\":%" PRIu64
				       ",\"type\":\"%s\",\"size\":%" PRIu64
				       "}\n",
				       ev->pid, ev->tid, ev->timestamp,
				       ev->addr, mt_event_kind_name(ev->kind),
				       ev->size);
	}
	out->data = buf;
	out->len = len;
	return 0;
}

static void jsonl_frame_free(struct mt_frame *frame)
{
	free(frame->data);
	frame->data = NULL;
}

static void jsonl_destroy(void *state)
{
}

static const struct mt_encoder_ops jsonl_ops = {
	MT_OPS_HEADER(mt_encoder_ops),
	.create = jsonl_create,
	.encode = jsonl_encode,
	.frame_free = jsonl_frame_free,
	.destroy = jsonl_destroy,
};

static const struct mt_plugin_desc jsonl_desc = {
	MT_OPS_HEADER(mt_plugin_desc),
	.kind = MT_PLUGIN_ENCODER,
	.name = "jsonl",
	.description = "example: JSON lines, one object per event",
	.version = "1.0",
	.ops.encoder = &jsonl_ops,
};

MT_PLUGIN_DEFINE(jsonl_desc)
