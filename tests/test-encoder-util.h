/* SPDX-License-Identifier: MIT */
/*
 * test-encoder-util.h - what the msgpack-zstd test programs share: loading
 * the plugin the way the host does (dlopen from MEMTRACK_PLUGIN_PATH), a
 * host whose log() keeps the last message, and the deterministic event
 * sequence that tests/test-python-decode.py recomputes.
 */
#ifndef TEST_ENCODER_UTIL_H
#define TEST_ENCODER_UTIL_H

#include <stddef.h>
#include <memtrack/plugin.h>

/* The last message logged through te_host, "<plugin>: <text>". */
extern char te_last_log[2048];
extern const struct mt_host te_host;

/*
 * dlopen() $MEMTRACK_PLUGIN_PATH/encoder-msgpack-zstd.so and check its
 * descriptor. Returns 0 and sets *ops, or -1 after printing why on stderr.
 */
int te_load_plugin(const struct mt_encoder_ops **ops);

/* Event i of the deterministic sequence (see test-python-decode.py). */
void te_deterministic_event(size_t i, struct mt_event *ev);

#endif /* TEST_ENCODER_UTIL_H */
