/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/report.h - test programs tell the test what event each of
 * their calls must produce, one line on stdout per call:
 *   KIND PID TID ADDR SIZE OLD
 * KIND is an event type name (Malloc, Free, Realloc, ...) or "Nothing" (no
 * event of that SIZE may exist). Written with write(2), formatted on the
 * stack: reporting allocates nothing and lines of forked processes do not
 * mix.
 *
 * In another pid namespace than memtrack's, PID and TID are the ids
 * memtrack's namespace sees, and the process's own follow:
 *   KIND PID TID ADDR SIZE OLD NSPID NSTID
 * The test says which namespace is memtrack's with MT_REPORT_PROC, the
 * number of an inherited descriptor of that namespace's /proc: there,
 * "thread-self" names the calling thread by those ids (getpid() and
 * gettid() only know the namespace the thread is in). A link that cannot
 * be read gives -1, which no event has.
 */
#ifndef MT_TEST_REPORT_H
#define MT_TEST_REPORT_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>

/* The calling thread's ids in the namespace of MT_REPORT_PROC's /proc
 * into *pid and *tid, and 1; 0 without MT_REPORT_PROC. */
static inline int report_outer_ids(long *pid, long *tid)
{
	const char *fd = getenv("MT_REPORT_PROC");
	char link[64], *end;
	ssize_t n;

	if (!fd) {
		return 0;
	}
	*pid = *tid = -1;
	n = readlinkat(atoi(fd), "thread-self", link, sizeof(link) - 1);
	if (n <= 0) {
		return 1;
	}
	link[n] = '\0';
	/* "PID/task/TID" */
	*pid = strtol(link, &end, 10);
	if (strncmp(end, "/task/", 6)) {
		*pid = -1;
		return 1;
	}
	*tid = strtol(end + 6, NULL, 10);
	return 1;
}

static inline void report(const char *kind, const void *addr,
			  unsigned long long size, const void *old)
{
	char buf[192];
	long pid = (long)getpid(), tid = (long)syscall(SYS_gettid);
	long opid, otid;
	int n;

	if (report_outer_ids(&opid, &otid)) {
		n = snprintf(buf, sizeof(buf),
			     "%s %ld %ld %#llx %llu %#llx %ld %ld\n", kind,
			     opid, otid,
			     (unsigned long long)(uintptr_t)addr, size,
			     (unsigned long long)(uintptr_t)old, pid, tid);
	} else {
		n = snprintf(buf, sizeof(buf), "%s %ld %ld %#llx %llu %#llx\n",
			     kind, pid, tid,
			     (unsigned long long)(uintptr_t)addr, size,
			     (unsigned long long)(uintptr_t)old);
	}
	if (write(1, buf, (size_t)n) != n) {
		_exit(3);
	}
}

#endif
