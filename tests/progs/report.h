/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/report.h - test programs tell the test what event each of
 * their calls must produce, one line on stdout per call:
 *   KIND PID TID ADDR SIZE OLD
 * KIND is an event type name (Malloc, Free, Realloc, ...) or "Nothing" (no
 * event of that SIZE may exist). Written with write(2), formatted on the
 * stack: reporting allocates nothing and lines of forked processes do not
 * mix.
 */
#ifndef MT_TEST_REPORT_H
#define MT_TEST_REPORT_H

#include <stdint.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/syscall.h>

static inline void report(const char *kind, const void *addr,
			  unsigned long long size, const void *old)
{
	char buf[192];
	int n;

	n = snprintf(buf, sizeof(buf), "%s %d %ld %#llx %llu %#llx\n", kind,
		     (int)getpid(), (long)syscall(SYS_gettid),
		     (unsigned long long)(uintptr_t)addr, size,
		     (unsigned long long)(uintptr_t)old);
	if (write(1, buf, (size_t)n) != n) {
		_exit(3);
	}
}

#endif
