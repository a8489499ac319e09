/* SPDX-License-Identifier: MIT */
/*
 * The services the host hands to every plugin (struct mt_host).
 */
#ifndef MT_HOST_HOST_H
#define MT_HOST_HOST_H

#include <memtrack/plugin.h>

/* The host services, with log_level refreshed from mt_log_level. */
const struct mt_host *mt_host_get(void);

/* Decode a stream with encoder plugin `encoder`'s decoder (NULL: the
 * default "msgpack-zstd"). Loads the plugin on first use. */
int mt_host_decode(const char *encoder, int fd, const char *name,
		   mt_event_cb on_events, mt_meta_cb on_meta, void *ctx);

struct mt_stats;
/* Where mt_host.note goes (NULL: nowhere). */
void mt_host_set_stats(struct mt_stats *s);

/* Release what mt_host_decode() loaded. */
void mt_host_cleanup(void);

#define MT_DEFAULT_ENCODER "msgpack-zstd"
/* The source when --source is not given: "auto" as root with BPF, else
 * "preload" (main.c: default_source()); both record a command */

#endif /* MT_HOST_HOST_H */
