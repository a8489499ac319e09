/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

#include "log.h"

int mt_log_level = MT_LOG_WARN;

/* One lock so that lines from worker threads never interleave. */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static void vlog(enum mt_log_level level, const char *plugin, const char *fmt,
		 va_list ap)
{
	static const char *const prefix[] = { "error: ", "warning: ", "", "" };

	if ((int)level > mt_log_level) {
		return;
	}
	pthread_mutex_lock(&log_lock);
	fputs("memtrack: ", stderr);
	if (level <= MT_LOG_WARN) {
		fputs(prefix[level], stderr);
	}
	if (plugin) {
		fprintf(stderr, "%s: ", plugin);
	}
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	pthread_mutex_unlock(&log_lock);
}

void mt_log(enum mt_log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(level, NULL, fmt, ap);
	va_end(ap);
}

static void host_log(const struct mt_host *host, enum mt_log_level level,
		     const char *plugin, const char *fmt, ...) MT_PRINTF(4, 5);

static void host_log(const struct mt_host *host, enum mt_log_level level,
		     const char *plugin, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(level, plugin, fmt, ap);
	va_end(ap);
}

static struct mt_host host = {
	.size = sizeof(struct mt_host),
	.abi_major = MT_ABI_MAJOR,
	.abi_minor = MT_ABI_MINOR,
	.log = host_log,
};

const struct mt_host *mt_host_get(void)
{
	host.log_level = mt_log_level;
	return &host;
}
