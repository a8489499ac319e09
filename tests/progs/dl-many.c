/* SPDX-License-Identifier: MIT */
/*
 * dl-many DIR N [late]: dlopen DIR/l0.so .. DIR/l(N-1).so (copies of
 * libreuse-alpha.so: each its own file, as a plugin host's plugins are),
 * each left loaded, and allocate 40 bytes, kept, through each one's
 * alpha_alloc; with `late`, once all are loaded, 40 bytes more through
 * each, in load order (a library's code used long after it was loaded);
 * with `fork`, that late pass in a child it forks, then, once the child
 * has ended, in itself; with `dlmopen`, libm.so.6 in a namespace of its
 * own once half of them are loaded, so that the later ones are listed
 * before its objects, not after all that came before. Prints "loaded N". A profiler must record each library's
 * code once and name every one of the N blocks by alpha_alloc, called
 * from main (issue 24: past a few thousand objects the interposer's
 * fixed tables made every dlopen resend or rescan them all).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

int main(int argc, char **argv)
{
	void *(**allocs)(size_t);
	char path[4096];
	int n, i;

	if (argc < 3 || argc > 4 || (n = atoi(argv[2])) <= 0) {
		fprintf(stderr, "usage: dl-many DIR N [late]\n");
		return 2;
	}
	allocs = calloc((size_t)n, sizeof(*allocs));
	if (!allocs) {
		return 1;
	}
	for (i = 0; i < n; i++) {
		void *(*alloc)(size_t);
		void *lib, *volatile p;

		if (argc == 4 && !strcmp(argv[3], "dlmopen") && i == n / 2 &&
		    !dlmopen(LM_ID_NEWLM, "libm.so.6", RTLD_NOW)) {
			fprintf(stderr, "dl-many: dlmopen: %s\n", dlerror());
			return 1;
		}
		snprintf(path, sizeof(path), "%s/l%d.so", argv[1], i);
		lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		if (!lib) {
			fprintf(stderr, "dl-many: %s\n", dlerror());
			return 1;
		}
		alloc = (void *(*)(size_t))dlsym(lib, "alpha_alloc");
		if (!alloc) {
			fprintf(stderr, "dl-many: %s: no alpha_alloc\n", path);
			return 1;
		}
		p = alloc(40);
		(void)p;
		allocs[i] = alloc;
	}
	if (argc == 4 && !strcmp(argv[3], "fork")) {
		pid_t child = fork();
		int status;

		if (child < 0) {
			perror("dl-many: fork");
			return 1;
		}
		if (child == 0) {
			for (i = 0; i < n; i++) {
				void *volatile p = allocs[i](40);

				(void)p;
			}
			_exit(0);
		}
		if (waitpid(child, &status, 0) != child || status) {
			fprintf(stderr, "dl-many: the child failed\n");
			return 1;
		}
	}
	for (i = 0; argc == 4 && strcmp(argv[3], "dlmopen") && i < n; i++) {
		void *volatile p = allocs[i](40);

		(void)p;
	}
	printf("loaded %d\n", n);
	return 0;
}
