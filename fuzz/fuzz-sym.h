/* SPDX-License-Identifier: MIT */
/*
 * fuzz-sym.h - what the targets over report/symbolize.c share: a quiet
 * mt_log, the metadata payload built from the input, and an open() that
 * keeps a fuzzed module path from reaching anything but a regular file.
 *
 * Why the open() wrapper (linked with -Wl,--wrap=open): the recording
 * names the module files the report opens. A fuzzed path may name a FIFO,
 * a terminal or /proc/kmsg, and the report would block on it forever
 * (issue 15, fixed elsewhere: fuzz/KNOWN). Until then the harness lets
 * only regular files outside /proc, /sys and /dev through, so that a
 * 10-minute run explores the parsers instead of waiting on a device.
 */
#ifndef MT_FUZZ_SYM_H
#define MT_FUZZ_SYM_H

#include "fuzz-common.h"
#include "log.h"
#include "symbolize.h"

int mt_log_level = MT_LOG_WARN;
int mt_log_status_line;
int mt_log_errors;

void mt_log(enum mt_log_level level, const char *fmt, ...)
{
	va_list ap;

	(void)level;
	va_start(ap, fmt);
	fuzz_vlog(fmt, ap);
	va_end(ap);
}

void mt_vlog_plugin(enum mt_log_level level, const char *plugin,
		    const char *fmt, va_list ap)
{
	(void)level;
	(void)plugin;
	fuzz_vlog(fmt, ap);
}

int __real_open(const char *path, int flags, ...);
int __wrap_open(const char *path, int flags, ...);

int __wrap_open(const char *path, int flags, ...)
{
	struct stat sb;
	mode_t mode = 0;

	if (flags & O_CREAT) {
		va_list ap;

		va_start(ap, flags);
		mode = (mode_t)va_arg(ap, int);
		va_end(ap);
		return __real_open(path, flags, mode);
	}
	if (!strncmp(path, "/proc/", 6) || !strncmp(path, "/sys/", 5) ||
	    !strncmp(path, "/dev/", 5) || stat(path, &sb) < 0 ||
	    !S_ISREG(sb.st_mode)) {
		errno = ENOENT;
		return -1;
	}
	return __real_open(path, flags);
}

/*
 * The payload tag + version 1 + count + checksum + body of the input after
 * its flags byte: count is the body's first 4 bytes, the checksum is made
 * right (a mutated checksum only tests one comparison). With flags bit 0
 * the bytes are the payload as they are. Returns a malloc'ed payload.
 */
static inline uint8_t *fuzz_payload(const char *tag, const uint8_t *data,
			     size_t size, size_t *len)
{
	uint8_t *p;
	uint32_t v;

	if (size >= 1 && (data[0] & 1)) {
		p = malloc(size ? size : 1);
		if (!p) {
			abort();
		}
		memcpy(p, data + 1, size - 1);
		*len = size - 1;
		return p;
	}
	if (size >= 1) {
		data++;
		size--;
	}
	p = calloc(1, 16 + size);
	if (!p) {
		abort();
	}
	memcpy(p, tag, 4);
	v = 1;
	memcpy(p + 4, &v, 4);
	if (size >= 4) {
		memcpy(p + 8, data, 4);
		data += 4;
		size -= 4;
	}
	memcpy(p + 16, data, size);
	v = fuzz_fnv1a(p + 16, size);
	memcpy(p + 12, &v, 4);
	*len = 16 + size;
	return p;
}

/* Name every frame of stack id, as the outputs do. */
static inline void fuzz_name_stack(struct mt_sym *s, uint32_t id)
{
	static char names[64][256];
	size_t n = mt_sym_frames(s, id, &names[0][0], sizeof(names[0]), 64), i;
	size_t sum = 0;

	for (i = 0; i < n; i++) {
		sum += strlen(names[i]);
	}
	(void)sum;
}

#endif /* MT_FUZZ_SYM_H */
