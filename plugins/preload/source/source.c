/* SPDX-License-Identifier: MIT */
/*
 * plugins/preload/source/source.c - the "preload" source: allocation events
 * of a command and every process it starts, written in-process by the
 * interposer libmemtrack-preload.so (interposer/) into memory shared with
 * memtrack (shm.h, ring.h). No root, no BPF: the host puts the interposer in
 * the command's LD_PRELOAD (command_env(), ABI 1.1) and the environment
 * carries it to every process of the tree.
 *
 * Args (comma-separated; the host's --ring-size maps to ring-size=):
 *   ring-size=BYTES   the shared ring, a power of two from 4k (64 events)
 *                     to 4G (default 16M; k/M/G suffixes)
 *   syscalls=MODE     where mmap, munmap, mremap and brk come from
 *                     (syscalls.c): bpf, the eBPF source's syscall
 *                     tracepoints (root; every call, as --source ebpf
 *                     records them); libc, the calls made through libc's
 *                     functions (the allocator's own are not seen); auto
 *                     (default), bpf when root and BPF work, else libc.
 *   stacks            (the host's --stacks) each allocation event carries
 *                     its call stack's id, the stacks and mappings reach
 *                     the recording as MTKT/MTKM metadata, as with the
 *                     eBPF source (interposer/interpose-stacks.c, meta.c)
 *   stack-depth=N     frames per stack, 1 to 127 (default 64); implies
 *                     stacks
 *   clock=MODE        how events are timestamped (tsc.h): tsc, raw TSC
 *                     counts the source turns into CLOCK_MONOTONIC ns
 *                     (cheaper for the traced program); monotonic,
 *                     clock_gettime in the program; auto (default), tsc
 *                     where the kernel's clocksource is the TSC.
 *
 * Producers never drop and are never stopped: on a full ring they wait
 * for this reader (ring.h). Files the interposer cannot reach (static,
 * set-uid/set-gid, an environment without LD_PRELOAD) are named once each
 * on memtrack's stderr, with --source ebpf suggested; so are executables
 * that carry an allocator of their own, linked in statically.
 */
#include "config.h"

#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <memtrack/event.h>
#include <memtrack/plugin.h>

#include "parse-size.h"

#include "execcheck.h"
#include "interposer-path.h"
#include "meta.h"
#include "pidns.h"
#include "preload-path.h"
#include "proc-path.h"
#include "ring-read.h"
#include "sample-draw.h"
#include "shm.h"
#include "syscalls.h"
#include "tsc.h"

#define PRELOAD_NAME "preload"
/* 64K slots. Larger rings measured slower: the ring, the batches the
 * reader fills and the encoders' buffers then outgrow the last-level
 * cache (1M malloc/free pairs: 16 MiB 251 ms, 4 MiB 235 ms, median of 11). */
#define DEFAULT_RING_SIZE (4u << 20)
#define MIN_RING_SIZE 4096u
/* a slot claimed this long by a thread that no longer exists is skipped */
#define STALL_NS (20 * 1000000ull)
/* drain gives up on a slot claimed by a live thread after this */
#define DRAIN_WAIT_NS (1000 * 1000000ull)
/* distinct (reason, file) notices said; past that they are counted */
#define MAX_SAID 65536u
#define DEFAULT_STACK_DEPTH 64

/* A set of the (reason, file) pairs said already, open addressing. */
struct said {
	uint64_t hash; /* 0: empty */
	char *path;
	uint32_t kind;
};

struct preload_state {
	const struct mt_host *host;
	size_t ring_size;
	int memfd; /* the mapping: the only descriptor the command inherits */
	int efd;   /* memtrack's own: the watcher wakes the poller through it */
	struct pl_shm *shm;
	pthread_t watcher;
	int watching;      /* the watcher runs */
	uint32_t stop;     /* tells the watcher to leave */
	uint32_t enabled;  /* what shm->enabled must say */
	/* the header as set before the command ran, which the watcher puts
	 * back when a process wrote over it */
	unsigned char hdr_lo[offsetof(struct pl_shm, enabled)];
	unsigned char hdr_hi[sizeof(struct pl_shm) -
			     offsetof(struct pl_shm, nself_deps)];
	uint32_t stack_depth_set;
	uint64_t repairs;  /* times the watcher put the header back */

	size_t map_size;
	struct pl_reader rd;
	uint32_t stack_depth; /* 0: no stacks */
	/* --sample-bytes, --seed: a sampled recording, said in the file by
	 * an MTKR payload before its first event */
	uint64_t sample_bytes, sample_seed;
	int seeded, sample_said;
	/* handover (--source auto): the eBPF source records each process
	 * until its interposer says hello, and the processes the interposer
	 * cannot reach for good; the tree runs under the exec gate */
	int handover;
	struct pl_meta_rx meta; /* stacks and mappings (meta.c) */
	enum pl_sys_mode sys_mode;
	enum { CLOCK_AUTO, CLOCK_TSC, CLOCK_MONO } clock;
	struct pl_tsc *tsc; /* clock tsc: the ring's timestamps to ns */
	struct pl_syscalls *sys; /* NULL: libc mode */
	struct pl_pidns *pidns; /* ids of other pid namespaces (pidns.h) */
	struct said *said;
	size_t said_cap, nsaid;
	uint64_t unsaid; /* notices past MAX_SAID files */
	char lib[PATH_MAX];
	char preload_lib[PATH_MAX]; /* lib as LD_PRELOAD names it */
	char env_preload[PATH_MAX + 16];
	char env_shm[128];
	const char *env[3];
};

#define plog(st, level, ...) \
	(st)->host->log((st)->host, level, PRELOAD_NAME, __VA_ARGS__)

/* stacks; stack-depth=N (1..127) implies it */
static int parse_stacks(struct preload_state *st, const char *tok)
{
	unsigned int v;

	if (!strcmp(tok, "stacks")) {
		if (!st->stack_depth) {
			st->stack_depth = DEFAULT_STACK_DEPTH;
		}
		return 0;
	}
	if (mt_parse_stack_depth(tok + 12, &v)) {
		plog(st, MT_LOG_ERROR,
		     "option %s: a number of frames from 1 to %d expected",
		     tok, MT_STACK_DEPTH_MAX);
		return -EINVAL;
	}
	st->stack_depth = v;
	return 0;
}

/* sample-bytes=SIZE (1 to 1T), seed=N */
static int parse_sampling(struct preload_state *st, const char *tok)
{
	if (!strncmp(tok, "sample-bytes=", 13)) {
		if (mt_parse_sample_bytes(tok + 13, &st->sample_bytes)) {
			plog(st, MT_LOG_ERROR,
			     "option --sample-bytes %s: a size from 1 to 1T expected (512K, 2M)",
			     tok + 13);
			return -EINVAL;
		}
		return 0;
	}
	if (mt_parse_seed(tok + 5, &st->sample_seed)) {
		plog(st, MT_LOG_ERROR,
		     "option --seed %s: a number from 0 to 2^64 - 1 expected",
		     tok + 5);
		return -EINVAL;
	}
	st->seeded = 1;
	return 0;
}

static int parse_args(struct preload_state *st, const char *args)
{
	char *copy = NULL, *tok, *save = NULL;
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

			if (mt_parse_size(tok + 10, &v) || v < MIN_RING_SIZE ||
			    v > (1ull << 32) || (v & (v - 1))) {
				plog(st, MT_LOG_ERROR,
				     "option ring-size=%s: a power of two from 4k to 4G expected",
				     tok + 10);
				err = -EINVAL;
				break;
			}
			st->ring_size = v;
		} else if (!strcmp(tok, "syscalls=auto")) {
			st->sys_mode = PL_SYS_AUTO;
		} else if (!strcmp(tok, "syscalls=bpf")) {
			st->sys_mode = PL_SYS_BPF;
		} else if (!strcmp(tok, "syscalls=libc")) {
			st->sys_mode = PL_SYS_LIBC;
		} else if (!strcmp(tok, "handover")) {
			st->handover = 1;
		} else if (!strcmp(tok, "clock=auto")) {
			st->clock = CLOCK_AUTO;
		} else if (!strcmp(tok, "clock=tsc")) {
			st->clock = CLOCK_TSC;
		} else if (!strcmp(tok, "clock=monotonic")) {
			st->clock = CLOCK_MONO;
		} else if (!strncmp(tok, "high-watermark=", 15) ||
			   !strncmp(tok, "low-watermark=", 14) ||
			   !strncmp(tok, "throttle=", 9)) {
			plog(st, MT_LOG_ERROR,
			     "option '%s': the preload source has no watermarks (its producers wait in place when the ring is full)",
			     tok);
			err = -EINVAL;
			break;
		} else if (!strcmp(tok, "stacks") ||
			   !strncmp(tok, "stack-depth=", 12)) {
			err = parse_stacks(st, tok);
			if (err) {
				break;
			}
		} else if (!strncmp(tok, "sample-bytes=", 13) ||
			   !strncmp(tok, "seed=", 5)) {
			err = parse_sampling(st, tok);
			if (err) {
				break;
			}
		} else {
			plog(st, MT_LOG_ERROR,
			     "unknown option '%s' (known: ring-size=BYTES, syscalls=auto|bpf|libc, stacks, stack-depth=N, sample-bytes=SIZE, seed=N, clock=auto|tsc|monotonic, handover)",
			     tok);
			err = -EINVAL;
			break;
		}
	}
	free(copy);
	return err;
}

/* The interposer, where common/interposer-path.h says. */
static int find_interposer(struct preload_state *st)
{
	char cand[MT_INTERPOSER_CANDS][PATH_MAX];
	size_t n, i;

	n = mt_interposer_candidates((void *)find_interposer,
				     MT_PRELOAD_LIBDIR, cand);
	for (i = 0; i < n; i++) {
		if (access(cand[i], R_OK) == 0 && realpath(cand[i], st->lib)) {
			return pl_preload_path(st->host, st->lib,
					       st->preload_lib,
					       sizeof(st->preload_lib));
		}
	}
	plog(st, MT_LOG_ERROR, "cannot find %s (looked for %s%s%s)",
	     MT_INTERPOSER, cand[0], n > 1 ? " and others; set " : "",
	     n > 1 ? "MEMTRACK_PRELOAD_LIB" : "");
	return -ENOENT;
}

static void xlate(void *ctx, uint64_t ns, struct mt_event *ev)
{
	pl_pidns_xlate(ctx, ns, ev);
}

static int make_shm(struct preload_state *st)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t header = (sizeof(struct pl_shm) + page - 1) & ~(page - 1);
	struct stat sb;
	uint64_t n;

	/* not CLOEXEC: the command inherits it at the same number */
	st->memfd = memfd_create("memtrack-preload", MFD_ALLOW_SEALING);
	if (st->memfd < 0) {
		plog(st, MT_LOG_ERROR, "memfd_create: %s", strerror(errno));
		return -errno;
	}
	st->map_size = header + st->ring_size;
	if (ftruncate(st->memfd, (off_t)st->map_size) < 0 ||
	    fstat(st->memfd, &sb) < 0) {
		plog(st, MT_LOG_ERROR, "cannot size the shared ring (%zu bytes): %s",
		     st->map_size, strerror(errno));
		return -errno;
	}
	/* Every traced process holds it read-write: one that shrank it
	 * (a stray ftruncate) would make every other one, and memtrack,
	 * die of SIGBUS at its next touch of the ring. */
	if (fcntl(st->memfd, F_ADD_SEALS,
		  F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
		plog(st, MT_LOG_ERROR, "cannot seal the shared ring: %s",
		     strerror(errno));
		return -errno;
	}
	st->shm = mmap(NULL, st->map_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		       st->memfd, 0);
	if (st->shm == MAP_FAILED) {
		st->shm = NULL;
		plog(st, MT_LOG_ERROR, "cannot map the shared ring: %s",
		     strerror(errno));
		return -errno;
	}
	/* ours alone: producers ring shm->doorbell, the watcher this */
	st->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (st->efd < 0) {
		plog(st, MT_LOG_ERROR, "eventfd: %s", strerror(errno));
		return -errno;
	}
	if (st->clock != CLOCK_MONO) {
		const char *why;

		if (pl_tsc_usable(&why)) {
			st->tsc = malloc(sizeof(*st->tsc));
			if (!st->tsc) {
				return -ENOMEM;
			}
			pl_tsc_init(st->tsc);
			st->shm->tsc = 1;
		} else if (st->clock == CLOCK_TSC) {
			plog(st, MT_LOG_ERROR, "option clock=tsc: %s", why);
			return -EINVAL;
		}
	}
	n = st->ring_size / sizeof(struct mt_event);
	st->shm->map_size = st->map_size;
	st->shm->consumer_pid = (int32_t)getpid();
	{
		struct stat ns;

		/* 0 (no /proc): nobody tags, ids stay as they come */
		if (stat("/proc/self/ns/pid", &ns) == 0) {
			st->shm->pidns = (uint64_t)ns.st_ino;
		}
	}
	pl_ring_init(st->shm, n, header);
	st->shm->stack_depth = st->stack_depth;
	st->shm->sample_bytes = st->sample_bytes;
	st->shm->sample_seed = st->sample_seed;
	st->shm->sample_flags = st->seeded ? PL_SAMPLE_SEEDED : 0;
	st->shm->handover = st->handover ? PL_HO_ON | PL_HO_GATE : 0;
	st->shm->version = PL_VERSION;
	__atomic_store_n(&st->shm->magic, PL_MAGIC, __ATOMIC_RELEASE);
	pl_reader_init(&st->rd, st->shm, st->tsc);
	st->pidns = pl_pidns_new();
	if (!st->pidns) {
		return -ENOMEM;
	}
	st->rd.xlate = xlate;
	st->rd.xlate_ctx = st->pidns;

	snprintf(st->env_preload, sizeof(st->env_preload), "LD_PRELOAD=%s",
		 st->preload_lib);
	snprintf(st->env_shm, sizeof(st->env_shm), "%s=%d:%d:%llu",
		 PL_ENV_SHM, st->memfd, (int)getpid(),
		 (unsigned long long)sb.st_ino);
	st->env[0] = st->env_preload;
	st->env[1] = st->env_shm;
	st->env[2] = NULL;
	return 0;
}

static void preload_destroy(void *state);
static int take_meta(void *ctx, const struct mt_event *slot,
		     struct mt_emitter *em);

/*
 * The watcher: memtrack's heartbeat (shm->beat, every PL_BEAT_MS), which
 * tells producers that memtrack lives in every pid namespace and whatever
 * became of its pid; and the poller's wake-up. A producer rings
 * shm->doorbell (a futex in the shared memory, so that no descriptor of
 * ours needs to stay open in the program, ring.h); the watcher sleeps on
 * it and passes the wake-up on to the poller's eventfd, which only
 * memtrack holds. At each beat it also looks at the ring for producers
 * that may not ring (a seccomp filter) and puts back a tail that a
 * process overwrote.
 */
/* What only memtrack writes, put back if a process wrote over it: the
 * set-once header (what a process that attaches later checks), whether
 * recording is enabled, and that memtrack lives. */
static void restore_header(struct preload_state *st)
{
	struct pl_shm *shm = st->shm;
	uint32_t en = __atomic_load_n(&st->enabled, __ATOMIC_ACQUIRE);
	int fixed = 0;

	if (memcmp(shm, st->hdr_lo, sizeof(st->hdr_lo))) {
		memcpy(shm, st->hdr_lo, sizeof(st->hdr_lo));
		fixed = 1;
	}
	if (memcmp(&shm->nself_deps, st->hdr_hi, sizeof(st->hdr_hi))) {
		memcpy(&shm->nself_deps, st->hdr_hi, sizeof(st->hdr_hi));
		fixed = 1;
	}
	if (shm->stack_depth != st->stack_depth_set) {
		shm->stack_depth = st->stack_depth_set;
		fixed = 1;
	}
	if (__atomic_load_n(&shm->enabled, __ATOMIC_RELAXED) != en) {
		__atomic_store_n(&shm->enabled, en, __ATOMIC_RELEASE);
		fixed = 1;
	}
	if (__atomic_load_n(&shm->dead, __ATOMIC_RELAXED)) {
		__atomic_store_n(&shm->dead, 0, __ATOMIC_RELEASE);
		fixed = 1;
	}
	if (fixed) {
		__atomic_fetch_add(&st->repairs, 1, __ATOMIC_RELAXED);
	}
}

static void *watch(void *arg)
{
	struct preload_state *st = arg;
	struct pl_shm *shm = st->shm;
	uint32_t seen = __atomic_load_n(&shm->doorbell, __ATOMIC_ACQUIRE);
	struct timespec ts = { 0, PL_BEAT_MS * 1000000L };
	const uint64_t one = 1;

	while (!__atomic_load_n(&st->stop, __ATOMIC_ACQUIRE)) {
		uint32_t bell;
		uint64_t tail;
		int kick;

		syscall(SYS_futex, &shm->doorbell, FUTEX_WAIT, seen, &ts, NULL,
			0);
		__atomic_fetch_add(&shm->beat, 1, __ATOMIC_RELEASE);
		bell = __atomic_load_n(&shm->doorbell, __ATOMIC_ACQUIRE);
		kick = bell != seen;
		seen = bell;
		tail = __atomic_load_n(&st->rd.published, __ATOMIC_ACQUIRE);
		if (__atomic_load_n(&shm->tail, __ATOMIC_RELAXED) != tail) {
			__atomic_store_n(&shm->tail, tail, __ATOMIC_SEQ_CST);
		}
		restore_header(st);
		if (!kick && __atomic_load_n(&shm->sleeping, __ATOMIC_RELAXED) &&
		    (__atomic_load_n(&shm->waiters, __ATOMIC_RELAXED) ||
		     __atomic_load_n(&shm->head, __ATOMIC_RELAXED) - tail >=
			     st->rd.nslots / 8)) {
			kick = 1;
		}
		if (kick && write(st->efd, &one, sizeof(one)) < 0) {
			/* EAGAIN: a wake-up is pending already */
		}
	}
	return NULL;
}

/* Once the header is final (after the BPF set-up), before the command
 * runs. */
static int start_watcher(struct preload_state *st)
{
	int err;

	memcpy(st->hdr_lo, st->shm, sizeof(st->hdr_lo));
	memcpy(st->hdr_hi, &st->shm->nself_deps, sizeof(st->hdr_hi));
	st->stack_depth_set = st->shm->stack_depth;
	err = pthread_create(&st->watcher, NULL, watch, st);
	if (err) {
		plog(st, MT_LOG_ERROR, "cannot start the ring's watcher thread: %s",
		     strerror(err));
		return -err;
	}
	st->watching = 1;
	return 0;
}

static void stop_watcher(struct preload_state *st)
{
	if (!st->watching) {
		return;
	}
	__atomic_store_n(&st->stop, 1, __ATOMIC_RELEASE);
	__atomic_fetch_add(&st->shm->doorbell, 1, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, &st->shm->doorbell, FUTEX_WAKE, INT_MAX, NULL, NULL,
		0);
	pthread_join(st->watcher, NULL);
	st->watching = 0;
}

static int preload_create(const struct mt_host *host, const char *args,
			  void **state)
{
	struct preload_state *st;
	int err;

	st = calloc(1, sizeof(*st));
	if (!st) {
		return -ENOMEM;
	}
	st->host = host;
	st->memfd = st->efd = -1;
	err = parse_args(st, args);
	if (!err) {
		err = find_interposer(st);
	}
	if (!err) {
		err = make_shm(st);
	}
	if (!err) {
		err = pl_syscalls_create(host, st->sys_mode, st->ring_size,
					 st->lib, st->memfd, st->shm, &st->sys);
	}
	if (!err && st->sys) {
		/* before the command runs: the hooks leave them to BPF */
		st->shm->syscalls_bpf = 1;
		pl_pidns_set_lookup(st->pidns, pl_syscalls_nsid, st->sys);
		pl_syscalls_set_meta(st->sys, take_meta, st);
	}
	if (err) {
		preload_destroy(st);
		return err;
	}
	*state = st;
	return 0;
}

static uint64_t said_hash(uint32_t kind, const char *path)
{
	uint64_t h = 1469598103934665603ull ^ kind; /* FNV-1a */

	for (; *path; path++) {
		h = (h ^ (unsigned char)*path) * 1099511628211ull;
	}
	return h ? h : 1;
}

/* Is (kind, path) new? Then it is remembered, within MAX_SAID. */
static int said_first(struct preload_state *st, uint32_t kind,
		      const char *path)
{
	uint64_t h = said_hash(kind, path);
	size_t i, mask;

	if (2 * (st->nsaid + 1) > st->said_cap) {
		size_t cap = st->said_cap ? 2 * st->said_cap : 64, j;
		struct said *t;

		if (st->nsaid >= MAX_SAID || !(t = calloc(cap, sizeof(*t)))) {
			st->unsaid++;
			return 0;
		}
		for (j = 0; j < st->said_cap; j++) {
			if (st->said[j].hash) {
				for (i = st->said[j].hash & (cap - 1);
				     t[i].hash; i = (i + 1) & (cap - 1)) {
				}
				t[i] = st->said[j];
			}
		}
		free(st->said);
		st->said = t;
		st->said_cap = cap;
	}
	mask = st->said_cap - 1;
	for (i = h & mask; st->said[i].hash; i = (i + 1) & mask) {
		if (st->said[i].hash == h && st->said[i].kind == kind &&
		    !strcmp(st->said[i].path, path)) {
			return 0;
		}
	}
	st->said[i].path = strdup(path);
	if (!st->said[i].path) {
		st->unsaid++;
		return 0;
	}
	st->said[i].hash = h;
	st->said[i].kind = kind;
	st->nsaid++;
	return 1;
}

static void said_free(struct preload_state *st)
{
	size_t i;

	for (i = 0; i < st->said_cap; i++) {
		free(st->said[i].path);
	}
	free(st->said);
}

/* Once per (reason, file). */
static void say_untraced(struct preload_state *st, uint32_t kind,
			 const char *path, int pid)
{
	static const char *const why[] = {
		[PL_NOTE_STATIC] = "a static executable: nothing preloads into it",
		[PL_NOTE_SETID] = "set-user-ID or set-group-ID: the loader ignores LD_PRELOAD",
		[PL_NOTE_NO_PRELOAD] = "exec'd with an environment without LD_PRELOAD (env -i?)",
		[PL_NOTE_OWN_MALLOC] = "defines malloc itself (an allocator linked in): its calls do not reach the interposer",
		[PL_NOTE_UNCHECKED] = "not checked",
	};

	if (kind >= sizeof(why) / sizeof(why[0]) || !why[kind] ||
	    !said_first(st, kind, path)) {
		return;
	}
	if (st->handover) {
		/* not lost: the eBPF source's uprobes record it */
		plog(st, MT_LOG_DEBUG, "%s: %s; recorded with uprobes", path,
		     why[kind]);
		return;
	}
	if (kind == PL_NOTE_UNCHECKED) {
		plog(st, MT_LOG_WARN,
		     "%s (process %d): exec'd under a seccomp filter, gone before memtrack could check it: if it is static or set-user-ID its allocations are not recorded (use --source ebpf)",
		     path, pid);
	} else if (pid > 0) {
		plog(st, MT_LOG_WARN,
		     "%s (process %d): %s; its allocations are not recorded (use --source ebpf)",
		     path, pid, why[kind]);
	} else {
		plog(st, MT_LOG_WARN,
		     "%s: %s; its allocations are not recorded (use --source ebpf)",
		     path, why[kind]);
	}
}

/* PL_NOTE_UNCHECKED: the exec check a sandboxed process could not make,
 * made here on the file as that process sees it (its root and cwd), while
 * it lives; the notice it gives, 0 when nothing stops the interposer, or
 * PL_NOTE_UNCHECKED when the file cannot be found (a bare name, looked up
 * in a PATH we do not know; the process gone). */
static uint32_t check_for(const char *path, int32_t pid)
{
	char full[PATH_MAX + 64];

	if (pid <= 0 || !strchr(path, '/') ||
	    mt_proc_path(pid, AT_FDCWD, path, full, sizeof(full))) {
		return PL_NOTE_UNCHECKED;
	}
	if (access(full, F_OK)) {
		/* gone already (the notice is read after the exec): an
		 * absolute path as memtrack sees it, most often the same
		 * file */
		if (path[0] != '/' || access(path, F_OK)) {
			return PL_NOTE_UNCHECKED;
		}
		return (uint32_t)pl_exec_check(path, -1, NULL);
	}
	return (uint32_t)pl_exec_check(full, -1, NULL);
}

/* A notice record from the ring (shm.h): said, never written out. A
 * malformed one (no NUL) is dropped: any process can write the ring. */
static void take_notice(struct preload_state *st, const unsigned char *data,
			size_t len)
{
	uint32_t kind;
	int32_t pid;

	if (len <= PL_NOTICE_HDR || len > PL_NOTICE_HDR + PL_NOTICE_PATH ||
	    data[len - 1] != '\0') {
		return;
	}
	memcpy(&kind, data + 4, sizeof(kind));
	memcpy(&pid, data + 8, sizeof(pid));
	if (kind == PL_NOTE_UNCHECKED) {
		kind = check_for((const char *)data + PL_NOTICE_HDR, pid);
	}
	say_untraced(st, kind, (const char *)data + PL_NOTICE_HDR, pid);
}

static const char *const *preload_command_env(void *state,
					      const char *const *argv)
{
	struct preload_state *st = state;
	char path[PATH_MAX];

	/* the command itself: what the exec wrappers do for the others */
	if (argv && argv[0] &&
	    pl_exec_find(argv[0], getenv("PATH"), path, sizeof(path)) == 0) {
		say_untraced(st, (uint32_t)pl_exec_check(path, -1, NULL),
			     path, 0);
	}
	return st->env;
}

static int preload_start(void *state, const struct mt_target *target)
{
	struct preload_state *st = state;
	int err;

	if (target->root_pid <= 0) {
		plog(st, MT_LOG_ERROR, "needs a command to trace");
		return -EINVAL;
	}
	__atomic_store_n(&st->enabled, !target->start_disabled,
			 __ATOMIC_RELEASE);
	__atomic_store_n(&st->shm->enabled, !target->start_disabled,
			 __ATOMIC_RELEASE);
	err = start_watcher(st);
	if (err) {
		return err;
	}
	if (st->sys) {
		return pl_syscalls_start(st->sys, target->root_pid,
					 !target->start_disabled);
	}
	plog(st, MT_LOG_WARN,
	     "mmap, munmap, mremap and brk are recorded only when the program calls them through libc; the allocator's own (malloc's mmap and brk) are not seen (use --source ebpf for them)");
	return 0;
}

static int preload_poll_fd(void *state)
{
	struct preload_state *st = state;

	return st->sys ? pl_syscalls_poll_fd(st->sys, st->efd) : st->efd;
}

static void meta_log(void *ctx, const char *msg)
{
	struct preload_state *st = ctx;

	plog(st, MT_LOG_WARN, "%s", msg);
}

/* The emitter meta.c hands whole records to: notices are taken here,
 * the rest goes on to the recording. */
struct meta_em {
	struct mt_emitter em; /* first: meta.c sees only this */
	struct mt_emitter *out;
	struct preload_state *st;
};

static int meta_or_notice(struct mt_emitter *em, const void *data, size_t len)
{
	struct meta_em *me = (struct meta_em *)(void *)em;

	if (len >= 4 && !memcmp(data, PL_NOTICE_TAG, 4)) {
		take_notice(me->st, data, len);
		return 0;
	}
	if (len == PL_HELLO_LEN && !memcmp(data, PL_HELLO_TAG, 4)) {
		struct pl_shm *shm = me->st->shm;
		uint32_t seq, *ack;
		uint64_t ns;
		int32_t pid, tid;

		memcpy(&ns, (const char *)data + 4, sizeof(ns));
		memcpy(&pid, (const char *)data + 12, sizeof(pid));
		memcpy(&tid, (const char *)data + 16, sizeof(tid));
		memcpy(&seq, (const char *)data + 20, sizeof(seq));
		pl_pidns_hello(me->st->pidns, ns, pid, tid);
		/* answered: the thread goes on (its number is its own word;
		 * a wrong one only makes some thread wait its while) */
		ack = &shm->hello_ack[seq % PL_HELLO_ACKS];
		__atomic_store_n(ack, seq, __ATOMIC_RELEASE);
		syscall(SYS_futex, ack, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
		return 0;
	}
	return me->out->meta(me->out, data, len);
}

static int no_flush(struct mt_emitter *em)
{
	(void)em;
	return -EPIPE; /* meta.c emits no event */
}

/* A metadata chunk read from the ring (here or by syscalls.c's merge). */
static int take_meta(void *ctx, const struct mt_event *slot,
		     struct mt_emitter *em)
{
	struct preload_state *st = ctx;
	struct meta_em me = {
		.em = { .cur = NULL, .end = NULL, .flush = no_flush,
			.meta = meta_or_notice },
		.out = em,
		.st = st,
	};

	return pl_meta_take(&st->meta, slot, &me.em, meta_log, st);
}

/* At most max events; with end != 0, none at or past position end.
 * Metadata chunks on the way go to em->meta() (meta.c). */
static int read_events(struct preload_state *st, struct mt_emitter *em,
		       size_t max, uint64_t end)
{
	size_t n = 0;

	while (n < max && (!end || st->rd.tail < end)) {
		const struct mt_event *e = pl_ring_peek(&st->rd);
		struct mt_event ev, *out;

		if (!e) {
			if (pl_ring_unstall(&st->rd, pl_now_ns(), STALL_NS)) {
				continue;
			}
			break;
		}
		if (e->kind == PL_META_KIND) {
			int err = pl_ring_take_meta(&st->rd, e, take_meta, st,
						    em);

			if (err) {
				return err;
			}
			continue;
		}
		if (pl_ring_take(&st->rd, e, &ev)) {
			continue; /* counted: no event (ring-read.c, T3) */
		}
		out = mt_emit(em);
		if (!out) {
			pl_ring_publish(&st->rd);
			return -EPIPE;
		}
		*out = ev;
		n++;
	}
	pl_ring_publish(&st->rd);
	return (int)n;
}

/* A sampled recording says so before its first event (MTKR,
 * common/sample-draw.h). */
static int say_sampled(struct preload_state *st, struct mt_emitter *em)
{
	unsigned char p[MT_SAMPLE_PAYLOAD_LEN];
	int err;

	if (!st->sample_bytes || st->sample_said) {
		return 0;
	}
	mt_sample_payload(p, st->sample_bytes, st->sample_seed, st->seeded);
	err = em->meta ? em->meta(em, p, sizeof(p)) : -ENOTSUP;
	if (err < 0) {
		plog(st, MT_LOG_ERROR,
		     "cannot say the recording is sampled (the encoder takes no metadata: %s)",
		     strerror(-err));
		return err;
	}
	st->sample_said = 1;
	return 0;
}

static int preload_read(void *state, struct mt_emitter *em, size_t max,
			uint32_t *flags)
{
	struct preload_state *st = state;
	uint64_t count;
	int n;

	(void)flags;
	if (say_sampled(st, em) < 0) {
		return -EPIPE;
	}
	__atomic_store_n(&st->shm->sleeping, 0, __ATOMIC_RELAXED);
	if (read(st->efd, &count, sizeof(count)) < 0) {
		/* EAGAIN: not woken, the tick */
	}
	n = st->sys ? pl_syscalls_read(st->sys, &st->rd, em, max) :
		      read_events(st, em, max, 0);
	if (n >= 0 && (size_t)n < max) {
		/* empty: wake us when it fills or somebody waits */
		__atomic_store_n(&st->shm->sleeping, 1, __ATOMIC_SEQ_CST);
	}
	return n;
}

/* Everything claimed when drain() is called; a slot whose writer is alive
 * but never commits is given up after DRAIN_WAIT_NS. */
static int preload_drain(void *state, struct mt_emitter *em)
{
	struct preload_state *st = state;
	uint64_t end = pl_ring_unread(&st->rd) + st->rd.tail;
	uint64_t t0 = pl_now_ns(), last = st->rd.tail;
	int n;

	if (say_sampled(st, em) < 0) {
		return -EPIPE;
	}

	if (st->sys) {
		return pl_syscalls_drain(st->sys, &st->rd, em);
	}
	while (st->rd.tail < end) {
		n = read_events(st, em, SIZE_MAX, end);
		if (n < 0) {
			return n;
		}
		if (st->rd.tail != last) {
			last = st->rd.tail;
			t0 = pl_now_ns();
		} else if (pl_now_ns() - t0 > DRAIN_WAIT_NS) {
			plog(st, MT_LOG_WARN,
			     "drain: a slot stayed claimed by a live thread for 1 s; %llu events left unread",
			     (unsigned long long)(end - st->rd.tail));
			break;
		} else {
			usleep(1000);
		}
	}
	return 0;
}

static int preload_set_enabled(void *state, int enabled)
{
	struct preload_state *st = state;

	__atomic_store_n(&st->enabled, !!enabled, __ATOMIC_RELEASE);
	__atomic_store_n(&st->shm->enabled, !!enabled, __ATOMIC_RELEASE);
	if (st->sys) {
		pl_syscalls_set_enabled(st->sys, enabled);
	}
	return 0;
}

static int preload_get_stats(void *state, struct mt_source_stats *out)
{
	struct preload_state *st = state;
	struct mt_source_stats s = { .size = out->size };
	size_t n = out->size < sizeof(s) ? out->size : sizeof(s);

	s.dropped = __atomic_load_n(&st->shm->dropped, __ATOMIC_RELAXED);
	s.ring_size = st->ring_size;
	s.ring_used = pl_ring_unread(&st->rd) * sizeof(struct mt_event);
	if (st->sys) {
		/* ring_size and ring_used stay the shared ring's: the BPF
		 * ring is never the one that fills */
		s.dropped += pl_syscalls_dropped(st->sys);
		s.untracked = pl_syscalls_untracked(st->sys);
		s.unrecorded = pl_syscalls_unrecorded(st->sys);
	}
	s.waits = __atomic_load_n(&st->shm->waits, __ATOMIC_RELAXED);
	s.wait_ns = __atomic_load_n(&st->shm->wait_ns, __ATOMIC_RELAXED);
	/* a stack or mapping record the ring's writer broke is missing
	 * from the recording as surely as an event (meta.h) */
	s.damaged = st->rd.corrupt + pl_meta_dropped(&st->meta);
	s.gave_up = __atomic_load_n(&st->shm->gave_up, __ATOMIC_RELAXED);
	/* only what the host's struct has room for */
	if (n > sizeof(s.size)) {
		memcpy((char *)out + sizeof(s.size), (char *)&s + sizeof(s.size),
		       n - sizeof(s.size));
	}
	return 0;
}

/* What was lost and why, before the host's total: the two causes have
 * different cures. */
static void say_lost(struct preload_state *st)
{
	uint64_t handlers = 0, sys = 0;

	if (st->shm) {
		handlers = __atomic_load_n(&st->shm->dropped, __ATOMIC_RELAXED);
	}
	if (st->sys) {
		sys = pl_syscalls_dropped(st->sys);
	}
	if (sys) {
		plog(st, MT_LOG_WARN,
		     "%llu mmap, munmap, mremap or brk records lost: the BPF syscall ring (%zu bytes, the larger of 32M and --ring-size) was full; a larger --ring-size keeps them",
		     (unsigned long long)sys, pl_syscalls_ring_size(st->sys));
	}
	if (handlers) {
		plog(st, MT_LOG_WARN,
		     "%llu events of signal handlers lost: more than %d came while their thread was writing to a full ring",
		     (unsigned long long)handlers, PL_PENDING);
	}
	if (st->shm && __atomic_load_n(&st->shm->sample_lost, __ATOMIC_RELAXED)) {
		plog(st, MT_LOG_WARN,
		     "%u sampled allocations not recorded: a process's table of sampled blocks had no room; the estimates are that much low",
		     __atomic_load_n(&st->shm->sample_lost, __ATOMIC_RELAXED));
	}
	if (pl_pidns_untranslated(st->pidns)) {
		plog(st, MT_LOG_WARN,
		     "%llu events of processes in other pid namespaces keep their namespace's ids: the threads were gone before memtrack could find them in /proc",
		     (unsigned long long)pl_pidns_untranslated(st->pidns));
	}
	if (st->unsaid) {
		plog(st, MT_LOG_WARN,
		     "%llu more notices of untraced programs not said (past %u files)",
		     (unsigned long long)st->unsaid, MAX_SAID);
	}
	if (st->repairs) {
		plog(st, MT_LOG_WARN,
		     "the shared ring's header was written over by a traced process and put back %llu times",
		     (unsigned long long)st->repairs);
	}
	if (st->rd.corrupt) {
		plog(st, MT_LOG_WARN,
		     "the shared ring was written over by a traced process: %llu slots that held no record of the ring's protocol were skipped",
		     (unsigned long long)st->rd.corrupt);
	}
	if (pl_meta_dropped(&st->meta)) {
		struct pl_meta_stats ms;

		pl_meta_get_stats(&st->meta, &ms);
		plog(st, MT_LOG_WARN,
		     "stack and mapping records broken by a traced process, dropped: %llu chunks of no record in progress, %llu malformed, %llu records begun again, %llu over %u bytes, %llu beyond %u in progress",
		     (unsigned long long)ms.orphans,
		     (unsigned long long)ms.malformed,
		     (unsigned long long)ms.reused,
		     (unsigned long long)ms.oversized, PL_META_RECORD_MAX,
		     (unsigned long long)ms.evicted, PL_META_INFLIGHT_MAX);
	}
}

static void preload_destroy(void *state)
{
	struct preload_state *st = state;

	if (!st) {
		return;
	}
	say_lost(st);
	pl_syscalls_destroy(st->sys);
	if (st->shm) {
		/* the heartbeat stops: producers' next wait ends (dead) */
		stop_watcher(st);
		/* waiting producers go on untraced now, the others at
		 * their next wait */
		__atomic_store_n(&st->shm->enabled, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&st->shm->dead, PL_DEAD, __ATOMIC_RELEASE);
		__atomic_fetch_add(&st->shm->space_seq, 1, __ATOMIC_SEQ_CST);
		syscall(SYS_futex, &st->shm->space_seq, FUTEX_WAKE, INT_MAX,
			NULL, NULL, 0);
		if (st->rd.abandoned) {
			plog(st, MT_LOG_INFO,
			     "%llu ring slots skipped: their writer was killed while writing",
			     (unsigned long long)st->rd.abandoned);
		}
		munmap(st->shm, st->map_size);
	}
	if (pl_meta_rx_free(&st->meta)) {
		plog(st, MT_LOG_INFO,
		     "stack or mapping records left incomplete: their writer was killed");
	}
	if (st->memfd >= 0) {
		close(st->memfd);
	}
	if (st->efd >= 0) {
		close(st->efd);
	}
	said_free(st);
	pl_pidns_free(st->pidns);
	free(st->tsc);
	free(st);
}

static const struct mt_source_ops preload_ops = {
	MT_OPS_HEADER(mt_source_ops),
	.flags = MT_SOURCE_NEEDS_COMMAND | MT_SOURCE_TAKES_RING_SIZE |
		 MT_SOURCE_TAKES_STACKS | MT_SOURCE_TAKES_SAMPLING,
	.create = preload_create,
	.start = preload_start,
	.poll_fd = preload_poll_fd,
	.read = preload_read,
	.drain = preload_drain,
	.set_enabled = preload_set_enabled,
	.destroy = preload_destroy,
	.get_stats = preload_get_stats,
	.command_env = preload_command_env,
};

static const struct mt_plugin_desc preload_desc = {
	MT_OPS_HEADER(mt_plugin_desc),
	.kind = MT_PLUGIN_SOURCE,
	.name = "preload",
	.description = "allocations of a process tree, recorded in-process by an LD_PRELOAD interposer (no root)",
	.version = PACKAGE_VERSION,
	.ops.source = &preload_ops,
};

MT_PLUGIN_DEFINE(preload_desc)
