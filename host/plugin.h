/* SPDX-License-Identifier: MIT */
/*
 * Finding, loading and checking plugins.
 *
 * Search path, first match wins: $MEMTRACK_PLUGIN_PATH (colon-separated),
 * the build tree when this memtrack runs from it, then MT_PLUGINDIR.
 * A plugin for kind K and name N is the file "K-N.so" in one of them.
 *
 * No plugin code runs before its descriptor has passed mt_plugin_check():
 * ABI major equal, minor not newer, sizes and mandatory callbacks present.
 * The ops are copied into host-sized structs, zero-filled past the plugin's
 * own size, so fields a plugin does not know read as "not supported".
 */
#ifndef MT_HOST_PLUGIN_H
#define MT_HOST_PLUGIN_H

#include <memtrack/plugin.h>

struct mt_plugin {
	const struct mt_plugin_desc *desc;
	char *path;
	void *handle;
	union {
		struct mt_source_ops source;
		struct mt_encoder_ops encoder;
		struct mt_sink_ops sink;
	} ops;
};

const char *mt_plugin_kind_name(enum mt_plugin_kind kind);

/* Load plugin NAME of KIND. On failure logs one line saying why (file and
 * reason) and returns a negative errno. */
int mt_plugin_load(enum mt_plugin_kind kind, const char *name,
		   struct mt_plugin **out);

/* Load and check the plugin file PATH, whatever its kind. On failure, *why
 * (when why is not NULL) receives a malloc'd one-line reason, nothing is
 * logged, and a negative errno is returned. */
int mt_plugin_open(const char *path, struct mt_plugin **out, char **why);

void mt_plugin_close(struct mt_plugin *p);

/* Call fn for every "*.so" file in the search path, each directory once, in
 * search order. p is NULL and why says what is wrong for files that are not
 * valid plugins. fn must not keep p: it is closed after fn returns. */
typedef void (*mt_plugin_visit_fn)(const char *path,
				   const struct mt_plugin *p, const char *why,
				   void *ctx);
int mt_plugin_foreach(mt_plugin_visit_fn fn, void *ctx);

#endif /* MT_HOST_PLUGIN_H */
