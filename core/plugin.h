/* SPDX-License-Identifier: MIT */
/*
 * Finding, loading and checking plugins.
 *
 * Search path, first match wins: $MEMTRACK_PLUGIN_PATH (colon-separated),
 * the build tree when this memtrack runs from it, then MT_PLUGINDIR.
 * A plugin for kind K and name N is the file "K-N.so" in one of them.
 */
#ifndef MT_CORE_PLUGIN_H
#define MT_CORE_PLUGIN_H

#include <memtrack/plugin.h>

struct mt_plugin {
	const struct mt_plugin_desc *desc;
	char *path;
	void *handle;
};

const char *mt_plugin_kind_name(enum mt_plugin_kind kind);

/* Load plugin NAME of KIND. On failure logs one line saying why (file and
 * reason) and returns a negative errno. */
int mt_plugin_load(enum mt_plugin_kind kind, const char *name,
		   struct mt_plugin **out);

/* Load and check the plugin file PATH, whatever its kind. */
int mt_plugin_open(const char *path, struct mt_plugin **out);

void mt_plugin_close(struct mt_plugin *p);

/* Call fn for every plugin file found (each directory once, in search
 * order); files that are not valid plugins are reported through fn with
 * p == NULL and err set to a message. */
typedef void (*mt_plugin_visit_fn)(const char *path, struct mt_plugin *p,
				   const char *err, void *ctx);
void mt_plugin_foreach(mt_plugin_visit_fn fn, void *ctx);

#endif /* MT_CORE_PLUGIN_H */
