/* SPDX-License-Identifier: MIT */
/*
 * Starting the traced command.
 *
 * The command's process is created held: it has forked but waits before
 * exec, so a source can arm itself for that pid before the command's first
 * instruction. mt_spawn_release() lets it exec and reports exec failure.
 * The held child does not allocate: everything it needs is prepared by the
 * parent before fork.
 */
#ifndef MT_HOST_SPAWN_H
#define MT_HOST_SPAWN_H

#include <signal.h>
#include <sys/types.h>

struct mt_spawn {
	pid_t pid;
	int gate_fd; /* parent's end: closing it releases the child */
	int err_fd;  /* child writes its exec errno here (CLOEXEC) */
	char *const *envp; /* the command's environment; NULL: memtrack's.
			    * Set by the caller before mt_spawn_held(). */
	struct sigaction sigpipe; /* the caller's SIGPIPE disposition,
				   * given back to the command (memtrack
				   * ignores SIGPIPE). Set by the caller. */
	/* Set by the caller: give the child the exec gate (a seccomp
	 * filter, MT_SOURCE_GATES_EXECS) before it runs anything */
	int want_exec_gate;
	/* its listener, for the source (-1: none; then exec_gate_errno says
	 * why: EACCES without CAP_SYS_ADMIN, ...) */
	int exec_gate_fd;
	int exec_gate_errno;
};

/* Fork the held child. It waits with the caller's current mask (memtrack
 * blocks the signals it takes), so that a signal sent while it is held
 * waits too; sigmask and sp->sigpipe are restored in the child just
 * before exec, and a signal pending then acts on the child as on the
 * command.
 * Started through sudo (SUDO_UID/SUDO_GID set, running as root), the
 * command runs as that user. Returns 0 or a negative errno (logged). */
int mt_spawn_held(char *const argv[], const sigset_t *sigmask,
		  struct mt_spawn *sp);

/* Let the child exec. Returns 0, or the negative errno of a failed exec
 * (logged, naming the command); the child has then exited with 127. */
int mt_spawn_release(struct mt_spawn *sp, const char *cmd);

/* Abort a held child: kill and reap it. */
void mt_spawn_abort(struct mt_spawn *sp);

#endif /* MT_HOST_SPAWN_H */
