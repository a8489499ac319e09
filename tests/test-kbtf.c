/* SPDX-License-Identifier: MIT */
/*
 * tests/test-kbtf.c - the eBPF source's copy of the kernel structures it
 * relocates against (plugins/ebpf/kbtf.c) says what the kernel's BTF says.
 *
 * The copy is made for memtrack's own BPF object, from this machine's
 * /sys/kernel/btf/vmlinux, and compared with the kernel's BTF as libbpf
 * reads it: every structure the object reads with BPF_CORE_READ is there,
 * with the kernel's size, member names, offsets and bit fields, down
 * through what it embeds; libbpf parses it back. A damaged file is refused.
 * As root, memtrack's eBPF source loads with the copy and libbpf never
 * reads the kernel's whole BTF. Skips (77) without kernel BTF.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <bpf/btf.h>

#include "kbtf.h"

#define VMLINUX "/sys/kernel/btf/vmlinux"

static struct btf *local, *kernel;

static void setup(void)
{
	const char *b = getenv("MT_BUILDDIR");
	char path[4096];

	snprintf(path, sizeof(path), "%s/plugins/ebpf/memtrack.bpf.o",
		 b ? b : ".");
	local = btf__parse_elf(path, NULL);
	ck_assert_msg(local, "%s: %s", path, strerror(errno));
	kernel = btf__load_vmlinux_btf();
	ck_assert_msg(kernel, VMLINUX ": %s", strerror(errno));
}

static void teardown(void)
{
	btf__free(local);
	btf__free(kernel);
}

static const struct btf_type *skip_mods(const struct btf *b, __u32 *id)
{
	const struct btf_type *t = btf__type_by_id(b, *id);

	while (btf_is_mod(t) || btf_is_typedef(t)) {
		*id = t->type;
		t = btf__type_by_id(b, *id);
	}
	return t;
}

/* The copy's type cid says what the kernel's kid does; the path for the
 * message. */
static void same(const struct btf *c, __u32 cid, __u32 kid, const char *path)
{
	const struct btf_type *ct = btf__type_by_id(c, cid);
	const struct btf_type *kt = skip_mods(kernel, &kid);

	ck_assert_msg(ct, "%s: no type %u in the copy", path, cid);
	ck_assert_msg(btf_kind(ct) == btf_kind(kt),
		      "%s: kind %u in the copy, %u in the kernel", path,
		      btf_kind(ct), btf_kind(kt));
	switch (btf_kind(kt)) {
	case BTF_KIND_PTR:
		return; /* void * in the copy, on purpose */
	case BTF_KIND_INT:
		ck_assert_msg(ct->size == kt->size &&
				      btf_int_encoding(ct) ==
					      btf_int_encoding(kt),
			      "%s: another integer", path);
		return;
	case BTF_KIND_ARRAY:
		ck_assert_msg(btf_array(ct)->nelems == btf_array(kt)->nelems,
			      "%s: %u elements, the kernel's %u", path,
			      btf_array(ct)->nelems, btf_array(kt)->nelems);
		same(c, btf_array(ct)->type, btf_array(kt)->type, path);
		return;
	case BTF_KIND_ENUM:
	case BTF_KIND_ENUM64:
		ck_assert_msg(ct->size == kt->size &&
				      btf_vlen(ct) == btf_vlen(kt),
			      "%s: another enum", path);
		return;
	case BTF_KIND_STRUCT:
	case BTF_KIND_UNION: {
		const struct btf_member *cm = btf_members(ct);
		const struct btf_member *km = btf_members(kt);

		ck_assert_msg(ct->size == kt->size,
			      "%s: %u bytes, the kernel's %u", path, ct->size,
			      kt->size);
		ck_assert_msg(btf_vlen(ct) == btf_vlen(kt),
			      "%s: %u members, the kernel's %u", path,
			      btf_vlen(ct), btf_vlen(kt));
		for (int i = 0; i < btf_vlen(kt); i++) {
			const char *cn = btf__name_by_offset(c, cm[i].name_off);
			const char *kn =
				btf__name_by_offset(kernel, km[i].name_off);
			char sub[512];

			snprintf(sub, sizeof(sub), "%s.%s", path,
				 *kn ? kn : "(anon)");
			ck_assert_msg(!strcmp(cn, kn), "%s: named %s", sub, cn);
			ck_assert_msg(btf_member_bit_offset(ct, i) ==
					      btf_member_bit_offset(kt, i),
				      "%s: at bit %u, the kernel's %u", sub,
				      btf_member_bit_offset(ct, i),
				      btf_member_bit_offset(kt, i));
			ck_assert_msg(btf_member_bitfield_size(ct, i) ==
					      btf_member_bitfield_size(kt, i),
				      "%s: another bit field", sub);
			same(c, cm[i].type, km[i].type, sub);
		}
		return;
	}
	default:
		return;
	}
}

START_TEST(test_copy_is_the_kernels)
{
	/* what memtrack.bpf.c and common/bpf/ read with BPF_CORE_READ */
	static const char *const read[] = {
		"task_struct", "pid",	"upid",	     "pid_namespace",
		"signal_struct", "mm_struct", "file", "inode",
		"super_block", "files_struct", "fdtable", "vm_area_struct",
	};
	unsigned int n = 0, compared = 0;
	struct btf *c = ebpf_kbtf_small(VMLINUX, local, &n);
	const void *raw;
	struct btf *back;
	__u32 size;

	ck_assert_msg(c, "no copy: %s", strerror(errno));
	ck_assert_uint_gt(n, sizeof(read) / sizeof(read[0]) - 1);
	for (size_t i = 0; i < sizeof(read) / sizeof(read[0]); i++) {
		ck_assert_msg(btf__find_by_name_kind(c, read[i],
						     BTF_KIND_STRUCT) > 0,
			      "struct %s is not in the copy", read[i]);
	}
	/* every named structure of the copy is the kernel's */
	for (__u32 id = 1; id < btf__type_cnt(c); id++) {
		const struct btf_type *t = btf__type_by_id(c, id);
		const char *name = btf__name_by_offset(c, t->name_off);
		__s32 kid;

		if (!btf_is_composite(t) || !*name) {
			continue;
		}
		kid = btf__find_by_name_kind(kernel, name, btf_kind(t));
		ck_assert_msg(kid > 0, "%s: not in the kernel", name);
		same(c, id, (__u32)kid, name);
		compared++;
	}
	ck_assert_uint_ge(compared, n);
	/* what libbpf gets */
	raw = btf__raw_data(c, &size);
	ck_assert_ptr_nonnull(raw);
	back = btf__new(raw, size);
	ck_assert_msg(back, "libbpf cannot read the copy back: %s",
		      strerror(errno));
	ck_assert_uint_eq(btf__type_cnt(back), btf__type_cnt(c));
	btf__free(back);
	btf__free(c);
}
END_TEST

/* A copy of the kernel's BTF file, its first len bytes, with the byte at
 * poke (if >= 0) replaced. */
static char *damaged(long len, long poke, unsigned char v)
{
	static char path[] = "/tmp/mt-kbtf-XXXXXX";
	FILE *in = fopen(VMLINUX, "rb"), *out;
	char *buf = malloc(8u << 20);
	size_t n;
	int fd;

	ck_assert_ptr_nonnull(in);
	ck_assert_ptr_nonnull(buf);
	n = fread(buf, 1, 8u << 20, in);
	fclose(in);
	ck_assert_uint_gt(n, 1000);
	if (len >= 0 && (size_t)len < n) {
		n = (size_t)len;
	}
	if (poke >= 0) {
		buf[poke] = (char)v;
	}
	strcpy(path, "/tmp/mt-kbtf-XXXXXX");
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	out = fdopen(fd, "wb");
	ck_assert_uint_eq(fwrite(buf, 1, n, out), n);
	fclose(out);
	free(buf);
	return path;
}

START_TEST(test_damaged_refused)
{
	const struct btf_header *h;
	unsigned int n;
	char hdr[sizeof(*h)];
	FILE *in = fopen(VMLINUX, "rb");
	long first_kind;
	char *p;

	ck_assert_ptr_nonnull(in);
	ck_assert_uint_eq(fread(hdr, 1, sizeof(hdr), in), sizeof(hdr));
	fclose(in);
	h = (const void *)hdr;
	/* the high byte of the first type's info word: its kind */
	first_kind = (long)(h->hdr_len + h->type_off + 4 + 3);

	p = damaged(1000, -1, 0); /* cut in the middle of the types */
	errno = 0;
	ck_assert_ptr_null(ebpf_kbtf_small(p, local, &n));
	ck_assert_int_eq(errno, EINVAL);
	unlink(p);

	p = damaged(-1, 0, 0x42); /* not BTF */
	errno = 0;
	ck_assert_ptr_null(ebpf_kbtf_small(p, local, &n));
	ck_assert_int_eq(errno, EINVAL);
	unlink(p);

	p = damaged(-1, first_kind, 0x1f); /* a kind nobody knows */
	errno = 0;
	ck_assert_ptr_null(ebpf_kbtf_small(p, local, &n));
	ck_assert_int_eq(errno, EINVAL);
	unlink(p);

	errno = 0;
	ck_assert_ptr_null(ebpf_kbtf_small("/nonexistent/vmlinux", local, &n));
	ck_assert_int_eq(errno, ENOENT);
}
END_TEST

/* The kept copy is named by the kernel's build-id and by that of the code
 * that made it (here the test, which links kbtf.c): a copy of another
 * memtrack build is never taken */
START_TEST(test_cache_name)
{
	char path[4096], want[256] = "", line[512];
	FILE *p;

	ck_assert_int_eq(setenv("MEMTRACK_TEST_KBTF_CACHE", "/nonexistent", 1),
			 0);
	ck_assert_int_eq(ebpf_kbtf_cache_path(path, sizeof(path)), 0);
	unsetenv("MEMTRACK_TEST_KBTF_CACHE");
	{
		char exe[1024], cmd[1200];
		ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

		ck_assert_int_gt(n, 0);
		exe[n] = '\0';
		snprintf(cmd, sizeof(cmd), "readelf -n '%s' 2>/dev/null", exe);
		p = popen(cmd, "r");
	}
	ck_assert_ptr_nonnull(p);
	while (fgets(line, sizeof(line), p)) {
		char *id = strstr(line, "Build ID: ");

		if (id) {
			snprintf(want, sizeof(want), "-%.*s.btf",
				 (int)strcspn(id + 10, "\n"), id + 10);
		}
	}
	pclose(p);
	if (!want[0]) {
		return; /* no readelf: binutils */
	}
	ck_assert_msg(!strncmp(path, "/nonexistent/kbtf-", 18) &&
			      strlen(path) > strlen(want) &&
			      !strcmp(path + strlen(path) - strlen(want), want),
		      "%s: not named by this build (%s)", path, want);
}
END_TEST

/* One memtrack --source ebpf -vv -- true with the copy kept in dir:
 * its status, and what it said about the kernel structures */
struct run {
	int status;
	int copied, cached, whole, again;
	char events[64];
};

static void run_memtrack(const char *dir, struct run *r)
{
	const char *b = getenv("MT_BUILDDIR");
	char cmd[8192], line[4096];
	FILE *p;

	memset(r, 0, sizeof(*r));
	snprintf(cmd, sizeof(cmd),
		 "MEMTRACK_TEST_KBTF_CACHE='%s' "
		 "MEMTRACK_PLUGIN_PATH='%s/plugins/.libs' '%s/memtrack' -vv "
		 "--source ebpf --sink file:/dev/null -- true 2>&1",
		 dir, b ? b : ".", b ? b : ".");
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	while (fgets(line, sizeof(line), p)) {
		char *e;

		r->copied |= strstr(line, "kernel structures copied") != NULL;
		r->cached |= strstr(line, "kernel structures from ") != NULL;
		r->whole |= strstr(line, "loading kernel BTF") != NULL;
		r->again |= strstr(line, "; made again") != NULL;
		if ((e = strstr(line, " events in "))) {
			snprintf(r->events, sizeof(r->events), "%.*s",
				 (int)(e - line), line);
		}
	}
	r->status = pclose(p);
	ck_assert_msg(WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0,
		      "memtrack --source ebpf -- true: status %d", r->status);
	ck_assert_msg(!r->whole, "libbpf read the kernel's whole BTF");
}

/* The one file of the copy kept in dir, in path: its mode */
static mode_t kept(const char *dir, char *path, size_t size)
{
	char cmd[4200], line[4096] = "";
	struct stat sb;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "ls '%s' | grep -c '^kbtf-.*\\.btf$'", dir);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_nonnull(fgets(line, sizeof(line), p));
	pclose(p);
	ck_assert_msg(atoi(line) == 1, "%s: %s copies kept", dir, line);
	snprintf(cmd, sizeof(cmd), "ls '%s'/kbtf-*.btf", dir);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(fgets(path, (int)size, p));
	pclose(p);
	path[strcspn(path, "\n")] = '\0';
	ck_assert_int_eq(stat(path, &sb), 0);
	return sb.st_mode & 0777;
}

/*
 * memtrack relocates with the copy: libbpf never reads the kernel's BTF.
 * The copy is kept (MEMTRACK_TEST_KBTF_CACHE for /run/memtrack) and the
 * next start takes it; a kept copy damaged, or that others may write, is
 * made again. Each run records the same. (root and BPF; without, passes
 * unless MEMTRACK_REQUIRE_BPF=1)
 */
START_TEST(test_memtrack_uses_copy)
{
	const char *req = getenv("MEMTRACK_REQUIRE_BPF");
	char dir[] = "/tmp/mt-kbtf-cache-XXXXXX", path[4200];
	struct run r1, r2, r3, r4;
	FILE *f;

	if (geteuid() != 0) {
		ck_assert_msg(!req || strcmp(req, "1"),
			      "MEMTRACK_REQUIRE_BPF=1 but not root");
		return;
	}
	ck_assert_ptr_nonnull(mkdtemp(dir));
	/* the directory is made: memtrack makes it itself, 0700 */
	ck_assert_int_eq(rmdir(dir), 0);
	run_memtrack(dir, &r1);
	ck_assert_msg(r1.copied && !r1.cached,
		      "first start: copied %d, from the kept copy %d",
		      r1.copied, r1.cached);
	ck_assert_int_eq(kept(dir, path, sizeof(path)), 0600);

	run_memtrack(dir, &r2);
	ck_assert_msg(r2.cached && !r2.copied,
		      "second start: copied %d, from the kept copy %d",
		      r2.copied, r2.cached);
	ck_assert_str_eq(r2.events, r1.events);

	/* damaged: made again, and kept anew */
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("not a BTF file\n", f);
	ck_assert_int_eq(fclose(f), 0);
	run_memtrack(dir, &r3);
	ck_assert_msg(r3.copied && !r3.cached && r3.again,
		      "damaged copy: copied %d, from it %d, said so %d",
		      r3.copied, r3.cached, r3.again);
	ck_assert_str_eq(r3.events, r1.events);
	ck_assert_int_eq(kept(dir, path, sizeof(path)), 0600);

	/* others may write it: not taken */
	ck_assert_int_eq(chmod(path, 0666), 0);
	run_memtrack(dir, &r4);
	ck_assert_msg(r4.copied && !r4.cached,
		      "a copy others may write: copied %d, from it %d",
		      r4.copied, r4.cached);
	ck_assert_int_eq(kept(dir, path, sizeof(path)), 0600);

	unlink(path);
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("kbtf");
	TCase *tc = tcase_create("kbtf");
	SRunner *sr;
	int failed;

	if (access(VMLINUX, R_OK)) {
		printf("SKIP: no kernel BTF (" VMLINUX ")\n");
		return 77;
	}
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_copy_is_the_kernels);
	tcase_add_test(tc, test_damaged_refused);
	tcase_add_test(tc, test_cache_name);
	tcase_add_test(tc, test_memtrack_uses_copy);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
