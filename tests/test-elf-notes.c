/* SPDX-License-Identifier: MIT */
/*
 * tests/test-elf-notes.c - common/elf-notes.h: the build-id of this very
 * test, read from its loaded PT_NOTE segments, is what libelf reads from
 * its file; notes padded to 8; notes cut short or lying about their sizes
 * give nothing and read nothing past the buffer.
 */
#include "config.h"

#include <check.h>
#include <fcntl.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elf-build-id.h"
#include "elf-notes.h"

/* A note of type, name "GNU", desc of dsz bytes (each 0xa0 + i), padded
 * to align; returns its length. */
static size_t note(unsigned char *p, uint32_t type, uint32_t dsz,
		   size_t align)
{
	uint32_t nsz = 4;
	size_t at = 12, i;

	memcpy(p, &nsz, 4);
	memcpy(p + 4, &dsz, 4);
	memcpy(p + 8, &type, 4);
	memcpy(p + at, "GNU", 4);
	at += (4 + align - 1) & ~(align - 1);
	for (i = 0; i < dsz; i++) {
		p[at + i] = (unsigned char)(0xa0 + i);
	}
	return at + ((dsz + align - 1) & ~(align - 1));
}

START_TEST(test_synthetic)
{
	unsigned char buf[256];
	const unsigned char *id = NULL;
	size_t n, a = _i ? 8 : 4;

	/* another note first, then the build-id */
	n = note(buf, 1, 5, a);
	n += note(buf + n, MT_NT_GNU_BUILD_ID, 20, a);
	ck_assert_uint_eq(mt_notes_build_id(buf, n, a, 64, &id), 20);
	ck_assert_ptr_eq(id, buf + n - ((20 + a - 1) & ~(a - 1)));
	ck_assert_uint_eq(id[0], 0xa0);
	ck_assert_uint_eq(id[19], 0xa0 + 19);
	/* longer than the caller takes: skipped */
	ck_assert_uint_eq(mt_notes_build_id(buf, n, a, 16, &id), 0);
	/* cut anywhere from its note's header to its descriptor's last
	 * byte: none (the padding after it may be missing) */
	for (size_t cut = note(buf, 1, 5, a) + 1;
	     cut < (size_t)(id - buf) + 20; cut++) {
		unsigned char *copy = malloc(cut); /* ASan sees a read past */

		memcpy(copy, buf, cut);
		ck_assert_uint_eq(mt_notes_build_id(copy, cut, a, 64, &id),
				  0);
		free(copy);
	}
}
END_TEST

START_TEST(test_lies)
{
	unsigned char buf[64];
	const unsigned char *id = NULL;
	uint32_t big = 0xfffffff0u;
	size_t n = note(buf, MT_NT_GNU_BUILD_ID, 8, 4);

	/* a name size, then a descriptor size, that run past the buffer
	 * (and would wrap a pointer) */
	memcpy(buf, &big, 4);
	ck_assert_uint_eq(mt_notes_build_id(buf, n, 4, 64, &id), 0);
	n = note(buf, MT_NT_GNU_BUILD_ID, 8, 4);
	memcpy(buf + 4, &big, 4);
	ck_assert_uint_eq(mt_notes_build_id(buf, n, 4, 64, &id), 0);
	/* fewer bytes than a header, and none */
	ck_assert_uint_eq(mt_notes_build_id(buf, 11, 4, 64, &id), 0);
	ck_assert_uint_eq(mt_notes_build_id(buf, 0, 4, 64, &id), 0);
}
END_TEST

struct self {
	uintptr_t addr;
	const unsigned char *id;
	size_t len;
};

static int find(struct dl_phdr_info *info, size_t size, void *data)
{
	struct self *s = data;
	int mine = 0, i;

	(void)size;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		mine |= ph->p_type == PT_LOAD && s->addr >= lo &&
			s->addr < lo + ph->p_memsz;
	}
	if (mine) {
		s->len = mt_phdr_build_id(info, 64, &s->id);
	}
	return mine;
}

START_TEST(test_self)
{
	struct self s = { (uintptr_t)(void *)find, NULL, 0 };
	unsigned char want[64];
	size_t want_len;
	Elf *elf;
	int fd;

	dl_iterate_phdr(find, &s);
	elf_version(EV_CURRENT);
	fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	ck_assert_ptr_nonnull(elf);
	want_len = mt_elf_build_id(elf, want, sizeof(want));
	elf_end(elf);
	close(fd);
	/* the toolchain gives every binary one (gcc's --build-id) */
	ck_assert_uint_ge(want_len, 16);
	ck_assert_uint_eq(s.len, want_len);
	ck_assert_mem_eq(s.id, want, want_len);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("elf-notes");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_loop_test(tc, test_synthetic, 0, 2);
	tcase_add_test(tc, test_lies);
	tcase_add_test(tc, test_self);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
