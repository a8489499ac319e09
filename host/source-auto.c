/* SPDX-License-Identifier: MIT */
/*
 * host/source-auto.c - `--source auto`: the preload source and the eBPF
 * source at once, each process recorded by one of them.
 *
 * The preload source puts its interposer in every process of the tree
 * and records, with its BPF tracepoints, every process's mmap, munmap,
 * mremap and brk. The eBPF source, with its arg `handover`, records no
 * syscall; its uprobes trap in each process from its exec (the exec gate
 * opens their filter on the exec'ing thread: plugins/ebpf/scope.c) until
 * the process's interposer calls its hello function from its constructor
 * (plugins/preload/interposer/interpose.c: pl_hello), whose own uprobe
 * tells BPF that the process's allocator calls are the interposer's from
 * that instant; the eBPF source then closes what made it trap. Every call
 * is recorded once: before the hello by uprobes, after it by the
 * interposer, which records nothing until then. A process the interposer
 * cannot reach (static, set-user-ID, an environment without LD_PRELOAD,
 * its own malloc) never says hello and stays the uprobes'.
 *
 * This is a source like any other to the rest of the host: it loads the
 * two plugins, routes the args, and reads both into the same batches.
 * The hand-over must not put a process's events out of order: a block
 * allocated before the hello (uprobes: the eBPF ring) and freed after it
 * (the interposer: the shared ring) would otherwise be freed before it
 * was allocated when the shared ring is read first. So each read takes
 * the time T first, then empties the eBPF ring, then passes on the
 * preload source's events stamped before T and holds the others for the
 * next read. An event stamped before T was made after everything its
 * process did before its hello, and that was in the eBPF ring before T:
 * read already. Syscall events of a process come from one ring (the
 * preload source's) and keep their order there.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>

#include <memtrack/plugin.h>

#include "log.h"
#include "parse-size.h"
#include "plugin.h"
#include "source-auto.h"

enum { PRE, BPF, NSRC };

static const char *const names[NSRC] = { "preload", "ebpf" };

/* The preload source's events are read here first (see the top). */
struct auto_em {
	struct mt_emitter em; /* first: the source sees only this */
	struct mt_emitter *out; /* the host's, for metadata */
};

struct auto_state {
	const struct mt_host *host;
	struct mt_plugin *pl[NSRC];
	const struct mt_source_ops *ops[NSRC];
	void *st[NSRC];
	int epfd;
	struct auto_em pem;
	struct mt_event *buf; /* one read of the preload source */
	size_t buf_cap;
	/* during a read of the preload source into the host's batch
	 * (read_preload): where it began, and its max; else NULL */
	struct mt_event *zc;
	size_t zc_max;
	struct mt_event *held; /* stamped after the last read began */
	size_t nheld, held_cap;
	uint64_t held_total; /* events held once, for -v */
	size_t held_peak;    /* the most held at once, for -v */
	uint64_t future;     /* stamped in the future (goes_on()) */
};

/*
 * An event is stamped before it is written, so before it is found: one
 * stamped after the time it was found (FUTURE_NS of slack: the TSC's
 * conversion, tsc.h, interpolates) has a wrong time (a stray write into a
 * process's ring, a forged slot). Held, it would hold back every event
 * after it until the end of the recording, all in memtrack's memory; it
 * goes on at once instead, counted and said. So a wrong time holds back
 * an event for FUTURE_NS at most. The time the event was found, not the
 * read's: a reader descheduled in the middle of a read finds events
 * stamped long after the read began.
 */
#define FUTURE_NS 100000000ull

static int pem_flush(struct mt_emitter *em);
static int pem_meta(struct mt_emitter *em, const void *data, size_t len);
static int buf_room(struct auto_state *a, size_t n);

/* Which source an arg goes to: 1 << PRE, 1 << BPF, or both. */
static int route(const char *tok)
{
	static const struct {
		const char *prefix;
		int to;
	} table[] = {
		{ "ring-size=", 1 << PRE | 1 << BPF },
		{ "high-watermark=", 1 << BPF },
		{ "low-watermark=", 1 << BPF },
		{ "throttle=", 1 << BPF },
		{ "freeze=", 1 << BPF },
		{ "scope=", 1 << BPF },
		{ "early=", 1 << BPF },
		{ "clock=", 1 << PRE },
		{ "stacks", 1 << PRE | 1 << BPF },
		{ "stack-depth=", 1 << PRE | 1 << BPF },
		{ "stack-table-size=", 1 << BPF },
		{ "sample-bytes=", 1 << PRE | 1 << BPF },
		{ "seed=", 1 << PRE | 1 << BPF },
	};

	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		if (!strncmp(tok, table[i].prefix, strlen(table[i].prefix))) {
			return table[i].to;
		}
	}
	return 0;
}

/*
 * An arg both halves take, checked once here: a bad one would otherwise
 * be refused by each, in the same words twice. The checks are the
 * halves' own (common/parse-size.c). 0, or -EINVAL said.
 */
static int check_shared(const char *tok)
{
	unsigned int depth;
	uint64_t v;

	if (!strncmp(tok, "stack-depth=", 12) &&
	    mt_parse_stack_depth(tok + 12, &depth)) {
		mt_err("source 'auto': option %s: a number of frames from 1 to %d expected",
		       tok, MT_STACK_DEPTH_MAX);
		return -EINVAL;
	}
	if (!strncmp(tok, "sample-bytes=", 13) &&
	    mt_parse_sample_bytes(tok + 13, &v)) {
		mt_err("source 'auto': option --sample-bytes %s: a size from 1 to 1T expected (512K, 2M)",
		       tok + 13);
		return -EINVAL;
	}
	if (!strncmp(tok, "seed=", 5) && mt_parse_seed(tok + 5, &v)) {
		mt_err("source 'auto': option --seed %s: a number from 0 to 2^64 - 1 expected",
		       tok + 5);
		return -EINVAL;
	}
	return 0;
}

/* "handover" and the args of args that go to source i. */
static int split_args(const char *args, char *out[NSRC])
{
	char *copy = args ? strdup(args) : NULL, *tok, *save = NULL;
	int err = 0;

	for (int i = 0; i < NSRC; i++) {
		out[i] = strdup("handover");
		if (!out[i]) {
			err = -ENOMEM;
		}
	}
	if (args && !copy) {
		err = -ENOMEM;
	}
	for (tok = copy && !err ? strtok_r(copy, ",", &save) : NULL; tok;
	     tok = strtok_r(NULL, ",", &save)) {
		int to = route(tok);

		if (!to) {
			mt_err("source 'auto': unknown option '%s' (known: ring-size=BYTES, high-watermark=X, low-watermark=X, freeze=0|1, scope=tree|system, early=0|1, clock=auto|tsc|monotonic, stacks, stack-depth=N, stack-table-size=BYTES, sample-bytes=SIZE, seed=N)",
			       tok);
			err = -EINVAL;
			break;
		}
		if (to == (1 << PRE | 1 << BPF)) {
			err = check_shared(tok);
			if (err) {
				break;
			}
		}
		for (int i = 0; i < NSRC && !err; i++) {
			char *more;

			if (!(to & (1 << i))) {
				continue;
			}
			if (asprintf(&more, "%s,%s", out[i], tok) < 0) {
				err = -ENOMEM;
				break;
			}
			free(out[i]);
			out[i] = more;
		}
	}
	free(copy);
	return err;
}

static void auto_destroy(void *state)
{
	struct auto_state *a = state;

	if (!a) {
		return;
	}
	if (a->future) {
		mt_warn("source 'auto': %llu events stamped over 100 ms after they were read (a process's ring written over?): recorded out of order",
			(unsigned long long)a->future);
	}
	if (a->held_total) {
		mt_info("source 'auto': %llu events held for the next read, at most %zu at once",
			(unsigned long long)a->held_total, a->held_peak);
	}
	/* the eBPF source first: it resumes what it holds and leaves its
	 * exec gate to its watchdog */
	for (int i = NSRC - 1; i >= 0; i--) {
		if (a->st[i]) {
			a->ops[i]->destroy(a->st[i]);
		}
		mt_plugin_close(a->pl[i]);
	}
	if (a->epfd >= 0) {
		close(a->epfd);
	}
	free(a->buf);
	free(a->held);
	free(a);
}

struct create_job {
	const struct mt_host *host;
	const struct mt_source_ops *ops;
	const char *args;
	void *st;
	int err;
};

static void *create_one(void *arg)
{
	struct create_job *j = arg;

	j->err = j->ops->create(j->host, j->args, &j->st);
	return NULL;
}

/*
 * The two creates run at once, the eBPF source's on a thread of its own:
 * each is mostly the kernel loading BPF (maps, verification; the eBPF
 * source's ~30 ms, the preload source's ~10 ms), and the command waits for
 * both. Each forks its helper (watchdog, detacher) meanwhile; both helpers
 * close every other descriptor first and make system calls only.
 */
static int create_both(struct auto_state *a, const struct mt_host *host,
		       char *const sub[NSRC])
{
	struct create_job job[NSRC];
	pthread_t th;
	int threaded, err = 0;

	for (int i = 0; i < NSRC; i++) {
		job[i] = (struct create_job){ .host = host,
					      .ops = a->ops[i],
					      .args = sub[i] };
	}
	threaded = !pthread_create(&th, NULL, create_one, &job[BPF]);
	create_one(&job[PRE]);
	if (threaded) {
		pthread_join(th, NULL);
	} else {
		create_one(&job[BPF]);
	}
	for (int i = 0; i < NSRC; i++) {
		int e = mt_log_plugin_failure("source", names[i], "create",
					      job[i].err);

		a->st[i] = e < 0 ? NULL : job[i].st;
		if (e < 0 && !err) {
			err = e;
		}
	}
	return err;
}

static int auto_create(const struct mt_host *host, const char *args,
		       void **state)
{
	struct auto_state *a = calloc(1, sizeof(*a));
	char *sub[NSRC] = { NULL, NULL };
	int err;

	if (!a) {
		return -ENOMEM;
	}
	a->host = host;
	a->epfd = -1;
	a->pem.em.flush = pem_flush;
	a->pem.em.meta = pem_meta;
	err = split_args(args, sub);
	for (int i = 0; i < NSRC && !err; i++) {
		err = mt_plugin_load(MT_PLUGIN_SOURCE, names[i], &a->pl[i]);
		if (err < 0) {
			break;
		}
		a->ops[i] = &a->pl[i]->ops.source;
		if (a->pl[i]->desc->abi_minor < 3 ||
		    (i == BPF && !(a->ops[i]->flags & MT_SOURCE_GATES_EXECS)) ||
		    (i == PRE && !a->ops[i]->command_env)) {
			mt_err("source 'auto': the %s plugin (%s) is of another memtrack",
			       names[i], a->pl[i]->path);
			err = -EINVAL;
			break;
		}
	}
	if (!err) {
		err = create_both(a, host, sub);
	}
	for (int i = 0; i < NSRC; i++) {
		free(sub[i]);
	}
	if (err < 0) {
		auto_destroy(a);
		return err;
	}
	*state = a;
	return 0;
}

static const char *const *auto_command_env(void *state,
					   const char *const *argv)
{
	struct auto_state *a = state;

	return a->ops[PRE]->command_env(a->st[PRE], argv);
}

static int auto_start(void *state, const struct mt_target *target)
{
	struct auto_state *a = state;
	struct mt_target t = *target;
	int err;

	if (!target->has_exec_gate) {
		mt_err("source 'auto': the command runs without the exec gate (a seccomp filter), which the hand-over needs; use --source ebpf or preload");
		return -ENOTSUP;
	}
	/* the eBPF source first: the root's exec waits in its gate */
	err = mt_log_plugin_failure("source", names[BPF], "start",
				    a->ops[BPF]->start(a->st[BPF], target));
	if (err < 0) {
		return err;
	}
	t.has_exec_gate = 0;
	t.exec_gate_fd = -1;
	err = mt_log_plugin_failure("source", names[PRE], "start",
				    a->ops[PRE]->start(a->st[PRE], &t));
	if (err < 0) {
		return err;
	}
	a->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (a->epfd < 0) {
		err = -errno;
		mt_err("source 'auto': epoll_create1: %s", strerror(errno));
		return err;
	}
	for (int i = 0; i < NSRC; i++) {
		struct epoll_event ev = { .events = EPOLLIN };
		int fd = a->ops[i]->poll_fd(a->st[i]);

		if (fd >= 0 && epoll_ctl(a->epfd, EPOLL_CTL_ADD, fd, &ev)) {
			err = -errno;
			mt_err("source 'auto': epoll_ctl: %s", strerror(errno));
			return err;
		}
	}
	return 0;
}

static int auto_poll_fd(void *state)
{
	struct auto_state *a = state;

	return a->epfd;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The preload source has nothing to flush into: a read gets room for
 * all it may move. */
static int pem_flush(struct mt_emitter *em)
{
	(void)em;
	return -ENOSPC;
}

/*
 * Metadata from the preload source, in the middle of a read: the host
 * puts it after every event of its batch, and moves on to a new batch.
 * What the source wrote into the old one's room so far is not in the
 * batch yet: it moves to buf, where the rest of the read goes too
 * (read_preload). So the record goes before this read's events, as it
 * did before the source wrote into the batch.
 */
static int pem_meta(struct mt_emitter *em, const void *data, size_t len)
{
	struct auto_state *a = (struct auto_state *)(void *)
		((char *)em - offsetof(struct auto_state, pem));

	if (a->zc) {
		size_t k = (size_t)(em->cur - a->zc);

		if (buf_room(a, a->zc_max + 1)) {
			return -ENOMEM;
		}
		memcpy(a->buf, a->zc, k * sizeof(*a->buf));
		em->cur = a->buf + k;
		em->end = a->buf + a->zc_max + 1;
		a->zc = NULL;
	}
	return a->pem.out->meta ? a->pem.out->meta(a->pem.out, data, len) :
				  -ENOTSUP;
}

/* Pass ev on to the host's batch. */
static int put(struct mt_emitter *em, const struct mt_event *ev)
{
	struct mt_event *slot = mt_emit(em);

	if (!slot) {
		return -EPIPE;
	}
	*slot = *ev;
	return 0;
}

/* Whether an event stamped ts, found at or before found, goes on in the
 * read of time t (else it is held for the next read); all go on at drain
 * (t = UINT64_MAX), a time of UINT64_MAX too. */
static int goes_on(struct auto_state *a, uint64_t ts, uint64_t t,
		   uint64_t found)
{
	if (ts < t || t == UINT64_MAX) {
		return 1;
	}
	if (ts > found && ts - found > FUTURE_NS) {
		a->future++;
		return 1;
	}
	return 0;
}

static int hold(struct auto_state *a, const struct mt_event *ev)
{
	if (a->nheld == a->held_cap) {
		size_t cap = a->held_cap ? a->held_cap * 2 : 1024;
		struct mt_event *p = realloc(a->held, cap * sizeof(*p));

		if (!p) {
			return -ENOMEM;
		}
		a->held = p;
		a->held_cap = cap;
	}
	a->held[a->nheld++] = *ev;
	a->held_total++;
	if (a->nheld > a->held_peak) {
		a->held_peak = a->nheld;
	}
	return 0;
}

/* The held events stamped before t, in order, up to max: how many
 * went. */
static int put_held(struct auto_state *a, struct mt_emitter *em, uint64_t t,
		    size_t max)
{
	size_t i;

	for (i = 0; i < a->nheld && i < max &&
		    goes_on(a, a->held[i].timestamp, t, t);
	     i++) {
		if (put(em, &a->held[i])) {
			return -EPIPE;
		}
	}
	if (i) {
		/* (held may be NULL: nothing held yet) */
		memmove(a->held, a->held + i,
			(a->nheld - i) * sizeof(*a->held));
		a->nheld -= i;
	}
	return (int)i;
}

/* The eBPF source's events, up to max: how many, or -errno; *empty: its
 * ring was read to its end. */
static int read_bpf(struct auto_state *a, struct mt_emitter *em, size_t max,
		    int *empty)
{
	uint32_t f = 0;
	int n = a->ops[BPF]->read(a->st[BPF], em, max, &f);

	*empty = n >= 0 && (size_t)n < max;
	return n;
}

/* buf holds at least n events */
static int buf_room(struct auto_state *a, size_t n)
{
	struct mt_event *p;

	if (a->buf_cap >= n) {
		return 0;
	}
	p = realloc(a->buf, n * sizeof(*p));
	if (!p) {
		return -ENOMEM;
	}
	a->buf = p;
	a->buf_cap = n;
	return 0;
}

/*
 * The preload source's events of one read, up to max: those stamped
 * before t go on, from the first one that is not on they wait (in order)
 * for the next read. Returns how many went, or -errno; *more: the source
 * gave as many as it was asked for.
 *
 * With nothing held, the source writes into the host's batch itself: its
 * emitter is the batch's free room, cut to max (and one more, as buf),
 * and what it wrote from the first event stamped t or later moves to
 * held. No copy for the events that go on, nearly all of them. Else, or
 * once it sends metadata (pem_meta), into buf first.
 */
static int read_preload(struct auto_state *a, struct mt_emitter *em,
			uint64_t t, size_t max, int *more)
{
	struct mt_event *zc;
	uint64_t found;
	uint32_t f = 0;
	size_t i, went = 0;
	int n;

	a->zc = NULL;
	if (!a->nheld) {
		if (em->end - em->cur < 2 && em->flush(em) < 0) {
			return -EPIPE;
		}
		if ((size_t)(em->end - em->cur) - 1 < max) {
			max = (size_t)(em->end - em->cur) - 1;
		}
		a->zc = em->cur;
		a->zc_max = max;
		a->pem.em.cur = em->cur;
	} else {
		if (buf_room(a, max + 1)) {
			return -ENOMEM;
		}
		a->pem.em.cur = a->buf;
	}
	a->pem.em.end = a->pem.em.cur + max + 1;
	a->pem.out = em;
	n = a->ops[PRE]->read(a->st[PRE], &a->pem.em, max, &f);
	zc = a->zc;
	a->zc = NULL;
	if (n < 0) {
		return n;
	}
	/* as many as asked for: its ring may hold more */
	*more = (size_t)n == max;
	found = now_ns();
	if (zc) {
		n = (int)(a->pem.em.cur - zc);
		for (i = 0; i < (size_t)n &&
			    goes_on(a, zc[i].timestamp, t, found);
		     i++) {
		}
		em->cur = zc + i; /* what is held below is overwritten */
		went = i;
		for (; i < (size_t)n; i++) {
			if (hold(a, &zc[i])) {
				return -ENOMEM;
			}
		}
		return (int)went;
	}
	n = (int)(a->pem.em.cur - a->buf);
	for (i = 0; i < (size_t)n; i++) {
		int err;

		if (!a->nheld && goes_on(a, a->buf[i].timestamp, t, found)) {
			err = put(em, &a->buf[i]);
			went++;
		} else {
			err = hold(a, &a->buf[i]);
		}
		if (err) {
			return err;
		}
	}
	return (int)went;
}

/*
 * Rounds of the top's order (a time, the eBPF ring to its end, the
 * preload source's events stamped before the time) until max events went
 * or the preload source's ring was read to its end. One round is not
 * enough: a producer that never stops writes events stamped after the
 * time while they are read, and those wait for the next round. Returning
 * fewer than max then would tell the host that all was read, and it would
 * sleep until a producer found the ring full and woke it (the preload
 * source sleeps only when its ring was read to its end): 1M malloc/free
 * pairs waited for room 40-100 times (~75 ms) under auto, ~20 (~25 ms)
 * under preload.
 */
static int auto_read(void *state, struct mt_emitter *em, size_t max,
		     uint32_t *flags)
{
	struct auto_state *a = state;
	size_t got = 0;

	(void)flags; /* neither ends before the tree has */
	while (got < max) {
		uint64_t t = now_ns();
		int n, empty, more = 0;

		n = put_held(a, em, t, max - got);
		if (n < 0) {
			return n;
		}
		got += (size_t)n;
		if (got == max) {
			break;
		}
		n = read_bpf(a, em, max - got, &empty);
		if (n < 0) {
			return n;
		}
		got += (size_t)n;
		if (!empty || got == max) {
			/* the preload source's turn comes when the eBPF ring
			 * has been read to its end after a time was taken */
			break;
		}
		n = read_preload(a, em, t, max - got, &more);
		if (n < 0) {
			return n;
		}
		got += (size_t)n;
		if (!more) {
			break; /* its ring was read to its end */
		}
	}
	return (int)got;
}

static int auto_maintain(void *state)
{
	struct auto_state *a = state;
	int err = 0;

	for (int i = 0; i < NSRC; i++) {
		int e = a->ops[i]->maintain ? a->ops[i]->maintain(a->st[i]) : 0;

		if (e < 0 && !err) {
			err = e;
		}
	}
	return err;
}

/* The eBPF ring, what was held, then the preload source's: in that order
 * for the reason of the top. */
static int auto_drain(void *state, struct mt_emitter *em)
{
	struct auto_state *a = state;
	int e;

	e = a->ops[BPF]->drain ? a->ops[BPF]->drain(a->st[BPF], em) : 0;
	if (e >= 0) {
		e = put_held(a, em, UINT64_MAX, SIZE_MAX);
	}
	if (e >= 0 && a->ops[PRE]->drain) {
		e = a->ops[PRE]->drain(a->st[PRE], em);
	}
	return e < 0 ? e : 0;
}

static int auto_set_enabled(void *state, int enabled)
{
	struct auto_state *a = state;

	for (int i = 0; i < NSRC; i++) {
		int e = a->ops[i]->set_enabled ?
				a->ops[i]->set_enabled(a->st[i], enabled) :
				-ENOTSUP;

		if (e < 0) {
			return e;
		}
	}
	return 0;
}

static int auto_get_stats(void *state, struct mt_source_stats *out)
{
	struct auto_state *a = state;
	struct mt_source_stats sum = { 0 };

	for (int i = 0; i < NSRC; i++) {
		struct mt_source_stats s = { .size = out->size };

		if (!a->ops[i]->get_stats ||
		    a->ops[i]->get_stats(a->st[i], &s) < 0) {
			continue;
		}
		sum.stopped += s.stopped;
		sum.dropped += s.dropped;
		sum.ring_size += s.ring_size;
		sum.ring_used += s.ring_used;
		sum.stops += s.stops;
		sum.resumes += s.resumes;
		sum.waits += s.waits;
		sum.wait_ns += s.wait_ns;
		sum.untracked += s.untracked;
		sum.unrecorded += s.unrecorded;
		sum.damaged += s.damaged;
		sum.gave_up += s.gave_up;
		sum.procs_interposer += s.procs_interposer;
		sum.procs_uprobes += s.procs_uprobes;
		sum.stacks += s.stacks;
		sum.stacks_truncated += s.stacks_truncated;
		sum.unwind_files += s.unwind_files;
		sum.unwind_bytes += s.unwind_bytes;
		sum.unwind_bytes_max += s.unwind_bytes_max;
		sum.unwind_build_ns += s.unwind_build_ns;
	}
	sum.size = out->size;
	memcpy((char *)out + sizeof(out->size), (char *)&sum + sizeof(sum.size),
	       (out->size < sizeof(sum) ? out->size : sizeof(sum)) -
		       sizeof(sum.size));
	return 0;
}

static const struct mt_source_ops auto_ops = {
	MT_OPS_HEADER(mt_source_ops),
	.flags = MT_SOURCE_NEEDS_COMMAND | MT_SOURCE_TAKES_RING_SIZE |
		 MT_SOURCE_TAKES_WATERMARKS | MT_SOURCE_TAKES_STACKS |
		 MT_SOURCE_TAKES_SAMPLING | MT_SOURCE_GATES_EXECS,
	.create = auto_create,
	.start = auto_start,
	.poll_fd = auto_poll_fd,
	.read = auto_read,
	.maintain = auto_maintain,
	.drain = auto_drain,
	.set_enabled = auto_set_enabled,
	.destroy = auto_destroy,
	.get_stats = auto_get_stats,
	.command_env = auto_command_env,
};

static const struct mt_plugin_desc auto_desc = {
	.size = sizeof(struct mt_plugin_desc),
	.abi_major = MT_ABI_MAJOR,
	.abi_minor = MT_ABI_MINOR,
	.kind = MT_PLUGIN_SOURCE,
	.name = "auto",
	.description = "each process by the interposer where it reaches all of its allocator calls, else by eBPF uprobes",
	.version = PACKAGE_VERSION,
	.ops.source = &auto_ops,
};

int mt_source_auto_plugin(struct mt_plugin **out)
{
	struct mt_plugin *p = calloc(1, sizeof(*p));

	if (!p || !(p->path = strdup("(built into memtrack)"))) {
		free(p);
		return -ENOMEM;
	}
	p->desc = &auto_desc;
	p->ops.source = auto_ops;
	*out = p;
	return 0;
}
