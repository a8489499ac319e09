/* SPDX-License-Identifier: MIT */
/* Recording switched on and off through memtrack's control socket
 * (argv[1]); memtrack runs with --start-disabled. */
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "report.h"

static int command(int fd, const char *cmd)
{
	char buf[64];
	ssize_t n;

	if (write(fd, cmd, strlen(cmd)) < 0) {
		return -1;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	if (n < 3 || strncmp(buf, "ok\n", 3)) {
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	void *p;
	int fd;

	if (argc < 2 || strlen(argv[1]) >= sizeof(sa.sun_path)) {
		return 2;
	}
	strcpy(sa.sun_path, argv[1]);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		return 4;
	}
	p = malloc(80001);
	report("Nothing", NULL, 80001, NULL);
	free(p);

	if (command(fd, "enable\n")) {
		return 5;
	}
	p = malloc(80002);
	report("Malloc", p, 80002, NULL);
	free(p);
	report("Free", p, 0, NULL);

	if (command(fd, "disable\n")) {
		return 6;
	}
	p = malloc(80003);
	report("Nothing", NULL, 80003, NULL);
	free(p);
	return 0;
}
