/* SPDX-License-Identifier: MIT */
/*
 * test-encoder-util.c - see test-encoder-util.h.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test-encoder-util.h"

char te_last_log[2048];

static void te_log(const struct mt_host *host, enum mt_log_level level,
		   const char *plugin, const char *fmt, ...) MT_PRINTF(4, 5);

static void te_log(const struct mt_host *host, enum mt_log_level level,
		   const char *plugin, const char *fmt, ...)
{
	va_list ap;
	int n;

	n = snprintf(te_last_log, sizeof(te_last_log), "%s: ",
		     plugin ? plugin : "?");
	if (n < 0 || (size_t)n >= sizeof(te_last_log)) {
		n = 0;
	}
	va_start(ap, fmt);
	vsnprintf(te_last_log + n, sizeof(te_last_log) - (size_t)n, fmt, ap);
	va_end(ap);
	/* keep it visible in the test log too */
	if (getenv("TE_VERBOSE")) {
		fprintf(stderr, "[log %d] %s\n", (int)level, te_last_log);
	}
}

const struct mt_host te_host = {
	MT_OPS_HEADER(mt_host),
	.log = te_log,
	.log_level = MT_LOG_DEBUG,
	.decode = NULL,
};

int te_load_plugin(const struct mt_encoder_ops **ops)
{
	const struct mt_plugin_desc *desc;
	mt_plugin_entry_fn entry;
	const char *dir = getenv("MEMTRACK_PLUGIN_PATH");
	char path[4096];
	void *handle;

	if (!dir) {
		fprintf(stderr, "MEMTRACK_PLUGIN_PATH is not set\n");
		return -1;
	}
	snprintf(path, sizeof(path), "%s/encoder-msgpack-zstd.so", dir);
	/* never dlclose()d: the process ends with the test */
	handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!handle) {
		fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
		return -1;
	}
	entry = (mt_plugin_entry_fn)dlsym(handle, MT_PLUGIN_ENTRY_SYMBOL);
	if (!entry) {
		fprintf(stderr, "%s: no %s\n", path, MT_PLUGIN_ENTRY_SYMBOL);
		return -1;
	}
	desc = entry();
	if (!desc || desc->abi_major != MT_ABI_MAJOR ||
	    desc->kind != MT_PLUGIN_ENCODER ||
	    strcmp(desc->name, "msgpack-zstd") != 0 || !desc->ops.encoder) {
		fprintf(stderr, "%s: unexpected descriptor\n", path);
		return -1;
	}
	*ops = desc->ops.encoder;
	return 0;
}

/*
 * Must match expected_event() in test-python-decode.py: every kind, small
 * and 64-bit values, negative pids, Reallocs with and without old_addr,
 * and stack ids on some events.
 */
void te_deterministic_event(size_t i, struct mt_event *ev)
{
	uint64_t k = i;

	memset(ev, 0, sizeof(*ev));
	ev->kind = (uint8_t)(k % MT_EV_KIND_COUNT);
	ev->pid = (int32_t)(1000 + k % 3);
	if (k % 97 == 5) {
		ev->pid = -(int32_t)(k % 70000) - 1;
	}
	ev->tid = ev->pid + (int32_t)(k % 5);
	ev->timestamp = 1700000000000ull + k * 1234;
	ev->addr = 0x7f0000000000ull + k * 4096;
	if (k % 50 == 3) {
		ev->addr = UINT64_MAX;
	}
	if (ev->kind != MT_EV_FREE) {
		ev->size = (k * 37) % 100000;
	}
	if (ev->kind == MT_EV_REALLOC && k % 2 == 0) {
		ev->flags |= MT_EVF_OLD_ADDR;
		ev->old_addr = ev->addr - 64;
	}
	if (k % 7 == 0) {
		ev->flags |= MT_EVF_STACK;
		ev->stack_id = (uint32_t)(k * 3);
	}
}
