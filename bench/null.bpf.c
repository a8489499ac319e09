// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * null.bpf.c - programs that do nothing, for bench/bench-ebpf: attached to
 * the same entry points as memtrack's, they measure what the traps alone
 * cost, the floor memtrack is compared with.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "Dual MIT/GPL";

SEC("uprobe")
int BPF_KPROBE(null_enter)
{
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(null_exit)
{
	return 0;
}
