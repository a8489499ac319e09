/* SPDX-License-Identifier: MIT */
/*
 * tests/ebpf-testlib.c - see ebpf-testlib.h.
 *
 * The recording is decoded with the msgpack-zstd encoder plugin's decoder
 * ($MEMTRACK_PLUGIN_PATH/encoder-msgpack-zstd.so), so the test reads what
 * any consumer of the file would read.
 */
#include "config.h"

#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>

#include <memtrack/plugin.h>

#include "ebpf-testlib.h"

static void test_log(const struct mt_host *host, enum mt_log_level level,
		     const char *plugin, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", plugin ? plugin : "test");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static const struct mt_host test_host = {
	MT_OPS_HEADER(mt_host),
	.log = test_log,
	.log_level = MT_LOG_WARN,
};

/* Root is not always enough (a container without BPF, a kernel built
 * without some helper): ask the plugin itself, with a command that does
 * nothing. Returns why it cannot trace, or NULL. */
static const char *probe_source(void)
{
	static const char *const known[] = {
		"needs root", "kernel lacks", "tracefs", "cannot load the BPF",
		"cannot open the BPF", "cannot attach the tracepoints",
	};
	static char why[512];
	const char *argv[] = { "/bin/true", NULL };
	struct ebpf_trace t;
	const char *ret = NULL;
	size_t i;

	if (ebpf_trace_run(NULL, argv, &t) || t.status == 0) {
		ebpf_trace_free(&t);
		return NULL; /* works, or fails for a reason tests must show */
	}
	for (i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		if (t.err && strstr(t.err, known[i])) {
			snprintf(why, sizeof(why), "%s", t.err);
			why[strcspn(why, "\n")] = '\0';
			ret = why;
			break;
		}
	}
	ebpf_trace_free(&t);
	return ret;
}

void ebpf_require_bpf(void)
{
	const char *req = getenv("MEMTRACK_REQUIRE_BPF");
	int required = req && !strcmp(req, "1");
	const char *why = NULL;

	/* A package build may run as root on a machine with BPF: it asks
	 * for the tests that need neither (debian/rules). */
	if (getenv("MEMTRACK_NO_BPF")) {
		why = "MEMTRACK_NO_BPF is set";
	} else if (geteuid() != 0) {
		why = "not root";
	} else if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		why = "kernel without BTF";
	} else if (access("/sys/bus/event_source/devices/uprobe/type", R_OK)) {
		why = "kernel without uprobes";
	}
	if (!why) {
		why = probe_source();
	}
	if (!why) {
		return;
	}
	if (required) {
		fprintf(stderr, "FAIL: BPF required (MEMTRACK_REQUIRE_BPF=1): %s\n",
			why);
		exit(99);
	}
	fprintf(stderr, "SKIP: %s\n", why);
	exit(77);
}

const char *ebpf_builddir(void)
{
	const char *b = getenv("MT_BUILDDIR");

	return b ? b : ".";
}

const char *ebpf_prog(const char *name)
{
	static char path[4096];

	snprintf(path, sizeof(path), "%s/tests/progs/%s", ebpf_builddir(),
		 name);
	return path;
}

int ebpf_memtrack_refuses(const char *opts, const char *message)
{
	char *cmd = NULL, buf[1024];
	size_t len;
	FILE *f;
	int ok;

	if (asprintf(&cmd, "%s/memtrack %s --sink file:/dev/null -- /bin/true 2>&1",
		     ebpf_builddir(), opts) < 0) {
		return 0;
	}
	f = popen(cmd, "r");
	if (!f) {
		fprintf(stderr, "%s: %s\n", cmd, strerror(errno));
		free(cmd);
		return 0;
	}
	len = fread(buf, 1, sizeof(buf) - 1, f);
	buf[len] = '\0';
	ok = pclose(f) != 0 && strstr(buf, message) != NULL;
	if (!ok) {
		fprintf(stderr, "%s: %s\n", cmd, buf);
	}
	free(cmd);
	return ok;
}

static char *slurp(int fd)
{
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap);
	ssize_t n;

	if (!buf) {
		return NULL;
	}
	lseek(fd, 0, SEEK_SET);
	while ((n = read(fd, buf + len, cap - len - 1)) > 0) {
		len += (size_t)n;
		if (cap - len < 2) {
			char *p = realloc(buf, cap * 2);

			if (!p) {
				free(buf);
				return NULL;
			}
			buf = p;
			cap *= 2;
		}
	}
	buf[len] = '\0';
	return buf;
}

static int parse_kind(const char *s)
{
	unsigned int k;

	if (!strcmp(s, "Nothing")) {
		return -1;
	}
	for (k = 0; k < MT_EV_KIND_COUNT; k++) {
		if (!strcmp(s, mt_event_kind_name(k))) {
			return (int)k;
		}
	}
	return -2;
}

static int parse_expectations(struct ebpf_trace *t)
{
	char *line, *save = NULL, *copy = strdup(t->out);
	size_t cap = 0;

	if (!copy) {
		return -1;
	}
	for (line = strtok_r(copy, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		struct ebpf_expect e;
		char kind[32];
		unsigned long long addr, size, old;
		int pid, tid, ns_pid, ns_tid, n;

		n = sscanf(line, "%31s %d %d %lli %llu %lli %d %d", kind, &pid,
			   &tid, &addr, &size, &old, &ns_pid, &ns_tid);
		if ((n != 6 && n != 8) || (e.kind = parse_kind(kind)) < -1) {
			continue; /* not a report line */
		}
		e.pid = pid;
		e.tid = tid;
		e.ns_pid = n == 8 ? ns_pid : pid;
		e.ns_tid = n == 8 ? ns_tid : tid;
		e.addr = addr;
		e.size = size;
		e.old_addr = old;
		if (t->nexp == cap) {
			void *p;

			cap = cap ? 2 * cap : 64;
			p = realloc(t->exp, cap * sizeof(*t->exp));
			if (!p) {
				free(copy);
				return -1;
			}
			t->exp = p;
		}
		t->exp[t->nexp++] = e;
	}
	free(copy);
	return 0;
}

struct collect {
	struct ebpf_trace *t;
	size_t cap;
};

static int on_events(void *ctx, const struct mt_event *events, size_t count)
{
	struct collect *c = ctx;
	struct ebpf_trace *t = c->t;

	if (t->nev + count > c->cap) {
		size_t cap = c->cap ? c->cap : 1024;
		void *p;

		while (cap < t->nev + count) {
			cap *= 2;
		}
		p = realloc(t->ev, cap * sizeof(*t->ev));
		if (!p) {
			return -ENOMEM;
		}
		t->ev = p;
		c->cap = cap;
	}
	memcpy(t->ev + t->nev, events, count * sizeof(*events));
	t->nev += count;
	return 0;
}

/* An MTKW payload (plugins/ebpf/README.md): header, then per record u32
 * pid, u32 who, u64 ts. A payload of any other length is not kept. */
static int on_meta(void *ctx, unsigned int variant, const void *data,
		   size_t len)
{
	struct collect *c = ctx;
	struct ebpf_trace *t = c->t;
	const unsigned char *p = data;
	uint32_t n;
	void *more;

	(void)variant;
	if (len < 16 || memcmp(p, "MTKW", 4)) {
		return 0;
	}
	memcpy(&n, p + 8, 4);
	if (len != 16 + (size_t)n * 16) {
		fprintf(stderr, "an MTKW payload of %zu bytes for %u records\n",
			len, n);
		return -EINVAL;
	}
	more = realloc(t->rec, (t->nrec + n) * sizeof(*t->rec));
	if (!more) {
		return -ENOMEM;
	}
	t->rec = more;
	for (uint32_t i = 0; i < n; i++) {
		memcpy(&t->rec[t->nrec].pid, p + 16 + 16 * i, 4);
		memcpy(&t->rec[t->nrec].who, p + 20 + 16 * i, 4);
		t->nrec++;
	}
	return 0;
}

uint32_t ebpf_trace_recorder(const struct ebpf_trace *t, int32_t pid)
{
	uint32_t who = 0;

	for (size_t i = 0; i < t->nrec; i++) {
		if (t->rec[i].pid == pid) {
			who = t->rec[i].who; /* the last: a pid reused */
		}
	}
	return who;
}

static int decode_file(const char *file, struct ebpf_trace *t)
{
	const char *dir = getenv("MEMTRACK_PLUGIN_PATH");
	const struct mt_plugin_desc *desc;
	const struct mt_encoder_ops *enc;
	struct collect c = { .t = t };
	mt_plugin_entry_fn entry;
	void *lib, *state = NULL;
	char path[4096];
	struct stat st;
	int fd, err = -1;

	snprintf(path, sizeof(path), "%s/encoder-msgpack-zstd.so",
		 dir ? dir : "plugins/.libs");
	lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "cannot load %s: %s\n", path, dlerror());
		return -1;
	}
	entry = (mt_plugin_entry_fn)dlsym(lib, MT_PLUGIN_ENTRY_SYMBOL);
	desc = entry ? entry() : NULL;
	enc = desc ? desc->ops.encoder : NULL;
	if (!enc || !enc->decode || enc->create(&test_host, NULL, &state)) {
		fprintf(stderr, "%s: no usable decoder\n", path);
		goto end;
	}
	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "cannot open %s: %s\n", file, strerror(errno));
		goto end;
	}
	if (fstat(fd, &st) == 0 && st.st_size == 0) {
		/* memtrack killed (SIGKILL) before its first frame: no
		 * events, and no recording for the decoder to read */
		close(fd);
		err = 0;
		goto end;
	}
	err = enc->decode(state, fd, file, on_events, on_meta, &c);
	close(fd);
	if (err) {
		fprintf(stderr, "decoding %s failed: %d\n", file, err);
		err = -1;
	}
end:
	if (state) {
		enc->destroy(state);
	}
	dlclose(lib);
	return err;
}

int ebpf_trace_run(const char *const *opts, const char *const *argv,
		   struct ebpf_trace *t)
{
	return ebpf_trace_run_source("ebpf", opts, argv, t);
}

int ebpf_trace_start(const char *source, const char *const *opts,
		     const char *const *argv, struct ebpf_trace *t)
{
	char memtrack[4096], sinkarg[64];
	char outf[] = "/tmp/mt-ebpf-out-XXXXXX";
	char errf[] = "/tmp/mt-ebpf-err-XXXXXX";
	const char *args[64];
	int fd, n = 0;
	size_t i;
	pid_t pid;

	memset(t, 0, sizeof(*t));
	t->ofd = t->efd = -1;
	t->pid = -1;
	snprintf(t->file, sizeof(t->file), "/tmp/mt-ebpf-test-XXXXXX");
	snprintf(memtrack, sizeof(memtrack), "%s/memtrack", ebpf_builddir());
	fd = mkstemp(t->file);
	t->ofd = mkstemp(outf);
	t->efd = mkstemp(errf);
	if (fd < 0 || t->ofd < 0 || t->efd < 0) {
		perror("mkstemp");
		return -1;
	}
	close(fd);
	unlink(outf);
	unlink(errf);
	snprintf(sinkarg, sizeof(sinkarg), "file:%s", t->file);

	args[n++] = memtrack;
	for (i = 0; opts && opts[i] && n < 40; i++) {
		args[n++] = opts[i];
	}
	args[n++] = "--source";
	args[n++] = source;
	args[n++] = "--sink";
	args[n++] = sinkarg;
	args[n++] = "--";
	for (i = 0; argv[i] && n < 63; i++) {
		args[n++] = argv[i];
	}
	args[n] = NULL;

	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return -1;
	}
	if (pid == 0) {
		dup2(t->ofd, 1);
		dup2(t->efd, 2);
		execv(memtrack, (char *const *)args);
		fprintf(stderr, "cannot run %s: %s\n", memtrack,
			strerror(errno));
		_exit(127);
	}
	t->pid = pid;
	return 0;
}

char *ebpf_trace_peek(const struct ebpf_trace *t)
{
	return slurp(t->ofd);
}

int ebpf_trace_finish(struct ebpf_trace *t)
{
	int status, ret = -1;

	while (waitpid(t->pid, &status, 0) < 0) {
		if (errno != EINTR) {
			perror("waitpid");
			goto end;
		}
	}
	t->status = WIFEXITED(status) ? WEXITSTATUS(status) :
					128 + WTERMSIG(status);
	t->out = slurp(t->ofd);
	t->err = slurp(t->efd);
	if (!t->out || !t->err) {
		goto end;
	}
	if (t->status != 0) {
		fprintf(stderr, "memtrack exited with %d; stderr:\n%s\n",
			t->status, t->err);
	}
	if (parse_expectations(t) || decode_file(t->file, t)) {
		goto end;
	}
	ret = 0;
end:
	close(t->ofd);
	close(t->efd);
	t->ofd = t->efd = -1;
	unlink(t->file);
	return ret;
}

int ebpf_trace_run_source(const char *source, const char *const *opts,
			  const char *const *argv, struct ebpf_trace *t)
{
	if (ebpf_trace_start(source, opts, argv, t)) {
		if (t->ofd >= 0) {
			close(t->ofd);
		}
		if (t->efd >= 0) {
			close(t->efd);
		}
		unlink(t->file);
		return -1;
	}
	return ebpf_trace_finish(t);
}

void ebpf_trace_free(struct ebpf_trace *t)
{
	free(t->ev);
	free(t->rec);
	free(t->exp);
	free(t->out);
	free(t->err);
	memset(t, 0, sizeof(*t));
}

size_t ebpf_count_size(const struct ebpf_trace *t, uint64_t size)
{
	size_t i, n = 0;

	for (i = 0; i < t->nev; i++) {
		if (t->ev[i].kind != MT_EV_FREE && t->ev[i].size == size) {
			n++;
		}
	}
	return n;
}

static int is_alloc(int kind)
{
	return kind == MT_EV_MALLOC || kind == MT_EV_CALLOC ||
	       kind == MT_EV_REALLOC || kind == MT_EV_ALIGNED_ALLOC;
}

static const char *kname(int kind)
{
	return kind < 0 ? "Nothing" : mt_event_kind_name((unsigned)kind);
}

/*
 * Allocations: exactly one event of that size exists, of that kind, address,
 * process and thread (sizes are unique per call, so an inner call reported
 * too shows up as a second event of the same size). Frees: exactly one Free
 * of the address by that thread between the event of the allocation the
 * program made last at that address and the next allocation there.
 * Mmap/Munmap/Brk: exactly one event of that kind, address and size.
 */
int ebpf_trace_check(const struct ebpf_trace *t)
{
	size_t *match, i, j;
	int bad = 0;

	match = calloc(t->nexp ? t->nexp : 1, sizeof(*match));
	if (!match) {
		return 1;
	}
	for (i = 0; i < t->nexp; i++) {
		const struct ebpf_expect *x = &t->exp[i];
		size_t n = 0, at = (size_t)-1;

		match[i] = (size_t)-1;
		if (x->kind < 0) {
			n = ebpf_count_size(t, x->size);
			if (n) {
				fprintf(stderr,
					"expected no event of size %llu, got %zu\n",
					(unsigned long long)x->size, n);
				bad++;
			}
			continue;
		}
		if (is_alloc(x->kind)) {
			for (j = 0; j < t->nev; j++) {
				if (t->ev[j].kind != MT_EV_FREE &&
				    t->ev[j].size == x->size &&
				    t->ev[j].kind <= MT_EV_ALIGNED_ALLOC) {
					n++;
					at = j;
				}
			}
		} else if (x->kind == MT_EV_FREE) {
			size_t from = 0, to = t->nev;

			/* the allocation it frees: the program's last one at
			 * this address */
			for (j = i; j-- > 0;) {
				if (is_alloc(t->exp[j].kind) &&
				    t->exp[j].addr == x->addr &&
				    match[j] != (size_t)-1) {
					from = match[j] + 1;
					break;
				}
			}
			for (j = from; j < t->nev; j++) {
				if (j > from && is_alloc(t->ev[j].kind) &&
				    t->ev[j].addr == x->addr) {
					to = j;
					break;
				}
			}
			for (j = from; j < to; j++) {
				if (t->ev[j].kind == MT_EV_FREE &&
				    t->ev[j].addr == x->addr &&
				    t->ev[j].tid == x->tid) {
					n++;
					at = j;
				}
			}
		} else {
			for (j = 0; j < t->nev; j++) {
				if (t->ev[j].kind == x->kind &&
				    t->ev[j].addr == x->addr &&
				    t->ev[j].size == x->size &&
				    t->ev[j].tid == x->tid) {
					n++;
					at = j;
				}
			}
		}
		if (n != 1) {
			fprintf(stderr,
				"expected one %s addr %#llx size %llu pid %d tid %d, found %zu\n",
				kname(x->kind), (unsigned long long)x->addr,
				(unsigned long long)x->size, x->pid, x->tid, n);
			bad++;
			continue;
		}
		{
			const struct mt_event *e = &t->ev[at];
			/* a Realloc always has old_addr, 0 for
			 * realloc(NULL, n), as the reference writes it */
			int want_old = x->kind == MT_EV_REALLOC;

			if (e->kind != x->kind || e->addr != x->addr ||
			    e->pid != x->pid || e->tid != x->tid ||
			    (x->kind != MT_EV_FREE && e->size != x->size) ||
			    !!(e->flags & MT_EVF_OLD_ADDR) != want_old ||
			    (want_old && e->old_addr != x->old_addr)) {
				fprintf(stderr,
					"expected %s addr %#llx size %llu old %#llx pid %d tid %d, got %s addr %#llx size %llu old %#llx%s pid %d tid %d\n",
					kname(x->kind),
					(unsigned long long)x->addr,
					(unsigned long long)x->size,
					(unsigned long long)x->old_addr,
					x->pid, x->tid, kname(e->kind),
					(unsigned long long)e->addr,
					(unsigned long long)e->size,
					(unsigned long long)e->old_addr,
					e->flags & MT_EVF_OLD_ADDR ? "" :
								     " (none)",
					e->pid, e->tid);
				bad++;
				continue;
			}
		}
		match[i] = at;
	}
	free(match);
	return bad;
}

int ebpf_run_shell(const char *cmd, char **out, char **err)
{
	char ofile[] = "/tmp/mt-test-out-XXXXXX";
	char efile[] = "/tmp/mt-test-err-XXXXXX";
	char *full = NULL;
	int ofd = mkstemp(ofile), efd = mkstemp(efile), status;
	struct stat sb;

	ck_assert(ofd >= 0 && efd >= 0);
	ck_assert_int_ge(asprintf(&full, "%s >%s 2>%s", cmd, ofile, efile), 0);
	status = system(full);
	free(full);
	fstat(ofd, &sb);
	*out = calloc(1, sb.st_size + 1);
	ck_assert_int_eq(read(ofd, *out, sb.st_size), sb.st_size);
	fstat(efd, &sb);
	*err = calloc(1, sb.st_size + 1);
	ck_assert_int_eq(read(efd, *err, sb.st_size), sb.st_size);
	close(ofd);
	close(efd);
	unlink(ofile);
	unlink(efile);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

void ebpf_strip_lines(char *s)
{
	char *w = s, *r = s;

	while (*r) {
		if (r[0] == ' ' && r[1] == '(') {
			char *e = r + 2;

			while (*e && !strchr("();\n", *e)) {
				e++;
			}
			if (*e == ')') {
				r = e + 1;
				if (!strncmp(r, " [inlined]", 10)) {
					r += 10;
				}
				continue;
			}
		}
		*w++ = *r++;
	}
	*w = '\0';
}

/* see ebpf-testlib.h */
int ebpf_root_marked(const char *out, const char *fn)
{
	char *names = strdup(out), *line, *save = NULL;
	int marked = 0, whole = 0;

	ck_assert_ptr_nonnull(names);
	ebpf_strip_lines(names);
	for (line = strtok_r(names, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		const char *root = line;
		int cut;

		if (!strstr(line, fn)) {
			continue;
		}
		if (!strncmp(root, "pid ", 4) && strchr(root, ';')) {
			root = strchr(root, ';') + 1;
		}
		cut = !strncmp(root, "[truncated];", 12);
		marked += cut;
		whole += !cut;
		/* the mark is the root end, never in the middle */
		ck_assert_msg(!strstr(root + (cut ? 12 : 0), "[truncated]"),
			      "a [truncated] frame inside a stack: %s", line);
	}
	free(names);
	return marked && !whole ? 1 : whole && !marked ? 0 : -1;
}

int ebpf_setuid_copy(char *dir, size_t dsize, char *path, size_t psize)
{
	char buf[65536];
	struct statvfs vfs;
	int in, out = -1, ok = 0;
	ssize_t n;

	snprintf(dir, dsize, "%s/tests/mt-setuid-XXXXXX", ebpf_builddir());
	if (!mkdtemp(dir)) {
		return 0;
	}
	if (statvfs(dir, &vfs) == 0 && (vfs.f_flag & ST_NOSUID)) {
		fprintf(stderr, "%s is on a nosuid mount\n", dir);
		rmdir(dir);
		return 0;
	}
	chmod(dir, 0755);
	snprintf(path, psize, "%s/alloc-basic-setuid", dir);
	in = open(ebpf_prog("alloc-basic"), O_RDONLY | O_CLOEXEC);
	if (in >= 0) {
		out = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
	}
	if (in >= 0 && out >= 0) {
		ok = 1;
		while ((n = read(in, buf, sizeof(buf))) > 0) {
			ok &= write(out, buf, (size_t)n) == n;
		}
	}
	if (in >= 0) {
		close(in);
	}
	if (out >= 0) {
		close(out);
	}
	return ok && chown(path, 65534, 65534) == 0 && chmod(path, 04755) == 0;
}
