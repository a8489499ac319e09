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
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>

#include "ebpf.h"
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
static int elf_interp(int fd, char *buf, size_t size)
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

/* Is the file open at fd a regular file handled already? Most calls are
 * of those: the answer is all they cost. */
static int known_fd(struct ebpf_state *st, int fd, struct stat *sb)
{
	int known;

	if (fstat(fd, sb) || !S_ISREG(sb->st_mode)) {
		return 1; /* nothing to attach */
	}
	pthread_mutex_lock(&st->attach_lock);
	known = ebpf_file_known(st, mt_kernel_dev(major(sb->st_dev),
						  minor(sb->st_dev)),
				sb->st_ino);
	pthread_mutex_unlock(&st->attach_lock);
	return known;
}

/* Attach the file open at fd (sb: its fstat; shown: its name in
 * messages) unless handled. */
static void gate_file(struct ebpf_state *st, int fd, const struct stat *sb,
		      const char *shown)
{
	char self[64];

	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	if (ebpf_attach_file(st, self, shown,
			     mt_kernel_dev(major(sb->st_dev), minor(sb->st_dev)),
			     sb->st_ino) == 0) {
		st->gate_files++;
	}
}

/* What an exec of path (resolved for pid) will run: the file, its #!
 * interpreter, its PT_INTERP. */
static void gate_exec(struct ebpf_state *st, pid_t pid, const char *path,
		      const char *shown, int depth)
{
	char head[256], next[PATH_MAX + 64], *p, *e;
	struct stat sb;
	ssize_t n;
	int fd;

	/* O_NONBLOCK: a FIFO must not keep us (exec refuses it anyway) */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		return; /* execvp trying its PATH: the exec fails too */
	}
	/* a known executable: its interpreter was handled with it */
	if (known_fd(st, fd, &sb)) {
		close(fd);
		return;
	}
	n = pread(fd, head, sizeof(head) - 1, 0);
	if (n >= 2 && head[0] == '#' && head[1] == '!' &&
	    depth < GATE_MAX_DEPTH) {
		head[n] = '\0';
		for (p = head + 2; *p == ' ' || *p == '\t'; p++) {
		}
		for (e = p; *e && *e != ' ' && *e != '\t' && *e != '\n'; e++) {
		}
		*e = '\0';
		if (*p && !mt_proc_path(pid, AT_FDCWD, p, next, sizeof(next))) {
			gate_exec(st, pid, next, p, depth + 1);
		}
	} else if (n >= 4 && !memcmp(head, "\177ELF", 4)) {
		char interp[PATH_MAX];

		gate_file(st, fd, &sb, shown);
		if (!elf_interp(fd, interp, sizeof(interp)) &&
		    interp[0] == '/' &&
		    !mt_proc_path(pid, AT_FDCWD, interp, next, sizeof(next))) {
			int ifd = open(next, O_RDONLY | O_NONBLOCK | O_CLOEXEC);

			if (ifd >= 0 && !known_fd(st, ifd, &sb)) {
				gate_file(st, ifd, &sb, interp);
			}
			if (ifd >= 0) {
				close(ifd);
			}
		}
	}
	close(fd);
}

static void gate_handle(struct ebpf_state *st, int lfd,
			const struct seccomp_notif *req)
{
	char path[PATH_MAX], full[PATH_MAX + 64];
	pid_t pid = (pid_t)req->pid;
	const __u64 *a = req->data.args;
	int nr = req->data.nr;

	if (nr == __NR_mmap) {
		struct stat sb;
		int fd;

		snprintf(full, sizeof(full), "/proc/%d/fd/%d", (int)pid,
			 (int)a[4]);
		fd = open(full, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		/* the caller still in the call: its fd is the one it maps */
		if (fd >= 0 && !known_fd(st, fd, &sb) &&
		    !ioctl(lfd, SECCOMP_IOCTL_NOTIF_ID_VALID, &req->id)) {
			char shown[PATH_MAX];
			ssize_t k = readlink(full, shown, sizeof(shown) - 1);

			shown[k > 0 ? k : 0] = '\0';
			gate_file(st, fd, &sb, shown);
		}
		if (fd >= 0) {
			close(fd);
		}
		return;
	}
	if (nr == __NR_execve) {
		if (read_path(pid, a[0], path, sizeof(path)) ||
		    mt_proc_path(pid, AT_FDCWD, path, full, sizeof(full))) {
			return;
		}
	} else if (nr == __NR_execveat) {
		if (read_path(pid, a[1], path, sizeof(path)) ||
		    (!path[0] && !(a[4] & AT_EMPTY_PATH)) ||
		    mt_proc_path(pid, (int)a[0], path, full, sizeof(full))) {
			return;
		}
	} else {
		return;
	}
	/* what we read was the caller's, in that call (not a pid reused) */
	if (ioctl(lfd, SECCOMP_IOCTL_NOTIF_ID_VALID, &req->id)) {
		return;
	}
	gate_exec(st, pid, full, path, 0);
}

void ebpf_gate_answer(int fd, uint64_t id)
{
	struct seccomp_notif_resp resp;

	memset(&resp, 0, sizeof(resp));
	resp.id = id;
	resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
	/* ENOENT: the caller was interrupted (a signal); it calls again,
	 * and we hear of it again */
	ioctl(fd, SECCOMP_IOCTL_NOTIF_SEND, &resp);
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
		gate_handle(st, st->gate_fd, &req);
		ebpf_gate_answer(st->gate_fd, req.id);
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

int ebpf_gate_start(struct ebpf_state *st, int fd)
{
	int err;

	st->gate_fd = fd;
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
}
