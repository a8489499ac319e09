/* SPDX-License-Identifier: MIT */
/*
 * Allocations through wrappers, as programs make them: my_xmalloc() is
 * called from three places, make_string() (over my_xmalloc) from two;
 * make_node() and direct_alloc() from one each; copy_text() through the
 * C library's strdup(). tests/mkrec.py puts these stacks in a recording
 * (the "wrappers" scenario), and tests/test-report.sh checks that each
 * top site is named by the frame a person would name it by.
 */
#include <stdlib.h>
#include <string.h>

#define FN __attribute__((noinline, noclone, used))

static FN void *my_xmalloc(size_t n) { void *p = malloc(n); if (!p) abort(); return p; }
static FN char *make_string(size_t n) { return my_xmalloc(n); }
static FN void *make_node(void) { return my_xmalloc(48); }
static FN char *parse_a(void) { return make_string(100); }
static FN char *parse_b(void) { return make_string(200); }
static FN void *build_tree(void) { return make_node(); }
static FN void *direct_alloc(void) { return malloc(300); }
static FN char *copy_text(const char *s) { return strdup(s); }

int main(void)
{
	void *p[6] = { parse_a(), parse_b(), build_tree(), direct_alloc(),
		       my_xmalloc(10), copy_text("text") };
	size_t i;

	for (i = 0; i < 6; i++) {
		free(p[i]);
	}
	return 0;
}
