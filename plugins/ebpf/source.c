/* SPDX-License-Identifier: MIT */
/*
 * plugins/ebpf/source.c - the "ebpf" source: allocation events of a command
 * and every process it forks, recorded by the BPF programs of
 * bpf/memtrack.bpf.c.
 *
 * create() checks privileges and kernel support, loads the programs;
 * start() tracks the held root and attaches the tracepoints. Allocator
 * uprobes are attached when a traced process maps a file that has some
 * (see attach.c): BPF stops the process at exec / at an executable mmap and
 * announces it on the `ctl` ring; read() attaches and sends SIGCONT.
 *
 * Args (comma-separated, k/M/G suffixes accepted):
 *   ring-size=BYTES  the event ring, a power of two (default 16M)
 *   throttle=BYTES   unread bytes at which a producing process is paused
 *                    until the reader has caught up (default and maximum:
 *                    3/4 of the ring; the rest is room for what its other
 *                    threads emit before the stop reaches them)
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
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

_Static_assert(sizeof(struct mt_bpf_event) == sizeof(struct mt_event),
	       "ring record is struct mt_event");
_Static_assert(offsetof(struct mt_bpf_event, pid) ==
		       offsetof(struct mt_event, pid) &&
	       offsetof(struct mt_bpf_event, kind) ==
		       offsetof(struct mt_event, kind) &&
	       offsetof(struct mt_bpf_event, stack_id) ==
		       offsetof(struct mt_event, stack_id),
	       "ring record is struct mt_event");

#define DEFAULT_RING_SIZE (16u << 20)
#define MIN_RING_SIZE (256u << 10)
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

static int parse_args(struct ebpf_state *st, const char *args)
{
	char *copy, *tok, *save = NULL;
	int err = 0;

	st->ring_size = DEFAULT_RING_SIZE;
	if (!args || !*args) {
		return 0;
	}
	copy = strdup(args);
	if (!copy) {
		return -ENOMEM;
	}
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
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
		} else if (!strncmp(tok, "throttle=", 9)) {
			size_t v;

			if (parse_size(tok + 9, &v) || !v) {
				ebpf_log(st, MT_LOG_ERROR,
					 "option throttle=%s: a byte count expected",
					 tok + 9);
				err = -EINVAL;
				break;
			}
			st->throttle_at = v;
		} else {
			ebpf_log(st, MT_LOG_ERROR,
				 "unknown option '%s' (known: ring-size=BYTES, throttle=BYTES)",
				 tok);
			err = -EINVAL;
			break;
		}
	}
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

static int map_ring_positions(struct ebpf_state *st)
{
	int fd = bpf_map__fd(st->skel->maps.events);
	void *p;

	st->page_size = sysconf(_SC_PAGESIZE);
	/* read-only mappings of the consumer and producer pages */
	p = mmap(NULL, st->page_size, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		return -errno;
	}
	st->cons_pos = p;
	p = mmap(NULL, st->page_size, PROT_READ, MAP_SHARED, fd,
		 st->page_size);
	if (p == MAP_FAILED) {
		return -errno;
	}
	st->prod_pos = p;
	return 0;
}

static uint64_t ring_unread(struct ebpf_state *st)
{
	uint64_t prod = __atomic_load_n(st->prod_pos, __ATOMIC_ACQUIRE);
	uint64_t cons = __atomic_load_n(st->cons_pos, __ATOMIC_ACQUIRE);

	return prod - cons;
}

/* ------------------------------------------------------------------ */
/* Stopped processes                                                   */
/* ------------------------------------------------------------------ */

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

/* Drop a reason; resume the process when none is left. */
static void hold_release(struct ebpf_state *st, struct ebpf_hold *h,
			 unsigned int reason)
{
	pid_t pid = h->pid;

	h->reasons &= ~reason;
	if (h->reasons) {
		return;
	}
	*h = st->holds[--st->nholds];
	if (kill(pid, SIGCONT) && errno != ESRCH) {
		ebpf_log(st, MT_LOG_WARN, "cannot resume process %d: %s",
			 (int)pid, strerror(errno));
	}
}

/* Resume throttled producers once the reader caught up. */
static void resume_throttled(struct ebpf_state *st, int all)
{
	int fd = bpf_map__fd(st->skel->maps.throttled);
	size_t i = 0;

	if (!all && ring_unread(st) > st->throttle_at / 2) {
		return;
	}
	while (i < st->nholds) {
		struct ebpf_hold *h = &st->holds[i];
		uint32_t key = h->pid;

		if (!(h->reasons & HOLD_THROTTLE)) {
			i++;
			continue;
		}
		/* before SIGCONT, so that BPF may stop it again */
		bpf_map_delete_elem(fd, &key);
		if (h->reasons == HOLD_THROTTLE) {
			hold_release(st, h, HOLD_THROTTLE); /* moves the last */
		} else {
			h->reasons &= ~HOLD_THROTTLE;
			i++;
		}
	}
}

static int on_ctl(void *ctx, void *data, size_t len)
{
	struct ebpf_state *st = ctx;
	const struct mt_ctl *c = data;
	struct ebpf_hold *h;
	int err;

	if (len < sizeof(*c)) {
		return 0;
	}
	h = hold_get(st, c->tgid, 1);
	if (!h) {
		kill(c->tgid, SIGCONT);
		return -ENOMEM;
	}
	switch (c->type) {
	case MT_CTL_ATTACH:
		h->reasons |= HOLD_ATTACH;
		err = ebpf_attach_process(st, c->tgid, c->dev, c->ino);
		h = hold_get(st, c->tgid, 0);
		if (h) {
			hold_release(st, h, HOLD_ATTACH);
		}
		if (err) {
			return err;
		}
		break;
	case MT_CTL_THROTTLE:
		h->reasons |= HOLD_THROTTLE;
		st->throttle_count++;
		break;
	default:
		hold_release(st, h, 0);
		break;
	}
	return 0;
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
	if (err) {
		goto error;
	}
	/* stop producers at 3/4, leaving room for what their other threads
	 * emit before the stop reaches them; wake the reader at 1/8 */
	if (!st->throttle_at || st->throttle_at > st->ring_size / 4 * 3) {
		st->throttle_at = st->ring_size / 4 * 3;
	}
	st->skel->rodata->throttle_at = st->throttle_at;
	st->skel->rodata->wakeup_at = st->throttle_at < st->ring_size / 8 ?
					      st->throttle_at :
					      st->ring_size / 8;
	err = memtrack_bpf__load(st->skel);
	if (err) {
		ebpf_log(st, MT_LOG_ERROR,
			 "cannot load the BPF programs: %s (run with -v for the verifier log)",
			 strerror(-err));
		goto error;
	}
	err = map_ring_positions(st);
	if (err) {
		ebpf_log(st, MT_LOG_ERROR, "cannot map the event ring: %s",
			 strerror(-err));
		goto error;
	}
	/* the control ring first: a bounded read never starves it */
	st->rb = ring_buffer__new(bpf_map__fd(st->skel->maps.ctl), on_ctl, st,
				  NULL);
	if (!st->rb) {
		err = -errno;
		goto ring_error;
	}
	err = ring_buffer__add(st->rb, bpf_map__fd(st->skel->maps.events),
			       on_event, st);
	if (err) {
		goto ring_error;
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

	return ring_buffer__epoll_fd(st->rb);
}

static void report_drops(struct ebpf_state *st)
{
	uint64_t d = st->skel->bss->dropped;
	uint64_t c = st->skel->bss->ctl_dropped;

	if (d != st->drops_reported) {
		ebpf_log(st, MT_LOG_WARN,
			 "%llu events lost: the event ring was full (raise ring-size=)",
			 (unsigned long long)(d - st->drops_reported));
		st->drops_reported = d;
	}
	if (c != st->ctl_drops_reported) {
		ebpf_log(st, MT_LOG_WARN,
			 "%llu new executable mappings not attached: the control ring was full",
			 (unsigned long long)(c - st->ctl_drops_reported));
		st->ctl_drops_reported = c;
	}
}

static int ebpf_read(void *state, struct mt_emitter *em, size_t max,
		     uint32_t *flags)
{
	struct ebpf_state *st = state;
	int ret;

	if (!max) {
		return 0;
	}
	st->em = em;
	st->rd_max = max;
	st->rd_count = 0;
	st->rd_err = 0;
	ret = ring_buffer__consume(st->rb);
	if (st->rd_err) {
		return st->rd_err;
	}
	if (ret < 0 && ret != RD_FULL) {
		ebpf_log(st, MT_LOG_ERROR, "reading the rings failed: %s",
			 strerror(-ret));
		return ret;
	}
	return (int)st->rd_count;
}

static int ebpf_maintain(void *state)
{
	struct ebpf_state *st = state;

	resume_throttled(st, 0);
	report_drops(st);
	return 0;
}

static int ebpf_drain(void *state, struct mt_emitter *em)
{
	struct ebpf_state *st = state;
	uint32_t flags = 0;
	int ret;

	resume_throttled(st, 1);
	do {
		ret = ebpf_read(st, em, (size_t)1 << 30, &flags);
	} while (ret > 0);
	report_drops(st);
	if (st->throttle_count) {
		ebpf_log(st, MT_LOG_INFO,
			 "producers paused %llu times for the reader to catch up",
			 (unsigned long long)st->throttle_count);
	}
	return ret < 0 ? ret : 0;
}

static int ebpf_set_enabled(void *state, int enabled)
{
	struct ebpf_state *st = state;

	st->skel->bss->enabled = !!enabled;
	return 0;
}

static void ebpf_destroy(void *state)
{
	struct ebpf_state *st = state;
	size_t i;

	if (!st) {
		return;
	}
	/* never leave a process stopped */
	for (i = 0; i < st->nholds; i++) {
		kill(st->holds[i].pid, SIGCONT);
	}
	for (i = 0; i < st->nlinks; i++) {
		bpf_link__destroy(st->links[i]);
	}
	ring_buffer__free(st->rb);
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
};

static const struct mt_plugin_desc ebpf_desc = {
	.size = sizeof(struct mt_plugin_desc),
	.abi_major = MT_ABI_MAJOR,
	.abi_minor = MT_ABI_MINOR,
	.kind = MT_PLUGIN_SOURCE,
	.name = "ebpf",
	.description = "allocations of a process tree, traced with eBPF uprobes and tracepoints",
	.version = PACKAGE_VERSION,
	.ops.source = &ebpf_ops,
};

MT_PLUGIN_DEFINE(ebpf_desc)
