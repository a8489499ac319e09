/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"
#include "log.h"
#include "plugin.h"
#include "stats.h"

/* Decoders loaded on behalf of plugins (replay) and 'memtrack dump'. */
#define MAX_DECODERS 4
static struct mt_plugin *decoders[MAX_DECODERS];
static pthread_mutex_t decoders_lock = PTHREAD_MUTEX_INITIALIZER;

static void host_log(const struct mt_host *host, enum mt_log_level level,
		     const char *plugin, const char *fmt, ...) MT_PRINTF(4, 5);

static void host_log(const struct mt_host *host, enum mt_log_level level,
		     const char *plugin, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	mt_vlog_plugin(level, plugin, fmt, ap);
	va_end(ap);
}

static int host_decode(const struct mt_host *h, const char *encoder, int fd,
		       const char *name, mt_event_cb on_events,
		       mt_meta_cb on_meta, void *ctx)
{
	return mt_host_decode(encoder, fd, name, on_events, on_meta, ctx);
}

/* The run's statistics, for mt_host.note (poller thread only). */
static struct mt_stats *note_stats;

void mt_host_set_stats(struct mt_stats *s)
{
	note_stats = s;
}

static void host_note(const struct mt_host *h, const char *what, int32_t pid,
		      uint64_t ts_ns)
{
	mt_debug("%s pid %d", what, (int)pid);
	mt_stats_note(note_stats, what, pid, ts_ns);
}

static struct mt_host host = {
	MT_OPS_HEADER(mt_host),
	.log = host_log,
	.decode = host_decode,
	.note = host_note,
};

const struct mt_host *mt_host_get(void)
{
	host.log_level = mt_log_level;
	return &host;
}

static int find_decoder(const char *encoder, struct mt_plugin **out)
{
	struct mt_plugin *p = NULL;
	int i, err = 0;

	pthread_mutex_lock(&decoders_lock);
	for (i = 0; i < MAX_DECODERS && decoders[i]; i++) {
		if (strcmp(decoders[i]->desc->name, encoder) == 0) {
			p = decoders[i];
			goto end;
		}
	}
	if (i == MAX_DECODERS) {
		err = -ENOSPC;
		goto end;
	}
	err = mt_plugin_load(MT_PLUGIN_ENCODER, encoder, &p);
	if (err < 0) {
		goto end;
	}
	if (!p->ops.encoder.decode) {
		mt_err("%s: encoder '%s' cannot decode", p->path, encoder);
		mt_plugin_close(p);
		p = NULL;
		err = -ENOTSUP;
		goto end;
	}
	decoders[i] = p;
end:
	pthread_mutex_unlock(&decoders_lock);
	*out = p;
	return err;
}

int mt_host_decode(const char *encoder, int fd, const char *name,
		   mt_event_cb on_events, mt_meta_cb on_meta, void *ctx)
{
	const struct mt_encoder_ops *ops;
	struct mt_plugin *p;
	void *state = NULL;
	int err;

	err = find_decoder(encoder ? encoder : MT_DEFAULT_ENCODER, &p);
	if (err < 0) {
		return err;
	}
	ops = &p->ops.encoder;
	err = ops->create(mt_host_get(), NULL, &state);
	if (err < 0) {
		return err;
	}
	err = ops->decode(state, fd, name, on_events, on_meta, ctx);
	ops->destroy(state);
	return err;
}

void mt_host_cleanup(void)
{
	int i;

	pthread_mutex_lock(&decoders_lock);
	for (i = 0; i < MAX_DECODERS; i++) {
		mt_plugin_close(decoders[i]);
		decoders[i] = NULL;
	}
	pthread_mutex_unlock(&decoders_lock);
}
