/* SPDX-License-Identifier: MIT */
/*
 * plugins/ebpf/ring.c - reading the BPF rings: the event ring into the
 * host's batch, the stack ring into metadata, the control ring into
 * control.c, then the exec gate's mapping requests (gate.c); and drain(),
 * which reads what was written when it was called and nothing more.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <memtrack/event.h>
#include <memtrack/plugin.h>

#include "memtrack.skel.h"
#include "ebpf.h"

/* read() result of the event callback once max events were moved */
#define RD_FULL (-ENOSPC)

static int map_positions(struct ebpf_state *st, int fd,
			 volatile uint64_t **cons, volatile uint64_t **prod)
{
	void *p;

	/* read-only mappings of the consumer and producer pages */
	p = mmap(NULL, st->page_size, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		return -errno;
	}
	*cons = p;
	p = mmap(NULL, st->page_size, PROT_READ, MAP_SHARED, fd,
		 st->page_size);
	if (p == MAP_FAILED) {
		return -errno;
	}
	*prod = p;
	return 0;
}

/*
 * Every fork of memtrack (the command's, the helpers') would copy the page
 * tables of the rings' data mappings: libbpf maps each ring's pages twice,
 * each page inserted on its own, so the kernel copies those mappings entry
 * by entry, and the command's exec then tears the copy down. With the 16
 * MiB event ring that was ~11 ms of memtrack's start, before the command
 * ran. No child uses them (the command execs, the helpers make system
 * calls only), so none gets them. libbpf does not say where it mapped a
 * ring; its data mappings are the read-only shared ones of a BPF map at
 * the offset of one page. The other mappings of that kind are rings'
 * too: our producer pages (map_positions()) and, under auto, the preload
 * source's syscall ring, which that source marks itself already. No
 * child wants any of them.
 */
void ebpf_rings_dontfork(struct ebpf_state *st)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	unsigned n = 0;

	if (!f) {
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		uintptr_t lo, hi;
		unsigned long long off;
		char perms[8];
		int name = 0;

		if (sscanf(line,
			   "%" SCNxPTR "-%" SCNxPTR " %7s %llx %*s %*s %n",
			   &lo, &hi, perms, &off, &name) < 4 || !name ||
		    strcmp(perms, "r--s") ||
		    off != (unsigned long long)st->page_size ||
		    strncmp(line + name, "anon_inode:bpf-map", 18)) {
			continue;
		}
		if (!madvise((void *)lo, hi - lo, MADV_DONTFORK)) {
			n++;
		}
	}
	fclose(f);
	ebpf_log(st, MT_LOG_DEBUG, "%u ring mappings kept from forks", n);
}

int ebpf_map_ring_positions(struct ebpf_state *st)
{
	int err;

	st->page_size = sysconf(_SC_PAGESIZE);
	err = map_positions(st, bpf_map__fd(st->skel->maps.events),
			    &st->cons_pos, &st->prod_pos);
	if (!err && st->stack_depth) {
		err = map_positions(st, bpf_map__fd(st->skel->maps.stacks),
				    &st->stack_cons_pos, &st->stack_prod_pos);
	}
	return err;
}

uint64_t ebpf_ring_unread(struct ebpf_state *st)
{
	uint64_t prod = __atomic_load_n(st->prod_pos, __ATOMIC_ACQUIRE);
	uint64_t cons = __atomic_load_n(st->cons_pos, __ATOMIC_ACQUIRE);

	return prod - cons;
}

uint64_t ebpf_stack_ring_unread(struct ebpf_state *st)
{
	if (!st->stack_cons_pos) {
		return 0;
	}
	return __atomic_load_n(st->stack_prod_pos, __ATOMIC_ACQUIRE) -
	       __atomic_load_n(st->stack_cons_pos, __ATOMIC_ACQUIRE);
}

int ebpf_rings_below_low(struct ebpf_state *st)
{
	return ebpf_ring_unread(st) < st->low_wm &&
	       (!st->stack_rb || ebpf_stack_ring_unread(st) < st->stack_low_wm);
}

int ebpf_on_event(void *ctx, void *data, size_t len)
{
	struct ebpf_state *st = ctx;
	struct mt_event *ev;

	if (len < sizeof(*ev)) {
		return 0;
	}
	if (st->smp) {
		/* kept, dropped or held (sample.c) */
		struct mt_event e;
		int err;

		memcpy(&e, data, sizeof(e));
		err = ebpf_sample_event(st, st->em, &e);
		if (err) {
			st->rd_err = err;
			return err;
		}
	} else {
		ev = mt_emit(st->em);
		if (!ev) {
			st->rd_err = -EPIPE;
			return -EPIPE;
		}
		memcpy(ev, data, sizeof(*ev));
	}
	/* returning < 0 stops libbpf after consuming this record */
	if (++st->rd_count >= st->rd_max) {
		return RD_FULL;
	}
	/* drain: libbpf publishes the consumer position after the callback,
	 * so it is where this record starts; stop at the one reaching the
	 * producer position drain() started with */
	if (st->rd_end &&
	    __atomic_load_n(st->cons_pos, __ATOMIC_ACQUIRE) +
			    ((len + BPF_RINGBUF_HDR_SZ + 7) & ~7ull) >=
		    st->rd_end) {
		return RD_FULL;
	}
	return 0;
}

void ebpf_report_drops(struct ebpf_state *st)
{
	uint64_t d = st->skel->bss->dropped;
	uint64_t c = st->skel->bss->ctl_dropped;

	if (d != st->drops_reported) {
		ebpf_log(st, MT_LOG_WARN,
			 "%llu events lost: the event ring was full (raise ring-size= or lower high-watermark=)",
			 (unsigned long long)(d - st->drops_reported));
		st->drops_reported = d;
	}
	if (c != st->ctl_drops_reported) {
		ebpf_log(st, MT_LOG_WARN,
			 "%llu stops not made (the control ring was full, or the kernel could not queue the stop): events of those processes may be missing",
			 (unsigned long long)(c - st->ctl_drops_reported));
		st->ctl_drops_reported = c;
	}
}

/* Handle every stop announced so far (attach, throttle). */
int ebpf_consume_ctl(struct ebpf_state *st)
{
	uint64_t t = st->smp ? ebpf_now_ns() : 0;
	int ret = ring_buffer__consume(st->ctl_rb);

	if (ret < 0) {
		ebpf_log(st, MT_LOG_ERROR, "reading the control ring failed: %s",
			 strerror(-ret));
		return ret;
	}
	ebpf_sample_ctl_read(st, t);
	/* after the records: an exec's comes before its image's first
	 * mapping the gate holds */
	if (!st->in_ctl) {
		ebpf_gate_serve(st);
	}
	return 0;
}

/* Every new stack, then the metadata collected so far, before events
 * that may use them. */
int ebpf_consume_stacks(struct ebpf_state *st, struct mt_emitter *em)
{
	int ret;

	if (!st->stack_rb) {
		return ebpf_meta_flush(st, em); /* MTKA */
	}
	st->em = em;
	ret = ring_buffer__consume(st->stack_rb);
	if (ret < 0) {
		ebpf_log(st, MT_LOG_ERROR, "reading the stack ring failed: %s",
			 strerror(-ret));
		return ret;
	}
	return ebpf_meta_flush(st, em);
}

/* At most max events; with end != 0, none past the record reaching end. */
int ebpf_read_events(struct ebpf_state *st, struct mt_emitter *em,
		       size_t max, uint64_t end)
{
	int ret;

	st->em = em;
	st->rd_max = max;
	st->rd_count = 0;
	st->rd_err = 0;
	st->rd_end = end;
	ret = ring_buffer__consume(st->rb);
	st->rd_end = 0;
	if (st->rd_err) {
		return st->rd_err;
	}
	if (ret < 0 && ret != RD_FULL) {
		ebpf_log(st, MT_LOG_ERROR, "reading the event ring failed: %s",
			 strerror(-ret));
		return ret;
	}
	return (int)st->rd_count;
}

/*
 * Everything written when drain() is called, and nothing more: under
 * sustained load "until empty" never comes. Producers stay as they are
 * (resuming them all would only fill the ring again meanwhile); the
 * caller (source.c) resumes them after, if the rings are then below their
 * low watermarks: ring.c reads, it does not decide whom to resume.
 */
int ebpf_ring_drain(struct ebpf_state *st, struct mt_emitter *em)
{
	uint64_t end = __atomic_load_n(st->prod_pos, __ATOMIC_ACQUIRE);
	uint64_t t0 = ebpf_now_ns(), last = __atomic_load_n(st->cons_pos,
						       __ATOMIC_ACQUIRE);
	int ret = 0;

	for (;;) {
		uint64_t cons;

		ret = ebpf_consume_ctl(st);
		if (ret >= 0) {
			ret = ebpf_consume_stacks(st, em);
		}
		if (ret < 0) {
			break;
		}
		cons = __atomic_load_n(st->cons_pos, __ATOMIC_ACQUIRE);
		if ((int64_t)(cons - end) >= 0) {
			break;
		}
		ret = ebpf_read_events(st, em, SIZE_MAX, end);
		if (ret < 0) {
			break;
		}
		cons = __atomic_load_n(st->cons_pos, __ATOMIC_ACQUIRE);
		if (cons != last) {
			last = cons;
			t0 = ebpf_now_ns();
		} else if (ebpf_now_ns() - t0 > 1000000000u) {
			/* a record reserved and never committed: cannot
			 * happen with BPF programs, but do not hang on it */
			ebpf_log(st, MT_LOG_WARN,
				 "drain: a ring record stayed incomplete for 1 s; %llu bytes left unread",
				 (unsigned long long)(end - cons));
			ret = 0;
			break;
		} else {
			/* a producer is between reserve and commit */
			sched_yield();
		}
	}
	return ret < 0 ? ret : 0;
}
