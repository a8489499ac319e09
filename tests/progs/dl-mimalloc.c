/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/dl-mimalloc.c - a library linked to mimalloc that the
 * program (dl-optional) only dlopens: its mi_malloc and mi_free calls are
 * the GOT entries the interposer binds after that dlopen. Built twice,
 * lazy and -z now (tests/preload.mk), where mimalloc links.
 */
#include <stddef.h>

void *mi_malloc(size_t size);
void mi_free(void *p);

void *dl_alloc(size_t size)
{
	return mi_malloc(size);
}

void dl_free(void *p)
{
	mi_free(p);
}
