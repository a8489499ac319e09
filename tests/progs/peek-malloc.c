/* SPDX-License-Identifier: MIT */
/*
 * peek-malloc PID...: for each process, the first byte of libc's malloc in
 * its memory, in hex ("cc": a breakpoint, a uprobe's int3, is there), read
 * through /proc/PID/mem. malloc's offset in libc is our own: every process
 * here maps the same libc.so.6 (tests/test-ebpf-scope.sh).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* the start of the mapping of libc.so.6 at file offset 0 in pid */
static unsigned long libc_base(const char *pid)
{
	char path[64], line[512];
	unsigned long start = 0, off;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%s/maps", pid);
	f = fopen(path, "re");
	if (!f) {
		return 0;
	}
	while (fgets(line, sizeof(line), f)) {
		unsigned long s;

		if (strstr(line, "/libc.so.6") &&
		    sscanf(line, "%lx-%*x %*s %lx", &s, &off) == 2 && !off) {
			start = s;
			break;
		}
	}
	fclose(f);
	return start;
}

int main(int argc, char **argv)
{
	void *sym = dlsym(RTLD_DEFAULT, "malloc");
	unsigned long self = libc_base("self"), off;
	int i, rc = 0;

	if (!sym || !self) {
		fprintf(stderr, "peek-malloc: no malloc or libc here\n");
		return 2;
	}
	off = (unsigned long)sym - self;
	for (i = 1; i < argc; i++) {
		unsigned long base = libc_base(argv[i]);
		unsigned char b;
		char path[64];
		int fd;

		snprintf(path, sizeof(path), "/proc/%s/mem", argv[i]);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (!base || fd < 0 ||
		    pread(fd, &b, 1, (off_t)(base + off)) != 1) {
			fprintf(stderr, "peek-malloc: cannot read process %s\n",
				argv[i]);
			rc = 2;
			printf("??\n");
		} else {
			printf("%02x\n", b);
		}
		if (fd >= 0) {
			close(fd);
		}
	}
	return rc;
}
