/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/stack-c.c - allocations in known functions, for the stacks
 * test: main -> alpha -> beta -> malloc(12345), and main -> gamma ->
 * calloc(3, 1000) twice from the same place (one stack). Built with frame
 * pointers, without optimization or inlining.
 */
#include <stdio.h>
#include <stdlib.h>

void *volatile keep[4];

__attribute__((noinline)) void beta(void)
{
	keep[0] = malloc(12345);
}

__attribute__((noinline)) void alpha(void)
{
	beta();
}

__attribute__((noinline)) void gamma_(int i)
{
	keep[1 + i] = calloc(3, 1000);
}

int main(void)
{
	int i;

	alpha();
	for (i = 0; i < 2; i++) {
		gamma_(i);
	}
	free(keep[0]);
	printf("done\n");
	return 0;
}
