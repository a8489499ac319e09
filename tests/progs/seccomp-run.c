/* SPDX-License-Identifier: MIT */
/*
 * seccomp-run LIST -- PROG [ARGS...]: run PROG under a seccomp allow-list,
 * as sandboxes do (browsers, sshd, systemd's SystemCallFilter=): LIST holds
 * system call numbers, one per line (what `strace -f -n` saw PROG make
 * without memtrack); any other call kills the process (SIGSYS). The
 * filter is installed here and kept across exec, so PROG's loader and
 * everything preloaded into it run under it too.
 *
 * It allocates nothing (open and read, not stdio): a traced seccomp-run
 * adds no event to the program's, so a test can count the program's
 * exactly.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#define MAX_CALLS 512

#if defined(__x86_64__)
#define ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define ARCH AUDIT_ARCH_AARCH64
#else
#error "seccomp-run: unknown architecture"
#endif

/* The numbers of file into calls (at most max); returns how many, or -1
 * with errno set. */
static int read_calls(const char *file, unsigned int *calls, unsigned int max)
{
	static char buf[8 * MAX_CALLS];
	size_t len = 0;
	unsigned int n = 0, nr = 0;
	int fd, digits = 0;
	ssize_t got;
	size_t i;

	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		return -1;
	}
	while (len < sizeof(buf) &&
	       (got = read(fd, buf + len, sizeof(buf) - len)) > 0) {
		len += (size_t)got;
	}
	close(fd);
	if (len == sizeof(buf)) {
		errno = EFBIG;
		return -1;
	}
	for (i = 0; i <= len; i++) {
		if (i < len && buf[i] >= '0' && buf[i] <= '9') {
			nr = nr * 10 + (unsigned int)(buf[i] - '0');
			digits = 1;
		} else if (digits) {
			if (n == max) {
				errno = E2BIG;
				return -1;
			}
			calls[n++] = nr;
			nr = 0;
			digits = 0;
		}
	}
	return (int)n;
}

int main(int argc, char **argv)
{
	static struct sock_filter f[2 * MAX_CALLS + 8];
	unsigned int calls[MAX_CALLS], n, i, k = 0;
	struct sock_fprog prog;
	int got;

	if (argc < 4 || strcmp(argv[2], "--")) {
		fprintf(stderr, "usage: seccomp-run LIST -- PROG [ARGS...]\n");
		return 2;
	}
	got = read_calls(argv[1], calls, MAX_CALLS - 1);
	if (got < 0) {
		perror(argv[1]);
		return 2;
	}
	n = (unsigned int)got;
	calls[n++] = SYS_execve; /* ours, to start PROG */

	f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
					      offsetof(struct seccomp_data, arch));
	f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ARCH, 1,
					      0);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
					      SECCOMP_RET_KILL_PROCESS);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
					      offsetof(struct seccomp_data, nr));
	for (i = 0; i < n; i++) {
		f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
						      calls[i], 0, 1);
		f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
						      SECCOMP_RET_ALLOW);
	}
	f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
					      SECCOMP_RET_KILL_PROCESS);
	prog.len = (unsigned short)k;
	prog.filter = f;
	/* SECCOMP_RUN_SYSCALL=1: through syscall(3), as libseccomp does */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    (getenv("SECCOMP_RUN_SYSCALL") ?
		     syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) :
		     prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) < 0) {
		perror("seccomp-run: the filter");
		return 2;
	}
	execv(argv[3], argv + 3);
	perror(argv[3]);
	return 127;
}
