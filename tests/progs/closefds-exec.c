/* SPDX-License-Identifier: MIT */
/* Run argv[1..] with every inherited descriptor above 2 closed, or with
 * /dev/null in their place ("-n" first): memtrack's shared memory must be
 * reached another way (/proc/PID/fd/N), and a wrong file at its number
 * must not be taken for it. */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int fill = argc > 1 && !strcmp(argv[1], "-n");
	int fd;

	if (argc < 2 + fill) {
		return 2;
	}
	for (fd = 3; fd < 256; fd++) {
		close(fd);
		if (fill) {
			int nfd = open("/dev/null", O_RDWR);

			if (nfd >= 0 && nfd != fd) {
				dup2(nfd, fd);
				close(nfd);
			}
		}
	}
	execv(argv[1 + fill], argv + 1 + fill);
	return 127;
}
