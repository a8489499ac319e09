/* SPDX-License-Identifier: MIT */
/* Exec a FIFO (mode 0755): the kernel says EACCES at once, as exec takes
 * only regular files. The interposer's exec wrappers look at the file
 * first, and must not wait in open(2) for a writer. Then the program
 * goes on and allocates. The alarm turns a hang into a death, so that a
 * test fails in seconds rather than at its timeout. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "report.h"

extern char **environ;

int main(void)
{
	char dir[] = "/tmp/mt-exec-fifo-XXXXXX";
	char path[sizeof(dir) + 8];
	char *argv[] = { path, NULL };
	int e_execve, e_execvp;
	void *p;

	alarm(10);
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 2;
	}
	snprintf(path, sizeof(path), "%s/fifo", dir);
	if (mkfifo(path, 0700) < 0 || chmod(path, 0755) < 0) {
		perror(path);
		rmdir(dir);
		return 2;
	}
	execve(path, argv, environ);
	e_execve = errno;
	execvp(path, argv);
	e_execvp = errno;
	unlink(path);
	rmdir(dir);
	if (e_execve != EACCES || e_execvp != EACCES) {
		fprintf(stderr, "exec of a FIFO: execve %s, execvp %s\n",
			strerror(e_execve), strerror(e_execvp));
		return 1;
	}
	p = malloc(10601);
	report("Malloc", p, 10601, NULL);
	free(p);
	report("Free", p, 0, NULL);
	return 0;
}
