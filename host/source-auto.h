/* SPDX-License-Identifier: MIT */
/*
 * `--source auto`: the preload and eBPF sources at once, each process
 * recorded by one (source-auto.c).
 */
#ifndef MT_HOST_SOURCE_AUTO_H
#define MT_HOST_SOURCE_AUTO_H

#include "plugin.h"

/* A plugin record for the built-in source "auto" (no file, no handle:
 * mt_plugin_close() releases it). Returns 0 or -ENOMEM. */
int mt_source_auto_plugin(struct mt_plugin **out);

#endif /* MT_HOST_SOURCE_AUTO_H */
