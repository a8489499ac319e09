/* SPDX-License-Identifier: MIT */
/* An allocator in a library loaded with dlopen() after the program
 * started: argv[1] is libdlalloc.so, whose tc_malloc / tc_free the source
 * finds when the library is mapped. */
#include <dlfcn.h>
#include <stdlib.h>

#include "report.h"

int main(int argc, char **argv)
{
	void *(*alloc)(size_t);
	void (*release)(void *);
	void *lib, *p;

	if (argc < 2) {
		return 2;
	}
	lib = dlopen(argv[1], RTLD_NOW);
	if (!lib) {
		return 4;
	}
	alloc = (void *(*)(size_t))dlsym(lib, "tc_malloc");
	release = (void (*)(void *))dlsym(lib, "tc_free");
	if (!alloc || !release) {
		return 5;
	}
	p = alloc(70001);
	report("Malloc", p, 70001, NULL);
	release(p);
	report("Free", p, 0, NULL);
	return 0;
}
