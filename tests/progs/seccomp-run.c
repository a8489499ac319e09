/* SPDX-License-Identifier: MIT */
/*
 * seccomp-run LIST -- PROG [ARGS...]: run PROG under a seccomp allow-list,
 * as sandboxes do (browsers, sshd, systemd's SystemCallFilter=): LIST holds
 * system call numbers, one per line (what `strace -f -n` saw PROG make
 * without memtrack); any other call kills the process (SIGSYS). The
 * filter is installed here and kept across exec, so PROG's loader and
 * everything preloaded into it run under it too.
 */
#include <errno.h>
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

int main(int argc, char **argv)
{
	static struct sock_filter f[2 * MAX_CALLS + 8];
	unsigned int calls[MAX_CALLS], n = 0, i, k = 0;
	struct sock_fprog prog;
	unsigned int nr;
	FILE *list;

	if (argc < 4 || strcmp(argv[2], "--")) {
		fprintf(stderr, "usage: seccomp-run LIST -- PROG [ARGS...]\n");
		return 2;
	}
	list = fopen(argv[1], "r");
	if (!list) {
		perror(argv[1]);
		return 2;
	}
	while (n < MAX_CALLS - 1 && fscanf(list, "%u", &nr) == 1) {
		calls[n++] = nr;
	}
	fclose(list);
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
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0) {
		perror("seccomp-run: the filter");
		return 2;
	}
	execv(argv[3], argv + 3);
	perror(argv[3]);
	return 127;
}
