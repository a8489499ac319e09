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
 * Args: see args.c.
 *
 * No process is ever left stopped: destroy() resumes everything, and a
 * watchdog process (watchdog.c) does it when memtrack dies without
 * calling destroy() (SIGKILL).
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <gelf.h>

#include <memtrack/plugin.h>

#include "memtrack.h"
#include "memtrack.skel.h"
#include "ebpf.h"
#include "bpf-test-knobs.h"
#include "kbtf.h"
#include "stack-ids.h"

/* the running kernel's types */
#define EBPF_VMLINUX_BTF "/sys/kernel/btf/vmlinux"

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

/* ------------------------------------------------------------------ */
/* Source ops                                                          */
/* ------------------------------------------------------------------ */

static void ebpf_destroy(void *state);
static int attach_tracepoints(struct ebpf_state *st);

/*
 * The skeleton, opened with the kernel structures it relocates against in a
 * BTF of their own (kbtf.c: 10-20 ms to make, where libbpf took ~20 ms to
 * read the kernel's whole BTF and search it; the copy of an earlier start
 * when kept, under a ms to read); *fd holds a copy made now until the
 * load. Without it (any failure) libbpf reads the kernel's BTF itself.
 * The skeleton is opened once when the copy is kept: each open parses the
 * whole object (~5 ms here), and the first one was only needed for the
 * object's BTF, which names what to copy (-vv: "in N ms", the open
 * included).
 */
static struct memtrack_bpf *open_skel(struct ebpf_state *st, int *fd)
{
	struct memtrack_bpf *skel = NULL, *small_skel;
	uint64_t t0 = ebpf_now_ns();
	unsigned int n = 0;
	struct btf *small;
	const void *raw;
	uint32_t size;
	char path[64], cache[PATH_MAX];
	int mfd, cached, from_cache;

	*fd = -1;
	cached = !ebpf_kbtf_cache_path(cache, sizeof(cache));
	small = cached ? ebpf_kbtf_cache_load(cache) : NULL;
	from_cache = small != NULL;
	if (cached && !small && errno != ENOENT) {
		ebpf_log(st, MT_LOG_DEBUG, "%s: %s; made again", cache,
			 strerror(errno));
	}
	if (!small) {
		/* the object's own BTF names what to copy: the skeleton
		 * opened once more for it (a few ms), at the first start
		 * only when the copy is kept */
		skel = memtrack_bpf__open();
		if (!skel) {
			return NULL;
		}
		small = ebpf_kbtf_small(EBPF_VMLINUX_BTF,
					bpf_object__btf(skel->obj), &n);
	}
	if (!small) {
		ebpf_log(st, MT_LOG_DEBUG, "%s: %s; libbpf reads it whole",
			 EBPF_VMLINUX_BTF, strerror(errno));
		return skel;
	}
	raw = btf__raw_data(small, &size);
	mfd = raw ? memfd_create("memtrack-kernel-btf", MFD_CLOEXEC) : -1;
	if (mfd < 0 || write(mfd, raw, size) != (ssize_t)size) {
		ebpf_log(st, MT_LOG_DEBUG,
			 "cannot write the kernel's structures: %s",
			 strerror(errno));
		if (mfd >= 0) {
			close(mfd);
		}
		btf__free(small);
		return skel ? skel : memtrack_bpf__open();
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", mfd);
	{
		LIBBPF_OPTS(bpf_object_open_opts, opts,
			    .btf_custom_path = path);

		small_skel = memtrack_bpf__open_opts(&opts);
	}
	if (!small_skel) {
		close(mfd);
		btf__free(small);
		return skel ? skel : memtrack_bpf__open();
	}
	memtrack_bpf__destroy(skel);
	if (from_cache) {
		ebpf_log(st, MT_LOG_DEBUG,
			 "CO-RE: kernel structures from %s in %.1f ms", cache,
			 (double)(ebpf_now_ns() - t0) / 1e6);
	} else {
		ebpf_log(st, MT_LOG_DEBUG,
			 "CO-RE: %u kernel structures copied in %.1f ms (%u bytes)",
			 n, (double)(ebpf_now_ns() - t0) / 1e6, size);
	}
	/* for the next starts, once libbpf took it */
	if (cached && !from_cache) {
		ebpf_kbtf_cache_store(cache, raw, size);
	}
	btf__free(small);
	*fd = mfd;
	return small_skel;
}

static int ebpf_create(const struct mt_host *host, const char *args,
		       void **state)
{
	struct ebpf_state *st;
	int kbtf_fd = -1;
	uint64_t t0;
	int err;

	st = calloc(1, sizeof(*st));
	if (!st) {
		return -ENOMEM;
	}
	st->host = host;
	st->epfd = -1;
	st->holds_fd = -1;
	st->wd_fd = -1;
	st->scope_uev_fd = -1;
	st->gate_fd = -1;
	st->gate_stop_fd = -1;
	st->gmap.efd = -1;
	pthread_mutex_init(&st->attach_lock, NULL);
	err = ebpf_parse_args(st, args);
	if (!err) {
		err = ebpf_sample_create(st);
	}
	if (err) {
		goto error;
	}
	err = ebpf_check_system(st);
	if (err) {
		goto error;
	}
	/* a wait of the kernel's, beside the open and the load (scope.c) */
	ebpf_scope_warm_start(st);
	if (elf_version(EV_CURRENT) == EV_NONE) {
		ebpf_log(st, MT_LOG_ERROR, "libelf: %s", elf_errmsg(-1));
		err = -ENOTSUP;
		goto error;
	}
	ebpf_symbols_init();
	/* before the watchdog, which thaws what is frozen if memtrack dies */
	ebpf_freeze_init(st);
	libbpf_host = host;
	libbpf_set_print(libbpf_print);

	st->skel = open_skel(st, &kbtf_fd);
	if (!st->skel) {
		err = -errno;
		ebpf_log(st, MT_LOG_ERROR, "cannot open the BPF object: %s",
			 strerror(-err));
		goto error;
	}
	/* uprobes for the tree alone, or for every process */
	ebpf_scope_init(st);
	/* under auto: the first files' uprobes, beside the load */
	ebpf_preattach_start(st);
	err = bpf_map__set_max_entries(st->skel->maps.events, st->ring_size);
	if (!err) {
		err = mt_bpf_test_tracked_max(st->skel->maps.tracked);
	}
	if (!err) {
		err = mt_bpf_test_threads_max(st->skel->maps.threads);
	}
	if (!err && st->stack_depth) {
		err = bpf_map__set_max_entries(st->skel->maps.stacks,
					       st->stack_ring_size);
	} else if (!err) {
		/* unused without stacks: the 1M buckets of stack_ids alone
		 * cost ~10 ms at every start */
		err = bpf_map__set_max_entries(st->skel->maps.stack_ids, 1);
		if (!err) {
			err = bpf_map__set_max_entries(
				st->skel->maps.stack_gen, 1);
		}
	}
	if (!err && !st->smp) {
		/* unused without sampling (sample.c) */
		err = bpf_map__set_max_entries(st->skel->maps.image_ts, 1);
	}
	if (!err) {
		err = ebpf_unw_prepare(st);
	}
	if (err) {
		goto error;
	}
	/* 0 without stacks: the programs never call bpf_get_stack */
	st->skel->rodata->stack_depth = st->stack_depth;
	st->skel->rodata->stack_high_watermark = st->stack_high_wm;
	st->skel->rodata->stack_stop_watermark = st->stack_stop_wm;
	st->skel->rodata->stop_watermark = st->stop_wm;
	st->skel->rodata->stack_wakeup_at = st->stack_ring_size / 8;
	/* tests/test-ebpf-stacks-holds.sh: the gated mmap told without the
	 * vma, alone */
	st->skel->rodata->test_no_find_vma =
		getenv("MEMTRACK_TEST_NO_FIND_VMA") != NULL;
	st->skel->rodata->no_sys_events = st->handover;
	st->skel->rodata->tag_images = st->smp != NULL;
	/* under auto the interposer's stacks take the ids below
	 * MT_STACK_ID_UPROBES (plugins/preload/interposer/stack-table.h),
	 * ours those from it: one file, one id per stack */
	if (st->handover) {
		st->skel->bss->stack_next_id = MT_STACK_ID_UPROBES - 1;
	}
	/* wake the reader at 1/8 (or the high watermark when lower): below
	 * that it reads on the host's tick */
	st->skel->rodata->high_watermark = st->high_wm;
	st->skel->rodata->wakeup_at = st->high_wm < st->ring_size / 8 ?
					      st->high_wm :
					      st->ring_size / 8;
	t0 = ebpf_now_ns();
	err = memtrack_bpf__load(st->skel);
	if (kbtf_fd >= 0) {
		close(kbtf_fd); /* read by the load */
		kbtf_fd = -1;
	}
	if (!err) {
		err = ebpf_preattach_finish(st);
		if (err) {
			goto error;
		}
	}
	if (err) {
		ebpf_log(st, MT_LOG_ERROR,
			 "cannot load the BPF programs: %s (run with -v for the verifier log)",
			 strerror(-err));
		goto error;
	}
	/* every run waits for this before the command starts */
	ebpf_log(st, MT_LOG_DEBUG, "BPF object loaded in %.1f ms",
		 (double)(ebpf_now_ns() - t0) / 1e6);
	ebpf_scope_warm_join(st);
	st->holds_fd = bpf_map__fd(st->skel->maps.holds);
	/* before anything can be stopped; the watchdog is a fork that makes
	 * system calls only (under auto the preload source is being created
	 * on another thread meanwhile) */
	err = ebpf_watchdog_start(st);
	if (err) {
		goto error;
	}
	err = ebpf_freeze_start(st);
	if (err) {
		ebpf_log(st, MT_LOG_INFO,
			 "cannot start the freezer: %s; a full ring stops processes with SIGSTOP",
			 strerror(-err));
		ebpf_freeze_stop(st);
	} else if (st->fz) {
		st->skel->bss->freeze_ok = 1;
	}
	err = ebpf_map_ring_positions(st);
	if (err) {
		ebpf_log(st, MT_LOG_ERROR, "cannot map the event ring: %s",
			 strerror(-err));
		goto error;
	}
	err = ebpf_unw_init(st);
	if (err) {
		goto error;
	}
	st->ctl_catch_up = ebpf_consume_ctl;
	st->ctl_rb = ring_buffer__new(bpf_map__fd(st->skel->maps.ctl), ebpf_on_ctl,
				      st, NULL);
	if (!st->ctl_rb) {
		err = -errno;
		goto ring_error;
	}
	st->rb = ring_buffer__new(bpf_map__fd(st->skel->maps.events),
				  ebpf_on_event, st, NULL);
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
	ebpf_rings_dontfork(st);
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
	/* under auto, on this thread beside the preload source's create
	 * rather than in start() on the main one: they record nothing until
	 * start() tracks the root */
	if (st->handover) {
		err = attach_tracepoints(st);
		if (err) {
			goto error;
		}
	}
	*state = st;
	return 0;

ring_error:
	ebpf_log(st, MT_LOG_ERROR, "cannot set up the ring buffers: %s",
		 strerror(-err));
error:
	if (kbtf_fd >= 0) {
		close(kbtf_fd);
	}
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

/* Trace process pid (the kernel's) and its children from now on. */
static int track(struct ebpf_state *st, int32_t pid)
{
	uint32_t key = (uint32_t)pid, one = 1;
	int err;

	if (bpf_map_update_elem(bpf_map__fd(st->skel->maps.tracked), &key,
				&one, BPF_ANY)) {
		err = -errno;
		ebpf_log(st, MT_LOG_ERROR, "cannot track process %d: %s",
			 (int)pid, strerror(-err));
		return err;
	}
	return 0;
}

static int attach_tracepoints(struct ebpf_state *st)
{
	int err;

	if (st->tp_attached) {
		return 0;
	}
	err = memtrack_bpf__attach(st->skel);
	st->tp_attached = !err;
	if (err) {
		ebpf_log(st, MT_LOG_ERROR,
			 "cannot attach the tracepoints: %s (is tracefs at " TRACEFS "?)",
			 strerror(-err));
	}
	return err;
}

/* memtrack --pid: follow the running processes from now on. Nothing is
 * recorded until every one has its probes: then all start at once, at
 * the time each is noted with (MTKA). No process is stopped for it. */
static int start_attached(struct ebpf_state *st, const struct mt_target *t)
{
	uint64_t now;
	uint32_t i;
	int err;

	if (setup_pidns(st)) {
		ebpf_log(st, MT_LOG_ERROR,
			 "--pid from inside a pid namespace (a container) is not supported: run memtrack in the namespace that holds the process's kernel pid");
		return -ENOTSUP;
	}
	st->skel->bss->enabled = 0;
	for (i = 0; i < t->nattach; i++) {
		err = track(st, t->attach_pids[i]);
		if (err) {
			return err;
		}
	}
	err = attach_tracepoints(st);
	if (err) {
		return err;
	}
	for (i = 0; i < t->nattach; i++) {
		if (st->stack_depth) {
			err = ebpf_record_maps(st, t->attach_pids[i], 1);
			if (err) {
				return err;
			}
		}
		err = ebpf_attach_process(st, t->attach_pids[i], 0, 0);
		if (err) {
			return err;
		}
	}
	now = ebpf_now_ns();
	for (i = 0; i < t->nattach; i++) {
		err = ebpf_note_attach(st, t->attach_pids[i], now);
		if (err) {
			return err;
		}
	}
	st->skel->bss->enabled = !t->start_disabled;
	ebpf_log(st, MT_LOG_INFO, "attached to %u process%s in %.1f ms",
		 t->nattach, t->nattach == 1 ? "" : "es",
		 (double)(now - st->attach_t0) / 1e6);
	st->started = 1;
	return 0;
}

static int ebpf_start(void *state, const struct mt_target *target)
{
	struct ebpf_state *st = state;
	int err;

	st->attach_t0 = ebpf_now_ns();
	if (target->size >= offsetof(struct mt_target, attach_pids) +
				    sizeof(target->attach_pids) &&
	    target->nattach) {
		return start_attached(st, target);
	}
	if (target->root_pid <= 0) {
		ebpf_log(st, MT_LOG_ERROR, "needs a command to trace");
		return -EINVAL;
	}
	if (target->size >= offsetof(struct mt_target, exec_gate_fd) +
				    sizeof(target->exec_gate_fd) &&
	    target->has_exec_gate) {
		struct stat ns;

		/* with stacks, the gate records what is mapped while the
		 * caller waits, keyed for BPF by the caller's tid: ours are
		 * the kernel's in the root pid namespace only */
		st->gate_stacks = st->stack_depth &&
				  !stat("/proc/self/ns/pid", &ns) &&
				  ns.st_ino == PROC_PID_INIT_INO;
		/* first: the root's exec waits for it */
		err = ebpf_gate_start(st, target->exec_gate_fd);
		if (err) {
			return err;
		}
	} else if (st->handover) {
		/* the hand-over covers each process at its exec */
		ebpf_log(st, MT_LOG_ERROR,
			 "handover needs the exec gate (a seccomp filter on the command), which the host could not install");
		return -ENOTSUP;
	}
	st->skel->bss->enabled = !target->start_disabled;
	if (setup_pidns(st)) {
		/* our pid for the root is not the kernel's global one: BPF
		 * adopts it at exec by its pid in our namespace */
		st->skel->bss->root_ns_pid = target->root_pid;
	} else {
		err = track(st, target->root_pid);
		if (err) {
			return err;
		}
	}
	err = attach_tracepoints(st);
	if (err) {
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

static int ebpf_read(void *state, struct mt_emitter *em, size_t max,
		     uint32_t *flags)
{
	struct ebpf_state *st = state;
	int ret;

	(void)flags;
	/* the control ring first: a bounded read never starves it */
	ret = ebpf_consume_ctl(st);
	if (ret < 0 || !max) {
		return ret;
	}
	if (st->smp && ebpf_sample_say(st, em) < 0) {
		return -EPIPE;
	}
	ret = ebpf_consume_stacks(st, em);
	if (ret < 0) {
		return ret;
	}
	ret = ebpf_read_events(st, em, max, 0);
	if (ret >= 0 && st->smp) {
		/* what waited for its image's hello and is decided now */
		int err = ebpf_sample_flush(st, em, 0);

		if (err < 0) {
			return err;
		}
	}
	return ret;
}

static int ebpf_maintain(void *state)
{
	struct ebpf_state *st = state;
	int ret;

	/* every stop known before deciding whom to resume */
	ret = ebpf_consume_ctl(st);
	ebpf_resume_throttled(st);
	ebpf_freeze_notes(st);
	ebpf_report_drops(st);
	return ret;
}

/* Everything written when drain() is called, and nothing more (ring.c). */
static int ebpf_drain(void *state, struct mt_emitter *em)
{
	struct ebpf_state *st = state;
	int ret = st->smp ? ebpf_sample_say(st, em) : 0;

	if (ret >= 0) {
		ret = ebpf_ring_drain(st, em);
	}
	/* the tree is done: every hello is in */
	if (ret >= 0 && st->smp) {
		ret = ebpf_sample_flush(st, em, 1);
	}

	/* producers held meanwhile go on once the rings have room */
	ebpf_resume_throttled(st);
	ebpf_report_drops(st);
	return ret;
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

	uint64_t fz_holds, fz_ends;
	uint32_t fz_now;

	ebpf_freeze_counts(st, &fz_holds, &fz_ends, &fz_now);
	s.stopped = st->throttled + fz_now;
	s.dropped = st->skel->bss->dropped;
	s.ring_size = st->ring_size;
	s.ring_used = ebpf_ring_unread(st);
	s.stops = st->stops + fz_holds;
	s.resumes = st->resumes + fz_ends;
	s.stacks = st->stacks_seen;
	s.stacks_truncated = st->stacks_truncated;
	s.unwind_files = st->unw_files_built;
	s.unwind_bytes = st->unw_nrows * sizeof(struct mt_unw_row);
	s.unwind_bytes_max = st->unw_max_rows * sizeof(struct mt_unw_row);
	s.unwind_build_ns = st->unw_build_ns;
	s.untracked = st->skel->bss->untracked;
	s.unrecorded = st->skel->bss->unrecorded;
	s.procs_interposer = st->procs_interposer;
	s.procs_uprobes = st->procs_uprobes;
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
		fds = malloc((st->nlinks + nprogs + st->scope_nfds) *
			     sizeof(*fds));
	}
	if (fds) {
		/* the allocator uprobes, and the skeleton's tracepoints
		 * (syscall tracepoints wait for a grace period too) */
		for (i = 0; i < st->nlinks; i++) {
			fds[n++] = bpf_link__fd(st->links[i]);
		}
		/* the perf events that scope the uprobes to the tree: the
		 * last close of each waits for a grace period too */
		for (i = 0; i < st->scope_nfds; i++) {
			fds[n++] = st->scope_fds[i];
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
	/* the watchdog removes the tracefs events once all are closed */
	ebpf_scope_done(st);
}

static void ebpf_destroy(void *state)
{
	struct ebpf_state *st = state;

	if (!st) {
		return;
	}
	/* a create that failed beside the files attached ahead, or before
	 * perf's hooks were on */
	ebpf_preattach_drop(st);
	ebpf_scope_warm_join(st);
	/* The gate's thread attaches too: it goes first (the watchdog
	 * answers the tree's calls from now on). */
	ebpf_gate_stop(st);
	if (st->gate_calls) {
		ebpf_log(st, MT_LOG_DEBUG,
			 "exec gate: %llu calls, %llu files attached ahead; %.1f us per call that attached nothing",
			 (unsigned long long)st->gate_calls,
			 (unsigned long long)st->gate_files,
			 st->gate_plain ? (double)st->gate_plain_ns / 1e3 /
						  (double)st->gate_plain :
					  0.0);
	}
	if (st->stack_depth || st->attach_stops) {
		ebpf_log(st, MT_LOG_INFO,
			 "attach: %llu stops by SIGSTOP (%llu at exec); without a stop: %llu execs, %llu mappings recorded while waiting in the exec gate%s",
			 (unsigned long long)st->attach_stops,
			 (unsigned long long)st->attach_stops_exec,
			 (unsigned long long)st->gate_execs,
			 (unsigned long long)st->gate_maps,
			 st->gate_map_timeouts ? " (some waits timed out)" :
						 "");
	}
	ebpf_sample_log(st);
	ebpf_sample_destroy(st);
	ebpf_log(st, MT_LOG_INFO, "attach: %llu whole reads of a /proc/PID/maps",
		 (unsigned long long)__atomic_load_n(&st->maps_reads,
						     __ATOMIC_RELAXED));
	if (st->stack_depth) {
		ebpf_log(st, MT_LOG_INFO,
			 "stacks: %llu pushes of a process's mappings to the unwinder, %llu chunks written",
			 (unsigned long long)st->unw_pushes,
			 (unsigned long long)st->unw_chunk_writes);
	}
	if (st->skel && st->skel->bss->unw_missing) {
		ebpf_log(st, MT_LOG_INFO,
			 "%llu stacks were taken before their process's mappings were known (frame pointers only)",
			 (unsigned long long)st->skel->bss->unw_missing);
	}
	/* Detach first: once no program runs, nothing stops anybody again. */
	detach_links(st);
	if (st->skel) {
		memtrack_bpf__detach(st->skel);
	}
	/* Never leave a process held: the frozen ones, those stopped we
	 * know of, and those whose record we have not read (in the map). */
	ebpf_freeze_stop(st);
	ebpf_resume_all(st);
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
	mt_key_free(&st->files_idx);
	free(st->holds);
	if (st->gate_shared) {
		munmap(st->gate_shared, sizeof(*st->gate_shared));
	}
	pthread_mutex_destroy(&st->attach_lock);
	free(st);
}

static const struct mt_source_ops ebpf_ops = {
	MT_OPS_HEADER(mt_source_ops),
	.flags = MT_SOURCE_NEEDS_COMMAND | MT_SOURCE_TAKES_RING_SIZE |
		 MT_SOURCE_TAKES_WATERMARKS | MT_SOURCE_TAKES_STACKS |
		 MT_SOURCE_GATES_EXECS | MT_SOURCE_CAN_ATTACH,
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
