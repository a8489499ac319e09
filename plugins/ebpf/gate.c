/* SPDX-License-Identifier: MIT */
/*
 * plugins/ebpf/gate.c - attach before an exec or an executable mapping
 * happens, so that BPF need not stop the process after it.
 *
 * A process BPF stops with SIGSTOP is in a job-control stop: its parent's
 * waitpid(WUNTRACED) and SIGCHLD see it, so does a debugger, and a shell
 * in job-control mode says "Stopped" and skips the rest of `cmd && next`.
 * The host gives the held root a seccomp filter (MT_SOURCE_GATES_EXECS,
 * host/spawn.c) that makes every execve, execveat and mmap of a file with
 * PROT_EXEC of the tree wait in the kernel for this thread: a sleep in a
 * system call, which nobody else sees. The thread reads which file the
 * call names (the path in the caller's memory, resolved through
 * /proc/PID/root, cwd or the dirfd; the fd of the mmap), follows `#!` and
 * PT_INTERP the way the kernel will, attaches the uprobes of each file not
 * handled yet and marks it `known`, then lets the call go on. BPF's checks
 * at exec and at mmap then find the file known and stop nobody.
 *
 * Whatever this misses (a file the kernel resolves differently: a symlink
 * absolute in a chroot, overlayfs, binfmt_misc; a process gone while we
 * looked) is unknown to BPF, which stops the process as before: the gate
 * only ever removes stops, never events. Every notification is answered
 * with SECCOMP_USER_NOTIF_FLAG_CONTINUE, failure or not; the program's
 * own call then runs and fails or succeeds as without memtrack.
 *
 * With stacks, the gate also spares the stop BPF made at every exec and
 * executable mmap to record the new mappings: it has the poller record a
 * library mapped at a fixed address before letting the call go on, and
 * tells BPF what it did in the `gated` map (plugins/ebpf/README.md,
 * "Stacks without stops").
 *
 * The filter outlives this thread: the watchdog holds the listener too
 * and answers in its place once memtrack is gone (watchdog.c), until no
 * process has the filter. The id of each notification received is put in
 * a page shared with it first, so that one received by a memtrack that
 * died before answering is answered by the watchdog.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/seccomp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "memtrack.h"
#include "memtrack.skel.h"
#include "ebpf.h"
#include "gate-ask.h"
#include "kernel-dev.h"
#include "proc-path.h"

/* #! interpreters of interpreters the kernel follows (BINPRM_MAX_RECURSION) */
#define GATE_MAX_DEPTH 4

/* path at addr in process pid's memory into buf (NUL-terminated); 0 or
 * -errno. Read a page at a time: the string may end just before an
 * unmapped page. */
static int read_path(pid_t pid, uint64_t addr, char *buf, size_t size)
{
	size_t got = 0;

	while (got < size - 1) {
		size_t room = 4096 - (size_t)((addr + got) & 4095);
		struct iovec local, remote;
		ssize_t n;

		if (room > size - 1 - got) {
			room = size - 1 - got;
		}
		local.iov_base = buf + got;
		local.iov_len = room;
		remote.iov_base = (void *)(uintptr_t)(addr + got);
		remote.iov_len = room;
		n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
		if (n <= 0) {
			return n < 0 ? -errno : -EFAULT;
		}
		if (memchr(buf + got, '\0', (size_t)n)) {
			return 0;
		}
		got += (size_t)n;
	}
	return -ENAMETOOLONG;
}

/* PT_INTERP of the ELF file fd, into buf; 0 or -1 (none). */
int ebpf_elf_interp(int fd, char *buf, size_t size)
{
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	size_t phnum, i;
	int ret = -1;

	if (!elf || elf_kind(elf) != ELF_K_ELF ||
	    elf_getphdrnum(elf, &phnum)) {
		goto end;
	}
	for (i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_INTERP) {
			continue;
		}
		if (ph.p_filesz && ph.p_filesz < size &&
		    pread(fd, buf, ph.p_filesz, (off_t)ph.p_offset) ==
			    (ssize_t)ph.p_filesz &&
		    buf[ph.p_filesz - 1] == '\0') {
			ret = 0;
		}
		break;
	}
end:
	if (elf) {
		elf_end(elf);
	}
	return ret;
}

/* The interpreter a "#!" line of head (n bytes read, room for one more)
 * names, cut in place; NULL if it has none. */
char *ebpf_shebang(char *head, ssize_t n)
{
	char *p, *e;

	if (n < 2 || head[0] != '#' || head[1] != '!') {
		return NULL;
	}
	head[n] = '\0';
	for (p = head + 2; *p == ' ' || *p == '\t'; p++) {
	}
	for (e = p; *e && *e != ' ' && *e != '\t' && *e != '\n'; e++) {
	}
	*e = '\0';
	return *p ? p : NULL;
}

/* Is the file of sb handled already? */
static int file_known(struct ebpf_state *st, const struct stat *sb)
{
	int known;

	pthread_mutex_lock(&st->attach_lock);
	known = ebpf_file_known(st, mt_kernel_dev(major(sb->st_dev),
						  minor(sb->st_dev)),
				sb->st_ino);
	pthread_mutex_unlock(&st->attach_lock);
	return known;
}

/* Is the file open at fd a regular file handled already? Most calls are
 * of those: the answer is all they cost. */
static int known_fd(struct ebpf_state *st, int fd, struct stat *sb)
{
	if (fstat(fd, sb) || !S_ISREG(sb->st_mode)) {
		return 1; /* nothing to attach */
	}
	return file_known(st, sb);
}

/* ------------------------------------------------------------------ */
/* With stacks: execs and mappings recorded while their caller waits    */
/* ------------------------------------------------------------------ */

/* What an exec will run, as BPF will see it at sched_process_exec */
struct gate_image {
	int found;	/* an ELF file */
	int dynamic;	/* with an interpreter, found: idev, iino */
	uint64_t dev, ino;
	uint64_t idev, iino;
};

/* The process of thread tid (-1: gone); nfilters (if not NULL): its
 * seccomp filters, ours included (-1: unknown) */
static pid_t tgid_of(pid_t tid, int *nfilters)
{
	char path[64], line[128];
	pid_t tgid = -1;
	FILE *f;

	if (nfilters) {
		*nfilters = -1;
	}
	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	f = fopen(path, "re");
	if (!f) {
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "Tgid:", 5)) {
			tgid = (pid_t)strtol(line + 5, NULL, 10);
			if (!nfilters) {
				break;
			}
		} else if (nfilters && !strncmp(line, "Seccomp_filters:", 16)) {
			*nfilters = (int)strtol(line + 16, NULL, 10);
			break;
		}
	}
	fclose(f);
	return tgid;
}

static void gated_put(struct ebpf_state *st, pid_t tid,
		      const struct mt_gated *g)
{
	uint32_t key = (uint32_t)tid;

	/* a failure only leaves BPF to stop the process, as without us */
	bpf_map_update_elem(bpf_map__fd(st->skel->maps.gated), &key, g,
			    BPF_ANY);
}

/*
 * The caller (tid) maps the file of its fd a[4] (sb, name) at a fixed
 * address: the poller records the mapping and pushes its unwind table
 * before the call goes on, and tells BPF so (`gated`), which then stops
 * nobody at its return. The poller may be busy for seconds building the
 * tables of a large program's libraries (gdb's, under load: more than
 * 5 s once in CI); a request it has not taken in GATE_MAP_WAIT_S is
 * withdrawn, a guard against a poller that no longer reads, and BPF then
 * stops the process, as without the gate.
 */
#define GATE_MAP_WAIT_S 60

static void gate_map(struct ebpf_state *st, pid_t tid, const __u64 *a,
		     const struct stat *sb, const char *name)
{
	struct ebpf_gate_map *g = &st->gmap;
	uint64_t page = (uint64_t)st->page_size, one = 1;
	uint64_t len = (a[1] + page - 1) & ~(page - 1);
	struct timespec dl;
	pid_t tgid;

	if (g->efd < 0 || !len || (a[0] & (page - 1)) ||
	    (a[5] & (page - 1)) || a[0] + len < a[0]) {
		return; /* the call fails, or is nothing we know */
	}
	tgid = tgid_of(tid, NULL);
	if (tgid <= 0) {
		return;
	}
	pthread_mutex_lock(&g->lock);
	if (g->closing) {
		pthread_mutex_unlock(&g->lock);
		return;
	}
	g->tgid = tgid;
	g->tid = tid;
	g->start = a[0];
	g->end = a[0] + len;
	g->off = a[5];
	g->dev = mt_kernel_dev(major(sb->st_dev), minor(sb->st_dev));
	g->ino = sb->st_ino;
	snprintf(g->file, sizeof(g->file), "/proc/%d/fd/%d", (int)tid,
		 (int)a[4]);
	snprintf(g->name, sizeof(g->name), "%s", name);
	g->state = GM_QUEUED;
	pthread_mutex_unlock(&g->lock);
	if (write(g->efd, &one, sizeof(one)) != sizeof(one)) {
		/* the counter cannot be full: one request at a time */
	}
	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_sec += GATE_MAP_WAIT_S;
	pthread_mutex_lock(&g->lock);
	while (g->state == GM_QUEUED && !g->closing) {
		if (pthread_cond_timedwait(&g->cond, &g->lock, &dl) ==
		    ETIMEDOUT) {
			break;
		}
	}
	if (g->state == GM_QUEUED) {
		g->state = GM_IDLE; /* not taken: withdrawn */
		st->gate_map_timeouts++;
		pthread_mutex_unlock(&g->lock);
		return;
	}
	while (g->state == GM_TAKEN) {
		pthread_cond_wait(&g->cond, &g->lock);
	}
	if (!g->err) {
		st->gate_maps++;
	}
	g->state = GM_IDLE;
	pthread_mutex_unlock(&g->lock);
}

void ebpf_gate_serve(struct ebpf_state *st)
{
	struct ebpf_gate_map *g = &st->gmap;
	uint64_t v;
	int err;

	if (g->efd < 0) {
		return;
	}
	if (read(g->efd, &v, sizeof(v)) < 0) {
		/* EAGAIN: nothing asked since the last read */
	}
	pthread_mutex_lock(&g->lock);
	if (g->state != GM_QUEUED) {
		pthread_mutex_unlock(&g->lock);
		return;
	}
	g->state = GM_TAKEN;
	pthread_mutex_unlock(&g->lock);
	/* the fields are ours until DONE */
	err = ebpf_record_map_ahead(st, g->tgid, g->start, g->end, g->off,
				    g->dev, g->ino, g->file, g->name);
	if (!err) {
		struct mt_gated m = { .kind = MT_GATED_MMAP, .dev = g->dev,
				      .ino = g->ino, .start = g->start,
				      .end = g->end, .off = g->off };

		gated_put(st, g->tid, &m);
	}
	pthread_mutex_lock(&g->lock);
	g->err = err;
	g->state = GM_DONE;
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
}

/* Attach the file open at fd (sb: its fstat; shown: its name in
 * messages) unless handled. */
static void gate_file(struct ebpf_state *st, int fd, const struct stat *sb,
		      const char *shown)
{
	char self[64];
	int err;

	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	err = ebpf_attach_file(st, self, shown,
			       mt_kernel_dev(major(sb->st_dev),
					     minor(sb->st_dev)),
			       sb->st_ino);
	if (err == 0) {
		st->gate_files++;
	} else if (err < 0) {
		/* BPF stops the process for it, and the stop tries again */
		ebpf_log(st, MT_LOG_DEBUG, "exec gate: %s not attached: %s",
			 shown, strerror(-err));
	}
}

/* What an exec of path (resolved for pid) will run: the file, its #!
 * interpreter, its PT_INTERP. img (with stacks): what BPF will see run. */
static void gate_exec(struct ebpf_state *st, pid_t pid, const char *path,
		      const char *shown, int depth, struct gate_image *img)
{
	char head[256], next[PATH_MAX + 64], *p;
	struct stat sb;
	ssize_t n;
	int fd, known;

	/* O_NONBLOCK: a FIFO must not keep us (exec refuses it anyway) */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		return; /* execvp trying its PATH: the exec fails too */
	}
	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
		close(fd);
		return; /* nothing to attach */
	}
	/* a known executable: its interpreter was handled with it */
	known = file_known(st, &sb);
	if (known && !img) {
		close(fd);
		return;
	}
	n = pread(fd, head, sizeof(head) - 1, 0);
	if ((p = ebpf_shebang(head, n)) && depth < GATE_MAX_DEPTH) {
		if (!mt_proc_path(pid, AT_FDCWD, p, next, sizeof(next))) {
			gate_exec(st, pid, next, p, depth + 1, img);
		}
	} else if (n >= 4 && !memcmp(head, "\177ELF", 4)) {
		char interp[PATH_MAX];
		int has_interp;

		if (!known) {
			gate_file(st, fd, &sb, shown);
		}
		has_interp = !ebpf_elf_interp(fd, interp, sizeof(interp));
		if (img) {
			img->found = 1;
			img->dev = mt_kernel_dev(major(sb.st_dev),
						 minor(sb.st_dev));
			img->ino = sb.st_ino;
		}
		if ((!known || img) && has_interp && interp[0] == '/' &&
		    !mt_proc_path(pid, AT_FDCWD, interp, next, sizeof(next))) {
			int ifd = open(next, O_RDONLY | O_NONBLOCK | O_CLOEXEC);

			if (ifd >= 0 && !known_fd(st, ifd, &sb)) {
				gate_file(st, ifd, &sb, interp);
			}
			if (ifd >= 0 && img && S_ISREG(sb.st_mode)) {
				img->dynamic = 1;
				img->idev = mt_kernel_dev(major(sb.st_dev),
							  minor(sb.st_dev));
				img->iino = sb.st_ino;
			}
			if (ifd >= 0) {
				close(ifd);
			}
		}
	}
	close(fd);
}

/*
 * What the exec of full (shown as path) runs, attached. With stacks, also
 * what BPF needs to spare it the stop at exec (MT_GATED_EXEC: a dynamic
 * image whose files are known); a static program allocates from its first
 * instruction: BPF stops it at exec, for its mappings, and so it does
 * when an attach failed here (the stop tries again).
 */
static void gate_image(struct ebpf_state *st, pid_t pid, const char *full,
		       const char *path)
{
	struct gate_image img = { 0 };

	if (!st->gate_stacks) {
		gate_exec(st, pid, full, path, 0, NULL);
		return;
	}
	gate_exec(st, pid, full, path, 0, &img);
	if (img.found && img.dynamic) {
		pthread_mutex_lock(&st->attach_lock);
		img.dynamic = ebpf_file_known(st, img.dev, img.ino) &&
			      ebpf_file_known(st, img.idev, img.iino);
		pthread_mutex_unlock(&st->attach_lock);
	}
	if (img.found && img.dynamic) {
		struct mt_gated g = { .kind = MT_GATED_EXEC,
				      .dev = img.dev,
				      .ino = img.ino };

		gated_put(st, pid, &g);
	}
}

/*
 * Whether an exec of path leaves the process without the perf events it
 * inherited: the kernel ends them all (perf_event_exit_task()) when the
 * new image is not dumpable, which a set-user-ID or set-group-ID file, file
 * capabilities or a file the caller may not read make it (fs/exec.c).
 * Inherited, the uprobes' filter (scope.c) would not hold such a program
 * from its first instruction: it gets events of its own before the exec,
 * which the kernel keeps with their owner. The tests are the cheap ones;
 * a file that passes them for nothing only costs its events.
 */
static int exec_drops_inherited(const char *path)
{
	struct stat sb;

	if (stat(path, &sb) || !S_ISREG(sb.st_mode)) {
		return 0;
	}
	return (sb.st_mode & (S_ISUID | S_ISGID)) || !(sb.st_mode & S_IROTH) ||
	       getxattr(path, "security.capability", NULL, 0) >= 0;
}

/* What a gated call gets: it goes on (-1), or returns the value, which
 * only the interposer's question gets (common/gate-ask.h) */
static long gate_handle(struct ebpf_state *st, int lfd,
			const struct seccomp_notif *req)
{
	char path[PATH_MAX], full[PATH_MAX + 64];
	pid_t pid = (pid_t)req->pid;
	const __u64 *a = req->data.args;
	int nr = req->data.nr, nfilters;
	pid_t tgid;

	if (nr == MT_GATE_ASK_NR) {
		return st->handover ? ebpf_early_ask(st, pid,
						     tgid_of(pid, NULL), a[0])
				    : -1;
	}
	if (nr == __NR_mmap) {
		char shown[PATH_MAX];
		struct stat sb;
		int fd, ahead;
		ssize_t k;

		/* with stacks, the code of a library the loader maps at the
		 * address it reserved */
		ahead = st->gate_stacks && (a[2] & PROT_EXEC) &&
			!(a[3] & MAP_ANONYMOUS) &&
			(a[3] & (MAP_FIXED | MAP_FIXED_NOREPLACE));
		snprintf(full, sizeof(full), "/proc/%d/fd/%d", (int)pid,
			 (int)a[4]);
		fd = open(full, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0) {
			ebpf_log(st, MT_LOG_DEBUG, "exec gate: mmap by %d: %s: %s",
				 (int)pid, full, strerror(errno));
			return -1;
		}
		if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
			close(fd);
			return -1;
		}
		/* the first mapping of an image early.c guessed on */
		ebpf_early_mmap(st, pid, &sb);
		if (!ahead && file_known(st, &sb)) {
			close(fd);
			return -1;
		}
		/* the caller still in the call: its fd is the one it maps */
		if (ioctl(lfd, SECCOMP_IOCTL_NOTIF_ID_VALID, &req->id)) {
			ebpf_log(st, MT_LOG_DEBUG,
				 "exec gate: mmap by %d: the call is gone: %s",
				 (int)pid, strerror(errno));
			close(fd);
			return -1;
		}
		k = readlink(full, shown, sizeof(shown) - 1);
		shown[k > 0 ? k : 0] = '\0';
		/* recorded now, before the attach (as at a stop: control.c
		 * says why) */
		if (ahead && shown[0]) {
			gate_map(st, pid, a, &sb, shown);
		}
		if (!file_known(st, &sb)) {
			gate_file(st, fd, &sb, shown);
			if (st->gate_stacks && !file_known(st, &sb)) {
				/* not attached: BPF stops it, the stop
				 * tries again */
				uint32_t key = (uint32_t)pid;

				bpf_map_delete_elem(
					bpf_map__fd(st->skel->maps.gated),
					&key);
			}
		}
		close(fd);
		return -1;
	}
	if (nr == __NR_execve) {
		if (read_path(pid, a[0], path, sizeof(path)) ||
		    mt_proc_path(pid, AT_FDCWD, path, full, sizeof(full))) {
			return -1;
		}
	} else if (nr == __NR_execveat) {
		if (read_path(pid, a[1], path, sizeof(path)) ||
		    (!path[0] && !(a[4] & AT_EMPTY_PATH)) ||
		    mt_proc_path(pid, (int)a[0], path, full, sizeof(full))) {
			return -1;
		}
	} else {
		return -1;
	}
	/* what we read was the caller's, in that call (not a pid reused) */
	if (ioctl(lfd, SECCOMP_IOCTL_NOTIF_ID_VALID, &req->id)) {
		ebpf_log(st, MT_LOG_DEBUG,
			 "exec gate: exec by %d: the call is gone: %s",
			 (int)pid, strerror(errno));
		return -1;
	}
	if (st->handover) {
		/* what it runs attached, then its calls are ours until its
		 * interposer says hello, or its interposer's from the
		 * first (early.c) */
		int drops;

		if (faccessat(AT_FDCWD, full, F_OK, AT_EACCESS) &&
		    (errno == ENOENT || errno == ENOTDIR)) {
			/* execvp trying a directory of PATH: the exec fails
			 * the same way. Events opened for it would wait for
			 * the thread's next exec and trap there, whoever
			 * records that image */
			return -1;
		}
		drops = exec_drops_inherited(full);
		if (drops) {
			ebpf_scope_carry_lost(st, pid);
		}

		gate_image(st, pid, full, path);
		tgid = tgid_of(pid, &nfilters);
		if (!ebpf_early_exec(st, pid, tgid, full,
				     nr == __NR_execve ? a[2] : a[3],
				     drops ? -1 : nfilters)) {
			pthread_mutex_lock(&st->attach_lock);
			ebpf_scope_cover_exec(st, pid, tgid, EBPF_COVER_EXEC);
			pthread_mutex_unlock(&st->attach_lock);
		}
		return -1;
	}
	if (exec_drops_inherited(full)) {
		/* the events it inherited are gone at exec */
		pthread_mutex_lock(&st->attach_lock);
		ebpf_scope_cover_exec(st, pid, tgid_of(pid, NULL),
				      EBPF_COVER_EXEC);
		pthread_mutex_unlock(&st->attach_lock);
	}
	gate_image(st, pid, full, path);
	return -1;
}

/* The call goes on, or (val >= 0) returns val without being made */
static void gate_reply(int fd, uint64_t id, long val)
{
	struct seccomp_notif_resp resp;

	memset(&resp, 0, sizeof(resp));
	resp.id = id;
	if (val < 0) {
		resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
	} else {
		resp.val = val;
	}
	/* ENOENT: the caller was interrupted (a signal); it calls again,
	 * and we hear of it again */
	ioctl(fd, SECCOMP_IOCTL_NOTIF_SEND, &resp);
}

void ebpf_gate_answer(int fd, uint64_t id)
{
	gate_reply(fd, id, -1);
}

static void *gate_main(void *arg)
{
	struct ebpf_state *st = arg;
	struct pollfd pfd[2] = {
		{ .fd = st->gate_fd, .events = POLLIN },
		{ .fd = st->gate_stop_fd, .events = POLLIN },
	};

	for (;;) {
		struct seccomp_notif req;
		uint64_t t0, files;

		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR) {
				continue;
			}
			break;
		}
		if (pfd[1].revents) {
			break;
		}
		if (pfd[0].revents & (POLLHUP | POLLERR | POLLNVAL)) {
			break; /* nobody has the filter any more */
		}
		if (!(pfd[0].revents & POLLIN)) {
			continue;
		}
		memset(&req, 0, sizeof(req)); /* the kernel wants it zeroed */
		if (ioctl(st->gate_fd, SECCOMP_IOCTL_NOTIF_RECV, &req)) {
			/* ENOENT: the caller was interrupted meanwhile */
			continue;
		}
		__atomic_store_n(&st->gate_shared->received, req.id,
				 __ATOMIC_RELEASE);
		t0 = ebpf_now_ns();
		files = st->gate_files;
		gate_reply(st->gate_fd, req.id,
			   gate_handle(st, st->gate_fd, &req));
		__atomic_store_n(&st->gate_shared->answered, req.id,
				 __ATOMIC_RELEASE);
		if (st->gate_files == files) {
			st->gate_plain_ns += ebpf_now_ns() - t0;
			st->gate_plain++;
		}
		__atomic_fetch_add(&st->gate_calls, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

/* Linux 6.6 (include/uapi/linux/seccomp.h); Debian 12's headers are 6.1 */
#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (1UL << 0)
#endif

int ebpf_gate_start(struct ebpf_state *st, int fd)
{
	int err;

	st->gate_fd = fd;
	/*
	 * A gated call is a round trip: the caller sleeps, this thread
	 * wakes, answers, and the caller wakes. Each wake-up went to
	 * whichever CPU the scheduler chose, which on a busy machine is a
	 * wait for it: `as` (9 gated calls) took 18 ms inside a gcc tree
	 * under auto against 7 under preload. Synchronous wake-ups (Linux
	 * 6.6) hand the CPU over directly, both ways. Older kernels refuse
	 * the flag, and the calls go as before.
	 */
	if (ioctl(fd, SECCOMP_IOCTL_NOTIF_SET_FLAGS,
		  SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP)) {
		ebpf_log(st, MT_LOG_DEBUG,
			 "exec gate: no synchronous wake-ups (%s)",
			 strerror(errno));
	}
	/* the watchdog answers in our place if memtrack dies */
	err = ebpf_watchdog_give(st, 'G', &fd, 1);
	if (err) {
		ebpf_log(st, MT_LOG_ERROR,
			 "cannot hand the exec gate to the watchdog: %s",
			 strerror(-err));
		return err;
	}
	st->gate_stop_fd = eventfd(0, EFD_CLOEXEC);
	if (st->gate_stop_fd < 0) {
		err = -errno;
		ebpf_log(st, MT_LOG_ERROR, "eventfd: %s", strerror(-err));
		return err;
	}
	if (st->gate_stacks) {
		struct epoll_event ev = { .events = EPOLLIN };
		pthread_condattr_t ca;

		st->gmap.efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (st->gmap.efd < 0 ||
		    epoll_ctl(st->epfd, EPOLL_CTL_ADD, st->gmap.efd, &ev)) {
			/* then every exec and mapping is a stop, as before */
			ebpf_log(st, MT_LOG_WARN,
				 "the exec gate cannot record mappings ahead (%s): with stacks, execs and dlopens stop processes with SIGSTOP",
				 strerror(errno));
			if (st->gmap.efd >= 0) {
				close(st->gmap.efd);
				st->gmap.efd = -1;
			}
			st->gate_stacks = 0;
		} else {
			pthread_mutex_init(&st->gmap.lock, NULL);
			pthread_condattr_init(&ca);
			pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
			pthread_cond_init(&st->gmap.cond, &ca);
			pthread_condattr_destroy(&ca);
		}
	}
	err = pthread_create(&st->gate_thread, NULL, gate_main, st);
	if (err) {
		ebpf_log(st, MT_LOG_ERROR, "cannot start the exec gate: %s",
			 strerror(err));
		return -err;
	}
	st->gate_running = 1;
	return 0;
}

void ebpf_gate_stop(struct ebpf_state *st)
{
	uint64_t one = 1;

	if (st->gmap.efd >= 0) {
		/* nobody serves mappings any more: the gate must not wait */
		pthread_mutex_lock(&st->gmap.lock);
		st->gmap.closing = 1;
		pthread_cond_broadcast(&st->gmap.cond);
		pthread_mutex_unlock(&st->gmap.lock);
	}
	if (st->gate_running) {
		if (write(st->gate_stop_fd, &one, sizeof(one)) < 0) {
			/* an eventfd takes it */
		}
		pthread_join(st->gate_thread, NULL);
		st->gate_running = 0;
	}
	if (st->gate_stop_fd >= 0) {
		close(st->gate_stop_fd);
		st->gate_stop_fd = -1;
	}
	/* the watchdog's copy answers from here on */
	if (st->gate_fd >= 0) {
		close(st->gate_fd);
		st->gate_fd = -1;
	}
	if (st->gmap.efd >= 0) {
		epoll_ctl(st->epfd, EPOLL_CTL_DEL, st->gmap.efd, NULL);
		close(st->gmap.efd);
		st->gmap.efd = -1;
		pthread_cond_destroy(&st->gmap.cond);
		pthread_mutex_destroy(&st->gmap.lock);
	}
}
