/* SPDX-License-Identifier: MIT */
/*
 * plugins/ebpf/scope.c - uprobes that trap in the traced tree only.
 *
 * A uprobe attached to a file for every process (pid -1) puts a
 * breakpoint in every process on the machine that maps the file: all of
 * them pay the trap on each malloc while memtrack runs, and a valgrind
 * elsewhere reads the breakpoint as code and dies with SIGTRAP. The
 * kernel installs a uprobe's breakpoint only in the address spaces its
 * consumers' filter accepts, and the filter of a uprobe trace event is
 * the targets of the perf events opened on it. So:
 *
 * - The probes are uprobe events in tracefs, group "memtrack", one event
 *   per program and cookie (every free, every return, the entries of one
 *   cookie), whatever the file: a new file's probes join the events the
 *   tree has (a probe added to an enabled event is live at once), and a
 *   C program needs 9 events for libc's 17 probes.
 * - One perf event per event, on kthreadd (pid 2: no user address space,
 *   it widens the filter by nothing), carries our BPF program. Programs
 *   hang on the trace event, not on the perf event: ours runs once for
 *   every hit the filter lets through, and filters by `tracked` as before.
 * - Perf events without a program, one per event and traced thread, with
 *   `inherit`, are the filter: every thread and process the tree makes
 *   later has its own copy from its first instruction, across exec. They
 *   are opened when an event is new to us, for every thread of the tree
 *   then alive. A clone in flight meanwhile (its creator's events copied
 *   before the creator had the new ones) is the gap: BPF counts the
 *   tree's clones between their entry and sched_process_fork
 *   (`clones_inflight`), and the covering looks again until a look that
 *   began with none in flight opened nothing. They ask for
 *   PERF_SAMPLE_READ, which keeps perf from swapping two clones' contexts
 *   between their tasks (see perf_open()).
 * - The events are shared by every memtrack on the machine. A perf event
 *   closed while others are open on its trace event costs nothing; the
 *   last one waits for an RCU grace period (~90 ms here) holding the
 *   kernel's event_mutex, which every fork and exit of a traced tree needs
 *   for its copies: per-memtrack events made a tree wait behind another
 *   memtrack's teardown (a fork took over a second in the test suite).
 *   Shared, a memtrack that runs while another ends keeps the events, and
 *   the last one out pays the waits. The watchdog removes the events
 *   nobody uses when memtrack is gone, also after SIGKILL; the next
 *   memtrack removes what was left.
 * - An event made and not yet held (between the line written to
 *   uprobe_events and the perf event opened on it) is one nobody uses:
 *   a remover would take it, and the probe with it. Makers and removers
 *   take an flock on uprobe_events (scope_lock()), which every memtrack
 *   and watchdog on the machine opens: a remover waits for the maker's
 *   hold. Without it a dying watchdog's removals, every 50 ms for a second
 *   or more, could beat all of a maker's tries; the probes of that file
 *   were then missing, silently, until a stop attached them again
 *   (tests/test-vma-busy.sh in CI, twice).
 *
 * Where tracefs cannot take our events (not mounted, not writable),
 * kthreadd is not ours to see (memtrack in a container's pid namespace),
 * the kernel is older than 6.12 or `scope=system` is given, the uprobes
 * are attached for every process, as before.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "memtrack.h"
#include "memtrack.skel.h"
#include "ebpf.h"
#include "array.h"

/* shared by every memtrack (see the top); the names carry the meaning of
 * the cookies they are made for */
#define SCOPE_GROUP "memtrack"
#define SCOPE_EV_PREFIX "v1_"
/* kthreadd: a task without a user address space, always there */
#define SCOPE_ANCHOR_PID 2
/* how long the covering waits for clones in flight */
#define SCOPE_COVER_MAX_NS 5000000000ull

static const char *const tracefs_dirs[] = {
	"/sys/kernel/tracing",
	"/sys/kernel/debug/tracing",
};

/* A perf event of pid: type and config name it (a tracepoint's id for
 * ours); inherit: a filter event (below), else the program's carrier;
 * inherit > 1: one for a thread that waits to exec (see open_filters()). */
static int perf_open_type(uint32_t type, uint64_t config, pid_t pid,
			  int inherit)
{
	struct perf_event_attr a;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = type;
	a.config = config;
	a.sample_period = 1;
	a.wakeup_events = 1;
	if (inherit) {
		/* PERF_SAMPLE_READ: a context holding inherit + SAMPLE_READ
		 * events never takes perf's fast context switch, which swaps
		 * the contexts of two clones (a parent's and its child's)
		 * between the tasks: a task exiting with another's events
		 * then takes that live task off the uprobe filter
		 * (trace_uprobe_filter_remove() trusts hw.target), and the
		 * kernel removes the breakpoints from its memory. Seen here:
		 * 8 forked children each making 8,000 mallocs lost up to a
		 * third of one child's calls in 1 run of 2. Linux 6.12 and
		 * later allow the pair, with PERF_SAMPLE_TID. */
		a.inherit = 1;
		a.sample_type = PERF_SAMPLE_READ | PERF_SAMPLE_TID;
	}
	if (inherit > 1) {
		/* the kernel then leaves the breakpoints to the exec and the
		 * new image's mappings (trace_uprobe_filter_add()): no walk
		 * of every process that maps the file now, which cost ~0.1
		 * ms per event here; the filter is the event's target
		 * whether it is enabled or not */
		a.disabled = 1;
		a.enable_on_exec = 1;
	}
	return (int)syscall(__NR_perf_event_open, &a, pid, -1, -1,
			    PERF_FLAG_FD_CLOEXEC);
}

static int perf_open(uint32_t tp_id, pid_t pid, int inherit)
{
	return perf_open_type(PERF_TYPE_TRACEPOINT, tp_id, pid, inherit);
}

static int write_line(int fd, const char *line)
{
	size_t n = strlen(line);
	ssize_t w;

	while ((w = write(fd, line, n)) < 0 && errno == EINTR) {
	}
	return w == (ssize_t)n ? 0 : (w < 0 ? -errno : -EIO);
}

/* Makers and removers of our events, one at a time across memtracks (see
 * the top). An flock dies with its holder, but a holder can be stopped
 * (a memtrack suspended with ^Z mid-attach): waited for wait_ms at most,
 * then the caller goes on without it, as before the lock. Returns whether
 * it is held. System calls only (the watchdog's too). */
static int scope_lock(int fd, long wait_ms)
{
	struct timespec ms = { 0, 1000000 };

	for (long waited = 0;; waited++) {
		if (!flock(fd, LOCK_EX | LOCK_NB)) {
			return 1;
		}
		if ((errno != EWOULDBLOCK && errno != EINTR) ||
		    waited >= wait_ms) {
			return 0;
		}
		nanosleep(&ms, NULL);
	}
}

static void scope_unlock(int fd, int held)
{
	if (held) {
		flock(fd, LOCK_UN);
	}
}

/* The text of a small file, NUL-terminated, in buf: its length, or a
 * negative errno (-EIO: empty). System calls only (the watchdog's too). */
static ssize_t read_text(const char *path, char *buf, size_t size)
{
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		return -errno;
	}
	n = read(fd, buf, size - 1);
	close(fd);
	if (n <= 0) {
		return -EIO;
	}
	buf[n] = '\0';
	return n;
}

/*
 * Remove the events of our group that no memtrack uses any more (the
 * kernel refuses those with perf events open: EBUSY). Only system calls
 * and static buffers: the watchdog calls it in a fork of a threaded
 * memtrack. wait_ms: how long to wait for a maker (scope_lock()). Returns
 * how many were busy; 1 when the lock was not had.
 */
int ebpf_scope_remove_group(const char *tracefs, long wait_ms)
{
	static char buf[1 << 16], path[512], del[160];
	int left = 0, wfd;
	char *line, *next;

	snprintf(path, sizeof(path), "%s/uprobe_events", tracefs);
	if (read_text(path, buf, sizeof(buf)) < 0) {
		return 0;
	}
	wfd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (wfd < 0) {
		return 0;
	}
	/* no maker between its line and its hold; the list read before is
	 * good enough: an event made since is not in it. A maker holds the
	 * lock for a few ms, or while another's close has the kernel's
	 * event_mutex (~0.1 s): a pass not made is made by the next
	 * remover, or the watchdog's next one */
	if (!scope_lock(wfd, wait_ms)) {
		close(wfd);
		return 1;
	}
	for (line = buf; line && *line; line = next) {
		char *ev, *sp;

		next = strchr(line, '\n');
		if (next) {
			*next++ = '\0';
		}
		/* "p:memtrack/v1_free /proc/self/fd/9:0x...": a probe of
		 * an event of several is listed once per probe; the first
		 * delete takes the event, the others find nothing */
		ev = strchr(line, ':');
		if (!ev || strncmp(ev + 1, SCOPE_GROUP "/",
				   strlen(SCOPE_GROUP "/"))) {
			continue;
		}
		ev++;
		sp = strchr(ev, ' ');
		if (sp) {
			*sp = '\0';
		}
		snprintf(del, sizeof(del), "-:%s\n", ev);
		if (write_line(wfd, del) == -EBUSY) {
			left++;
		}
	}
	scope_unlock(wfd, 1);
	close(wfd);
	return left;
}

/* The clone counters serve the covering alone. */
static void scope_progs_off(struct ebpf_state *st)
{
	struct bpf_program *progs[] = {
		st->skel->progs.scope_clone_enter,
		st->skel->progs.scope_clone3_enter,
		st->skel->progs.scope_fork_enter,
		st->skel->progs.scope_vfork_enter,
		st->skel->progs.scope_clone_exit,
		st->skel->progs.scope_clone3_exit,
		st->skel->progs.scope_fork_exit,
		st->skel->progs.scope_vfork_exit,
	};

	for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++) {
		bpf_program__set_autoload(progs[i], false);
	}
}

/*
 * The first perf event bound to a task on a quiet machine turns perf's
 * scheduler hooks on, and waits for an RCU grace period while holding
 * the lock every other such event takes: 5-20 ms here, nearly all of it
 * asleep (the hooks stay on for a second after the last such event is
 * gone). Our first is a uprobe carrier (on kthreadd) or a filter event,
 * after the first uprobe registration's own grace period: the two waits
 * in a row, beside the load under auto (ebpf_preattach_start()), else
 * at the root's exec while it waits in the gate. So a thread opens a
 * task's event that counts nothing as the create begins: the hooks are
 * on, or being turned on, when the carriers come. Joined by
 * ebpf_scope_warm_join().
 */
static void *scope_warm_main(void *arg)
{
	struct ebpf_state *st = arg;
	uint64_t t0 = ebpf_now_ns();
	int fd = perf_open_type(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_DUMMY, 0, 0);

	if (fd >= 0) {
		close(fd);
	}
	st->scope_warm_ns = ebpf_now_ns() - t0;
	return NULL;
}

void ebpf_scope_warm_start(struct ebpf_state *st)
{
	if (st->scope_system || st->scope_warming) {
		return;
	}
	st->scope_warming = !pthread_create(&st->scope_warm_thread, NULL,
					    scope_warm_main, st);
}

void ebpf_scope_warm_join(struct ebpf_state *st)
{
	if (!st->scope_warming) {
		return;
	}
	pthread_join(st->scope_warm_thread, NULL);
	st->scope_warming = 0;
	ebpf_log(st, MT_LOG_DEBUG,
		 "scope: perf's hooks on in %.1f ms, beside the load",
		 (double)st->scope_warm_ns / 1e6);
}

/* Decide whether the uprobes can be limited to the tree; before the BPF
 * object is loaded (the clone counters load only then). */
void ebpf_scope_init(struct ebpf_state *st)
{
	const char *why = NULL;
	char comm[32] = "", why_buf[128];
	struct stat sb;
	size_t i;
	int fd, err;

	st->scope_ok = 0;
	st->scope_uev_fd = -1;
	/* tests/test-scope-race.sh */
	if (getenv("MEMTRACK_TEST_SCOPE_HOLD_MS")) {
		st->test_scope_hold_ms =
			strtoul(getenv("MEMTRACK_TEST_SCOPE_HOLD_MS"), NULL, 10);
	}
	if (st->scope_system) {
		why = "scope=system";
		goto off;
	}
	if (stat("/proc/self/ns/pid", &sb) || sb.st_ino != PROC_PID_INIT_INO) {
		why = "memtrack runs in a pid namespace of its own";
		goto off;
	}
	if (read_text("/proc/2/comm", comm, sizeof(comm)) < 0 ||
	    strcmp(comm, "kthreadd\n")) {
		why = "no kthreadd at pid 2";
		goto off;
	}
	for (i = 0; i < sizeof(tracefs_dirs) / sizeof(tracefs_dirs[0]); i++) {
		char path[128];

		snprintf(path, sizeof(path), "%s/uprobe_events",
			 tracefs_dirs[i]);
		fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
		if (fd >= 0) {
			st->scope_tracefs = tracefs_dirs[i];
			st->scope_uev_fd = fd;
			break;
		}
	}
	if (st->scope_uev_fd < 0) {
		why = "tracefs's uprobe_events is not writable";
		goto off;
	}
	/*
	 * The filter's attributes (inherit with PERF_SAMPLE_READ): Linux
	 * 6.12. Asked of a software event that does not exist: the kernel
	 * checks the attributes first (EINVAL before 6.12), the event's
	 * config then (ENOENT), and makes nothing. A real one would wait
	 * here for the hooks (ebpf_scope_warm_start()).
	 */
	fd = perf_open_type(PERF_TYPE_SOFTWARE, UINT64_MAX, 0, 1);
	err = fd < 0 ? errno : 0;
	if (fd >= 0) {
		close(fd);
	}
	/* tests/test-ebpf-scope.sh: a kernel before 6.12 */
	if (getenv("MEMTRACK_TEST_SCOPE_REFUSED")) {
		err = EINVAL;
	}
	if (err == EINVAL) {
		why = "the kernel refuses inherited perf events with PERF_SAMPLE_READ (before 6.12)";
	} else if (err && err != ENOENT) {
		snprintf(why_buf, sizeof(why_buf), "perf_event_open: %s",
			 strerror(err));
		why = why_buf;
	}
	if (why) {
		close(st->scope_uev_fd);
		st->scope_uev_fd = -1;
		goto off;
	}
	/* what memtracks that ran at once as their watchdogs ended left;
	 * not worth a wait at start-up (the next remover takes it) */
	ebpf_scope_remove_group(st->scope_tracefs, 0);
	st->scope_ok = 1;
	ebpf_log(st, MT_LOG_DEBUG,
		 "uprobes trap in the traced tree only (%s, group %s)",
		 st->scope_tracefs, SCOPE_GROUP);
	return;
off:
	ebpf_log(st, st->scope_system ? MT_LOG_DEBUG : MT_LOG_INFO,
		 "uprobes are attached for every process on the machine (%s): all pay the trap while memtrack runs",
		 why);
	scope_progs_off(st);
}

static int read_id(struct ebpf_state *st, const char *name, uint32_t *id)
{
	char path[256], buf[32];
	ssize_t n;

	snprintf(path, sizeof(path), "%s/events/%s/%s/id", st->scope_tracefs,
		 SCOPE_GROUP, name);
	n = read_text(path, buf, sizeof(buf));
	if (n < 0) {
		return (int)n;
	}
	*id = (uint32_t)strtoul(buf, NULL, 10);
	return 0;
}

/* Probes share an event when the program sees no difference between
 * them: every free (free_enter reads no cookie but MT_CK_PROG), every return
 * (alloc_exit reads what the entry stored), and the entries of one
 * cookie, whatever the file. */
#define SCOPE_KEY_RET (~0ull)
#define SCOPE_KEY_FREE (~0ull - 1)
#define SCOPE_KEY_HELLO (~0ull - 2)
#define SCOPE_KEY_FREE_PROG (~0ull - 3)
#define SCOPE_KEY_RET_PROG (~0ull - 4)

static uint64_t ev_key(struct ebpf_state *st, struct bpf_program *prog,
		       int retprobe, uint64_t cookie)
{
	if (retprobe) {
		return cookie & MT_CK_PROG ? SCOPE_KEY_RET_PROG : SCOPE_KEY_RET;
	}
	if (prog == st->skel->progs.free_enter) {
		return cookie & MT_CK_PROG ? SCOPE_KEY_FREE_PROG :
					     SCOPE_KEY_FREE;
	}
	if (prog == st->skel->progs.hello_enter) {
		return SCOPE_KEY_HELLO;
	}
	return cookie;
}

static void ev_name(uint64_t key, char *name, size_t len)
{
	if (key == SCOPE_KEY_RET) {
		snprintf(name, len, SCOPE_EV_PREFIX "ret");
	} else if (key == SCOPE_KEY_FREE) {
		snprintf(name, len, SCOPE_EV_PREFIX "free");
	} else if (key == SCOPE_KEY_RET_PROG) {
		snprintf(name, len, SCOPE_EV_PREFIX "ret_prog");
	} else if (key == SCOPE_KEY_FREE_PROG) {
		snprintf(name, len, SCOPE_EV_PREFIX "free_prog");
	} else if (key == SCOPE_KEY_HELLO) {
		snprintf(name, len, SCOPE_EV_PREFIX "hello");
	} else {
		snprintf(name, len, SCOPE_EV_PREFIX "alloc_%llx",
			 (unsigned long long)key);
	}
}

/*
 * The probe line of ebpf_scope_attach(), in the event name, scope_evs[i]
 * (i == scope_nevs: new to us, made or found, then held by a perf event
 * on kthreadd: *pfd, its id *id). Returns 0 or a negative errno.
 */
static int scope_make(struct ebpf_state *st, const char *path,
		      uint64_t offset, int retprobe, const char *name,
		      size_t i, uint32_t *id, int *pfd)
{
	char line[192];
	int fd, err;

	for (int tries = 0;; tries++) {
		/* the kernel resolves the path when the probe is made:
		 * through an fd of ours, any path (spaces, another mount
		 * namespace) will do */
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			return -errno;
		}
		snprintf(line, sizeof(line),
			 "%c:%s/%s /proc/self/fd/%d:0x%llx\n",
			 retprobe ? 'r' : 'p', SCOPE_GROUP, name, fd,
			 (unsigned long long)offset);
		err = write_line(st->scope_uev_fd, line);
		close(fd);
		/* EEXIST: the probe is there already (another memtrack's,
		 * or a file attached again after its process died
		 * mid-attach) */
		if (err && err != -EEXIST) {
			return err;
		}
		if (i < st->scope_nevs) {
			st->scope_appends++;
			return 0; /* an event we hold: it stays */
		}
		if (st->test_scope_hold_ms) {
			/* tests: the window a remover without the lock won */
			struct timespec ts = {
				st->test_scope_hold_ms / 1000,
				(long)(st->test_scope_hold_ms % 1000) * 1000000
			};

			nanosleep(&ts, NULL);
		}
		/* an event new to us, maybe another memtrack's, whose
		 * watchdog removes it when it ends, unless we hold it first
		 * (the lock keeps our own version's removers off; older
		 * memtracks do not take it) */
		err = read_id(st, name, id);
		*pfd = err ? -1 : perf_open(*id, SCOPE_ANCHOR_PID, 0);
		if (*pfd >= 0) {
			return 0;
		}
		/* removed meanwhile: no id (ENOENT), or an id no event has
		 * any more (EINVAL); make it again */
		err = err ? err : (errno == EINVAL ? -ENOENT : -errno);
		if (err != -ENOENT || tries == 3) {
			return err;
		}
	}
}

/*
 * The uprobe (retprobe: the uretprobe) at offset of the file at path, in
 * the event of our group for its program and cookie. The first probe of
 * an event makes it, with prog on it (cookie for bpf_get_attach_cookie)
 * through a perf event on kthreadd: *out is that link, else NULL. A new
 * event traps nowhere until ebpf_scope_cover() opens its filter; a probe
 * added to an event the tree has traps in the tree at once. Returns 0 or
 * a negative errno.
 */
int ebpf_scope_attach(struct ebpf_state *st, struct bpf_program *prog,
		      const char *path, uint64_t offset, int retprobe,
		      uint64_t cookie, struct bpf_link **out)
{
	LIBBPF_OPTS(bpf_perf_event_opts, opts, .bpf_cookie = cookie);
	uint64_t key = ev_key(st, prog, retprobe, cookie);
	struct ebpf_scope_ev *evs;
	char name[40];
	struct bpf_link *link;
	uint32_t id = 0;
	int pfd = -1, err, held;
	size_t i;

	*out = NULL;
	for (i = 0; i < st->scope_nevs && st->scope_evs[i].key != key; i++) {
	}
	evs = mt_array_grow(st->scope_evs, &st->scope_evs_cap,
			    st->scope_nevs + 1, sizeof(*evs));
	if (!evs) {
		return -ENOMEM;
	}
	st->scope_evs = evs;
	ev_name(key, name, sizeof(name));
	/* new to us: nobody removes it until we hold it. A remover's pass
	 * takes ~0.1 s per event it removes */
	held = i == st->scope_nevs && scope_lock(st->scope_uev_fd, 5000);
	err = scope_make(st, path, offset, retprobe, name, i, &id, &pfd);
	scope_unlock(st->scope_uev_fd, held);
	if (err || pfd < 0) {
		return err;
	}
	if (st->scope_defer) {
		/* the programs are not loaded yet: ebpf_scope_undefer() */
		struct ebpf_scope_deferred *d = mt_array_grow(
			st->scope_deferred, &st->scope_deferred_cap,
			st->scope_ndeferred + 1, sizeof(*d));

		if (!d) {
			close(pfd);
			return -ENOMEM;
		}
		st->scope_deferred = d;
		d[st->scope_ndeferred].prog = prog;
		d[st->scope_ndeferred].cookie = cookie;
		d[st->scope_ndeferred].pfd = pfd;
		st->scope_ndeferred++;
		link = NULL;
		goto made;
	}
	link = bpf_program__attach_perf_event_opts(prog, pfd, &opts);
	if (!link) {
		err = -errno;
		close(pfd);
		return err;
	}
made:
	evs[st->scope_nevs].key = key;
	evs[st->scope_nevs].id = id;
	evs[st->scope_nevs].prog = !!(cookie & MT_CK_PROG);
	st->scope_nevs++;
	*out = link;
	return 0;
}

/* Closes the deferred events from the from-th on (those before have
 * become links, which own their fds) and forgets them all. */
static void drop_deferred(struct ebpf_state *st, size_t from)
{
	for (size_t i = from; i < st->scope_ndeferred; i++) {
		close(st->scope_deferred[i].pfd);
	}
	free(st->scope_deferred);
	st->scope_deferred = NULL;
	st->scope_ndeferred = st->scope_deferred_cap = 0;
	st->scope_defer = 0;
}

void ebpf_scope_drop_deferred(struct ebpf_state *st)
{
	drop_deferred(st, 0);
}

/*
 * The events made while the BPF object was not loaded (scope_defer: made
 * and held beside the load, ebpf_preattach_start()) get their programs.
 * An event without its program would hide every probe added to it later:
 * an error here fails the run (the events not attached are closed). add:
 * keeps a link (attach.c's list).
 */
int ebpf_scope_undefer(struct ebpf_state *st,
		       int (*add)(struct ebpf_state *, struct bpf_link *))
{
	size_t i;
	int err = 0;

	st->scope_defer = 0;
	for (i = 0; i < st->scope_ndeferred && !err; i++) {
		struct ebpf_scope_deferred *d = &st->scope_deferred[i];
		LIBBPF_OPTS(bpf_perf_event_opts, opts,
			    .bpf_cookie = d->cookie);
		struct bpf_link *link;

		link = bpf_program__attach_perf_event_opts(d->prog, d->pfd,
							   &opts);
		if (!link) {
			err = -errno;
			ebpf_log(st, MT_LOG_ERROR,
				 "cannot attach the program of a uprobe event made ahead: %s",
				 strerror(-err));
			break; /* this one's fd is not the link's: closed below */
		}
		err = add(st, link); /* the link has the fd now */
		if (err) {
			bpf_link__destroy(link);
		}
	}
	drop_deferred(st, i);
	return err;
}

/* done: the sorted tids given events in this covering */
struct cover_run {
	pid_t *done;
	size_t ndone, cap;
	size_t from, to; /* the events: scope_evs[from, to) */
	int opened;
};

static size_t done_at(const struct cover_run *r, pid_t tid)
{
	size_t lo = 0, hi = r->ndone;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (r->done[mid] < tid) {
			lo = mid + 1;
		} else {
			hi = mid;
		}
	}
	return lo;
}

/* Room for n more filter fds. */
static int fds_reserve(struct ebpf_state *st, size_t n)
{
	int *fds = mt_array_grow(st->scope_fds, &st->scope_fds_cap,
				 st->scope_nfds + n, sizeof(*fds));
	struct ebpf_scope_tag *tags;

	if (fds) {
		st->scope_fds = fds;
	}
	tags = mt_array_grow(st->scope_fd_tag, &st->scope_tgids_cap,
			     st->scope_nfds + n, sizeof(*tags));
	if (tags) {
		st->scope_fd_tag = tags;
	}
	return fds && tags ? 0 : -ENOMEM;
}

/* The filter events [from, to) on thread tid of process tgid; prog_only:
 * only those of program files (a process its interposer records); have:
 * those it has already (NULL: none); at_exec: a thread held in the exec
 * gate, whose breakpoints the exec puts in place; group: theirs (0: a new
 * one, st->scope_group). */
static int open_filters(struct ebpf_state *st, size_t from, size_t to,
			pid_t tid, pid_t tgid, int prog_only,
			const unsigned char *have, int at_exec, uint32_t group)
{
	int inherit = at_exec ? 2 : 1;
	uint64_t now = ebpf_now_ns();
	size_t i;

	if (!group) {
		group = ++st->scope_group;
	}

	if (fds_reserve(st, to - from)) {
		return -ENOMEM;
	}
	for (i = from; i < to; i++) {
		int fd;

		if ((prog_only && !st->scope_evs[i].prog) || (have && have[i])) {
			continue;
		}
		fd = perf_open(st->scope_evs[i].id, tid, inherit);
		if (fd < 0) {
			if (errno == ESRCH) {
				return 0; /* gone: nothing of it to trace */
			}
			return -errno;
		}
		st->scope_fd_tag[st->scope_nfds].tgid = tgid;
		st->scope_fd_tag[st->scope_nfds].tid = tid;
		st->scope_fd_tag[st->scope_nfds].ev = (uint32_t)i;
		st->scope_fd_tag[st->scope_nfds].prog = st->scope_evs[i].prog;
		st->scope_fd_tag[st->scope_nfds].opened = now;
		st->scope_fd_tag[st->scope_nfds].group = group;
		st->scope_fds[st->scope_nfds++] = fd;
		st->scope_opens++;
	}
	return 0;
}

static int cover_thread(struct ebpf_state *st, struct cover_run *r, pid_t tid,
			pid_t tgid, int prog_only)
{
	int cfd = bpf_map__fd(st->skel->maps.carrier), err;
	uint32_t key = (uint32_t)tid, group = 0;
	size_t at = done_at(r, tid);
	uint64_t v;
	pid_t *p;

	if (at < r->ndone && r->done[at] == tid) {
		return 0;
	}
	p = mt_array_grow(r->done, &r->cap, r->ndone + 1, sizeof(*p));
	if (!p) {
		return -ENOMEM;
	}
	r->done = p;
	memmove(p + at + 1, p + at, (r->ndone - at) * sizeof(*p));
	p[at] = tid;
	r->ndone++;
	r->opened++;
	/* a thread that carried every event there was gets the new ones in
	 * that group, and carries them all (exec_carried()) */
	if (st->handover && !prog_only &&
	    !bpf_map_lookup_elem(cfd, &key, &v) && (uint32_t)v == r->from) {
		group = (uint32_t)(v >> 32);
	}
	err = open_filters(st, r->from, r->to, tid, tgid, prog_only, NULL, 0,
			   group);
	if (!err && group) {
		v = (uint64_t)group << 32 | r->to;
		bpf_map_update_elem(cfd, &key, &v, BPF_ANY);
	}
	return err;
}

/* every thread of every tracked process, once; with handover, not those
 * whose interposer records them */
static int cover_pass(struct ebpf_state *st, struct cover_run *r)
{
	int tfd = bpf_map__fd(st->skel->maps.tracked);
	uint32_t key, next, *prev = NULL, val;
	int err = 0, prog_only;

	while (!err && !bpf_map_get_next_key(tfd, prev, &next)) {
		char path[64];
		struct dirent *de;
		DIR *d;

		key = next;
		prev = &key;
		/* early.c's guesses too: one taken back gets every event
		 * there is at that moment */
		prog_only = st->handover &&
			    (bpf_map_lookup_elem(tfd, &key, &val) ||
			     (val & MT_TR_INTERPOSED) ||
			     ebpf_early_has(st, (pid_t)key));
		snprintf(path, sizeof(path), "/proc/%u/task", next);
		d = opendir(path);
		if (!d) {
			continue; /* gone */
		}
		while (!err && (de = readdir(d))) {
			char *end;
			long tid = strtol(de->d_name, &end, 10);

			if (de->d_name[0] < '1' || de->d_name[0] > '9' || *end) {
				continue;
			}
			err = cover_thread(st, r, (pid_t)tid, (pid_t)key,
					   prog_only);
		}
		closedir(d);
	}
	return err;
}

/*
 * The events made since `from` (ebpf_scope_nevs() before the file's
 * attach) trap in every thread of the tree from now on, and in every
 * thread it makes. The caller holds the process whose mapping needs them.
 */
int ebpf_scope_cover(struct ebpf_state *st, size_t from)
{
	struct cover_run r = { .from = from, .to = st->scope_nevs };
	uint64_t t0 = ebpf_now_ns();
	long long inflight;
	int err = 0, waits = 0;

	/* scope_defer: before the load there is no tree to cover */
	if (!st->scope_ok || st->scope_defer || r.from >= r.to) {
		return 0;
	}
	for (;;) {
		inflight = __atomic_load_n(&st->skel->bss->clones_inflight,
					   __ATOMIC_ACQUIRE);
		r.opened = 0;
		err = cover_pass(st, &r);
		st->scope_passes++;
		if (err || (!r.opened && inflight <= 0)) {
			break;
		}
		if (inflight > 0) {
			if (ebpf_now_ns() - t0 > SCOPE_COVER_MAX_NS) {
				ebpf_log(st, MT_LOG_WARN,
					 "scope: clones still in flight after %.1f s; a thread made by one may miss calls of a file attached now",
					 (double)(ebpf_now_ns() - t0) / 1e9);
				break;
			}
			waits++;
			usleep(50);
		}
	}
	if (err) {
		ebpf_log(st, MT_LOG_WARN,
			 "scope: cannot open the uprobes' perf events for the tree: %s; calls of a file attached now may be missed",
			 strerror(-err));
	}
	st->scope_ns += ebpf_now_ns() - t0;
	st->scope_waits += (uint64_t)waits;
	free(r.done);
	return err;
}

/*
 * Handover: what thread tid carries into its exec. Under the eBPF source
 * nothing is opened at an exec but for set-id files: the copies the
 * thread inherited are the filter, across the exec. Under auto each exec
 * opened a set of its own, so that a hello could close it, and a
 * Chromium process exec'd by the browser (the zygote, /proc/self/exe) had
 * two, its own and the browser's copies, which no hello of its could
 * close. Each trap walks the trace event's perf events for one of the
 * current process's (__uprobe_perf_filter()), each context switch and
 * clone goes through the thread's: the browser's tree spent ~40% more
 * system time than under the eBPF source, and auto was 1.1-1.17x of it.
 *
 * So the events of a group (open_filters()) are every event there was,
 * opened at an exec on the exec'ing thread, and the new ones a covering
 * adds to each thread carrying the group (cover_thread()). BPF's
 * `carrier` says, per thread, the group it carries and how many events
 * that is: written here, copied to each thread it makes (copies of the
 * events are made then too), kept across an exec. A thread carrying as
 * many as there are, in a group none of which a hello closed, in a
 * process whose image is not the interposer's (then its hello may close
 * the group), keeps them at its exec. A hello closes none that another
 * process has copies of (ebpf_scope_release(), BPF's `forked`), so
 * neither the group's process's nor any other's hello takes them away
 * later. attach_lock held.
 */
static int exec_carried(struct ebpf_state *st, pid_t tid, pid_t tgid)
{
	int cfd = bpf_map__fd(st->skel->maps.carrier);
	int tfd = bpf_map__fd(st->skel->maps.tracked);
	uint32_t key = (uint32_t)tid, val, group;
	uint64_t v;

	if (st->scope_carry_off || bpf_map_lookup_elem(cfd, &key, &v) ||
	    (uint32_t)v != st->scope_nevs) {
		return 0;
	}
	/* a process of the tree (its threads' values were written at their
	 * clones, not left by an earlier thread with the id), its image not
	 * the interposer's (early.c's guesses get the new events of program
	 * files only: they carry fewer than there are after a covering) */
	key = (uint32_t)tgid;
	if (bpf_map_lookup_elem(tfd, &key, &val) ||
	    (val & MT_TR_INTERPOSED)) {
		return 0;
	}
	group = (uint32_t)(v >> 32);
	for (size_t i = 0; i < st->scope_ndead; i++) {
		if (st->scope_dead[i] == group) {
			return 0;
		}
	}
	return 1;
}

/* The set just opened on thread tid (every event) is what it carries */
static void carry_set(struct ebpf_state *st, pid_t tid)
{
	uint32_t key = (uint32_t)tid;
	uint64_t v = (uint64_t)st->scope_group << 32 | st->scope_nevs;

	bpf_map_update_elem(bpf_map__fd(st->skel->maps.carrier), &key, &v,
			    BPF_ANY);
}

/* Thread tid's exec ends the events it inherited (gate.c:
 * exec_drops_inherited()): what it makes carries none of them. */
void ebpf_scope_carry_lost(struct ebpf_state *st, pid_t tid)
{
	uint32_t key = (uint32_t)tid;

	if (st->handover && st->scope_ok) {
		bpf_map_delete_elem(bpf_map__fd(st->skel->maps.carrier), &key);
	}
}

/*
 * Thread tid of process tgid waits in the exec gate to exec: with
 * handover (--source auto), whatever it runs, its allocator calls are ours
 * until its interposer says hello (if it has one); else it execs a program
 * that the kernel takes the inherited events from (gate.c). Either way
 * every event traps in it from its first instruction. The events are opened on the thread, which is the
 * new image's only one, and inherited by what it makes. An exec that
 * fails (execvp trying its PATH) leaves the old image trapping: until its
 * next exec if it had an interposer (BPF drops those calls), for good if
 * it had none. A thread gets each event once; one covered through a copy
 * it inherited gets its own too, which changes nothing. how:
 * EBPF_COVER_EXEC every event, EBPF_COVER_PROG only those of program
 * files (its interposer records it from its first call: early.c), both
 * at the exec; EBPF_COVER_NOW every event it lacks, on a thread that
 * execed already (early.c's guess was wrong), which walks every process
 * mapping the files. The caller holds attach_lock.
 */
int ebpf_scope_cover_exec(struct ebpf_state *st, pid_t tid, pid_t tgid,
			  int how)
{
	unsigned char *have;
	uint64_t t0;
	int err;

	if (!st->scope_ok || !st->scope_nevs || tgid <= 0) {
		return 0;
	}
	t0 = ebpf_now_ns();
	if (st->handover && how == EBPF_COVER_EXEC &&
	    exec_carried(st, tid, tgid)) {
		st->scope_exec_carried++;
		st->scope_exec_covers++;
		st->scope_ns += ebpf_now_ns() - t0;
		return 0;
	}
	have = calloc(st->scope_nevs, 1);
	if (!have) {
		return -ENOMEM;
	}
	if (how == EBPF_COVER_NOW) {
		/* the image's own, opened at its exec: those of program
		 * files (early.c) */
		for (size_t i = 0; i < st->scope_nevs; i++) {
			have[i] = (unsigned char)st->scope_evs[i].prog;
		}
	} else if (!st->handover) {
		/* what this thread has of its own already: execvp tries
		 * each directory of PATH, an exec each. Not with handover,
		 * where an exec of a path that does not exist gets none
		 * (gate.c), and what the thread has may be its old image's,
		 * which a hello not read yet closes (ebpf_scope_release()) */
		for (size_t i = 0; i < st->scope_nfds; i++) {
			if (st->scope_fd_tag[i].tgid == tgid &&
			    st->scope_fd_tag[i].tid == tid) {
				have[st->scope_fd_tag[i].ev] = 1;
			}
		}
	}
	err = open_filters(st, 0, st->scope_nevs, tid, tgid,
			   how == EBPF_COVER_PROG, have,
			   how != EBPF_COVER_NOW, 0);
	if (!err && st->handover && how == EBPF_COVER_EXEC) {
		carry_set(st, tid);
	}
	free(have);
	st->scope_exec_covers++;
	st->scope_ns += ebpf_now_ns() - t0;
	if (err) {
		ebpf_log(st, MT_LOG_WARN,
			 "scope: cannot open the uprobes' perf events for process %d at its exec: %s; calls made before its interposer starts may be missed",
			 (int)tgid, strerror(-err));
	}
	return err;
}

/*
 * Closing a process's filter events is what takes the breakpoints out of
 * its memory, and each close walks every process on the machine that
 * maps the probed file (uprobe_apply(): ~0.7 ms each here, 7 ms for a
 * process's ten; more on a machine with more processes). Done on the
 * host's thread it held up every read for that long at each hello (70 ms
 * of a gcc compile's 10 processes), while the rings filled. So a thread
 * of its own closes them; the hello's process traps until then, its
 * calls dropped by BPF as before.
 */
static void *release_main(void *arg)
{
	struct ebpf_state *st = arg;

	pthread_mutex_lock(&st->rel_lock);
	for (;;) {
		struct ebpf_scope_rel *batch;
		size_t n;
		uint64_t t0, now;

		while (!st->rel_n && !st->rel_stop) {
			pthread_cond_wait(&st->rel_cond, &st->rel_lock);
		}
		if (!st->rel_n) {
			break; /* stopping, nothing left */
		}
		batch = st->rel;
		n = st->rel_n;
		st->rel = NULL;
		st->rel_n = st->rel_cap = 0;
		pthread_mutex_unlock(&st->rel_lock);
		t0 = ebpf_now_ns();
		for (size_t i = 0; i < n; i++) {
			close(batch[i].fd);
		}
		now = ebpf_now_ns();
		pthread_mutex_lock(&st->rel_lock);
		st->scope_release_ns += now - t0;
		/* a hello's fds are queued together: it waited until the
		 * batch's closes were done */
		for (size_t i = 0; i < n; i++) {
			uint64_t ts = batch[i].hello_ts;
			uint64_t lat = now > ts ? now - ts : 0;

			if (i + 1 < n &&
			    batch[i + 1].hello_ts == batch[i].hello_ts) {
				continue;
			}
			st->hello_lat_ns += lat;
			st->hello_lat_n++;
			if (lat > st->hello_lat_max) {
				st->hello_lat_max = lat;
			}
		}
		free(batch);
	}
	pthread_mutex_unlock(&st->rel_lock);
	return NULL;
}

/* Closes what is queued, and ends the thread. */
static void release_stop(struct ebpf_state *st)
{
	if (!st->rel_running) {
		return;
	}
	pthread_mutex_lock(&st->rel_lock);
	st->rel_stop = 1;
	pthread_cond_signal(&st->rel_cond);
	pthread_mutex_unlock(&st->rel_lock);
	pthread_join(st->rel_thread, NULL);
	st->rel_running = 0;
	pthread_cond_destroy(&st->rel_cond);
	pthread_mutex_destroy(&st->rel_lock);
}

/* At the first hello; without the thread the closes are made here. */
static void release_start(struct ebpf_state *st)
{
	if (st->rel_running || st->rel_failed) {
		return;
	}
	pthread_mutex_init(&st->rel_lock, NULL);
	pthread_cond_init(&st->rel_cond, NULL);
	st->rel_running =
		!pthread_create(&st->rel_thread, NULL, release_main, st);
	if (!st->rel_running) {
		st->rel_failed = 1;
		pthread_cond_destroy(&st->rel_cond);
		pthread_mutex_destroy(&st->rel_lock);
	}
}

/* Queued for release_main(), rel_lock held: 0, or -1 when it cannot be
 * (the caller closes it). */
static int release_queue(struct ebpf_state *st, int fd, uint64_t hello_ts)
{
	struct ebpf_scope_rel *r;

	if (!st->rel_running) {
		return -1;
	}
	r = mt_array_grow(st->rel, &st->rel_cap, st->rel_n + 1, sizeof(*r));
	if (!r) {
		return -1;
	}
	st->rel = r;
	st->rel[st->rel_n].fd = fd;
	st->rel[st->rel_n++].hello_ts = hello_ts;
	return 0;
}

/* A group some of whose events a hello closes: no thread carries it
 * whole (exec_carried()). attach_lock held. */
static void scope_dead_add(struct ebpf_state *st, uint32_t group)
{
	uint32_t *d;

	if (st->scope_ndead && st->scope_dead[st->scope_ndead - 1] == group) {
		return;
	}
	d = mt_array_grow(st->scope_dead, &st->scope_dead_cap,
			  st->scope_ndead + 1, sizeof(*d));
	if (!d) {
		/* no room to say so: nothing is carried any more */
		st->scope_carry_off = 1;
		return;
	}
	st->scope_dead = d;
	st->scope_dead[st->scope_ndead++] = group;
}

/* Handover: process tgid's interposer said hello (its trap at
 * hello_ts): its allocator calls are its own to record, nothing of ours
 * traps in it any more once the thread above has closed them, but the
 * functions of program files, which no interposer sees called, and the
 * events of an earlier image that it forked a child of (the child has
 * copies of them, which closing would end: a process recorded by
 * uprobes that forks, then execs a program its interposer records). */
void ebpf_scope_release(struct ebpf_state *st, pid_t tgid, uint64_t hello_ts)
{
	uint32_t key = (uint32_t)tgid;
	uint64_t forked_ts = 0;
	size_t i, n = 0;
	int queued = 0;

	if (st->skel->bss->forked_lost) {
		/* a fork BPF could not note: copies anywhere */
		return;
	}
	bpf_map_lookup_elem(bpf_map__fd(st->skel->maps.forked), &key,
			    &forked_ts);
	release_start(st);
	pthread_mutex_lock(&st->attach_lock);
	if (st->rel_running) {
		pthread_mutex_lock(&st->rel_lock);
	}
	for (i = 0; i < st->scope_nfds; i++) {
		/* the functions of program files stay ours (MT_CK_PROG);
		 * so do events opened after the trap: the hello is read
		 * late, and its process may have exec'd meanwhile, a new
		 * image with events of its own (an env -i child of an
		 * interposed env lost every call to this); and those
		 * opened before the process last forked a child of an
		 * image not the interposer's, which has copies of them */
		if (st->scope_fd_tag[i].tgid == tgid &&
		    !st->scope_fd_tag[i].prog &&
		    st->scope_fd_tag[i].opened < hello_ts &&
		    st->scope_fd_tag[i].opened >= forked_ts) {
			scope_dead_add(st, st->scope_fd_tag[i].group);
			if (release_queue(st, st->scope_fds[i], hello_ts)) {
				close(st->scope_fds[i]);
			} else {
				queued = 1;
			}
			continue;
		}
		st->scope_fds[n] = st->scope_fds[i];
		st->scope_fd_tag[n++] = st->scope_fd_tag[i];
	}
	if (n != st->scope_nfds) {
		st->scope_releases++;
	}
	st->scope_nfds = n;
	if (queued) {
		pthread_cond_signal(&st->rel_cond);
	}
	if (st->rel_running) {
		pthread_mutex_unlock(&st->rel_lock);
	}
	pthread_mutex_unlock(&st->attach_lock);
}

/* Handover: process tgid ended. Its events stay open (a child it forked
 * has copies of them that must go on trapping) but name nobody: a new
 * process with its pid gets its own, and its own `forked`. */
void ebpf_scope_gone(struct ebpf_state *st, pid_t tgid)
{
	uint32_t key = (uint32_t)tgid;

	if (st->scope_ok) {
		bpf_map_delete_elem(bpf_map__fd(st->skel->maps.forked), &key);
	}
	pthread_mutex_lock(&st->attach_lock);
	for (size_t i = 0; i < st->scope_nfds; i++) {
		if (st->scope_fd_tag[i].tgid == tgid) {
			st->scope_fd_tag[i].tgid = 0;
		}
	}
	pthread_mutex_unlock(&st->attach_lock);
}

size_t ebpf_scope_nevs(const struct ebpf_state *st)
{
	return st->scope_nevs;
}

void ebpf_scope_done(struct ebpf_state *st)
{
	release_stop(st);
	if (st->scope_uev_fd >= 0) {
		close(st->scope_uev_fd);
		st->scope_uev_fd = -1;
	}
	if (st->scope_ok && st->scope_nevs) {
		ebpf_log(st, MT_LOG_DEBUG,
			 "scope: %zu uprobe events (%llu probes added to one made before), %llu perf events opened for the tree's threads in %llu passes (%llu waits for clones), %.1f ms",
			 st->scope_nevs,
			 (unsigned long long)st->scope_appends,
			 (unsigned long long)st->scope_opens,
			 (unsigned long long)st->scope_passes,
			 (unsigned long long)st->scope_waits,
			 (double)st->scope_ns / 1e6);
	}
	if (st->handover) {
		ebpf_log(st, MT_LOG_DEBUG,
			 "scope: %llu execs covered (%llu by the events they carried), %llu hellos, %llu processes released in %.1f ms (beside the reads); from a hello's trap to its last close %.2f ms on average, %.2f at most",
			 (unsigned long long)st->scope_exec_covers,
			 (unsigned long long)st->scope_exec_carried,
			 (unsigned long long)st->hellos,
			 (unsigned long long)st->scope_releases,
			 (double)st->scope_release_ns / 1e6,
			 st->hello_lat_n ? (double)st->hello_lat_ns / 1e6 /
						   (double)st->hello_lat_n :
					   0.0,
			 (double)st->hello_lat_max / 1e6);
		ebpf_log(st, MT_LOG_DEBUG,
			 "early: %llu execs guessed the interposer's, %llu seen so, %llu of them asked; %llu handed over at their hello after all; %llu ended before asking",
			 (unsigned long long)st->early_guessed,
			 (unsigned long long)st->early_confirmed,
			 (unsigned long long)st->early_asked,
			 (unsigned long long)st->early_wrong,
			 (unsigned long long)st->early_unasked);
	}
	free(st->early);
	st->early = NULL;
	st->nearly = 0;
	free(st->scope_dead);
	st->scope_dead = NULL;
	st->scope_ndead = st->scope_dead_cap = 0;
	for (size_t i = 0; i < st->scope_nfds; i++) {
		close(st->scope_fds[i]);
	}
	st->scope_nfds = 0;
	free(st->scope_fds);
	st->scope_fds = NULL;
	free(st->scope_fd_tag);
	st->scope_fd_tag = NULL;
	free(st->scope_evs);
	st->scope_evs = NULL;
	st->scope_nevs = 0;
}
