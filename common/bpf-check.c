/* SPDX-License-Identifier: MIT */
/*
 * common/bpf-check.c - what BPF tracing needs from the kernel and from our
 * privileges, checked before anything is loaded so that one message names
 * what is missing.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>

#include "bpf-check.h"

int mt_bpf_check_system(unsigned int needs, char *why, size_t len)
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
		snprintf(why, len,
			 "needs root (CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN)");
		return -EPERM;
	}
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		snprintf(why, len,
			 "kernel lacks BTF (/sys/kernel/btf/vmlinux: %s)",
			 strerror(errno));
		return -ENOTSUP;
	}
	if ((needs & MT_BPF_NEEDS_UPROBES) &&
	    access("/sys/bus/event_source/devices/uprobe/type", R_OK)) {
		snprintf(why, len,
			 "kernel lacks uprobes (/sys/bus/event_source/devices/uprobe: %s)",
			 strerror(errno));
		return -ENOTSUP;
	}
	/* libbpf finds syscall tracepoints' ids in tracefs */
	if (access(MT_TRACEFS "/events", R_OK) &&
	    access("/sys/kernel/debug/tracing/events", R_OK)) {
		if (mount("nodev", MT_TRACEFS, "tracefs", 0, NULL) &&
		    errno != EBUSY) {
			snprintf(why, len,
				 "tracefs not mounted at " MT_TRACEFS
				 " and cannot be mounted: %s",
				 strerror(errno));
			return -ENOTSUP;
		}
	}
	return 0;
}
