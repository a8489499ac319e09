/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "log.h"

int mt_log_level = MT_LOG_WARN;
int mt_log_status_line;
int mt_log_errors;

/* One lock so that lines from worker threads never interleave. */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

void mt_vlog_plugin(enum mt_log_level level, const char *plugin, const char *fmt,
		 va_list ap)
{
	static const char *const prefix[] = { "error: ", "warning: ", "", "" };

	if (level == MT_LOG_ERROR) {
		__atomic_fetch_add(&mt_log_errors, 1, __ATOMIC_RELAXED);
	}
	if ((int)level > mt_log_level) {
		return;
	}
	pthread_mutex_lock(&log_lock);
	if (mt_log_status_line) {
		/* A message replaces the live status line, not appends to it. */
		fputs("\r\033[K", stderr);
		mt_log_status_line = 0;
	}
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
	mt_vlog_plugin(level, NULL, fmt, ap);
	va_end(ap);
}


int mt_log_plugin_failure(const char *kind, const char *name, const char *call,
			  int err)
{
	/* once something has been said, it is the first error's story and
	 * a failure it causes in a plugin (a closed pipeline) is not news */
	if (err < 0 && !__atomic_load_n(&mt_log_errors, __ATOMIC_RELAXED)) {
		mt_err("%s plugin '%s': %s() failed without saying why: %s",
		       kind, name, call, strerror(-err));
	}
	return err;
}
