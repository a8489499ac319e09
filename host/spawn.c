/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/mman.h>

#include "gate-ask.h"
#include "log.h"
#include "spawn.h"

#define MAX_GROUPS 256

struct creds {
	int drop;
	uid_t uid;
	gid_t gid;
	gid_t groups[MAX_GROUPS];
	int ngroups;
};

/* Run as the user who invoked sudo, not as root: the command should see
 * its own files and write its own results. */
static int sudo_creds(struct creds *c)
{
	const char *su = getenv("SUDO_UID"), *sg = getenv("SUDO_GID");
	struct passwd *pw;
	char *end;

	c->drop = 0;
	if (!su || !sg || getuid() != 0) {
		return 0;
	}
	c->uid = (uid_t)strtoul(su, &end, 10);
	if (*end || !*su) {
		mt_err("SUDO_UID=%s is not a user id", su);
		return -EINVAL;
	}
	c->gid = (gid_t)strtoul(sg, &end, 10);
	if (*end || !*sg) {
		mt_err("SUDO_GID=%s is not a group id", sg);
		return -EINVAL;
	}
	if (c->uid == 0) {
		return 0;
	}
	c->ngroups = MAX_GROUPS;
	pw = getpwuid(c->uid);
	if (!pw || getgrouplist(pw->pw_name, c->gid, c->groups,
				&c->ngroups) < 0) {
		c->groups[0] = c->gid;
		c->ngroups = 1;
	}
	c->drop = 1;
	return 0;
}

#if defined(__x86_64__)
#define GATE_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define GATE_ARCH AUDIT_ARCH_AARCH64
#endif

#ifdef GATE_ARCH
#define ARG_LO(n) (offsetof(struct seccomp_data, args) + (n) * 8)

/*
 * The exec gate (MT_SOURCE_GATES_EXECS): execve, execveat and mmap of a
 * file with PROT_EXEC wait for the source, which attaches its probes to
 * the file before the kernel runs or maps it, and so does the interposer's
 * question (common/gate-ask.h, a call no kernel has); every other call, and every
 * call of another ABI (x32, a 32-bit process), goes on untouched.
 * Installed without no_new_privs (set-uid programs of the tree must keep
 * working as without memtrack): that takes CAP_SYS_ADMIN, which a root
 * memtrack has before the drop to the sudo user. Returns the listener or
 * -errno.
 */
static int install_gate(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, GATE_ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_execve, 8, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_execveat, 7, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, MT_GATE_ASK_NR, 6, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mmap, 0, 4),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(2)),
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, PROT_EXEC, 0, 2),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(3)),
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, MAP_ANONYMOUS, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]),
				   .filter = f };
	long fd;

	/* SPEC_ALLOW: a kernel booted with spec_store_bypass_disable=seccomp
	 * (the default before 5.16) would otherwise turn the Speculative
	 * Store Bypass mitigation on for the whole tree, slowing it and
	 * showing in its /proc/PID/status; this filter sandboxes nothing */
	fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
		     SECCOMP_FILTER_FLAG_NEW_LISTENER |
			     SECCOMP_FILTER_FLAG_SPEC_ALLOW,
		     &prog);
	return fd < 0 ? -errno : (int)fd;
}
#else
static int install_gate(void)
{
	return -ENOSYS;
}
#endif

/* The child's listener (or why there is none) to the parent: an int
 * errno, with the fd as SCM_RIGHTS when it is 0. */
static void send_gate(int sock, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	int e = fd < 0 ? -fd : 0;
	struct iovec iov = { .iov_base = &e, .iov_len = sizeof(e) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (fd >= 0) {
		struct cmsghdr *cm;

		memset(cbuf, 0, sizeof(cbuf));
		msg.msg_control = cbuf;
		msg.msg_controllen = sizeof(cbuf);
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	}
	while (sendmsg(sock, &msg, MSG_NOSIGNAL) < 0 && errno == EINTR) {
	}
	if (fd >= 0) {
		close(fd);
	}
	close(sock);
}

/* The listener the child sent, or -errno (the child's, or ours). */
static int recv_gate(int sock)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	int e = EPIPE, fd = -1;
	struct iovec iov = { .iov_base = &e, .iov_len = sizeof(e) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
			      .msg_control = cbuf,
			      .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;
	ssize_t n;

	while ((n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC)) < 0 &&
	       errno == EINTR) {
	}
	for (cm = n > 0 ? CMSG_FIRSTHDR(&msg) : NULL; cm;
	     cm = CMSG_NXTHDR(&msg, cm)) {
		if (cm->cmsg_level == SOL_SOCKET &&
		    cm->cmsg_type == SCM_RIGHTS) {
			memcpy(&fd, CMSG_DATA(cm), sizeof(int));
		}
	}
	if (n != (ssize_t)sizeof(e) || e) {
		if (fd >= 0) {
			close(fd);
		}
		return n < 0 ? -errno : -(e ? e : EPIPE);
	}
	return fd >= 0 ? fd : -EPIPE;
}

static void child(char *const argv[], char *const envp[],
		  const sigset_t *mask, const struct sigaction *sigpipe,
		  int gate, int errfd, const struct creds *c)
{
	char go = 0;
	int e;

	/* Held with memtrack's mask: a signal that comes now (a Ctrl-C to
	 * the group while the source sets up) waits, and memtrack, which
	 * cannot be killed by it, arms the source for a live process. */
	while (read(gate, &go, 1) < 0 && errno == EINTR) {
	}
	/* EOF without the byte means the parent gave up (or died): do not
	 * run the command untraced. */
	if (go != 'g') {
		_exit(127);
	}
	close(gate);
	if (c->drop && (setgroups((size_t)c->ngroups, c->groups) < 0 ||
			setgid(c->gid) < 0 || setuid(c->uid) < 0)) {
		e = errno;
		goto fail;
	}
	/* The caller's SIGPIPE disposition and mask, not memtrack's. A
	 * signal that came while held is then delivered, before exec: the
	 * child dies of it as the command would at its first instruction
	 * (or ignores it as the command would), and memtrack reports
	 * 128+N as for the command. */
	sigaction(SIGPIPE, sigpipe, NULL);
	sigprocmask(SIG_SETMASK, mask, NULL);
	if (envp) {
		execvpe(argv[0], argv, envp);
	} else {
		execvp(argv[0], argv);
	}
	e = errno;
fail:
	while (write(errfd, &e, sizeof(e)) < 0 && errno == EINTR) {
	}
	_exit(127);
}

int mt_spawn_held(char *const argv[], const sigset_t *sigmask,
		  struct mt_spawn *sp)
{
	int gate[2] = { -1, -1 }, errp[2] = { -1, -1 }, gs[2] = { -1, -1 };
	struct creds c;
	int err;

	sp->pid = -1;
	sp->gate_fd = sp->err_fd = sp->exec_gate_fd = -1;
	err = sudo_creds(&c);
	if (err < 0) {
		return err;
	}
	if (pipe2(gate, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0 ||
	    (sp->want_exec_gate &&
	     socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, gs) < 0)) {
		err = -errno;
		mt_err("pipe: %s", strerror(errno));
		goto error;
	}
	sp->pid = fork();
	if (sp->pid < 0) {
		err = -errno;
		mt_err("fork: %s", strerror(errno));
		goto error;
	}
	if (sp->pid == 0) {
		close(gate[1]);
		close(errp[0]);
		if (gs[0] >= 0) {
			/* first, as root: the filter is the tree's from its
			 * first exec on */
			close(gs[0]);
			send_gate(gs[1], install_gate());
		}
		child(argv, sp->envp, sigmask, &sp->sigpipe, gate[0], errp[1],
		      &c);
	}
	close(gate[0]);
	close(errp[1]);
	sp->gate_fd = gate[1];
	sp->err_fd = errp[0];
	if (gs[0] >= 0) {
		close(gs[1]);
		sp->exec_gate_fd = recv_gate(gs[0]);
		close(gs[0]);
		if (sp->exec_gate_fd < 0) {
			sp->exec_gate_errno = -sp->exec_gate_fd;
			sp->exec_gate_fd = -1;
		}
	}
	return 0;

error:
	for (int i = 0; i < 2; i++) {
		if (gate[i] >= 0) {
			close(gate[i]);
		}
		if (errp[i] >= 0) {
			close(errp[i]);
		}
		if (gs[i] >= 0) {
			close(gs[i]);
		}
	}
	return err;
}

int mt_spawn_release(struct mt_spawn *sp, const char *cmd)
{
	ssize_t n;
	int e = 0;

	/* EPIPE (memtrack ignores SIGPIPE): a signal killed the held child
	 * already. Not an exec failure: reaping it gives its status. */
	while (write(sp->gate_fd, "g", 1) < 0 && errno == EINTR) {
	}
	close(sp->gate_fd);
	sp->gate_fd = -1;
	/* EOF: the exec closed our pipe. Data: the errno of a failed exec. */
	do {
		n = read(sp->err_fd, &e, sizeof(e));
	} while (n < 0 && errno == EINTR);
	close(sp->err_fd);
	sp->err_fd = -1;
	if (n == (ssize_t)sizeof(e)) {
		mt_err("%s: %s", cmd, strerror(e));
		return -e;
	}
	return 0;
}

void mt_spawn_abort(struct mt_spawn *sp)
{
	if (sp->gate_fd >= 0) {
		close(sp->gate_fd);
		sp->gate_fd = -1;
	}
	if (sp->err_fd >= 0) {
		close(sp->err_fd);
		sp->err_fd = -1;
	}
	if (sp->exec_gate_fd >= 0) {
		close(sp->exec_gate_fd);
		sp->exec_gate_fd = -1;
	}
	if (sp->pid > 0) {
		kill(sp->pid, SIGKILL);
		while (waitpid(sp->pid, NULL, 0) < 0 && errno == EINTR) {
		}
		sp->pid = -1;
	}
}
