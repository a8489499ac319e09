/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/dl-optional.c - dl-optional LIB N [default]: dlopen LIB
 * (RTLD_LOCAL), then N times dl_alloc(77777) and dl_free() of it through
 * the library's own allocator. With "default", LIB is opened RTLD_GLOBAL
 * and the program calls mi_malloc and mi_free itself, through pointers
 * from dlsym(RTLD_DEFAULT, ...). Exits 1 when a block is NULL.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	void *(*alloc)(size_t);
	void (*release)(void *);
	void *h;
	int i, n;

	int dflt = argc == 4 && !strcmp(argv[3], "default");

	if (argc != 3 && !dflt) {
		fprintf(stderr, "usage: dl-optional LIB N [default]\n");
		return 2;
	}
	h = dlopen(argv[1], RTLD_NOW | (dflt ? RTLD_GLOBAL : RTLD_LOCAL));
	if (!h) {
		fprintf(stderr, "dl-optional: %s\n", dlerror());
		return 2;
	}
	alloc = (void *(*)(size_t))dlsym(dflt ? RTLD_DEFAULT : h,
					 dflt ? "mi_malloc" : "dl_alloc");
	release = (void (*)(void *))dlsym(dflt ? RTLD_DEFAULT : h,
					  dflt ? "mi_free" : "dl_free");
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
