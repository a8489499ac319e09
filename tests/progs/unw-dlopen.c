/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/unw-dlopen.c - dlopen(argv[1]) and call its unw_dso_f1 at
 * once (tests/progs/unw-dso.c): the allocation it makes must be unwound
 * with the library's table (tests/test-unwind.c).
 */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	int (*f1)(int);
	void *lib;

	if (argc < 2) {
		fprintf(stderr, "usage: unw-dlopen LIB.so\n");
		return 2;
	}
	lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	f1 = (int (*)(int))dlsym(lib, "unw_dso_f1");
	if (!f1) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	printf("%d\n", f1(0));
	return 0;
}
