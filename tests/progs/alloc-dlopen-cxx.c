/* SPDX-License-Identifier: MIT */
/* A C program that opens a C++ library with RTLD_LOCAL, as python opens
 * its extension modules: argv[1] is libcxxlocal.so. Its operator new
 * calls go through the preload interposer's hooks, which find the real
 * ones in the library's own scope. */
#include <dlfcn.h>
#include <stdlib.h>

#include "report.h"

int main(int argc, char **argv)
{
	int (*work)(void);
	void *lib, *p;

	if (argc < 2) {
		return 2;
	}
	lib = dlopen(argv[1], RTLD_LOCAL | RTLD_NOW);
	if (!lib) {
		return 4;
	}
	work = (int (*)(void))dlsym(lib, "cxx_work");
	if (!work || work()) {
		return 5;
	}
	p = malloc(50004);
	report("Malloc", p, 50004, NULL);
	free(p);
	report("Free", p, 0, NULL);
	return 0;
}
