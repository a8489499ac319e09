/* SPDX-License-Identifier: MIT */
/*
 * plugins/ebpf/kbtf.c - the kernel structures CO-RE relocates against, in
 * a BTF of their own.
 *
 * libbpf relocates each BPF_CORE_READ of the BPF object against the
 * kernel's BTF: it parses all of /sys/kernel/btf/vmlinux (5 MB, ~125K types
 * here: ~10 ms) and then scans every type once per structure relocated
 * (~1 ms each, twelve structures): ~22 ms of every start, before the
 * command may run. Here the file is read and walked once; each structure
 * the object's own BTF names is copied, with what it embeds, into a BTF of
 * a few hundred types, which libbpf gets as its btf_custom_path. It finds
 * the same offsets there: they are copied, with the member names CO-RE
 * matches by. Pointers become void pointers: CO-RE holds any pointer
 * compatible with any other, and a relocation never goes through one (each
 * hop of BPF_CORE_READ is a read of its own). Typedefs and qualifiers are
 * left out, as CO-RE skips them.
 *
 * The kernel's BTF is trusted as the kernel's own, but bounds are still
 * checked: on anything unexpected the caller lets libbpf read the kernel's
 * BTF itself.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/btf.h>
#include <sys/stat.h>

#include <bpf/btf.h>

#include "elf-notes.h"
#include "kbtf.h"

struct kbtf {
	const char *types;	/* the type section */
	uint32_t types_len;
	const char *strs;	/* the string section */
	uint32_t strs_len;
	uint32_t *off;		/* id -> offset in types; [0] unused */
	uint32_t n;		/* ids 1..n-1 */
	int *map;		/* id -> id in dst; 0: not copied yet */
	struct btf *dst;
	int void_ptr;		/* dst's void * */
};

static char *read_all(const char *path, size_t *len)
{
	size_t cap = 8u << 20, n = 0;
	char *buf = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		return NULL;
	}
	for (;;) {
		ssize_t r;

		if (n == cap || !buf) {
			char *nb = realloc(buf, buf ? cap *= 2 : cap);

			if (!nb) {
				free(buf);
				close(fd);
				errno = ENOMEM;
				return NULL;
			}
			buf = nb;
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR) {
			continue;
		}
		if (r < 0) {
			int err = errno;

			free(buf);
			close(fd);
			errno = err;
			return NULL;
		}
		if (r == 0) {
			break;
		}
		n += (size_t)r;
	}
	close(fd);
	*len = n;
	return buf;
}

static const struct btf_type *ty(const struct kbtf *k, uint32_t id)
{
	return (const struct btf_type *)(k->types + k->off[id]);
}

/* NULL for an offset out of the string section */
static const char *str(const struct kbtf *k, uint32_t off)
{
	if (off >= k->strs_len) {
		return NULL;
	}
	/* the section ends with a NUL: checked in parse() */
	return k->strs + off;
}

/* The bytes that follow a btf_type of this kind and vlen; -1: unknown. */
static long extra_size(uint32_t kind, uint32_t vlen)
{
	switch (kind) {
	case BTF_KIND_INT:
	case BTF_KIND_VAR:
	case BTF_KIND_DECL_TAG:
		return 4;
	case BTF_KIND_PTR:
	case BTF_KIND_FWD:
	case BTF_KIND_TYPEDEF:
	case BTF_KIND_VOLATILE:
	case BTF_KIND_CONST:
	case BTF_KIND_RESTRICT:
	case BTF_KIND_FUNC:
	case BTF_KIND_FLOAT:
	case BTF_KIND_TYPE_TAG:
		return 0;
	case BTF_KIND_ARRAY:
		return (long)sizeof(struct btf_array);
	case BTF_KIND_STRUCT:
	case BTF_KIND_UNION:
		return (long)vlen * (long)sizeof(struct btf_member);
	case BTF_KIND_ENUM:
		return (long)vlen * (long)sizeof(struct btf_enum);
	case BTF_KIND_ENUM64:
		return (long)vlen * (long)sizeof(struct btf_enum64);
	case BTF_KIND_FUNC_PROTO:
		return (long)vlen * (long)sizeof(struct btf_param);
	case BTF_KIND_DATASEC:
		return (long)vlen * (long)sizeof(struct btf_var_secinfo);
	default:
		return -1;
	}
}

/* Index the types of a raw BTF file; 0 or -EINVAL. */
static int parse(struct kbtf *k, const char *buf, size_t len)
{
	const struct btf_header *h = (const void *)buf;
	uint32_t pos = 0, cap = 1u << 17;

	if (len < sizeof(*h) || h->magic != BTF_MAGIC ||
	    h->hdr_len < sizeof(*h) || h->hdr_len > len ||
	    (uint64_t)h->type_off + h->type_len > len - h->hdr_len ||
	    (uint64_t)h->str_off + h->str_len > len - h->hdr_len ||
	    h->str_len == 0) {
		return -EINVAL;
	}
	k->types = buf + h->hdr_len + h->type_off;
	k->types_len = h->type_len;
	k->strs = buf + h->hdr_len + h->str_off;
	k->strs_len = h->str_len;
	if (k->strs[k->strs_len - 1] != '\0') {
		return -EINVAL;
	}
	k->off = malloc(cap * sizeof(*k->off));
	if (!k->off) {
		return -ENOMEM;
	}
	k->n = 1;
	while (pos < k->types_len) {
		const struct btf_type *t;
		long extra;

		if (k->types_len - pos < sizeof(*t)) {
			return -EINVAL;
		}
		t = (const void *)(k->types + pos);
		extra = extra_size(BTF_INFO_KIND(t->info),
				   BTF_INFO_VLEN(t->info));
		if (extra < 0 ||
		    (uint64_t)k->types_len - pos - sizeof(*t) <
			    (uint64_t)extra) {
			return -EINVAL;
		}
		if (k->n == cap) {
			uint32_t *no = realloc(k->off,
					       (size_t)(cap *= 2) *
						       sizeof(*k->off));

			if (!no) {
				return -ENOMEM;
			}
			k->off = no;
		}
		k->off[k->n++] = pos;
		pos += (uint32_t)(sizeof(*t) + (size_t)extra);
	}
	return 0;
}

/* The id of type id's copy in dst; < 0: an error of libbpf's or -EINVAL. */
static int copy(struct kbtf *k, uint32_t id)
{
	const struct btf_type *t;
	const char *name;
	uint32_t kind, vlen;
	int r;

	if (id == 0) {
		return 0; /* void */
	}
	if (id >= k->n) {
		return -EINVAL;
	}
	if (k->map[id]) {
		return k->map[id];
	}
	t = ty(k, id);
	kind = BTF_INFO_KIND(t->info);
	vlen = BTF_INFO_VLEN(t->info);
	name = str(k, t->name_off);
	if (!name) {
		return -EINVAL;
	}
	switch (kind) {
	case BTF_KIND_TYPEDEF:
	case BTF_KIND_VOLATILE:
	case BTF_KIND_CONST:
	case BTF_KIND_RESTRICT:
	case BTF_KIND_TYPE_TAG:
		r = copy(k, t->type);
		break;
	case BTF_KIND_PTR:
		if (!k->void_ptr) {
			k->void_ptr = btf__add_ptr(k->dst, 0);
		}
		r = k->void_ptr;
		break;
	case BTF_KIND_INT: {
		uint32_t info = *(const uint32_t *)(t + 1);

		r = btf__add_int(k->dst, name, t->size, BTF_INT_ENCODING(info));
		break;
	}
	case BTF_KIND_FLOAT:
		r = btf__add_float(k->dst, name, t->size);
		break;
	case BTF_KIND_FWD:
		r = btf__add_fwd(k->dst, name,
				 BTF_INFO_KFLAG(t->info) ? BTF_FWD_UNION :
							   BTF_FWD_STRUCT);
		break;
	case BTF_KIND_ARRAY: {
		const struct btf_array *a = (const void *)(t + 1);
		int elem = copy(k, a->type), index = copy(k, a->index_type);

		if (elem < 0 || index < 0) {
			return elem < 0 ? elem : index;
		}
		r = btf__add_array(k->dst, index, elem, a->nelems);
		break;
	}
	case BTF_KIND_ENUM: {
		const struct btf_enum *e = (const void *)(t + 1);

		r = btf__add_enum(k->dst, name, t->size);
		for (uint32_t i = 0; r > 0 && i < vlen; i++) {
			const char *vn = str(k, e[i].name_off);
			int err = vn ? btf__add_enum_value(k->dst, vn, e[i].val) :
				       -EINVAL;

			if (err) {
				return err;
			}
		}
		break;
	}
	case BTF_KIND_ENUM64: {
		const struct btf_enum64 *e = (const void *)(t + 1);

		r = btf__add_enum64(k->dst, name, t->size,
				    BTF_INFO_KFLAG(t->info));
		for (uint32_t i = 0; r > 0 && i < vlen; i++) {
			const char *vn = str(k, e[i].name_off);
			uint64_t v = (uint64_t)e[i].val_hi32 << 32 |
				     e[i].val_lo32;
			int err = vn ? btf__add_enum64_value(k->dst, vn, v) :
				       -EINVAL;

			if (err) {
				return err;
			}
		}
		break;
	}
	case BTF_KIND_STRUCT:
	case BTF_KIND_UNION: {
		const struct btf_member *m = (const void *)(t + 1);
		int kflag = BTF_INFO_KFLAG(t->info);
		int *ids = malloc((vlen ? vlen : 1) * sizeof(*ids));

		if (!ids) {
			return -ENOMEM;
		}
		/* the members' types first: fields follow their type */
		for (uint32_t i = 0; i < vlen; i++) {
			ids[i] = copy(k, m[i].type);
			if (ids[i] < 0) {
				r = ids[i];
				free(ids);
				return r;
			}
		}
		r = kind == BTF_KIND_STRUCT ?
			    btf__add_struct(k->dst, *name ? name : NULL,
					    t->size) :
			    btf__add_union(k->dst, *name ? name : NULL,
					   t->size);
		for (uint32_t i = 0; r > 0 && i < vlen; i++) {
			const char *mn = str(k, m[i].name_off);
			uint32_t bit = kflag ? BTF_MEMBER_BIT_OFFSET(m[i].offset) :
					       m[i].offset;
			uint32_t bits = kflag ?
						BTF_MEMBER_BITFIELD_SIZE(m[i].offset) :
						0;
			int err = mn ? btf__add_field(k->dst, *mn ? mn : NULL,
						      ids[i], bit, bits) :
				       -EINVAL;

			if (err) {
				free(ids);
				return err;
			}
		}
		free(ids);
		break;
	}
	default:
		/* functions, variables, sections: never inside a structure */
		return -EINVAL;
	}
	if (r > 0) {
		k->map[id] = r;
	}
	return r;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* the length of "name" in "name___flavour", as CO-RE matches */
static size_t essential_len(const char *name)
{
	const char *f = strstr(name, "___");

	return f ? (size_t)(f - name) : strlen(name);
}

struct btf *ebpf_kbtf_small(const char *vmlinux_path, const struct btf *local,
			    unsigned int *ncopied)
{
	struct kbtf k = { 0 };
	const char **want = NULL;
	size_t len, nwant = 0;
	uint32_t nlocal = btf__type_cnt(local);
	struct btf *dst = NULL;
	char *buf;
	int err;

	*ncopied = 0;
	buf = read_all(vmlinux_path, &len);
	if (!buf) {
		return NULL;
	}
	err = parse(&k, buf, len);
	if (err) {
		goto out;
	}
	/* the names of local's structures (essential: CO-RE's), sorted */
	want = calloc(nlocal, sizeof(*want));
	if (!want) {
		err = -ENOMEM;
		goto out;
	}
	for (uint32_t id = 1; id < nlocal; id++) {
		const struct btf_type *t = btf__type_by_id(local, id);
		const char *name;

		if (!btf_is_composite(t)) {
			continue;
		}
		name = btf__name_by_offset(local, t->name_off);
		if (name && *name) {
			want[nwant] = strndup(name, essential_len(name));
			if (!want[nwant++]) {
				err = -ENOMEM;
				goto out;
			}
		}
	}
	qsort(want, nwant, sizeof(*want), cmp_str);

	k.map = calloc(k.n, sizeof(*k.map));
	k.dst = btf__new_empty();
	if (!k.map || !k.dst) {
		err = -ENOMEM;
		goto out;
	}
	for (uint32_t id = 1; id < k.n; id++) {
		const struct btf_type *t = ty(&k, id);
		uint32_t kind = BTF_INFO_KIND(t->info);
		const char *name;

		if ((kind != BTF_KIND_STRUCT && kind != BTF_KIND_UNION) ||
		    !t->name_off) {
			continue;
		}
		name = str(&k, t->name_off);
		if (!name) {
			err = -EINVAL;
			goto out;
		}
		if (bsearch(&name, want, nwant, sizeof(*want), cmp_str)) {
			err = copy(&k, id);
			if (err < 0) {
				goto out;
			}
			(*ncopied)++;
		}
	}
	err = 0;
	dst = k.dst;
	k.dst = NULL;
out:
	btf__free(k.dst);
	free(k.map);
	free(k.off);
	for (size_t i = 0; i < nwant; i++) {
		free((char *)want[i]);
	}
	free(want);
	free(buf);
	if (err < 0) {
		errno = -err;
		return NULL;
	}
	return dst;
}

/* ------------------------------------------------------------------ */
/* The copy kept for the next starts                                    */
/* ------------------------------------------------------------------ */

/*
 * The copy costs 10-20 ms of every start (reading 5 MB, walking 125K
 * types) and is the same at every start of one memtrack on one kernel.
 * It is kept in /run/memtrack (a tmpfs emptied at boot), root's alone,
 * named by the running kernel's build-id (/sys/kernel/notes: the kernel
 * the BTF describes) and by this code's own (the BPF object it copies for
 * and the copier, whatever changed in either); without both, nothing is
 * kept. A file is used only when it is a regular file of ours that
 * nobody else may write and a BTF; anything else is made again and
 * replaces it.
 */
/* A build-id of len bytes (0: none) in hex: 0, or -1. */
static int to_hex(const unsigned char *id, size_t len, char *hex,
		  size_t size)
{
	if (!len || size <= 2 * len) {
		return -1;
	}
	for (size_t i = 0; i < len; i++) {
		snprintf(hex + 2 * i, 3, "%02x", id[i]);
	}
	return 0;
}

/* The running kernel's build-id (the kernel its BTF describes). */
static int kernel_build_id(char *hex, size_t size)
{
	const unsigned char *id = NULL;
	unsigned char buf[4096];
	size_t len = 0;
	ssize_t n;
	int fd = open("/sys/kernel/notes", O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		return -1;
	}
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n > 0) {
		len = mt_notes_build_id(buf, (size_t)n, 4, 64, &id);
	}
	return to_hex(id, len, hex, size);
}

/* This code's own build-id (of the plugin, or of the test that links
 * kbtf.c): the object and this copier, whatever changes in either */
struct self_id {
	uintptr_t addr;
	char *hex;
	size_t size;
	int found;
};

static int find_self(struct dl_phdr_info *info, size_t size, void *data)
{
	struct self_id *s = data;
	const unsigned char *id = NULL;
	size_t len;
	int mine = 0;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		mine |= ph->p_type == PT_LOAD && s->addr >= lo &&
			s->addr < lo + ph->p_memsz;
	}
	if (!mine) {
		return 0;
	}
	len = mt_phdr_build_id(info, 64, &id);
	s->found = !to_hex(id, len, s->hex, s->size);
	return 1;
}

static int self_build_id(char *hex, size_t size)
{
	struct self_id s = { (uintptr_t)(void *)find_self, hex, size, 0 };

	dl_iterate_phdr(find_self, &s);
	return s.found ? 0 : -1;
}

int ebpf_kbtf_cache_path(char *path, size_t size)
{
	const char *dir = getenv("MEMTRACK_TEST_KBTF_CACHE");
	char kid[132], sid[132];

	if (kernel_build_id(kid, sizeof(kid)) ||
	    self_build_id(sid, sizeof(sid))) {
		return -1;
	}
	if (!dir || !*dir) {
		dir = "/run/memtrack";
	}
	return snprintf(path, size, "%s/kbtf-%s-%s.btf", dir, kid, sid) <
			       (int)size ?
		       0 :
		       -1;
}

/* Ours, and nobody else's to write. */
static int ours(const struct stat *sb)
{
	return sb->st_uid == geteuid() && !(sb->st_mode & 022);
}

struct btf *ebpf_kbtf_cache_load(const char *path)
{
	struct stat sb;

	if (lstat(path, &sb) || !S_ISREG(sb.st_mode) || !ours(&sb) ||
	    sb.st_size > (16 << 20)) {
		errno = ENOENT;
		return NULL;
	}
	/* what it holds is bound to the kernel and the object by its name;
	 * a damaged file fails here, or libbpf's open */
	return btf__parse_raw(path);
}

void ebpf_kbtf_cache_store(const char *path, const void *raw, size_t size)
{
	char dir[4096], tmp[4200];
	const char *slash = strrchr(path, '/');
	struct stat sb;
	int fd;

	if (!slash || (size_t)(slash - path) >= sizeof(dir)) {
		return;
	}
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	if (mkdir(dir, 0700) && errno != EEXIST) {
		return;
	}
	if (lstat(dir, &sb) || !S_ISDIR(sb.st_mode) || !ours(&sb)) {
		return; /* not a directory of ours alone */
	}
	snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path);
	fd = mkstemp(tmp);
	if (fd < 0) {
		return;
	}
	if (write(fd, raw, size) != (ssize_t)size || close(fd) ||
	    rename(tmp, path)) {
		unlink(tmp);
	}
}
