/* SPDX-License-Identifier: MIT */
/*
 * plugins/ebpf/watchdog.c - nothing stays stopped when memtrack dies.
 *
 * destroy() resumes every stopped process, but a memtrack killed with
 * SIGKILL never calls it, and the processes BPF stopped would wait for a
 * SIGCONT forever. So create() forks a watchdog holding two things: an fd
 * of the `holds` map (every stop is recorded there before its SIGSTOP) and
 * the read end of a pipe whose write end only memtrack has. When memtrack
 * exits, normally or not, the pipe reaches EOF; the watchdog then resumes
 * the process of every entry of the map until memtrack's BPF programs are
 * gone (its links are fds of memtrack: they die with it, so the programs
 * stop running shortly after), and exits. After a normal end memtrack
 * writes 'Q' first: everything is resumed, one last look suffices.
 *
 * Detaching a uprobe waits for an RCU grace period, ~100 ms here, and the
 * kernel does them one after the other: closing the ~25 links of a C
 * program took 2.5 s of every memtrack run. So memtrack, having made its
 * programs inert (nothing is tracked any more), hands its link fds over
 * ('F' messages with SCM_RIGHTS) and goes; the watchdog closes them in
 * its own time.
 *
 * The watchdog is forked twice so that it is not memtrack's child (memtrack
 * waits for all its children to end the run), calls setsid() (a terminal's
 * signals are memtrack's business), keeps no other fd (memtrack's stdout
 * and stderr may be pipes whose readers wait for EOF; the BPF programs must
 * not outlive memtrack) and is never traced (it is not in the traced tree).
 * It runs in a fork of memtrack and only makes system calls.
 *
 * The exec gate (gate.c): memtrack hands over the seccomp listener of the
 * traced tree at start ('G'). The tree keeps its filter after memtrack is
 * gone, and a filter without a listener fails every exec with ENOSYS, so
 * from memtrack's end on, normal or not, the watchdog answers each call
 * "go on" until no process has the filter any more (the listener then
 * reads POLLHUP); a call memtrack had received and not answered when it
 * died is answered first, found by the ids it left in a shared page.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "memtrack.h"
#include "memtrack.skel.h"
#include "ebpf.h"

#define WD_MAX_PROGS 64
/* links handed over at the end; more are closed by memtrack itself */
#define WD_MAX_LINKS 16384
/* fds per message, below the kernel's SCM_MAX_FD (253) */
#define WD_FDS_PER_MSG 250
/* how long programs may outlive memtrack before the watchdog gives up */
#define WD_MAX_WAIT_NS 10000000000ull

int ebpf_resume_map(int holds_fd)
{
	struct mt_hold_key keys[256];
	int n, total = 0;

	/* collect, then delete: deleting while walking restarts the walk */
	do {
		void *prev = NULL;

		n = 0;
		while (n < (int)(sizeof(keys) / sizeof(keys[0])) &&
		       !bpf_map_get_next_key(holds_fd, prev, &keys[n])) {
			prev = &keys[n++];
		}
		for (int i = 0; i < n; i++) {
			/* SIGCONT before delete: the entry is the proof
			 * that it may be stopped */
			kill((pid_t)keys[i].tgid, SIGCONT);
			bpf_map_delete_elem(holds_fd, &keys[i]);
		}
		total += n;
	} while (n == (int)(sizeof(keys) / sizeof(keys[0])));
	return total;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000,
			       .tv_nsec = (ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) && errno == EINTR) {
	}
}

static int progs_alive(const uint32_t *ids, int n)
{
	for (int i = 0; i < n; i++) {
		int fd = bpf_prog_get_fd_by_id(ids[i]);

		if (fd >= 0) {
			close(fd);
			return 1;
		}
	}
	return 0;
}

/* Close every fd but a and b (a <= b). */
static void close_others(int a, int b)
{
	if (a > 0) {
		syscall(SYS_close_range, 0u, (unsigned int)a - 1, 0u);
	}
	if (b > a + 1) {
		syscall(SYS_close_range, (unsigned int)a + 1,
			(unsigned int)b - 1, 0u);
	}
	syscall(SYS_close_range, (unsigned int)b + 1, ~0u, 0u);
}

/* Answer the gate's calls for ms milliseconds (-1: for as long as it
 * takes). Returns 1 once no process has the filter, 0 otherwise. */
static int gate_serve(int gfd, long ms)
{
	struct pollfd p = { .fd = gfd, .events = POLLIN };
	uint64_t end = mono_ns() + (uint64_t)(ms < 0 ? 0 : ms) * 1000000u;

	if (gfd < 0) {
		if (ms > 0) {
			sleep_ms(ms);
		}
		return 1;
	}
	for (;;) {
		struct seccomp_notif req;
		uint64_t now = mono_ns();
		int r;

		if (ms >= 0 && now >= end) {
			return 0;
		}
		r = poll(&p, 1, ms < 0 ? -1 : (int)((end - now) / 1000000u) + 1);
		if (r < 0 && errno == EINTR) {
			continue;
		}
		if (r < 0 || (p.revents & (POLLHUP | POLLERR | POLLNVAL))) {
			return 1;
		}
		if (!r || !(p.revents & POLLIN)) {
			continue;
		}
		memset(&req, 0, sizeof(req));
		if (!ioctl(gfd, SECCOMP_IOCTL_NOTIF_RECV, &req)) {
			ebpf_gate_answer(gfd, req.id);
		}
	}
}

/* gate_serve(), done with the listener once nobody has the filter: later
 * calls only wait */
static void serve(int *gfd, long ms)
{
	if (gate_serve(*gfd, ms) && *gfd >= 0) {
		close(*gfd);
		*gfd = -1;
	}
}

/* memtrack is gone: a call it had received and not answered yet has an
 * id above the last it answered (ids grow by one per call). */
static void gate_take_over(int gfd, const struct ebpf_gate_shared *sh)
{
	uint64_t last = __atomic_load_n(&sh->answered, __ATOMIC_ACQUIRE);

	if (gfd < 0 || !__atomic_load_n(&sh->received, __ATOMIC_ACQUIRE)) {
		return;
	}
	for (uint64_t i = 1; i <= 64; i++) {
		ebpf_gate_answer(gfd, last + i);
	}
}

/* From memtrack's end on, a process of its own answers the gate: the
 * links' slow close must not keep an exec of the tree waiting. Without a
 * fork, the watchdog answers between its own steps (serve()). */
static void gate_hand_off(int *gfd, const struct ebpf_gate_shared *sh,
			  int memtrack_died)
{
	pid_t pid;

	if (*gfd < 0) {
		return;
	}
	if (memtrack_died) {
		gate_take_over(*gfd, sh);
	}
	pid = fork();
	if (pid == 0) {
		/* the listener alone: no BPF fd may outlive memtrack */
		close_others(*gfd, *gfd);
		prctl(PR_SET_NAME, "memtrack-gate", 0, 0, 0);
		gate_serve(*gfd, -1);
		_exit(0);
	}
	if (pid > 0) {
		close(*gfd);
		*gfd = -1;
	}
}

/* One message: its byte in *c, its fds appended to held. Returns the
 * byte count (0 at EOF) or -1. */
static ssize_t recv_msg(int fd, char *c, int *held, int *nheld)
{
	char cbuf[CMSG_SPACE(sizeof(int) * WD_FDS_PER_MSG)];
	struct iovec iov = { .iov_base = c, .iov_len = 1 };
	struct msghdr msg = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = cbuf,
		.msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *cm;
	ssize_t n;

	while ((n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC)) < 0 &&
	       errno == EINTR) {
	}
	for (cm = CMSG_FIRSTHDR(&msg); n > 0 && cm; cm = CMSG_NXTHDR(&msg, cm)) {
		int k, cnt;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) {
			continue;
		}
		cnt = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		for (k = 0; k < cnt; k++) {
			int lfd;

			memcpy(&lfd, CMSG_DATA(cm) + k * sizeof(int), sizeof(int));
			if (*nheld < WD_MAX_LINKS) {
				held[(*nheld)++] = lfd;
			} else {
				close(lfd);
			}
		}
	}
	return n;
}

/* the freezer's hierarchy and memtrack's pid: its hold cgroups' name;
 * tracefs when memtrack's uprobes are scoped to the tree (scope.c) */
static char wd_cgroot[PATH_MAX];
static pid_t wd_owner;
static char wd_tracefs[64];

/* the uprobe events, once every perf event on them is closed (memtrack's
 * own, when it died, may still be being released: busy for a moment) */
static void remove_events(void)
{
	uint64_t t0 = mono_ns(), progress = t0;
	int left, last = -1;

	if (!wd_tracefs[0]) {
		return;
	}
	/* the kernel releases the last perf events of ours one grace period
	 * after the other: wait while that goes on; busy without progress
	 * for a second: another memtrack's, removed by it */
	while ((left = ebpf_scope_remove_group(wd_tracefs, 1000)) > 0 &&
	       mono_ns() - progress < 1000000000ull &&
	       mono_ns() - t0 < WD_MAX_WAIT_NS) {
		struct timespec ts = { 0, 50000000 };

		if (left != last) {
			progress = mono_ns();
			last = left;
		}
		nanosleep(&ts, NULL);
	}
}

static void close_all(const int *held, int nheld)
{
	for (int i = 0; i < nheld; i++) {
		close(held[i]);
	}
}

static __attribute__((noreturn)) void
watchdog_main(int rfd, int holds_fd, const uint32_t *ids, int nids,
	      const struct ebpf_gate_shared *sh)
{
	static int held[WD_MAX_LINKS];
	int nheld = 0, gfd = -1;
	uint64_t t0;
	char c = 0;
	ssize_t n;

	setsid();
	signal(SIGPIPE, SIG_IGN);
	prctl(PR_SET_NAME, "memtrack-wdog", 0, 0, 0);
	close_others(rfd < holds_fd ? rfd : holds_fd,
		     rfd < holds_fd ? holds_fd : rfd);

	while ((n = recv_msg(rfd, &c, held, &nheld)) == 1 &&
	       (c == 'F' || c == 'G')) {
		if (c == 'G' && nheld > 0 && gfd < 0) {
			gfd = held[--nheld]; /* the gate's listener */
		}
	}
	gate_hand_off(&gfd, sh, !(n == 1 && c == 'Q'));
	if (n == 1 && c == 'Q') {
		/* memtrack detached and resumed everything; a program that
		 * was running during the detach may still have stopped one */
		serve(&gfd, 20);
		ebpf_resume_map(holds_fd);
		close_all(held, nheld);
		close(holds_fd);
		remove_events();
		serve(&gfd, -1);
		_exit(0);
	}
	/* memtrack died: its programs run until its links are released,
	 * and stop producers (nobody reads the ring any more); what its
	 * freezer froze is thawed now and once they are gone */
	close_all(held, nheld);
	ebpf_thaw_orphans(wd_cgroot, wd_owner);
	t0 = mono_ns();
	do {
		ebpf_resume_map(holds_fd);
		if (!progs_alive(ids, nids)) {
			break;
		}
		serve(&gfd, 5);
	} while (mono_ns() - t0 < WD_MAX_WAIT_NS);
	serve(&gfd, 20);
	ebpf_thaw_orphans(wd_cgroot, wd_owner);
	ebpf_resume_map(holds_fd);
	close(holds_fd);
	remove_events();
	serve(&gfd, -1);
	_exit(0);
}

int ebpf_watchdog_start(struct ebpf_state *st)
{
	uint32_t ids[WD_MAX_PROGS];
	struct bpf_program *prog;
	int nids = 0, pfd[2], status;
	void *sh;
	pid_t pid;

	/* the gate's last ids, seen by the watchdog (shared across fork) */
	sh = mmap(NULL, sizeof(*st->gate_shared), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		ebpf_log(st, MT_LOG_ERROR, "mmap: %s", strerror(errno));
		return -errno;
	}
	st->gate_shared = sh;

	bpf_object__for_each_program(prog, st->skel->obj) {
		struct bpf_prog_info info;
		uint32_t len = sizeof(info);

		memset(&info, 0, sizeof(info));
		if (nids < WD_MAX_PROGS &&
		    !bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info,
					    &len)) {
			ids[nids++] = info.id;
		}
	}
	/* close-on-exec: the traced command must not keep it open; a
	 * socket, not a pipe, to pass the links over at the end */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pfd)) {
		ebpf_log(st, MT_LOG_ERROR, "cannot create the watchdog socket: %s",
			 strerror(errno));
		return -errno;
	}
	if (ebpf_freeze_root(st)) {
		snprintf(wd_cgroot, sizeof(wd_cgroot), "%s",
			 ebpf_freeze_root(st));
	}
	wd_owner = getpid();
	if (st->scope_ok) {
		snprintf(wd_tracefs, sizeof(wd_tracefs), "%s",
			 st->scope_tracefs);
	}
	pid = fork();
	if (pid < 0) {
		int err = -errno;

		ebpf_log(st, MT_LOG_ERROR, "cannot fork the watchdog: %s",
			 strerror(-err));
		close(pfd[0]);
		close(pfd[1]);
		return err;
	}
	if (pid == 0) {
		/* the intermediate: its exit orphans the watchdog */
		close(pfd[1]);
		pid = fork();
		if (pid == 0) {
			watchdog_main(pfd[0], st->holds_fd, ids, nids, sh);
		}
		_exit(pid < 0 ? 1 : 0);
	}
	close(pfd[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		ebpf_log(st, MT_LOG_ERROR, "cannot fork the watchdog");
		close(pfd[1]);
		return -EAGAIN;
	}
	st->wd_fd = pfd[1];
	return 0;
}

int ebpf_watchdog_adopt(struct ebpf_state *st, const int *fds, size_t n)
{
	return ebpf_watchdog_give(st, 'F', fds, n);
}

int ebpf_watchdog_give(struct ebpf_state *st, char what, const int *fds,
		       size_t n)
{
	size_t done = 0;

	if (st->wd_fd < 0) {
		return -EBADF;
	}
	while (done < n) {
		size_t k = n - done < WD_FDS_PER_MSG ? n - done : WD_FDS_PER_MSG;
		char cbuf[CMSG_SPACE(sizeof(int) * WD_FDS_PER_MSG)];
		struct iovec iov = { .iov_base = &what, .iov_len = 1 };
		struct msghdr msg = {
			.msg_iov = &iov,
			.msg_iovlen = 1,
			.msg_control = cbuf,
			.msg_controllen = CMSG_SPACE(sizeof(int) * k),
		};
		struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
		ssize_t r;

		memset(cbuf, 0, sizeof(cbuf));
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * k);
		memcpy(CMSG_DATA(cm), fds + done, sizeof(int) * k);
		while ((r = sendmsg(st->wd_fd, &msg, MSG_NOSIGNAL)) < 0 &&
		       errno == EINTR) {
		}
		if (r != 1) {
			return -errno;
		}
		done += k;
	}
	return 0;
}

void ebpf_watchdog_stop(struct ebpf_state *st)
{
	if (st->wd_fd < 0) {
		return;
	}
	if (write(st->wd_fd, "Q", 1) != 1) {
		/* it then acts as if memtrack died: resumes what is left */
	}
	close(st->wd_fd);
	st->wd_fd = -1;
}
