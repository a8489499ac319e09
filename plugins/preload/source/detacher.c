/* SPDX-License-Identifier: MIT */
/*
 * plugins/preload/source/detacher.c - the root mode's tracepoints are
 * detached by another process, in its own time.
 *
 * Detaching a tracepoint waits for an RCU grace period: about 70 ms each
 * here, 0.6 s for the eight of them at the end of every run. So memtrack
 * hands the link fds over (SCM_RIGHTS), closes its own, which detaches
 * nothing while the detacher holds them, and closes the socket; the
 * detacher then closes them and exits. The programs stay attached that
 * long, but `tracked` is empty by then: they return at once.
 *
 * The detacher is forked at create(), twice, before the host makes
 * memtrack a subreaper (host/run.c): its parent exits at once and it is
 * nobody's child of ours. memtrack ends a run when it has no child left.
 * A helper forked later is reparented to memtrack itself, the subreaper:
 * forked at destroy (as it was), it waited for memtrack's exit, and after
 * tracing stopped early (a sink error, a control stop) memtrack waited for
 * it, for ever, deaf to SIGTERM (issue 27, item 8).
 *
 * It keeps no fd but its socket (memtrack's stdout and stderr may be
 * pipes whose readers wait for EOF), takes no signal of the terminal
 * (setsid()), unblocks the signals memtrack blocks, and only makes system
 * calls: it runs in a fork of memtrack.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "detacher.h"

#define DT_MAX_FDS PL_DETACHER_MAX_FDS

static __attribute__((noreturn)) void detacher_main(int sock)
{
	char cbuf[CMSG_SPACE(sizeof(int) * DT_MAX_FDS)];
	int held[DT_MAX_FDS], nheld = 0, i;
	sigset_t none;
	char c;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	setsid();
	prctl(PR_SET_NAME, "memtrack-detach", 0, 0, 0);
	if (sock > 0) {
		syscall(SYS_close_range, 0u, (unsigned int)sock - 1, 0u);
	}
	syscall(SYS_close_range, (unsigned int)sock + 1, ~0u, 0u);
	for (;;) {
		struct iovec iov = { .iov_base = &c, .iov_len = 1 };
		struct msghdr msg = {
			.msg_iov = &iov,
			.msg_iovlen = 1,
			.msg_control = cbuf,
			.msg_controllen = sizeof(cbuf),
		};
		struct cmsghdr *cm;
		ssize_t n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);

		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n <= 0) {
			break; /* released, or memtrack is gone */
		}
		for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
			int k, cnt, fd;

			if (cm->cmsg_level != SOL_SOCKET ||
			    cm->cmsg_type != SCM_RIGHTS) {
				continue;
			}
			cnt = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
			for (k = 0; k < cnt; k++) {
				memcpy(&fd, CMSG_DATA(cm) + k * sizeof(int),
				       sizeof(int));
				if (nheld < DT_MAX_FDS) {
					held[nheld++] = fd;
				} else {
					close(fd);
				}
			}
		}
	}
	for (i = 0; i < nheld; i++) {
		close(held[i]);
	}
	_exit(0);
}

int pl_detacher_start(void)
{
	int sv[2], status, err;
	pid_t pid;

	/* close-on-exec: the traced command must not keep it open */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
		return -errno;
	}
	pid = fork();
	if (pid < 0) {
		err = -errno;
		close(sv[0]);
		close(sv[1]);
		return err;
	}
	if (pid == 0) {
		/* the intermediate: its exit orphans the detacher */
		close(sv[1]);
		pid = fork();
		if (pid == 0) {
			detacher_main(sv[0]);
		}
		_exit(pid < 0 ? 1 : 0);
	}
	close(sv[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		close(sv[1]);
		return -EAGAIN;
	}
	return sv[1];
}

int pl_detacher_adopt(int sock, const int *fds, size_t n)
{
	char cbuf[CMSG_SPACE(sizeof(int) * DT_MAX_FDS)];
	struct iovec iov = { .iov_base = "F", .iov_len = 1 };
	struct msghdr msg = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = cbuf,
		.msg_controllen = CMSG_SPACE(sizeof(int) * n),
	};
	struct cmsghdr *cm;
	ssize_t r;

	if (sock < 0) {
		return -EBADF;
	}
	if (n == 0) {
		return 0;
	}
	if (n > DT_MAX_FDS) {
		return -E2BIG;
	}
	memset(cbuf, 0, sizeof(cbuf));
	cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int) * n);
	memcpy(CMSG_DATA(cm), fds, sizeof(int) * n);
	while ((r = sendmsg(sock, &msg, MSG_NOSIGNAL)) < 0 && errno == EINTR) {
	}
	return r == 1 ? 0 : -errno;
}

void pl_detacher_release(int sock)
{
	if (sock >= 0) {
		close(sock);
	}
}
