/* SPDX-License-Identifier: MIT */
/*
 * plugins/ebpf/source.c - the "ebpf" source: allocation events of a command
 * and every process it forks, recorded by the BPF programs of
 * memtrack.bpf.c.
 *
 * create() checks privileges and kernel support, loads the programs;
 * start() tracks the held root and attaches the tracepoints. Allocator
 * uprobes are attached when a traced process maps a file that has some
 * (see attach.c): BPF stops the process at exec / at an executable mmap and
 * announces it on the `ctl` ring; read() attaches and sends SIGCONT.
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
 *   stacks               record the call stack of every allocation (the
 *                        host's --stacks); see stacks.c
 *   stack-depth=N        frames per stack, 1 to 127 (default 64; implies
 *                        stacks; the host's --stack-depth)
 *
 * No process is ever left stopped: destroy() resumes everything, and a
 * watchdog process (watchdog.c) does it when memtrack dies without
 * calling destroy() (SIGKILL).
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <gelf.h>

#include <memtrack/event.h>
#include <memtrack/plugin.h>

#include "memtrack.h"
#include "memtrack.skel.h"
#include "ebpf.h"

#define DEFAULT_RING_SIZE (16u << 20)
#define MIN_RING_SIZE (256u << 10)
#define DEFAULT_STACK_DEPTH 64
#define TRACEFS "/sys/kernel/tracing"
/* the inode of the initial pid namespace (PROC_PID_INIT_INO) */
#define PROC_PID_INIT_INO 0xEFFFFFFCu
/* read() result of the event callback once max events were moved */
#define RD_FULL (-ENOSPC)

/* libbpf's messages go through the host of the (one) live state */
static const struct mt_host *libbpf_host;

static int libbpf_print(enum libbpf_print_level level, const char *fmt,
			va_list ap)
{
	char buf[1024];
	size_t len;

	if (!libbpf_host || (level == LIBBPF_DEBUG &&
			     libbpf_host->log_level < MT_LOG_DEBUG)) {
		return 0;
	}
	vsnprintf(buf, sizeof(buf), fmt, ap);
	len = strlen(buf);
	if (len && buf[len - 1] == '\n') {
		buf[len - 1] = '\0';
	}
	/* libbpf warns about what the caller reports better: keep it at
	 * debug level unless it is all there is */
	libbpf_host->log(libbpf_host, MT_LOG_DEBUG, EBPF_NAME, "libbpf: %s",
			 buf);
	return 0;
}

static int parse_size(const char *s, size_t *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s) {
		return -EINVAL;
	}
	switch (tolower((unsigned char)*end)) {
	case 'k':
		v <<= 10;
		end++;
		break;
	case 'm':
		v <<= 20;
		end++;
		break;
	case 'g':
		v <<= 30;
		end++;
		break;
	default:
		break;
	}
	if (*end) {
		return -EINVAL;
	}
	*out = v;
	return 0;
}

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
	} else if (parse_size(text, &v)) {
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

static int parse_args(struct ebpf_state *st, const char *args)
{
	char *copy = NULL, *tok, *save = NULL;
	const char *high = NULL, *low = NULL, *high_name = "high-watermark";
	int err = 0;

	st->ring_size = DEFAULT_RING_SIZE;
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

			if (parse_size(tok + 10, &v) || v < MIN_RING_SIZE ||
			    v > (1ull << 32) || (v & (v - 1))) {
				ebpf_log(st, MT_LOG_ERROR,
					 "option ring-size=%s: a power of two from 256k to 4G expected",
					 tok + 10);
				err = -EINVAL;
				break;
			}
			st->ring_size = v;
		} else if (!strncmp(tok, "high-watermark=", 15)) {
			high = tok + 15;
			high_name = "high-watermark";
		} else if (!strncmp(tok, "throttle=", 9)) {
			high = tok + 9;
			high_name = "throttle";
		} else if (!strncmp(tok, "low-watermark=", 14)) {
			low = tok + 14;
		} else if (!strcmp(tok, "stacks")) {
			if (!st->stack_depth) {
				st->stack_depth = DEFAULT_STACK_DEPTH;
			}
		} else if (!strncmp(tok, "stack-depth=", 12)) {
			char *end;
			long v;

			errno = 0;
			v = strtol(tok + 12, &end, 10);
			if (errno || end == tok + 12 || *end || v < 1 ||
			    v > MT_STACK_MAX) {
				ebpf_log(st, MT_LOG_ERROR,
					 "option stack-depth=%s: a number of frames from 1 to %d expected",
					 tok + 12, MT_STACK_MAX);
				err = -EINVAL;
				break;
			}
			st->stack_depth = (unsigned int)v;
		} else {
			ebpf_log(st, MT_LOG_ERROR,
				 "unknown option '%s' (known: ring-size=BYTES, high-watermark=X, low-watermark=X, stacks, stack-depth=N)",
				 tok);
			err = -EINVAL;
			break;
		}
	}
	if (err) {
		goto end;
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
		if (st->low_wm >= st->high_wm) {
			ebpf_log(st, MT_LOG_ERROR,
				 "option low-watermark=%s (%zu bytes) must be below %s= (%zu bytes)",
				 low, st->low_wm, high_name, st->high_wm);
			err = -EINVAL;
		}
	} else if (st->low_wm >= st->high_wm) {
		st->low_wm = st->high_wm / 2;
	}
	/* the stack ring: a quarter of the event ring (a new stack is rare
	 * next to the events), under the same watermarks in proportion */
	if (st->stack_depth) {
		st->stack_ring_size = st->ring_size / 4;
		st->stack_high_wm = st->high_wm / 4;
		st->stack_low_wm = st->low_wm / 4;
	}
end:
	free(copy);
	return err;
}

/* What the kernel and our privileges lack, in one message. */
static int check_system(struct ebpf_state *st)
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

static int map_ring_positions(struct ebpf_state *st)
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

static uint64_t ring_unread(struct ebpf_state *st)
{
	uint64_t prod = __atomic_load_n(st->prod_pos, __ATOMIC_ACQUIRE);
	uint64_t cons = __atomic_load_n(st->cons_pos, __ATOMIC_ACQUIRE);

	return prod - cons;
}

static uint64_t stack_ring_unread(struct ebpf_state *st)
{
	if (!st->stack_cons_pos) {
		return 0;
	}
	return __atomic_load_n(st->stack_prod_pos, __ATOMIC_ACQUIRE) -
	       __atomic_load_n(st->stack_cons_pos, __ATOMIC_ACQUIRE);
}

/* ------------------------------------------------------------------ */
/* Stopped processes                                                   */
/* ------------------------------------------------------------------ */

static void note(struct ebpf_state *st, const char *what, pid_t pid,
		 uint64_t ts)
{
	const struct mt_host *h = st->host;

	/* a host older than mt_host.note has a shorter struct */
	if (h->size >= offsetof(struct mt_host, note) + sizeof(h->note) &&
	    h->note) {
		h->note(h, what, pid, ts);
	}
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static struct ebpf_hold *hold_get(struct ebpf_state *st, pid_t pid, int add)
{
	size_t i;

	for (i = 0; i < st->nholds; i++) {
		if (st->holds[i].pid == pid) {
			return &st->holds[i];
		}
	}
	if (!add) {
		return NULL;
	}
	if (st->nholds == st->holds_cap) {
		size_t cap = st->holds_cap ? 2 * st->holds_cap : 16;
		void *p = realloc(st->holds, cap * sizeof(*st->holds));

		if (!p) {
			return NULL;
		}
		st->holds = p;
		st->holds_cap = cap;
	}
	st->holds[st->nholds].pid = pid;
	st->holds[st->nholds].reasons = 0;
	return &st->holds[st->nholds++];
}

/* Is a stop of pid in the map that we have not handled? (Handled ones are
 * deleted before their reason is dropped.) The map holds only the stops in
 * flight: a few entries. */
static int stop_pending(struct ebpf_state *st, pid_t pid)
{
	struct mt_hold_key key, next;
	void *prev = NULL;

	while (!bpf_map_get_next_key(st->holds_fd, prev, &next)) {
		if ((pid_t)next.tgid == pid) {
			return 1;
		}
		key = next;
		prev = &key;
	}
	return 0;
}

/*
 * A stop was handled: forget its map entry, drop its reason, and resume
 * the process when no reason is left. h moves (the array is compacted).
 */
static void hold_release(struct ebpf_state *st, struct ebpf_hold *h,
			 unsigned int reason, const struct mt_hold_key *key)
{
	pid_t pid = h->pid;

	bpf_map_delete_elem(st->holds_fd, key);
	if (reason == HOLD_THROTTLE && (h->reasons & HOLD_THROTTLE)) {
		st->throttled--;
		st->resumes++;
		note(st, "resume", pid, now_ns());
	}
	h->reasons &= ~reason;
	if (h->reasons) {
		return;
	}
	*h = st->holds[--st->nholds];
	/* stopped again meanwhile: the record of that stop is on its way
	 * and its handling resumes the process */
	if (stop_pending(st, pid)) {
		return;
	}
	if (kill(pid, SIGCONT)) {
		if (errno != ESRCH) {
			ebpf_log(st, MT_LOG_WARN,
				 "cannot resume process %d: %s", (int)pid,
				 strerror(errno));
		}
		return;
	}
	/* A stop recorded between the check and SIGCONT may have had its
	 * SIGSTOP cancelled by ours: stop it again; its record resumes it. */
	if (stop_pending(st, pid)) {
		kill(pid, SIGSTOP);
	}
}

/* Below the low watermark: resume every throttled producer. */
static void resume_throttled(struct ebpf_state *st)
{
	size_t i = 0;

	if (!st->throttled || ring_unread(st) >= st->low_wm ||
	    (st->stack_rb && stack_ring_unread(st) >= st->stack_low_wm)) {
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
		hold_release(st, h, HOLD_THROTTLE, &key);
		if (st->nholds == n) {
			i++; /* still held for another reason: stays here */
		}
	}
}

static int on_ctl(void *ctx, void *data, size_t len)
{
	struct ebpf_state *st = ctx;
	const struct mt_ctl *c = data;
	struct mt_hold_key key = { .tgid = c->tgid };
	struct ebpf_hold *h;
	int err = 0;

	if (len < sizeof(*c)) {
		return 0;
	}
	if (c->type == MT_CTL_FORK) {
		/* not a stop: nobody waits for it */
		return ebpf_note_fork(st, c->tgid, c->pad);
	}
	h = hold_get(st, c->tgid, 1);
	if (!h) {
		kill(c->tgid, SIGCONT);
		return -ENOMEM;
	}
	switch (c->type) {
	case MT_CTL_ATTACH:
		key.tid = c->tid;
		h->reasons |= HOLD_ATTACH;
		err = ebpf_attach_process(st, c->tgid, c->dev, c->ino);
		if (!err && st->stack_depth) {
			/* stopped at exec or at an executable mmap: what
			 * the process's stacks resolve through */
			err = ebpf_record_maps(st, c->tgid,
					       c->pad & MT_CTL_AT_EXEC);
		}
		h = hold_get(st, c->tgid, 0); /* the array may have moved */
		if (h) {
			hold_release(st, h, HOLD_ATTACH, &key);
		}
		break;
	case MT_CTL_THROTTLE:
		if (!(h->reasons & HOLD_THROTTLE)) {
			h->reasons |= HOLD_THROTTLE;
			st->throttled++;
		}
		st->stops++;
		note(st, "stop", c->tgid, c->ts);
		break;
	default:
		hold_release(st, h, 0, &key);
		break;
	}
	return err;
}

static int on_event(void *ctx, void *data, size_t len)
{
	struct ebpf_state *st = ctx;
	struct mt_event *ev;

	if (len < sizeof(*ev)) {
		return 0;
	}
	ev = mt_emit(st->em);
	if (!ev) {
		st->rd_err = -EPIPE;
		return -EPIPE;
	}
	memcpy(ev, data, sizeof(*ev));
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

/* ------------------------------------------------------------------ */
/* Source ops                                                          */
/* ------------------------------------------------------------------ */

static void ebpf_destroy(void *state);

static int ebpf_create(const struct mt_host *host, const char *args,
		       void **state)
{
	struct ebpf_state *st;
	int err;

	st = calloc(1, sizeof(*st));
	if (!st) {
		return -ENOMEM;
	}
	st->host = host;
	st->epfd = -1;
	st->holds_fd = -1;
	st->wd_fd = -1;
	err = parse_args(st, args);
	if (err) {
		goto error;
	}
	err = check_system(st);
	if (err) {
		goto error;
	}
	if (elf_version(EV_CURRENT) == EV_NONE) {
		ebpf_log(st, MT_LOG_ERROR, "libelf: %s", elf_errmsg(-1));
		err = -ENOTSUP;
		goto error;
	}
	ebpf_symbols_init();
	libbpf_host = host;
	libbpf_set_print(libbpf_print);

	st->skel = memtrack_bpf__open();
	if (!st->skel) {
		err = -errno;
		ebpf_log(st, MT_LOG_ERROR, "cannot open the BPF object: %s",
			 strerror(-err));
		goto error;
	}
	err = bpf_map__set_max_entries(st->skel->maps.events, st->ring_size);
	if (!err && st->stack_depth) {
		err = bpf_map__set_max_entries(st->skel->maps.stacks,
					       st->stack_ring_size);
	}
	if (err) {
		goto error;
	}
	/* 0 without stacks: the programs never call bpf_get_stack */
	st->skel->rodata->stack_depth = st->stack_depth;
	st->skel->rodata->stack_high_watermark = st->stack_high_wm;
	st->skel->rodata->stack_wakeup_at = st->stack_ring_size / 8;
	/* wake the reader at 1/8 (or the high watermark when lower): below
	 * that it reads on the host's tick */
	st->skel->rodata->high_watermark = st->high_wm;
	st->skel->rodata->wakeup_at = st->high_wm < st->ring_size / 8 ?
					      st->high_wm :
					      st->ring_size / 8;
	err = memtrack_bpf__load(st->skel);
	if (err) {
		ebpf_log(st, MT_LOG_ERROR,
			 "cannot load the BPF programs: %s (run with -v for the verifier log)",
			 strerror(-err));
		goto error;
	}
	st->holds_fd = bpf_map__fd(st->skel->maps.holds);
	/* before anything can be stopped, and while memtrack is one thread
	 * (the watchdog is forked) */
	err = ebpf_watchdog_start(st);
	if (err) {
		goto error;
	}
	err = map_ring_positions(st);
	if (err) {
		ebpf_log(st, MT_LOG_ERROR, "cannot map the event ring: %s",
			 strerror(-err));
		goto error;
	}
	st->ctl_rb = ring_buffer__new(bpf_map__fd(st->skel->maps.ctl), on_ctl,
				      st, NULL);
	if (!st->ctl_rb) {
		err = -errno;
		goto ring_error;
	}
	st->rb = ring_buffer__new(bpf_map__fd(st->skel->maps.events),
				  on_event, st, NULL);
	if (!st->rb) {
		err = -errno;
		goto ring_error;
	}
	if (st->stack_depth) {
		st->stack_rb = ring_buffer__new(
			bpf_map__fd(st->skel->maps.stacks), ebpf_on_stack, st,
			NULL);
		if (!st->stack_rb) {
			err = -errno;
			goto ring_error;
		}
	}
	st->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (st->epfd < 0) {
		err = -errno;
		goto ring_error;
	}
	{
		struct epoll_event ev = { .events = EPOLLIN };

		if (epoll_ctl(st->epfd, EPOLL_CTL_ADD,
			      ring_buffer__epoll_fd(st->ctl_rb), &ev) ||
		    epoll_ctl(st->epfd, EPOLL_CTL_ADD,
			      ring_buffer__epoll_fd(st->rb), &ev) ||
		    (st->stack_rb &&
		     epoll_ctl(st->epfd, EPOLL_CTL_ADD,
			       ring_buffer__epoll_fd(st->stack_rb), &ev))) {
			err = -errno;
			goto ring_error;
		}
	}
	*state = st;
	return 0;

ring_error:
	ebpf_log(st, MT_LOG_ERROR, "cannot set up the ring buffers: %s",
		 strerror(-err));
error:
	ebpf_destroy(st);
	return err;
}

/* Report pids as seen in memtrack's pid namespace when that is not the
 * initial one (a container). Returns 1 in that case. */
static int setup_pidns(struct ebpf_state *st)
{
	struct stat sb;

	if (stat("/proc/self/ns/pid", &sb) || sb.st_ino == PROC_PID_INIT_INO) {
		return 0;
	}
	st->skel->bss->pidns_dev = sb.st_dev;
	st->skel->bss->pidns_ino = sb.st_ino;
	return 1;
}

static int ebpf_start(void *state, const struct mt_target *target)
{
	struct ebpf_state *st = state;
	uint32_t key, one = 1;
	int err;

	if (target->root_pid <= 0) {
		ebpf_log(st, MT_LOG_ERROR, "needs a command to trace");
		return -EINVAL;
	}
	st->skel->bss->enabled = !target->start_disabled;
	if (setup_pidns(st)) {
		/* our pid for the root is not the kernel's global one: BPF
		 * adopts it at exec by its pid in our namespace */
		st->skel->bss->root_ns_pid = target->root_pid;
	} else {
		key = target->root_pid;
		err = bpf_map_update_elem(
			bpf_map__fd(st->skel->maps.tracked), &key, &one,
			BPF_ANY);
		if (err) {
			err = -errno;
			ebpf_log(st, MT_LOG_ERROR,
				 "cannot track process %d: %s",
				 target->root_pid, strerror(-err));
			return err;
		}
	}
	err = memtrack_bpf__attach(st->skel);
	if (err) {
		ebpf_log(st, MT_LOG_ERROR,
			 "cannot attach the tracepoints: %s (is tracefs at " TRACEFS "?)",
			 strerror(-err));
		return err;
	}
	/* A held root has not exec'd: BPF stops it at exec, where its files
	 * are scanned. A root already running gets its files now. */
	if (!target->root_is_held) {
		err = ebpf_attach_process(st, target->root_pid, 0, 0);
		if (err) {
			return err;
		}
	}
	st->started = 1;
	return 0;
}

static int ebpf_poll_fd(void *state)
{
	struct ebpf_state *st = state;

	return st->epfd;
}

static void report_drops(struct ebpf_state *st)
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
			 "%llu stops not made: the control ring was full",
			 (unsigned long long)(c - st->ctl_drops_reported));
		st->ctl_drops_reported = c;
	}
}

/* Handle every stop announced so far (attach, throttle). */
static int consume_ctl(struct ebpf_state *st)
{
	int ret = ring_buffer__consume(st->ctl_rb);

	if (ret < 0) {
		ebpf_log(st, MT_LOG_ERROR, "reading the control ring failed: %s",
			 strerror(-ret));
		return ret;
	}
	return 0;
}

/* Every new stack, then the metadata collected so far, before events
 * that may use them. */
static int consume_stacks(struct ebpf_state *st, struct mt_emitter *em)
{
	int ret;

	if (!st->stack_rb) {
		return 0;
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
static int read_events(struct ebpf_state *st, struct mt_emitter *em,
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

static int ebpf_read(void *state, struct mt_emitter *em, size_t max,
		     uint32_t *flags)
{
	struct ebpf_state *st = state;
	int ret;

	(void)flags;
	/* the control ring first: a bounded read never starves it */
	ret = consume_ctl(st);
	if (ret < 0 || !max) {
		return ret;
	}
	ret = consume_stacks(st, em);
	if (ret < 0) {
		return ret;
	}
	return read_events(st, em, max, 0);
}

static int ebpf_maintain(void *state)
{
	struct ebpf_state *st = state;
	int ret;

	/* every stop known before deciding whom to resume */
	ret = consume_ctl(st);
	resume_throttled(st);
	report_drops(st);
	return ret;
}

/*
 * Everything written when drain() is called, and nothing more: under
 * sustained load "until empty" never comes. Producers stay as they are
 * (resuming them all would only fill the ring again meanwhile); they are
 * resumed at the end if the ring is then below the low watermark.
 */
static int ebpf_drain(void *state, struct mt_emitter *em)
{
	struct ebpf_state *st = state;
	uint64_t end = __atomic_load_n(st->prod_pos, __ATOMIC_ACQUIRE);
	uint64_t t0 = now_ns(), last = __atomic_load_n(st->cons_pos,
						       __ATOMIC_ACQUIRE);
	int ret = 0;

	for (;;) {
		uint64_t cons;

		ret = consume_ctl(st);
		if (ret >= 0) {
			ret = consume_stacks(st, em);
		}
		if (ret < 0) {
			break;
		}
		cons = __atomic_load_n(st->cons_pos, __ATOMIC_ACQUIRE);
		if ((int64_t)(cons - end) >= 0) {
			break;
		}
		ret = read_events(st, em, SIZE_MAX, end);
		if (ret < 0) {
			break;
		}
		cons = __atomic_load_n(st->cons_pos, __ATOMIC_ACQUIRE);
		if (cons != last) {
			last = cons;
			t0 = now_ns();
		} else if (now_ns() - t0 > 1000000000u) {
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
	resume_throttled(st);
	report_drops(st);
	return ret < 0 ? ret : 0;
}

static int ebpf_set_enabled(void *state, int enabled)
{
	struct ebpf_state *st = state;

	st->skel->bss->enabled = !!enabled;
	return 0;
}

static int ebpf_get_stats(void *state, struct mt_source_stats *out)
{
	struct ebpf_state *st = state;
	struct mt_source_stats s = { .size = out->size };
	size_t n = out->size < sizeof(s) ? out->size : sizeof(s);

	s.stopped = st->throttled;
	s.dropped = st->skel->bss->dropped;
	s.ring_size = st->ring_size;
	s.ring_used = ring_unread(st);
	s.stops = st->stops;
	s.resumes = st->resumes;
	/* only what the host's struct has room for */
	if (n > sizeof(s.size)) {
		memcpy((char *)out + sizeof(s.size), (char *)&s + sizeof(s.size),
		       n - sizeof(s.size));
	}
	return 0;
}

/* Empty `tracked`: every program then returns at its first check, for
 * good (a child is only tracked when its parent is). */
static void untrack_all(struct ebpf_state *st)
{
	int fd = bpf_map__fd(st->skel->maps.tracked);
	uint32_t key, next;

	while (!bpf_map_get_next_key(fd, NULL, &next)) {
		key = next;
		if (bpf_map_delete_elem(fd, &key)) {
			break;
		}
	}
}

/*
 * Closing a uprobe link waits for an RCU grace period (~100 ms here, one
 * after the other: 2.5 s for a C program's probes). With the programs made
 * inert, the watchdog takes the links over and closes them after memtrack
 * has gone; closing our copies is then instant. Where that fails, memtrack
 * pays the wait itself.
 */
static void detach_links(struct ebpf_state *st)
{
	struct bpf_object_skeleton *sk = st->skel ? st->skel->skeleton : NULL;
	size_t i, n = 0, nprogs = sk ? (size_t)sk->prog_cnt : 0;
	int *fds = NULL;

	if (st->skel) {
		untrack_all(st);
		fds = malloc((st->nlinks + nprogs) * sizeof(*fds));
	}
	if (fds) {
		/* the allocator uprobes, and the skeleton's tracepoints
		 * (syscall tracepoints wait for a grace period too) */
		for (i = 0; i < st->nlinks; i++) {
			fds[n++] = bpf_link__fd(st->links[i]);
		}
		for (i = 0; i < nprogs; i++) {
			struct bpf_link *l = *sk->progs[i].link;

			if (l) {
				fds[n++] = bpf_link__fd(l);
			}
		}
		if (ebpf_watchdog_adopt(st, fds, n) < 0) {
			ebpf_log(st, MT_LOG_DEBUG,
				 "watchdog did not take the links: detaching here");
		}
		free(fds);
	}
	for (i = 0; i < st->nlinks; i++) {
		bpf_link__destroy(st->links[i]);
	}
	st->nlinks = 0;
}

static void ebpf_destroy(void *state)
{
	struct ebpf_state *st = state;
	size_t i;

	if (!st) {
		return;
	}
	/* Detach first: once no program runs, nothing stops anybody again. */
	detach_links(st);
	if (st->skel) {
		memtrack_bpf__detach(st->skel);
	}
	/* Never leave a process stopped: those we know of, and those whose
	 * record we have not read (they are in the map). */
	for (i = 0; i < st->nholds; i++) {
		if (st->holds[i].reasons & HOLD_THROTTLE) {
			st->resumes++;
			note(st, "resume", st->holds[i].pid, now_ns());
		}
		kill(st->holds[i].pid, SIGCONT);
	}
	st->nholds = 0;
	st->throttled = 0;
	if (st->holds_fd >= 0) {
		ebpf_resume_map(st->holds_fd);
	}
	ebpf_watchdog_stop(st);
	ring_buffer__free(st->rb);
	ring_buffer__free(st->ctl_rb);
	ring_buffer__free(st->stack_rb);
	if (st->stack_cons_pos) {
		munmap((void *)st->stack_cons_pos, st->page_size);
	}
	if (st->stack_prod_pos) {
		munmap((void *)st->stack_prod_pos, st->page_size);
	}
	ebpf_stacks_free(st);
	if (st->epfd >= 0) {
		close(st->epfd);
	}
	if (st->cons_pos) {
		munmap((void *)st->cons_pos, st->page_size);
	}
	if (st->prod_pos) {
		munmap((void *)st->prod_pos, st->page_size);
	}
	memtrack_bpf__destroy(st->skel);
	if (libbpf_host == st->host) {
		libbpf_set_print(NULL);
		libbpf_host = NULL;
	}
	free(st->links);
	free(st->files);
	free(st->holds);
	free(st);
}

static const struct mt_source_ops ebpf_ops = {
	MT_OPS_HEADER(mt_source_ops),
	.flags = MT_SOURCE_NEEDS_COMMAND,
	.create = ebpf_create,
	.start = ebpf_start,
	.poll_fd = ebpf_poll_fd,
	.read = ebpf_read,
	.maintain = ebpf_maintain,
	.drain = ebpf_drain,
	.set_enabled = ebpf_set_enabled,
	.destroy = ebpf_destroy,
	.get_stats = ebpf_get_stats,
};

static const struct mt_plugin_desc ebpf_desc = {
	MT_OPS_HEADER(mt_plugin_desc),
	.kind = MT_PLUGIN_SOURCE,
	.name = "ebpf",
	.description = "allocations of a process tree, traced with eBPF uprobes and tracepoints",
	.version = PACKAGE_VERSION,
	.ops.source = &ebpf_ops,
};

MT_PLUGIN_DEFINE(ebpf_desc)
