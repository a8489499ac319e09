/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/vma-busy.c - dlopen() each library named on the command line
 * (copies of libdlalloc.so, each its own inode) and call its tc_malloc(7000
 * + i) once, while a second thread keeps this process's mmap lock busy
 * (mprotect in a loop). BPF's lookup of each new executable mapping then
 * fails (bpf_find_vma() only try-locks the mmap lock): the eBPF source must
 * attach each library before it runs all the same (tests/test-vma-busy.sh).
 * Prints how many calls returned a block.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/mman.h>

static volatile int done;
static char *page;

static void *busy(void *arg)
{
	(void)arg;
	while (!done) {
		mprotect(page, 4096, PROT_READ);
		mprotect(page, 4096, PROT_READ | PROT_WRITE);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	void *(*alloc)(size_t);
	pthread_t t;
	int i, n = 0;

	page = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED || pthread_create(&t, NULL, busy, NULL)) {
		perror("vma-busy");
		return 1;
	}
	for (i = 1; i < argc; i++) {
		void *h = dlopen(argv[i], RTLD_NOW | RTLD_LOCAL);

		alloc = h ? (void *(*)(size_t))dlsym(h, "tc_malloc") : NULL;
		if (!alloc) {
			fprintf(stderr, "vma-busy: %s: %s\n", argv[i],
				dlerror());
			return 1;
		}
		if (alloc(7000 + (size_t)i)) {
			n++;
		}
	}
	done = 1;
	pthread_join(t, NULL);
	printf("%d\n", n);
	return 0;
}
