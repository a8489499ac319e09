/* SPDX-License-Identifier: MIT */
/*
 * fuzz-common.h - what the libFuzzer targets of fuzz/ share: a quiet host
 * for the plugins' log calls, input as a file descriptor (the readers take
 * fds, not buffers), and the inputs that hit defects someone else is
 * fixing (fuzz/KNOWN), so that 'make fuzz' stays a test of everything else.
 *
 * Each target is one .c file, compiled by clang with
 * -fsanitize=fuzzer,address,undefined together with the sources it tests
 * (fuzz/local.mk), so this header is included once per program and may
 * define functions (static inline: not every target uses each).
 */
#ifndef MT_FUZZ_COMMON_H
#define MT_FUZZ_COMMON_H

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <memtrack/plugin.h>

/* Format every message (its arguments are input too), print none. */
static inline void fuzz_vlog(const char *fmt, va_list ap)
{
	char buf[1024];

	vsnprintf(buf, sizeof(buf), fmt, ap);
}

static inline void fuzz_host_log(const struct mt_host *host, enum mt_log_level level,
			  const char *plugin, const char *fmt, ...)
{
	va_list ap;

	(void)host;
	(void)level;
	(void)plugin;
	va_start(ap, fmt);
	fuzz_vlog(fmt, ap);
	va_end(ap);
}

/* A memfd holding data, at offset 0; -1 on failure (aborts the run: the
 * harness, not the input, is broken). */
static inline int fuzz_fd(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz-input", MFD_CLOEXEC);
	size_t at = 0;

	if (fd < 0) {
		perror("memfd_create");
		abort();
	}
	while (at < size) {
		ssize_t n = write(fd, data + at, size - at);

		if (n <= 0) {
			perror("write");
			abort();
		}
		at += (size_t)n;
	}
	if (lseek(fd, 0, SEEK_SET) != 0) {
		abort();
	}
	return fd;
}

static inline uint32_t fuzz_rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

/* The FNV-1a-32 of MTKT/MTKM payloads (report/symbolize.c). */
static inline uint32_t fuzz_fnv1a(const uint8_t *p, size_t n)
{
	uint32_t h = 2166136261u;

	while (n--) {
		h = (h ^ *p++) * 16777619u;
	}
	return h;
}

/*
 * fuzz/KNOWN: a stack id near 2^26 makes the report allocate ~1.6 GB for
 * its table (report/symbolize.c, MAX_STACK_ID), being fixed elsewhere.
 * True when an MTKT payload, read as symbolize.c reads it, names an id at
 * or above 2^16 (1.5 MB of table, zeroed for every input: higher ids cost
 * far more time than they test): such a payload is left out.
 */
#define FUZZ_KNOWN_STACK_ID (1u << 16)

static inline int fuzz_known_stack_blowup(const uint8_t *p, size_t len)
{
	size_t at = 16;
	uint32_t count;

	if (len < 16 || memcmp(p, "MTKT", 4)) {
		return 0;
	}
	count = fuzz_rd32(p + 8);
	while (count-- > 0 && at + 12 <= len) {
		uint32_t id = fuzz_rd32(p + at), n = fuzz_rd32(p + at + 8);

		if (id >= FUZZ_KNOWN_STACK_ID) {
			return 1;
		}
		if (n > 127 || at + 12 + (size_t)n * 8 > len) {
			return 0;
		}
		at += 12 + (size_t)n * 8;
	}
	return 0;
}

#endif /* MT_FUZZ_COMMON_H */
