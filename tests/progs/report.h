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
 * Under MT_REPORT_PROC, the number of an inherited descriptor of the /proc
 * of memtrack's pid namespace, PID and TID are the ids memtrack's
 * namespace sees ("thread-self" there), and the ids of the thread's own
 * /proc follow (a pid namespace's, under unshare --mount-proc or in a
 * container):
 *   KIND PID TID ADDR SIZE OLD NSPID NSTID
 * A link that cannot be read gives -1, which no event has. Such a report
 * makes no call but readlinkat and write: not getpid or gettid, which a
 * program under an allow-list of its own calls would otherwise make, and
 * which the interposer must not make for it.
 */
#ifndef MT_TEST_REPORT_H
#define MT_TEST_REPORT_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>

/* "PID/task/TID", the link thread-self in the /proc of dirfd, into *pid
 * and *tid; -1 for what cannot be read. */
static inline void report_thread_self(int dirfd, long *pid, long *tid)
{
	char link[64], *end;
	ssize_t n;

	*pid = *tid = -1;
	n = readlinkat(dirfd, dirfd == AT_FDCWD ? "/proc/thread-self" :
						  "thread-self",
		       link, sizeof(link) - 1);
	if (n <= 0) {
		return;
	}
	link[n] = '\0';
	*pid = strtol(link, &end, 10);
	if (strncmp(end, "/task/", 6)) {
		*pid = -1;
		return;
	}
	*tid = strtol(end + 6, NULL, 10);
}

static inline void report(const char *kind, const void *addr,
			  unsigned long long size, const void *old)
{
	const char *outer = getenv("MT_REPORT_PROC");
	long pid, tid, opid, otid;
	char buf[192];
	int n;

	if (outer) {
		report_thread_self(atoi(outer), &opid, &otid);
		report_thread_self(AT_FDCWD, &pid, &tid);
		n = snprintf(buf, sizeof(buf),
			     "%s %ld %ld %#llx %llu %#llx %ld %ld\n", kind,
			     opid, otid,
			     (unsigned long long)(uintptr_t)addr, size,
			     (unsigned long long)(uintptr_t)old, pid, tid);
	} else {
		n = snprintf(buf, sizeof(buf), "%s %d %ld %#llx %llu %#llx\n",
			     kind, (int)getpid(), (long)syscall(SYS_gettid),
			     (unsigned long long)(uintptr_t)addr, size,
			     (unsigned long long)(uintptr_t)old);
	}
	if (write(1, buf, (size_t)n) != n) {
		_exit(3);
	}
}

#endif
