/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/unw-badfp.c - allocations made with garbage in the frame
 * pointer register, as code built without frame pointers leaves it: the
 * eBPF source's stacks must hold no frame outside an executable mapping
 * and be marked truncated (tests/test-unwind.c). unw_alloc_badfp(fp, n)
 * loads fp into rbp and calls malloc(n); it has no CFI on purpose, so that
 * no unwinder can step over it without the frame pointer.
 *   UNW_BAD_UNMAPPED (1001 bytes): rbp points nowhere
 *   UNW_BAD_DATA     (1002 bytes): rbp points to readable frames whose
 *                    return addresses are text, not code
 *   UNW_BAD_LOOP     (1003 bytes): a frame whose return address is real
 *                    code (unw_marker) and whose saved rbp points to
 *                    itself: the walk must not go round
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define UNW_BAD_UNMAPPED 1001
#define UNW_BAD_DATA 1002
#define UNW_BAD_LOOP 1003

void *unw_alloc_badfp(uint64_t fp, size_t n);
void unw_marker(void);

/* rdi: the value for rbp, rsi: the size. At entry rsp is 8 mod 16; the
 * push realigns it for the call. */
__asm__(".text\n"
	".globl unw_alloc_badfp\n"
	".type unw_alloc_badfp, @function\n"
	"unw_alloc_badfp:\n"
	"	push %rbp\n"
	"	mov %rdi, %rbp\n"
	"	mov %rsi, %rdi\n"
	"	call malloc@PLT\n"
	"	pop %rbp\n"
	"	ret\n"
	".size unw_alloc_badfp, .-unw_alloc_badfp\n");

__attribute__((noipa)) void unw_marker(void)
{
	__asm__ volatile("" ::: "memory");
}

static void *volatile keep[3];

int main(void)
{
	uint64_t frames[16];
	int i;

	keep[0] = unw_alloc_badfp(0x746f6c735f7765ull, UNW_BAD_UNMAPPED);

	/* a chain of frames going up the stack, "return addresses" made of
	 * text: readable, monotonic, and nothing but data */
	for (i = 0; i < 14; i += 2) {
		frames[i] = (uint64_t)(uintptr_t)&frames[i + 2];
		frames[i + 1] = 0x6f6c6c6568ull + (uint64_t)i;
	}
	frames[14] = 0;
	frames[15] = 0;
	keep[1] = unw_alloc_badfp((uint64_t)(uintptr_t)frames, UNW_BAD_DATA);

	/* one real return address, then a saved rbp that goes nowhere new */
	frames[0] = (uint64_t)(uintptr_t)frames;
	frames[1] = (uint64_t)(uintptr_t)unw_marker + 1;
	keep[2] = unw_alloc_badfp((uint64_t)(uintptr_t)frames, UNW_BAD_LOOP);
	__asm__ volatile("" : : "r"(frames) : "memory");

	for (i = 0; i < 3; i++) {
		free(keep[i]);
	}
	printf("done\n");
	return 0;
}
