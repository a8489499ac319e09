/* SPDX-License-Identifier: MIT */
/*
 * plugins/ebpf/system.c - what the eBPF source needs from the kernel and
 * from our privileges (common/bpf-check.c, shared with the preload
 * source), checked before anything is loaded so that one message names
 * all that is missing.
 */
#include "config.h"

#include <memtrack/plugin.h>

#include "bpf-check.h"
#include "ebpf.h"

/* What the kernel and our privileges lack, in one message. */
int ebpf_check_system(struct ebpf_state *st)
{
	char why[256];
	int err;

	err = mt_bpf_check_system(MT_BPF_NEEDS_UPROBES, why, sizeof(why));
	if (err) {
		ebpf_log(st, MT_LOG_ERROR, "%s", why);
	}
	return err;
}
