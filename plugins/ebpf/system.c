/* SPDX-License-Identifier: MIT */
/*
 * plugins/ebpf/system.c - what the eBPF source needs from the kernel and
 * from our privileges, checked before anything is loaded so that one
 * message names all that is missing.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>

#include <memtrack/plugin.h>

#include "ebpf.h"

/* What the kernel and our privileges lack, in one message. */
int ebpf_check_system(struct ebpf_state *st)
{
	unsigned long long cap = 0;
	char line[256];
	FILE *f;

	f = fopen("/proc/self/status", "re");
	if (f) {
		while (fgets(line, sizeof(line), f)) {
			if (sscanf(line, "CapEff: %llx", &cap) == 1) {
				break;
			}
		}
		fclose(f);
	}
	/* CAP_SYS_ADMIN (21) covers all; else CAP_BPF (39) + CAP_PERFMON
	 * (38); CAP_KILL (5) to stop and resume the traced processes */
	if (!(cap & (1ull << 21)) &&
	    (!(cap & (1ull << 39)) || !(cap & (1ull << 38)))) {
		ebpf_log(st, MT_LOG_ERROR,
			 "needs root (CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN)");
		return -EPERM;
	}
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		ebpf_log(st, MT_LOG_ERROR,
			 "kernel lacks BTF (/sys/kernel/btf/vmlinux: %s)",
			 strerror(errno));
		return -ENOTSUP;
	}
	if (access("/sys/bus/event_source/devices/uprobe/type", R_OK)) {
		ebpf_log(st, MT_LOG_ERROR,
			 "kernel lacks uprobes (/sys/bus/event_source/devices/uprobe: %s)",
			 strerror(errno));
		return -ENOTSUP;
	}
	/* libbpf finds syscall tracepoints' ids in tracefs */
	if (access(TRACEFS "/events", R_OK) &&
	    access("/sys/kernel/debug/tracing/events", R_OK)) {
		if (mount("nodev", TRACEFS, "tracefs", 0, NULL) &&
		    errno != EBUSY) {
			ebpf_log(st, MT_LOG_ERROR,
				 "tracefs not mounted at " TRACEFS
				 " and cannot be mounted: %s",
				 strerror(errno));
			return -ENOTSUP;
		}
	}
	return 0;
}
