/* SPDX-License-Identifier: MIT */
/*
 * plugins/ebpf/args.c - the eBPF source's arguments, with their defaults
 * and the ring sizes and watermarks they imply.
 *
 * Args (comma-separated; the host's --ring-size, --high-watermark and
 * --low-watermark map to them):
 *   ring-size=BYTES      the event ring, a power of two (default 16M;
 *                        k/M/G suffixes)
 *   high-watermark=X     unread bytes above which BPF stops (SIGSTOP) the
 *                        process whose event got there (default 3/4 of
 *                        the ring); X is a fraction of the ring (0.75), a
 *                        percentage (75%) or bytes (12M, 12582912)
 *   low-watermark=X      unread bytes below which maintain() resumes every
 *                        stopped producer (default 1/4 of the ring, or half
 *                        the high watermark when that is lower)
 *   throttle=BYTES       old name of high-watermark=
 *   scope=tree|system    uprobes trap in the traced tree only (default,
 *                        where the kernel allows: scope.c) or in every
 *                        process on the machine
 *   stacks               record the call stack of every allocation (the
 *                        host's --stacks); see stacks.c
 *   stack-depth=N        frames per stack, 1 to 127 (default 64; implies
 *                        stacks; the host's --stack-depth)
 *   handover             --source auto: a process whose interposer (the
 *                        preload source's) says hello records its own
 *                        allocator calls, and the syscalls are the preload
 *                        source's (scope.c, attach.c); with stacks, the
 *                        stack ids from MT_STACK_ID_UPROBES on
 *   sample-bytes=SIZE    with handover (the host's --sample-bytes under
 *                        auto): one allocation recorded per SIZE bytes on
 *                        average, 1 to 1T (sample.c)
 *   seed=N               with sample-bytes=: the draws of the k-th thread
 *                        to allocate start from N and k
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <memtrack/plugin.h>

#include "parse-size.h"

#include "memtrack.h"
#include "ebpf.h"

_Static_assert(MT_STACK_MAX == MT_STACK_DEPTH_MAX,
	       "BPF's stack buffers hold the deepest stack memtrack takes");

#define DEFAULT_RING_SIZE (16u << 20)
/* Under auto (handover) the ring carries what uprobes record: each
 * process before its hello, and those the interposer cannot reach. A
 * quarter of the size is ~3 ms less of every start here (the kernel
 * zeroes the ring and maps it twice, page by page) and still 65,536
 * events: a quarter of a second of two threads trapping at full speed
 * (~8 us a call) while the host is away. Producers are held at the
 * watermarks as ever; --ring-size gives it back. */
#define HANDOVER_RING_SIZE (4u << 20)
#define MIN_RING_SIZE (256u << 10)
#define DEFAULT_STACK_DEPTH 64
/* unwind tables: 2M rows of 8 bytes (libc takes ~ 40k) */
#define DEFAULT_STACK_TABLE_SIZE (16u << 20)

/*
 * A watermark: a fraction of the ring ("0.75"), a percentage ("75%") or
 * bytes ("12M", "12582912"). Kept as text until the ring size is known
 * (ring-size= may come later in the args).
 */
static int parse_watermark(struct ebpf_state *st, const char *name,
			   const char *text, size_t *out)
{
	size_t v = 0;
	double f = -1;
	char *end;

	if (strchr(text, '%')) {
		errno = 0;
		f = strtod(text, &end);
		if (errno || end == text || strcmp(end, "%")) {
			f = -1;
		} else {
			f /= 100;
		}
	} else if (strchr(text, '.')) {
		errno = 0;
		f = strtod(text, &end);
		if (errno || end == text || *end) {
			f = -1;
		}
	} else if (mt_parse_size(text, &v)) {
		v = 0;
	} else if (!v) {
		v = 0; /* refused below: outside (0, ring) */
	}
	if (f > 0 && f < 1) {
		v = (size_t)(f * (double)st->ring_size);
	}
	if (!v || v >= st->ring_size) {
		ebpf_log(st, MT_LOG_ERROR,
			 "option %s=%s: a fraction in (0, 1), a percentage in (0%%, 100%%) or a byte count in (0, %zu) (the ring size) expected",
			 name, text, st->ring_size);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

int ebpf_parse_args(struct ebpf_state *st, const char *args)
{
	char *copy = NULL, *tok, *save = NULL;
	const char *high = NULL, *low = NULL, *high_name = "high-watermark";
	int err = 0, ring_given = 0;

	st->ring_size = DEFAULT_RING_SIZE;
	st->stack_table_size = DEFAULT_STACK_TABLE_SIZE;
	if (args && *args) {
		copy = strdup(args);
		if (!copy) {
			return -ENOMEM;
		}
		tok = strtok_r(copy, ",", &save);
	} else {
		tok = NULL;
	}
	for (; tok; tok = strtok_r(NULL, ",", &save)) {
		if (!strncmp(tok, "ring-size=", 10)) {
			size_t v;

			if (mt_parse_size(tok + 10, &v) || v < MIN_RING_SIZE ||
			    v > (1ull << 32) || (v & (v - 1))) {
				ebpf_log(st, MT_LOG_ERROR,
					 "option ring-size=%s: a power of two from 256k to 4G expected",
					 tok + 10);
				err = -EINVAL;
				break;
			}
			st->ring_size = v;
			ring_given = 1;
		} else if (!strncmp(tok, "high-watermark=", 15)) {
			high = tok + 15;
			high_name = "high-watermark";
		} else if (!strncmp(tok, "throttle=", 9)) {
			high = tok + 9;
			high_name = "throttle";
		} else if (!strncmp(tok, "low-watermark=", 14)) {
			low = tok + 14;
		} else if (!strcmp(tok, "freeze=0") || !strcmp(tok, "freeze=1")) {
			st->no_freeze = tok[7] == '0';
		} else if (!strcmp(tok, "scope=system") ||
			   !strcmp(tok, "scope=tree")) {
			st->scope_system = tok[6] == 's';
		} else if (!strcmp(tok, "handover")) {
			st->handover = 1;
		} else if (!strcmp(tok, "early=0") || !strcmp(tok, "early=1")) {
			st->no_early = tok[6] == '0';
		} else if (!strncmp(tok, "sample-bytes=", 13)) {
			if (mt_parse_sample_bytes(tok + 13,
						  &st->sample_bytes)) {
				ebpf_log(st, MT_LOG_ERROR,
					 "option --sample-bytes %s: a size from 1 to 1T expected (512K, 2M)",
					 tok + 13);
				err = -EINVAL;
				break;
			}
		} else if (!strncmp(tok, "seed=", 5)) {
			if (mt_parse_seed(tok + 5, &st->sample_seed)) {
				ebpf_log(st, MT_LOG_ERROR,
					 "option --seed %s: a number from 0 to 2^64 - 1 expected",
					 tok + 5);
				err = -EINVAL;
				break;
			}
			st->sample_seeded = 1;
		} else if (!strcmp(tok, "stacks")) {
			if (!st->stack_depth) {
				st->stack_depth = DEFAULT_STACK_DEPTH;
			}
		} else if (!strncmp(tok, "stack-depth=", 12)) {
			unsigned int v;

			if (mt_parse_stack_depth(tok + 12, &v)) {
				ebpf_log(st, MT_LOG_ERROR,
					 "option stack-depth=%s: a number of frames from 1 to %d expected",
					 tok + 12, MT_STACK_DEPTH_MAX);
				err = -EINVAL;
				break;
			}
			st->stack_depth = v;
		} else if (!strncmp(tok, "stack-table-size=", 17)) {
			size_t v;

			if (mt_parse_size(tok + 17, &v) || v < 4096 ||
			    v > (1ull << 32)) {
				ebpf_log(st, MT_LOG_ERROR,
					 "option stack-table-size=%s: bytes from 4k to 4G expected",
					 tok + 17);
				err = -EINVAL;
				break;
			}
			st->stack_table_size = v;
			if (!st->stack_depth) {
				st->stack_depth = DEFAULT_STACK_DEPTH;
			}
		} else {
			ebpf_log(st, MT_LOG_ERROR,
				 "unknown option '%s' (known: ring-size=BYTES, high-watermark=X, low-watermark=X, freeze=0|1, scope=tree|system, stacks, stack-depth=N, stack-table-size=BYTES, handover, early=0|1, sample-bytes=SIZE, seed=N)",
				 tok);
			err = -EINVAL;
			break;
		}
	}
	if (!err && (st->sample_bytes || st->sample_seeded) && !st->handover) {
		/* alone, every call traps before it could be skipped */
		ebpf_log(st, MT_LOG_ERROR,
			 "sample-bytes= and seed= are for --source auto (handover): under ebpf every allocator call pays its trap, sampled or not; --source preload samples in the process");
		err = -EINVAL;
	} else if (!err && st->sample_seeded && !st->sample_bytes) {
		ebpf_log(st, MT_LOG_ERROR, "seed= without sample-bytes=");
		err = -EINVAL;
	}
	if (err) {
		goto end;
	}
	if (st->handover && !ring_given) {
		st->ring_size = HANDOVER_RING_SIZE;
	}
	/* 3/4: the last quarter takes what a stopped process's other
	 * threads emit before the stop reaches them */
	st->high_wm = st->ring_size / 4 * 3;
	if (high) {
		err = parse_watermark(st, high_name, high, &st->high_wm);
		if (err) {
			goto end;
		}
	}
	/* resume well before empty, so that producers run while the reader
	 * works through the rest; a high watermark given alone below the
	 * default gets half of it */
	st->low_wm = st->ring_size / 4;
	if (low) {
		err = parse_watermark(st, "low-watermark", low, &st->low_wm);
		if (err) {
			goto end;
		}
		if (st->low_wm >= st->high_wm && high) {
			ebpf_log(st, MT_LOG_ERROR,
				 "option low-watermark=%s (%zu bytes) must be below %s=%s (%zu bytes)",
				 low, st->low_wm, high_name, high, st->high_wm);
			err = -EINVAL;
		} else if (st->low_wm >= st->high_wm) {
			ebpf_log(st, MT_LOG_ERROR,
				 "option low-watermark=%s (%zu bytes) must be below the high watermark (%zu bytes, the default 3/4 of the ring)",
				 low, st->low_wm, st->high_wm);
			err = -EINVAL;
		}
	} else if (st->low_wm >= st->high_wm) {
		st->low_wm = st->high_wm / 2;
	}
	/* a freeze asked at the high watermark lands in tens of
	 * microseconds; past halfway from there to the end of the ring it
	 * has come too late, and BPF stops the process with SIGSTOP */
	st->stop_wm = st->high_wm + (st->ring_size - st->high_wm) / 2;
	/* the stack ring: a quarter of the event ring (a new stack is rare
	 * next to the events), under the same watermarks in proportion */
	if (st->stack_depth) {
		st->stack_ring_size = st->ring_size / 4;
		st->stack_high_wm = st->high_wm / 4;
		st->stack_low_wm = st->low_wm / 4;
		st->stack_stop_wm = st->stop_wm / 4;
	}
end:
	free(copy);
	return err;
}
