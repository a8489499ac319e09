/* SPDX-License-Identifier: MIT */
/*
 * Logging for the host and, through mt_host.log, for plugins.
 * Messages go to stderr as "memtrack: [plugin: ]message". Thread-safe.
 */
#ifndef MT_HOST_LOG_H
#define MT_HOST_LOG_H

#include <memtrack/plugin.h>

extern int mt_log_level; /* enum mt_log_level; default MT_LOG_WARN */
/* Set while a live status line (\r-terminated) is on stderr. */
extern int mt_log_status_line;
/* Errors logged so far (host and plugins): a run that fails without one
 * says why itself (run.c). */
extern int mt_log_errors;

void mt_log(enum mt_log_level level, const char *fmt, ...) MT_PRINTF(2, 3);
#define mt_err(...) mt_log(MT_LOG_ERROR, __VA_ARGS__)
#define mt_warn(...) mt_log(MT_LOG_WARN, __VA_ARGS__)
#define mt_info(...) mt_log(MT_LOG_INFO, __VA_ARGS__)
#define mt_debug(...) mt_log(MT_LOG_DEBUG, __VA_ARGS__)

/* A plugin's call failed with err < 0. The plugin should have said why
 * (plugin.h); when nothing has been logged at all, this says which plugin
 * and which call failed, so that an exit 1 never comes without a line
 * ("sink plugin 'x': write() failed without saying why: ..."). Any thread.
 * Returns err. */
int mt_log_plugin_failure(const char *kind, const char *name, const char *call,
			  int err);

#include <stdarg.h>
void mt_vlog_plugin(enum mt_log_level level, const char *plugin,
		    const char *fmt, va_list ap);

#endif /* MT_HOST_LOG_H */
