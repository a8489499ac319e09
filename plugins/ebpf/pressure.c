/* SPDX-License-Identifier: MIT */
/*
 * plugins/ebpf/pressure.c - the pressure controller's user-space half.
 *
 * BPF holds a process whose record would leave a ring fuller than its
 * high watermark: a freeze (freeze.c), or a stop (SIGSTOP) announced on
 * the `ctl` ring, which control.c makes a throttle hold of. maintain()
 * and the drain resume every throttled process once the rings are below
 * their low watermarks.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <sys/types.h>

#include <bpf/bpf.h>

#include <memtrack/plugin.h>

#include "memtrack.h"
#include "ebpf.h"
#include "array.h"

/* Below the low watermark: resume every throttled producer. */
void ebpf_resume_throttled(struct ebpf_state *st)
{
	size_t i = 0;

	if (!st->throttled || !ebpf_rings_below_low(st)) {
		return;
	}
	while (i < st->nholds) {
		struct ebpf_hold *h = &st->holds[i];
		struct mt_hold_key key = { .tgid = (uint32_t)h->pid, .tid = 0 };
		size_t n = st->nholds;

		if (!(h->reasons & HOLD_THROTTLE)) {
			i++;
			continue;
		}
		ebpf_hold_release(st, h, HOLD_THROTTLE, &key);
		if (st->nholds == n) {
			i++; /* still held for another reason: stays here */
		}
	}
}
