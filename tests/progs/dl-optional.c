/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/dl-optional.c - dl-optional LIB N: dlopen LIB
 * (RTLD_LOCAL), then N times dl_alloc(77777) and dl_free() of it through
 * the library's own allocator. Exits 1 when a block is NULL.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	void *(*alloc)(size_t);
	void (*release)(void *);
	void *h;
	int i, n;

	if (argc != 3) {
		fprintf(stderr, "usage: dl-optional LIB N\n");
		return 2;
	}
	h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "dl-optional: %s\n", dlerror());
		return 2;
	}
	alloc = (void *(*)(size_t))dlsym(h, "dl_alloc");
	release = (void (*)(void *))dlsym(h, "dl_free");
	if (!alloc || !release) {
		fprintf(stderr, "dl-optional: %s\n", dlerror());
		return 2;
	}
	n = atoi(argv[2]);
	for (i = 0; i < n; i++) {
		void *p = alloc(77777);

		if (!p) {
			fprintf(stderr, "dl-optional: NULL block\n");
			return 1;
		}
		release(p);
	}
	return 0;
}
