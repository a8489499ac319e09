/* SPDX-License-Identifier: MIT */
/*
 * plugins/ebpf/freeze.c - hold a process whose events fill the ring
 * without a stop anybody can see.
 *
 * When the event (or stack) ring is above its high watermark, BPF must
 * hold the process that writes, or events are lost. SIGSTOP does it at
 * once, but it is a job-control stop: the parent's waitpid(WUNTRACED) and
 * SIGCHLD see it, a shell in job-control mode says "Stopped", a debugger
 * stops. The cgroup v2 freezer holds a process in a sleep nobody sees
 * (`S` in /proc/PID/stat, do_freezer_trap() in the kernel), but only user
 * space can ask for it, and it lands at the process's next return to user
 * space. So BPF asks (a record on the `freeze_req` ring, once per hold:
 * the `freezing` map) and goes on; this file's thread, which never waits
 * on the pipeline, moves the process into a frozen cgroup made for it; if
 * the ring still fills past the stop watermark (halfway from the high one
 * to the end) before the freeze lands, BPF stops the process with SIGSTOP
 * as before: no loss comes first.
 *
 * The frozen cgroup is a child of the process's own, named
 * `memtrack-hold.<memtrack's pid>`: one migration in, one back to its
 * parent out, and no controller of the process's changes (a child without
 * controllers of its own). The same thread thaws, once both rings are
 * below their low watermarks (it looks every millisecond while anything
 * is frozen), moving every process of the hold cgroups to their parents:
 * a child forked between a move and its freeze is born there, frozen.
 * The cgroups are kept to the end of the run. A process it cannot move (no
 * writable cgroup v2 hierarchy, a container's read-only one, a cgroup
 * with controllers that forbid a child) is marked MT_FREEZE_CANNOT: BPF
 * then stops it at the high watermark, as without a freezer.
 *
 * memtrack killed while a process is frozen: the watchdog finds the
 * cgroups by their name (ebpf_thaw_orphans()) and puts their processes
 * back.
 *
 * While frozen, /proc/PID/cgroup of the process names the hold cgroup:
 * that is what another process could see; the process itself cannot look.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/stat.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "memtrack.h"
#include "memtrack.skel.h"
#include "ebpf.h"
#include "array.h"

#define HOLD_PREFIX "memtrack-hold."
/* how often the thread looks at the rings while something is frozen */
#define THAW_POLL_MS 1
#define NOTES_MAX 1024


struct fz_note {
	int resume;
	pid_t pid;
	uint64_t ts;
};

struct ebpf_freezer {
	char root[PATH_MAX]; /* where cgroup2 is mounted */
	char name[32];	     /* HOLD_PREFIX + our pid */
	struct ring_buffer *rb;
	int stop_fd;
	int running;
	pthread_t thread;
	struct ebpf_state *st;
	int freezing_fd;

	/* the thread's own */
	pid_t *frozen; /* frozen on request (their children may be too) */
	size_t nfrozen, frozen_cap;
	char **dirs;
	size_t ndirs, dirs_cap;
	int warned;

	/* shared with the poller */
	pthread_mutex_t lock;
	struct fz_note notes[NOTES_MAX];
	size_t nnotes;
	uint64_t holds, ends, failed, hold_ns;
	uint32_t now_frozen;
};

/* Write s to path: 0 or -errno. */
static int write_file(const char *path, const char *s)
{
	size_t len = strlen(s);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;
	int err = 0;

	if (fd < 0) {
		return -errno;
	}
	n = write(fd, s, len);
	if (n != (ssize_t)len) {
		err = n < 0 ? -errno : -EIO;
	}
	close(fd);
	return err;
}

/* Write s to the file name of cgroup directory dir: 0 or -errno. */
static int write_cg(const char *dir, const char *name, const char *s)
{
	char path[PATH_MAX];

	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >=
	    (int)sizeof(path)) {
		return -ENAMETOOLONG;
	}
	return write_file(path, s);
}

static int write_pid(const char *dir, pid_t pid)
{
	char num[16];

	snprintf(num, sizeof(num), "%d", (int)pid);
	return write_cg(dir, "cgroup.procs", num);
}

/* The cgroup v2 mount of our namespace's root, writable: 0 and its path,
 * or -1. */
static int find_cgroup2(char *out, size_t size)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096];
	int ret = -1;

	if (!f) {
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		char root[PATH_MAX], mnt[PATH_MAX], opts[256], *sep;
		char fstype[64];

		/* id parent maj:min root mountpoint options ... - fstype */
		if (sscanf(line, "%*s %*s %*s %4095s %4095s %255s", root, mnt,
			   opts) != 3) {
			continue;
		}
		sep = strstr(line, " - ");
		if (!sep || sscanf(sep + 3, "%63s", fstype) != 1 ||
		    strcmp(fstype, "cgroup2") || strcmp(root, "/") ||
		    strchr(mnt, '\\') || !strncmp(opts, "ro", 2) ||
		    strlen(mnt) >= size || access(mnt, W_OK)) {
			continue;
		}
		strcpy(out, mnt);
		ret = 0;
		break;
	}
	fclose(f);
	return ret;
}

void ebpf_freeze_init(struct ebpf_state *st)
{
	struct ebpf_freezer *fz;

	if (st->no_freeze) {
		return;
	}
	fz = calloc(1, sizeof(*fz));
	if (!fz) {
		return;
	}
	if (find_cgroup2(fz->root, sizeof(fz->root))) {
		ebpf_log(st, MT_LOG_INFO,
			 "no writable cgroup v2 hierarchy: a full ring stops processes with SIGSTOP, which their parent can see");
		free(fz);
		return;
	}
	snprintf(fz->name, sizeof(fz->name), HOLD_PREFIX "%d", (int)getpid());
	fz->stop_fd = -1;
	fz->freezing_fd = -1;
	fz->st = st;
	pthread_mutex_init(&fz->lock, NULL);
	st->fz = fz;
}

const char *ebpf_freeze_root(const struct ebpf_state *st)
{
	return st->fz ? st->fz->root : NULL;
}

static void add_note(struct ebpf_freezer *fz, int resume, pid_t pid)
{
	pthread_mutex_lock(&fz->lock);
	if (fz->nnotes < NOTES_MAX) {
		fz->notes[fz->nnotes].resume = resume;
		fz->notes[fz->nnotes].pid = pid;
		fz->notes[fz->nnotes].ts = ebpf_now_ns();
		fz->nnotes++;
	}
	pthread_mutex_unlock(&fz->lock);
}

/* The directory of pid's cgroup (v2) into out: 0 or -errno. */
static int cgroup_of(struct ebpf_freezer *fz, pid_t pid, char *out,
		     size_t size)
{
	char path[64], line[PATH_MAX + 8];
	FILE *f;
	int err = -ENOENT;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	f = fopen(path, "re");
	if (!f) {
		return -errno;
	}
	while (fgets(line, sizeof(line), f)) {
		size_t n = strlen(line);

		if (strncmp(line, "0::/", 4)) {
			continue;
		}
		if (n && line[n - 1] == '\n') {
			line[--n] = '\0';
		}
		/* a process already in a hold cgroup, or one outside our
		 * namespace's view ("0::/../x"), is not ours to move */
		if (strstr(line, "/" HOLD_PREFIX) || strstr(line, "/..")) {
			err = -EBUSY;
			break;
		}
		err = snprintf(out, size, "%s%s", fz->root,
			       line[4] ? line + 3 : "") >= (int)size ?
			      -ENAMETOOLONG :
			      0;
		break;
	}
	fclose(f);
	return err;
}

/*
 * Is pid in the cgroup at dir? /proc/PID/cgroup names the cgroup relative
 * to the root of our cgroup namespace, and the mount we found may be of
 * another root (a container's namespace over the host's mount): then the
 * directory we computed is not the process's, and moving it there and
 * "back" would take it out of its own cgroup for good. 1, 0, or -errno.
 */
static int pid_in(const char *dir, pid_t pid)
{
	char path[PATH_MAX], line[32];
	FILE *f;
	int found = 0;

	if (snprintf(path, sizeof(path), "%s/cgroup.procs", dir) >=
	    (int)sizeof(path)) {
		return -ENAMETOOLONG;
	}
	f = fopen(path, "re");
	if (!f) {
		return -errno;
	}
	while (!found && fgets(line, sizeof(line), f)) {
		found = strtol(line, NULL, 10) == (long)pid;
	}
	fclose(f);
	return found;
}

static void mark(struct ebpf_freezer *fz, pid_t pid, uint32_t state)
{
	uint32_t key = (uint32_t)pid;

	if (state) {
		bpf_map_update_elem(fz->freezing_fd, &key, &state, BPF_ANY);
	} else {
		bpf_map_delete_elem(fz->freezing_fd, &key);
	}
}

/* The hold cgroups made: kept until the end, since the first migration
 * into a new one costs a grace period (13 ms here, against 30-100 us). */
static int known_dir(struct ebpf_freezer *fz, const char *dir)
{
	size_t i;

	for (i = 0; i < fz->ndirs; i++) {
		if (!strcmp(fz->dirs[i], dir)) {
			return 1;
		}
	}
	return 0;
}

static int keep_dir(struct ebpf_freezer *fz, const char *dir)
{
	char **d = mt_array_grow(fz->dirs, &fz->dirs_cap, fz->ndirs + 1,
				 sizeof(*fz->dirs));

	if (!d) {
		return -ENOMEM;
	}
	fz->dirs = d;
	d[fz->ndirs] = strdup(dir);
	if (!d[fz->ndirs]) {
		return -ENOMEM;
	}
	fz->ndirs++;
	return 0;
}

static void freeze_one(struct ebpf_freezer *fz, const struct mt_freeze_req *r)
{
	struct ebpf_state *st = fz->st;
	pid_t pid = (pid_t)r->tgid;
	char origin[PATH_MAX] = "", hold[PATH_MAX];
	pid_t *f = NULL;
	int err, made = 0, kept = 0;

	if (ebpf_rings_below_low(st)) {
		/* read down meanwhile: no hold needed */
		mark(fz, pid, 0);
		return;
	}
	err = cgroup_of(fz, pid, origin, sizeof(origin));
	if (err == -ENOENT && kill(pid, 0) && errno == ESRCH) {
		return; /* gone */
	}
	if (!err) {
		err = pid_in(origin, pid);
		err = err == 1 ? 0 : err == 0 ? -EXDEV : err;
	}
	if (!err && snprintf(hold, sizeof(hold), "%s/%s", origin, fz->name) >=
			    (int)sizeof(hold)) {
		err = -ENAMETOOLONG;
	}
	if (!err && !known_dir(fz, hold)) {
		/* one left by an earlier memtrack of our pid is ours too:
		 * every hold cgroup we use is swept at each thaw */
		if (mkdir(hold, 0700) == 0) {
			made = 1;
		} else if (errno != EEXIST) {
			err = -errno;
		}
		if (!err) {
			err = keep_dir(fz, hold);
			kept = !err;
		}
	}
	if (!err) {
		err = write_cg(hold, "cgroup.freeze", "1");
	}
	if (!err) {
		f = mt_array_grow(fz->frozen, &fz->frozen_cap, fz->nfrozen + 1,
				  sizeof(*fz->frozen));
		if (f) {
			fz->frozen = f;
		} else {
			err = -ENOMEM;
		}
	}
	if (!err) {
		err = write_pid(hold, pid);
	}
	if (err) {
		if (kept) {
			free(fz->dirs[--fz->ndirs]);
		}
		if (made) {
			rmdir(hold);
		}
		if (err == -ESRCH) {
			return; /* gone */
		}
		mark(fz, pid, MT_FREEZE_CANNOT);
		pthread_mutex_lock(&fz->lock);
		fz->failed++;
		pthread_mutex_unlock(&fz->lock);
		if (!fz->warned) {
			fz->warned = 1;
			ebpf_log(st, MT_LOG_INFO,
				 "cannot freeze process %d (cgroup %s: %s): when the ring is full it is stopped with SIGSTOP, which its parent can see",
				 (int)pid, origin, strerror(-err));
		}
		return;
	}
	fz->frozen[fz->nfrozen++] = pid;
	pthread_mutex_lock(&fz->lock);
	fz->holds++;
	fz->now_frozen = (uint32_t)fz->nfrozen;
	fz->hold_ns += ebpf_now_ns() - r->ts;
	pthread_mutex_unlock(&fz->lock);
	add_note(fz, 0, pid);
}

static int on_request(void *ctx, void *data, size_t len)
{
	if (len >= sizeof(struct mt_freeze_req)) {
		freeze_one(ctx, data);
	}
	return 0;
}

/* Move every process of the hold cgroup at path to its parent, thaw
 * what cannot move, and remove the cgroup if asked. Only system calls:
 * the watchdog runs in a fork. 0, or -1 when a process could not move. */
static int thaw_dir(const char *path, int remove)
{
	char file[PATH_MAX], parent[PATH_MAX], buf[4096];
	ssize_t n;
	int fd, stuck = 0;
	char *slash, *p, *end;

	snprintf(parent, sizeof(parent), "%s", path);
	slash = strrchr(parent, '/');
	if (!slash) {
		return -1;
	}
	*slash = '\0';
	if (snprintf(file, sizeof(file), "%s/cgroup.procs", path) >=
	    (int)sizeof(file)) {
		return -1;
	}
	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		/* a few pids; what does not fit is thawed by cgroup.freeze */
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		buf[n > 0 ? n : 0] = '\0';
		/* whole lines only: a pid cut at the end of the buffer is
		 * another process's */
		for (p = buf; *p; p = end + 1) {
			long pid = strtol(p, &end, 10);

			if (end == p || *end != '\n') {
				break;
			}
			if (pid > 0) {
				int err = write_pid(parent, (pid_t)pid);

				if (err && err != -ESRCH) {
					stuck = 1;
				}
			}
		}
		if (n == (ssize_t)sizeof(buf) - 1) {
			stuck = 1;
		}
	}
	if (stuck) {
		write_cg(path, "cgroup.freeze", "0");
	}
	if (remove) {
		rmdir(path);
	}
	return stuck ? -1 : 0;
}

/*
 * Below the low watermarks: put every frozen process back where it came
 * from. Every process of each hold cgroup, not only those frozen on
 * request: a child forked between the move and the freeze is born in the
 * hold cgroup, frozen too.
 */
static void thaw_all(struct ebpf_freezer *fz)
{
	size_t i;

	/* BPF may ask again from here on: the processes are still frozen,
	 * so they cannot before the move */
	for (i = 0; i < fz->nfrozen; i++) {
		mark(fz, fz->frozen[i], 0);
	}
	for (i = 0; i < fz->ndirs; i++) {
		if (thaw_dir(fz->dirs[i], 0)) {
			/* its cgroup went away or refuses it: thawed in place */
			ebpf_log(fz->st, MT_LOG_WARN,
				 "cannot move a process of %s back to its cgroup: thawed there",
				 fz->dirs[i]);
		}
	}
	for (i = 0; i < fz->nfrozen; i++) {
		add_note(fz, 1, fz->frozen[i]);
	}
	pthread_mutex_lock(&fz->lock);
	fz->ends += fz->nfrozen;
	fz->now_frozen = 0;
	pthread_mutex_unlock(&fz->lock);
	fz->nfrozen = 0;
}

static void *freeze_main(void *arg)
{
	struct ebpf_freezer *fz = arg;
	struct pollfd p[2] = {
		{ .fd = ring_buffer__epoll_fd(fz->rb), .events = POLLIN },
		{ .fd = fz->stop_fd, .events = POLLIN },
	};

	struct sched_param sp = { .sched_priority = 1 };

	/* A request must be served before the ring reaches the stop mark,
	 * while the producers keep every core busy: at the normal priority
	 * this thread woke 2-16 ms late here. It only sleeps and writes a
	 * few files; without the privilege it runs as the others. */
	if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp)) {
		ebpf_log(fz->st, MT_LOG_DEBUG,
			 "freezer: no real-time priority; freezes may come late");
	}
	for (;;) {
		int n = poll(p, 2, fz->nfrozen ? THAW_POLL_MS : -1);

		if (n < 0 && errno != EINTR) {
			break;
		}
		if (p[1].revents) {
			break;
		}
		ring_buffer__consume(fz->rb);
		if (fz->nfrozen && ebpf_rings_below_low(fz->st)) {
			thaw_all(fz);
		}
	}
	thaw_all(fz);
	return NULL;
}

int ebpf_freeze_start(struct ebpf_state *st)
{
	struct ebpf_freezer *fz = st->fz;
	int err;

	if (!fz) {
		return 0;
	}
	fz->freezing_fd = bpf_map__fd(st->skel->maps.freezing);
	fz->rb = ring_buffer__new(bpf_map__fd(st->skel->maps.freeze_req),
				  on_request, fz, NULL);
	if (!fz->rb) {
		return -errno;
	}
	fz->stop_fd = eventfd(0, EFD_CLOEXEC);
	if (fz->stop_fd < 0) {
		return -errno;
	}
	err = pthread_create(&fz->thread, NULL, freeze_main, fz);
	if (err) {
		return -err;
	}
	fz->running = 1;
	return 0;
}

void ebpf_freeze_stop(struct ebpf_state *st)
{
	struct ebpf_freezer *fz = st->fz;
	uint64_t one = 1;

	if (!fz) {
		if (st->stops) {
			ebpf_log(st, MT_LOG_INFO,
				 "full ring: 0 holds by the freezer (none), %llu by SIGSTOP",
				 (unsigned long long)st->stops);
		}
		return;
	}
	if (fz->running) {
		if (write(fz->stop_fd, &one, sizeof(one)) != sizeof(one)) {
			/* the eventfd cannot be full */
		}
		pthread_join(fz->thread, NULL);
		fz->running = 0;
	}
	if (fz->holds || st->stops) {
		ebpf_log(st, MT_LOG_INFO,
			 "full ring: %llu holds by the freezer (%.1f ms from the request to the move), %llu by SIGSTOP; %llu processes could not be frozen",
			 (unsigned long long)fz->holds,
			 fz->holds ? (double)fz->hold_ns / 1e6 /
					     (double)fz->holds :
				     0.0,
			 (unsigned long long)st->stops,
			 (unsigned long long)fz->failed);
	}
	while (fz->ndirs) {
		char *d = fz->dirs[--fz->ndirs];

		/* once more, for a process that came in last, then away */
		thaw_dir(d, 1);
		if (access(d, F_OK) == 0) {
			/* nothing stays frozen, wherever it is */
			write_cg(d, "cgroup.freeze", "0");
			ebpf_log(st, MT_LOG_WARN,
				 "cannot remove cgroup %s: %s (left thawed)", d,
				 strerror(EBUSY));
		}
		free(d);
	}
	free(fz->dirs);
	if (fz->stop_fd >= 0) {
		close(fz->stop_fd);
	}
	ring_buffer__free(fz->rb);
	free(fz->frozen);
	pthread_mutex_destroy(&fz->lock);
	free(fz);
	st->fz = NULL;
}

void ebpf_freeze_notes(struct ebpf_state *st)
{
	struct ebpf_freezer *fz = st->fz;
	struct fz_note notes[NOTES_MAX];
	size_t n, i;

	if (!fz) {
		return;
	}
	pthread_mutex_lock(&fz->lock);
	n = fz->nnotes;
	memcpy(notes, fz->notes, n * sizeof(notes[0]));
	fz->nnotes = 0;
	pthread_mutex_unlock(&fz->lock);
	for (i = 0; i < n; i++) {
		ebpf_note(st, notes[i].resume ? "resume" : "stop", notes[i].pid,
			  notes[i].ts);
	}
}

void ebpf_freeze_counts(struct ebpf_state *st, uint64_t *holds,
			uint64_t *ends, uint32_t *now)
{
	struct ebpf_freezer *fz = st->fz;

	*holds = *ends = 0;
	*now = 0;
	if (!fz) {
		return;
	}
	pthread_mutex_lock(&fz->lock);
	*holds = fz->holds;
	*ends = fz->ends;
	*now = fz->now_frozen;
	pthread_mutex_unlock(&fz->lock);
}

/* ------------------------------------------------------------------ */
/* The watchdog's part                                                 */
/* ------------------------------------------------------------------ */

static char orphan_name[32];

static int orphan_cb(const char *path, const struct stat *sb, int type,
		     struct FTW *ftw)
{
	(void)sb;
	if (type == FTW_DP && !strcmp(path + ftw->base, orphan_name)) {
		thaw_dir(path, 1);
	}
	return 0;
}

void ebpf_thaw_orphans(const char *root, pid_t owner)
{
	if (!root || !*root) {
		return;
	}
	snprintf(orphan_name, sizeof(orphan_name), HOLD_PREFIX "%d",
		 (int)owner);
	nftw(root, orphan_cb, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}
