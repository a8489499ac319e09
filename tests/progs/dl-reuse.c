/* SPDX-License-Identifier: MIT */
/*
 * dl-reuse A B: dlopen A (libreuse-alpha.so), 1000 blocks of 40 bytes
 * from its alpha_alloc, kept; dlclose it; dlopen B (libreuse-gamma.so),
 * which the loader maps where A was, and 1000 blocks of 40 bytes from its
 * gamma_alloc, kept. Prints "base A 0x..." and "base B 0x...": where each
 * library's function was (the test checks that the two coincide: else it
 * proves nothing). The stacks of the two sites are the same return
 * addresses; a profiler must still name the second gamma_alloc
 * (issue 24, item 3).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

static void *volatile keep[2000];

static int run(const char *path, const char *sym, const char *tag, int at)
{
	void *(*alloc)(size_t);
	void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	int i;

	if (!lib) {
		fprintf(stderr, "dl-reuse: %s\n", dlerror());
		return 1;
	}
	alloc = (void *(*)(size_t))dlsym(lib, sym);
	if (!alloc) {
		fprintf(stderr, "dl-reuse: %s: no %s\n", path, sym);
		return 1;
	}
	printf("base %s %p\n", tag, (void *)alloc);
	fflush(stdout);
	for (i = 0; i < 1000; i++) {
		keep[at + i] = alloc(40);
	}
	return dlclose(lib) != 0;
}

int main(int argc, char **argv)
{
	static const char *const syms[] = { "alpha_alloc", "gamma_alloc" };
	static const char *const tags[] = { "A", "B" };
	int k;

	if (argc != 3) {
		return 2;
	}
	/* one call site for both: the two stacks are the same addresses */
	for (k = 0; k < 2; k++) {
		if (run(argv[1 + k], syms[k], tags[k], 1000 * k)) {
			return 1;
		}
	}
	return 0;
}
