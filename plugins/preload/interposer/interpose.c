/* SPDX-License-Identifier: MIT */
/*
 * plugins/preload/interposer/interpose.c - libmemtrack-preload.so, the
 * interposer the preload source puts in the command's LD_PRELOAD.
 *
 * Every allocator entry point the eBPF source probes (plugins/ebpf/
 * attach.c) is defined here; each calls the next definition
 * (dlsym(RTLD_NEXT)), so the program's own allocator, or one another
 * preload brings, does the work, and writes the event into the ring shared
 * with memtrack (ring.h). Events are what the eBPF source writes: same
 * kinds, sizes, old_addr, failures dropped, and one event for a call that
 * passes through several entry points (operator new -> malloc): a
 * per-thread depth counts the entry points in flight; only the outermost
 * records. With --stacks the outermost also captures its caller's stack
 * before calling the real allocator (interpose-stacks.c). The entry points
 * of allocators a process may not have (jemalloc's own API, mimalloc,
 * tcmalloc) are not exported: optional.c binds them where the process
 * binds those names, so that a program that looks for them finds what it
 * finds without us.
 *
 * Rules that keep the program safe:
 *   - Nothing here allocates through the traced allocator. Allocations
 *     made while the next malloc is being looked up (dlsym calls calloc)
 *     come from a static bootstrap arena and are never given back.
 *   - State is initial-exec TLS and plain globals: usable before our
 *     constructor (an entry point called earlier attaches by itself) and
 *     in signal handlers. The ring takes no lock.
 *   - An exception thrown by the real operator new unwinds through us:
 *     built with -fexceptions, the depth is restored by a cleanup.
 *   - When memtrack has gone, or the memory cannot be reached, the
 *     process goes on untraced; it is never stopped or killed.
 *
 * Entry points with integer and pointer arguments only (all but mmap and
 * mremap) share one wrapper taking four 64-bit arguments and forwarding
 * them as they came: on the supported ABIs (x86-64, AArch64) unused
 * argument registers are harmless and integer results come back in the
 * same register whatever their C type.
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/seccomp.h>

#include <memtrack/event.h>

#include "execcheck.h"
#include "gate-ask.h"
#include "interpose-stacks.h"
#include "meta-chunk.h"
#include "optional.h"
#include "ownmalloc.h"
#include "ring-put.h"
#include "sample.h"
#include "tsc.h"
#include "selfdeps.h"
#include "selfmap.h"
#include "shm.h"

#if !defined(__x86_64__) && !defined(__aarch64__)
#error "the generic wrapper assumes integer arguments in registers (x86-64, AArch64)"
#endif

#define PL_EXPORT __attribute__((visibility("default")))
#define PL_TLS __thread __attribute__((tls_model("initial-exec")))

struct pl_thread {
	int depth;     /* allocator entry points in flight */
	int in_ring;   /* inside emit() */
	int claiming;  /* holds a claim on a slot (pl_ring_put_ex) */
	int resolving; /* inside dlsym(): serve from the arena */
	uint32_t tid;  /* 0: not known yet */
	uint32_t hello; /* 1: said hello (in another pid namespace) */
	void *outer;   /* the real function the outermost hook called */
	int own;       /* in --stacks' own work: its mmaps are marked */
	uint32_t npend;
	struct mt_event pend[PL_PENDING];
};

static PL_TLS struct pl_thread self;

/* 1 in the child of vfork() until it execs or exits: it shares our memory
 * and TLS, so it must neither use nor fill the parent's caches (x86-64:
 * set by the vfork below; elsewhere a vfork child's events carry its
 * parent's ids). Not static: the assembly below sets it. */
PL_TLS int pl_in_vfork;

/* ST_PENDING (--source auto): attached, recording nothing yet: the eBPF
 * source records the process until pl_hello() hands it over to us */
enum { ST_UNTRIED, ST_ATTACHING, ST_ON, ST_OFF, ST_PENDING };

static int state = ST_UNTRIED;
static struct pl_shm *shm;
static struct pl_ring ring; /* our own copy of its geometry (ring.h);
			     * ring.quiet: a seccomp filter holds the
			     * process, make no call it may not allow */
/* what the source set before the command ran, copied at attach: another
 * process's stray write in the header must not change how we record */
static uint32_t use_tsc, syscalls_bpf;
static int32_t my_pid;
/* where glibc keeps a thread's id in its struct pthread (libthread_db's
 * descriptor), so that a thread's id costs no gettid(), which a program
 * under a seccomp allow-list may never make; -1: ask the kernel */
static int tid_offset = -1;
/* our pid namespace's inode when it is not memtrack's, else 0: events
 * carry it, so that the source gives them memtrack's ids (pidns.h) */
static uint64_t ns_tag;

/* ------------------------------------------------------------------ */
/* Bootstrap arena                                                     */
/* ------------------------------------------------------------------ */

#define ARENA_SIZE (256u << 10)

static _Alignas(64) char arena[ARENA_SIZE];
static size_t arena_used;

static int arena_owns(uint64_t p)
{
	return p >= (uint64_t)(uintptr_t)arena &&
	       p < (uint64_t)(uintptr_t)arena + ARENA_SIZE;
}

/* A size word before each block, so that realloc can copy it. */
static void *arena_alloc(size_t size, size_t align)
{
	size_t off, end, cur;

	if (align < 16) {
		align = 16;
	}
	do {
		cur = __atomic_load_n(&arena_used, __ATOMIC_RELAXED);
		off = (cur + sizeof(size_t) + align - 1) & ~(align - 1);
		end = off + size;
		if (size > ARENA_SIZE || end > ARENA_SIZE) {
			return NULL;
		}
	} while (!__atomic_compare_exchange_n(&arena_used, &cur, end, 0,
					      __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	memcpy(arena + off - sizeof(size_t), &size, sizeof(size));
	return arena + off; /* static storage: already zero */
}

typedef uint64_t (*pl_fn)(uint64_t, uint64_t, uint64_t, uint64_t);

static uint64_t boot_malloc(uint64_t size, uint64_t b, uint64_t c,
			    uint64_t d)
{
	(void)b, (void)c, (void)d;
	return (uint64_t)(uintptr_t)arena_alloc(size, 16);
}

static uint64_t boot_calloc(uint64_t n, uint64_t size, uint64_t c,
			    uint64_t d)
{
	(void)c, (void)d;
	if (size && n > SIZE_MAX / size) {
		return 0;
	}
	return (uint64_t)(uintptr_t)arena_alloc(n * size, 16);
}

static uint64_t boot_realloc(uint64_t p, uint64_t size, uint64_t c,
			     uint64_t d)
{
	void *q = arena_alloc(size, 16);
	size_t old = 0;

	(void)c, (void)d;
	if (q && p && arena_owns(p)) {
		memcpy(&old, (char *)(uintptr_t)p - sizeof(size_t),
		       sizeof(old));
		memcpy(q, (void *)(uintptr_t)p, old < size ? old : size);
	}
	return (uint64_t)(uintptr_t)q;
}

static uint64_t boot_free(uint64_t p, uint64_t b, uint64_t c, uint64_t d)
{
	(void)p, (void)b, (void)c, (void)d;
	return 0;
}

/* ------------------------------------------------------------------ */
/* The next definition of each entry point                             */
/* ------------------------------------------------------------------ */

struct pl_real {
	const char *name;
	pl_fn fn;
};

static void *next_sym(const char *name)
{
	void *p;

	self.depth++;
	self.resolving++;
	p = dlsym(RTLD_NEXT, name);
	self.resolving--;
	self.depth--;
	return p;
}

/* What dlsym's own allocations get. */
static pl_fn bootstrap_fn(const char *name)
{
	if (!strcmp(name, "malloc")) {
		return boot_malloc;
	}
	if (!strcmp(name, "calloc")) {
		return boot_calloc;
	}
	if (!strcmp(name, "realloc")) {
		return boot_realloc;
	}
	if (!strcmp(name, "free")) {
		return boot_free;
	}
	return NULL;
}

typedef void *(*dlsym_fn)(void *, const char *);

/* libc's dlsym; read by the assembly of our dlsym (the end of the file) */
void *pl_real_dlsym;

__attribute__((used)) void *pl_dlsym_resolve(void);
void *pl_dlsym_resolve(void)
{
	void *p;

	self.depth++;
	p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
	if (!p) {
		p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
	}
	self.depth--;
	__atomic_store_n(&pl_real_dlsym, p, __ATOMIC_RELEASE);
	return p;
}

/* libc's dlsym, found the first time */
static dlsym_fn libc_dlsym(void)
{
	dlsym_fn f = (dlsym_fn)__atomic_load_n(&pl_real_dlsym,
					       __ATOMIC_ACQUIRE);

	return f ? f : (dlsym_fn)pl_dlsym_resolve();
}

/*
 * The definition of name that the object holding caller would bind to
 * without us, when the global scope has none after us: that object came
 * with dlopen(RTLD_LOCAL), and so did the library defining the name, which
 * the global scope does not search. Python's extension modules are opened
 * so: `import apt_pkg` brings libstdc++ into a C program, and its operator
 * new, bound to our hook, had nothing to call (a null block, and a
 * crash). dlsym on the object's own handle searches it and what it needs,
 * which is what the loader searched after the global scope. libc's dlsym
 * is called directly: ours would hand back a recording trampoline. The
 * definition found is kept for every caller of the name, as RTLD_NEXT's
 * is. NULL when caller is in this library: a real function that
 * tail-calls another entry point (libstdc++'s operator new[] jumps to
 * operator new) returns to our hook; resolve() then asks the object of
 * that real function (self.outer).
 */
static void *scope_sym(const char *name, const void *caller)
{
	dlsym_fn real_dlsym;
	Dl_info di, me;
	void *h, *p = NULL;

	if (!caller || !dladdr(caller, &di) || !di.dli_fname ||
	    !di.dli_fname[0] || !dladdr((void *)scope_sym, &me) ||
	    di.dli_fbase == me.dli_fbase) {
		return NULL;
	}
	real_dlsym = libc_dlsym();
	h = real_dlsym ? dlopen(di.dli_fname, RTLD_LAZY | RTLD_NOLOAD) : NULL;
	if (!h) {
		return NULL;
	}
	p = real_dlsym(h, name);
	dlclose(h);
	/* never one of ours (the object would have to need this library) */
	if (p && dladdr(p, &di) && di.dli_fbase == me.dli_fbase) {
		p = NULL;
	}
	return p;
}

static pl_fn resolve(struct pl_real *r, const void *caller)
{
	pl_fn fn;

	if (self.resolving) {
		return bootstrap_fn(r->name);
	}
	fn = (pl_fn)next_sym(r->name);
	if (!fn && caller) {
		self.depth++;
		self.resolving++;
		fn = (pl_fn)scope_sym(r->name, caller);
		if (!fn && self.outer) {
			fn = (pl_fn)scope_sym(r->name, self.outer);
		}
		self.resolving--;
		self.depth--;
	}
	if (!fn && (!strcmp(r->name, "cfree") ||
		    !strncmp(r->name, "free_", 5))) {
		/* names this libc lacks: a free all the same */
		fn = (pl_fn)next_sym("free");
	}
	if (fn) {
		__atomic_store_n(&r->fn, fn, __ATOMIC_RELEASE);
	}
	return fn;
}

/* ------------------------------------------------------------------ */
/* Attaching to memtrack's memory                                      */
/* ------------------------------------------------------------------ */

extern char **environ;

static void say(const char *a, const char *b, const char *c)
{
	ssize_t n;

	n = write(2, a, strlen(a));
	n = write(2, b, strlen(b));
	n = write(2, c, strlen(c));
	(void)n;
}

static const char *env_value(const char *name)
{
	size_t len = strlen(name), i;

	for (i = 0; environ[i]; i++) {
		if (!strncmp(environ[i], name, len) &&
		    environ[i][len] == '=') {
			return environ[i] + len + 1;
		}
	}
	return NULL;
}

static int parse_num(const char **s, unsigned long long *out)
{
	unsigned long long v = 0;
	const char *p = *s;

	if (*p < '0' || *p > '9') {
		return -1;
	}
	while (*p >= '0' && *p <= '9') {
		v = v * 10 + (unsigned long long)(*p - '0');
		p++;
	}
	if (*p == ':') {
		p++;
	} else if (*p) {
		return -1;
	}
	*s = p;
	*out = v;
	return 0;
}

static void fmt_uint(char *buf, size_t size, unsigned long long v)
{
	char tmp[24];
	size_t n = 0, i;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v && n < sizeof(tmp));
	for (i = 0; i < n && i + 1 < size; i++) {
		buf[i] = tmp[n - 1 - i];
	}
	buf[i] = '\0';
}

/* Our descriptor of memtrack's fd n: the inherited one when it is still
 * the right file, else a new one through /proc/PID/fd/N. */
static int reach_fd(int n, unsigned long long pid, unsigned long long ino,
		    int flags)
{
	char path[64] = "/proc/", num[24];
	struct stat st;

	if (fstat(n, &st) == 0 && (!ino || st.st_ino == ino)) {
		return n;
	}
	fmt_uint(num, sizeof(num), pid);
	strcat(path, num);
	strcat(path, "/fd/");
	fmt_uint(num, sizeof(num), (unsigned long long)n);
	strcat(path, num);
	n = open(path, flags | O_CLOEXEC);
	if (n < 0) {
		return -1;
	}
	if (ino && (fstat(n, &st) || st.st_ino != ino)) {
		close(n);
		return -1;
	}
	return n;
}

/* The calling thread's id, from glibc's struct pthread when we know where
 * it is: no system call (seccomp filters), and right in a fork child,
 * whose thread's entry the kernel fills in (CLONE_CHILD_SETTID). */
static uint32_t thread_id(void)
{
	if (tid_offset >= 0) {
		return *(const uint32_t *)((const char *)pthread_self() +
					   tid_offset);
	}
	return (uint32_t)syscall(SYS_gettid);
}

/* libthread_db's descriptor of struct pthread's tid: { bits, count,
 * offset }; checked against the kernel's answer where we may ask it. */
static void find_tid_offset(int may_ask)
{
	const uint32_t *d = dlsym(RTLD_DEFAULT, "_thread_db_pthread_tid");

	if (!d || d[0] != 32 || d[1] != 1 || d[2] > 4096) {
		return;
	}
	tid_offset = (int)d[2];
	if (!thread_id() ||
	    (may_ask && thread_id() != (uint32_t)syscall(SYS_gettid))) {
		tid_offset = -1;
	}
}

/*
 * Does a seccomp filter already hold this process (inherited across
 * exec: a sandbox that starts it)? Its allow-list may kill the process
 * for any call the program itself never makes (gettid, futex): then the
 * ring is used without them (pl_ring.quiet). The calls made here are the
 * loader's own (open, read, close). A filter installed later by the
 * program is not seen: those come with an allow-list made for a glibc
 * program, which has futex.
 */
/* The seccomp filters that hold the process: 0, their number, or -1 for
 * a filter of unknown number (a kernel without Seccomp_filters). */
static int seccomp_filters(void)
{
	char buf[4096];
	const char *p;
	ssize_t n, got = 0;
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		return 0;
	}
	while (got < (ssize_t)sizeof(buf) - 1 &&
	       (n = read(fd, buf + got, sizeof(buf) - 1 - (size_t)got)) > 0) {
		got += n;
	}
	close(fd);
	buf[got] = '\0';
	p = strstr(buf, "\nSeccomp:");
	if (!p) {
		return 0;
	}
	p += strlen("\nSeccomp:");
	while (*p == ' ' || *p == '\t') {
		p++;
	}
	if (*p != '2') {
		return 0;
	}
	p = strstr(p, "\nSeccomp_filters:");
	if (!p) {
		return -1;
	}
	p += strlen("\nSeccomp_filters:");
	while (*p == ' ' || *p == '\t') {
		p++;
	}
	return *p >= '1' && *p <= '9' ? atoi(p) : -1;
}

/* Is our pid namespace another than memtrack's? (A parent that unshared
 * CLONE_NEWPID, or setns, puts its children in another.) */
static uint64_t foreign_pidns(void)
{
	struct stat st;

	if (!shm || !shm->pidns || stat("/proc/self/ns/pid", &st) ||
	    (uint64_t)st.st_ino == shm->pidns) {
		return 0;
	}
	return (uint64_t)st.st_ino;
}

static void after_fork_child(void)
{
	/* the only thread of the child: its id is the child's pid */
	self.tid = 0;
	self.hello = 0;
	if (!ring.quiet) {
		ns_tag = foreign_pidns();
	}
	my_pid = tid_offset >= 0 ? (int32_t)thread_id() :
				   (int32_t)syscall(SYS_getpid);
}

static const char *attach_error(const char *env, int quiet)
{
	unsigned long long fd, pid, ino;
	const char *p = env;
	struct stat st;
	void *map;
	int mfd;

	if (parse_num(&p, &fd) || parse_num(&p, &pid) ||
	    parse_num(&p, &ino) || *p) {
		return "malformed " PL_ENV_SHM;
	}
	mfd = reach_fd((int)fd, pid, ino, O_RDWR);
	if (mfd < 0) {
		return "cannot reach memtrack's shared memory (closed, and /proc/PID/fd not allowed)";
	}
	if (fstat(mfd, &st) || st.st_size < (off_t)sizeof(struct pl_shm)) {
		if (mfd != (int)fd) {
			close(mfd);
		}
		return "the shared memory is not memtrack's";
	}
	map = (void *)syscall(SYS_mmap, NULL, (size_t)st.st_size,
			      PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	if (mfd != (int)fd) {
		close(mfd);
	}
	if ((uintptr_t)map > (uintptr_t)-4096) {
		return "cannot map memtrack's shared memory";
	}
	shm = map;
	if (shm->magic != PL_MAGIC || shm->version != PL_VERSION ||
	    shm->map_size != (uint64_t)st.st_size ||
	    pl_ring_attach(&ring, shm, (uint64_t)st.st_size)) {
		syscall(SYS_munmap, map, (size_t)st.st_size);
		shm = NULL;
		return "the shared memory is of another memtrack version";
	}
	ring.quiet = (uint32_t)quiet;
	ns_tag = foreign_pidns();
	use_tsc = __atomic_load_n(&shm->tsc, __ATOMIC_RELAXED) == 1;
	syscalls_bpf = __atomic_load_n(&shm->syscalls_bpf, __ATOMIC_RELAXED);
	return NULL;
}

static int put_record(const void *payload, size_t len);
static void opt_attach(void);
static void attach_stacks(void);
static void note_self_deps(void);

/* Called once per process image, at its first entry point. */
static void attach(void)
{
	int expect = ST_UNTRIED, quiet, nfilters, handover;
	const char *env, *why;
	char num[24];

	if (!environ || pl_in_vfork) {
		/* before libc's start, or a vfork child, whose attaching
		 * would be its parent's: try again at the next call */
		return;
	}
	if (!__atomic_compare_exchange_n(&state, &expect, ST_ATTACHING, 0,
					 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
		return;
	}
	self.depth++;
	env = env_value(PL_ENV_SHM);
	if (!env) {
		/* not run by memtrack, or the variable was dropped: the exec
		 * wrapper of the parent said so */
		__atomic_store_n(&state, ST_OFF, __ATOMIC_RELEASE);
		self.depth--;
		return;
	}
	nfilters = seccomp_filters();
	quiet = nfilters != 0;
	why = attach_error(env, quiet);
	if (!why && nfilters == 1 &&
	    (__atomic_load_n(&shm->handover, __ATOMIC_RELAXED) & PL_HO_GATE)) {
		/* memtrack's exec gate alone, which allows every call */
		quiet = 0;
		ring.quiet = 0;
	}
	handover = !why && (__atomic_load_n(&shm->handover,
					    __ATOMIC_RELAXED) & PL_HO_ON);
	if (handover && nfilters == 1 && !quiet &&
	    syscall(MT_GATE_ASK_NR, MT_GATE_ASK_MAGIC) == MT_GATE_ASK_YOURS) {
		/* the gate saw us mapped first and gave the process no
		 * uprobes: every call is ours from this one on (gate-ask.h) */
		handover = 0;
	}
	find_tid_offset(!quiet);
	/* attach runs before the program's threads: this is the main one */
	my_pid = tid_offset >= 0 || quiet ? (int32_t)thread_id() :
					    (int32_t)syscall(SYS_getpid);
	if (why) {
		fmt_uint(num, sizeof(num), (unsigned long long)my_pid);
		say("memtrack-preload: process ", num, ": ");
		say(why, "", ": its allocations are not recorded\n");
		__atomic_store_n(&state, ST_OFF, __ATOMIC_RELEASE);
		self.depth--;
		return;
	}
	if (pl_sample_init(shm) < 0) {
		fmt_uint(num, sizeof(num), (unsigned long long)my_pid);
		say("memtrack-preload: process ", num,
		    ": no memory for the table of sampled blocks: its allocations are not recorded\n");
		__atomic_store_n(&state, ST_OFF, __ATOMIC_RELEASE);
		self.depth--;
		return;
	}
	pthread_atfork(NULL, NULL, after_fork_child);
	__atomic_fetch_add(&shm->attached, 1, __ATOMIC_RELAXED);
	/* handover: recording starts at our constructor, with the hello */
	__atomic_store_n(&state, handover ? ST_PENDING : ST_ON,
			 __ATOMIC_RELEASE);
	if (!handover) {
		attach_stacks();
	} else if (!__atomic_load_n(&shm->stack_depth, __ATOMIC_RELAXED)) {
		note_self_deps();
	}
	opt_attach();
	self.depth--;
}

/* The verdict on the libraries we need (selfdeps.c): the source decides
 * their mappings' records by the first verdict stamped after them. */
static void note_self_deps(void)
{
	if (syscalls_bpf) {
		pl_self_deps_note(shm, my_pid);
	}
}

/* --stacks: libunwind opened, the table mapped, then the verdict (after
 * the libraries libunwind brought). Under handover only once the process
 * is ours (the hello): what that allocates before it, the uprobes would
 * record as the program's. */
static void attach_stacks(void)
{
	char num[24];
	int err;

	self.own++;
	err = pl_stk_attach(shm, my_pid, put_record);
	self.own--;
	if (err < 0) {
		fmt_uint(num, sizeof(num), (unsigned long long)my_pid);
		say("memtrack-preload: process ", num,
		    ": cannot set up call stacks: its events have none\n");
	}
	note_self_deps();
}

/* Attach before the program's code runs (a signal handler coming while
 * its own thread attaches would find the process not attached yet); the
 * entry points attach by themselves before this runs. */
__attribute__((constructor)) static void attach_early(void)
{
	if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) == ST_UNTRIED) {
		attach();
	}
}

static inline int active(void)
{
	int s = __atomic_load_n(&state, __ATOMIC_ACQUIRE);

	if (__builtin_expect(s == ST_UNTRIED, 0)) {
		attach();
		s = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
	}
	return s == ST_ON;
}

/* ------------------------------------------------------------------ */
/* Events                                                              */
/* ------------------------------------------------------------------ */

/* A vfork child shares its parent's memory, self and my_pid included:
 * it asks the kernel for its own ids, but under a filter, where getpid()
 * and gettid() may kill, it passes for its parent until its exec. */
static inline int vfork_asks(void)
{
	return __builtin_expect(pl_in_vfork, 0) &&
	       !__atomic_load_n(&ring.quiet, __ATOMIC_RELAXED);
}

static inline int32_t pid_now(void)
{
	return vfork_asks() ? (int32_t)syscall(SYS_getpid) : my_pid;
}

static inline uint32_t my_tid(void)
{
	if (__builtin_expect(pl_in_vfork, 0)) {
		return vfork_asks() ? (uint32_t)syscall(SYS_gettid) :
				      (uint32_t)my_pid;
	}
	if (!self.tid) {
		self.tid = thread_id();
	}
	return self.tid;
}

/* Returns PL_RING_FULL (nowait only) or 0. */
static int put(const struct mt_event *ev, int nowait)
{
	int err = pl_ring_put_ex(&ring, ev, my_tid(), &self.claiming,
				 nowait);

	if (err == -1) {
		/* memtrack has gone: untraced from now on */
		__atomic_store_n(&state, ST_OFF, __ATOMIC_RELEASE);
	}
	return err == PL_RING_FULL ? err : 0;
}

/* Put what handlers left while we were in the ring (ring.h, I4). */
static void put_pending(void)
{
	uint32_t i = 0, n;

	if (!__atomic_load_n(&self.npend, __ATOMIC_ACQUIRE)) {
		return; /* the common case: no locked instruction */
	}
	for (;;) {
		n = __atomic_load_n(&self.npend, __ATOMIC_ACQUIRE);
		if (i >= n) {
			if (__atomic_compare_exchange_n(&self.npend, &n, 0, 0,
							__ATOMIC_ACQ_REL,
							__ATOMIC_RELAXED)) {
				return;
			}
			continue;
		}
		if (i < PL_PENDING &&
		    __atomic_load_n(&state, __ATOMIC_RELAXED) == ST_ON) {
			put(&self.pend[i], 0);
		}
		i++;
	}
}

static void put_slot(struct mt_event *ev);

/* Before a thread's first event from another pid namespace: its ids, so
 * that memtrack finds it in /proc while it lives (pidns.h). */
static void say_hello(int32_t pid, int32_t tid)
{
	unsigned char rec[PL_HELLO_LEN];
	uint32_t seq = __atomic_add_fetch(&shm->hello_seq, 1, __ATOMIC_RELAXED);

	memcpy(rec, PL_HELLO_TAG, 4);
	memcpy(rec + 4, &ns_tag, sizeof(ns_tag));
	memcpy(rec + 12, &pid, sizeof(pid));
	memcpy(rec + 16, &tid, sizeof(tid));
	memcpy(rec + 20, &seq, sizeof(seq));
	if (put_record(rec, sizeof(rec)) == 0) {
		/* found in /proc while we live (a waiter that times out
		 * records all the same: its ids stay untranslated, said) */
		pl_ring_hello_wait(&ring, seq);
	}
}

static void emit(unsigned int kind, uint64_t addr, uint64_t size,
		 uint64_t old, unsigned int flags, uint32_t stack)
{
	struct mt_event ev;

	if (!__atomic_load_n(&shm->enabled, __ATOMIC_RELAXED)) {
		return;
	}
	if (syscalls_bpf && (kind == MT_EV_MMAP ||
				  kind == MT_EV_MUNMAP || kind == MT_EV_BRK)) {
		return; /* the source's BPF tracepoints record them */
	}
	/* raw TSC counts when the source turns them into ns (tsc.h) */
	ev.timestamp = use_tsc ? pl_rdtsc() : pl_now_ns();
	ev.addr = addr;
	ev.size = size;
	ev.old_addr = old;
	ev.pid = pid_now();
	ev.tid = (int32_t)my_tid();
	ev.kind = (uint8_t)kind;
	ev.flags = (uint8_t)(flags | (stack ? MT_EVF_STACK : 0));
	ev.reserved0 = 0;
	ev.stack_id = stack;
	ev.reserved[0] = 0;
	ev.reserved[1] = ns_tag;
	if (__builtin_expect(ns_tag != 0, 0) && !self.hello && !pl_in_vfork) {
		self.hello = 1;
		say_hello(ev.pid, ev.tid);
	}
	put_slot(&ev);
}

/* An event, or a metadata chunk (interpose-stacks.c), into the ring. */
static void put_slot(struct mt_event *ev)
{
	uint32_t i;

	if (self.in_ring) {
		/* a signal handler interrupted its thread inside put_slot()
		 * (never with a chunk: see pl_stk_capture). Its event goes
		 * straight into the ring, after the interrupted one when that
		 * holds a claim (without waiting: I4), unless the ring is full
		 * then, or events wait already. */
		if (!__atomic_load_n(&self.npend, __ATOMIC_ACQUIRE)) {
			if (__atomic_load_n(&state, __ATOMIC_RELAXED) != ST_ON ||
			    put(ev, __atomic_load_n(&self.claiming,
						    __ATOMIC_RELAXED)) == 0) {
				return;
			}
		}
		i = __atomic_fetch_add(&self.npend, 1, __ATOMIC_ACQ_REL);
		if (i < PL_PENDING) {
			self.pend[i] = *ev;
		} else {
			__atomic_fetch_add(&shm->dropped, 1, __ATOMIC_RELAXED);
		}
		return;
	}
	for (;;) {
		self.in_ring = 1;
		if (ev->kind != 0xff &&
		    __atomic_load_n(&state, __ATOMIC_RELAXED) == ST_ON) {
			put(ev, 0);
		}
		ev->kind = 0xff; /* put once */
		put_pending();
		self.in_ring = 0;
		/* a handler that came between the two lines above left one */
		if (!__atomic_load_n(&self.npend, __ATOMIC_ACQUIRE)) {
			return;
		}
	}
}

/* A metadata chunk through the event path: 0, or -1 once untraced. */
static int put_chunk(const struct mt_event *ev, void *ctx)
{
	struct mt_event copy = *ev;

	(void)ctx;
	put_slot(&copy);
	return __atomic_load_n(&state, __ATOMIC_RELAXED) == ST_ON ? 0 : -1;
}

/* interpose-stacks.h's pl_stk_put_fn: stacks and mappings, and our own
 * notices and hellos */
static int put_record(const void *payload, size_t len)
{
	uint32_t id = __atomic_fetch_add(&shm->next_meta_id, 1,
					 __ATOMIC_RELAXED);

	return pl_meta_cut(id, payload, len, put_chunk, NULL);
}

/* ------------------------------------------------------------------ */
/* Allocator entry points                                              */
/* ------------------------------------------------------------------ */

/* What the arguments mean (plugins/ebpf/attach.c has the same table). */
enum shape {
	SH_SIZE1 = 1,   /* f(size, ...) */
	SH_SIZE2,       /* f(align, size) */
	SH_MUL12,       /* f(n, size) */
	SH_REALLOC,     /* f(ptr, size): NULL + size 0 means freed */
	SH_REALLOC_NZ,  /* f(ptr, size): never frees */
	SH_REALLOCARRAY, /* f(ptr, n, size): NULL + size 0 means freed */
	SH_REALLOCN_NZ, /* f(ptr, n, size): never frees */
	SH_POSIX_MEMALIGN, /* int f(void **memptr, align, size) */
	SH_MALLOCX,     /* jemalloc f(size, flags) */
	SH_RALLOCX,     /* jemalloc f(ptr, size, flags) */
	SH_XALLOCX,     /* jemalloc size_t f(ptr, size, extra, flags) */
	SH_FREE,        /* f(ptr, ...) */
};

#define KIND_DERIVED 0xff
#define MALLOCX_LG_ALIGN_MASK 0x3f
#define MALLOCX_ZERO 0x40

static void depth_restore(int **depth)
{
	(**depth)--;
}

/*
 * The cleanup above makes the compiler refer to libgcc's unwinder: the C
 * personality routine (through .eh_frame) and _Unwind_Resume (at the end
 * of the landing pad). Left to the linker, they made libgcc_s.so.1 a
 * library of every traced process, which C programs do not load
 * otherwise: ~0.1 ms per exec here (its constructor runs CPUID, which
 * traps in a VM), half of what the interposer added to one. Both are
 * ours instead (hidden), and forward to the unwinder's. They run only
 * while an exception unwinds through a hook, i.e. while the unwinder
 * runs: loaded, found in the global scope, or by name when libgcc_s came
 * with a library opened RTLD_LOCAL (RTLD_NOLOAD loads nothing). Should
 * it not be found, the personality lets the unwinding go on without the
 * cleanup: the thread's depth stays up and its later allocations go
 * unrecorded, which is better than stopping an unwinding that cannot be
 * resumed.
 */
struct _Unwind_Exception;
struct _Unwind_Context;
typedef int (*pl_personality_fn)(int, int, uint64_t,
				 struct _Unwind_Exception *,
				 struct _Unwind_Context *);
typedef void (*pl_resume_fn)(struct _Unwind_Exception *);
#define PL_URC_CONTINUE_UNWIND 8 /* _Unwind_Reason_Code */

/* What a reference from the global scope binds to (a program linked
 * with another unwinder throws with it), else libgcc_s's */
static void *unwinder_sym(const char *name)
{
	void *f = dlsym(RTLD_DEFAULT, name), *h;

	if (!f && (h = dlopen("libgcc_s.so.1", RTLD_LAZY | RTLD_NOLOAD))) {
		f = dlsym(h, name);
		dlclose(h);
	}
	return f;
}

int __gcc_personality_v0(int version, int actions, uint64_t cls,
			 struct _Unwind_Exception *ue,
			 struct _Unwind_Context *ctx);
int __gcc_personality_v0(int version, int actions, uint64_t cls,
			 struct _Unwind_Exception *ue,
			 struct _Unwind_Context *ctx)
{
	static pl_personality_fn real;
	pl_personality_fn f = __atomic_load_n(&real, __ATOMIC_ACQUIRE);

	if (!f) {
		f = (pl_personality_fn)unwinder_sym("__gcc_personality_v0");
		if (!f || f == __gcc_personality_v0) {
			return PL_URC_CONTINUE_UNWIND;
		}
		__atomic_store_n(&real, f, __ATOMIC_RELEASE);
	}
	return f(version, actions, cls, ue, ctx);
}

void _Unwind_Resume(struct _Unwind_Exception *ue);
void _Unwind_Resume(struct _Unwind_Exception *ue)
{
	static pl_resume_fn real;
	pl_resume_fn f = __atomic_load_n(&real, __ATOMIC_ACQUIRE);

	if (!f) {
		/* the personality found the unwinder: this finds it too */
		f = (pl_resume_fn)unwinder_sym("_Unwind_Resume");
		if (!f || f == _Unwind_Resume) {
			abort();
		}
		__atomic_store_n(&real, f, __ATOMIC_RELEASE);
	}
	f(ue);
	abort(); /* it does not return */
}

/* The bytes an allocator call asks for, by its shape (as record()). */
static uint64_t asked(unsigned int shape, uint64_t a, uint64_t b, uint64_t c)
{
	switch (shape) {
	case SH_SIZE1:
	case SH_MALLOCX:
		return a;
	case SH_SIZE2:
	case SH_REALLOC:
	case SH_REALLOC_NZ:
	case SH_RALLOCX:
	case SH_XALLOCX:
		return b;
	case SH_MUL12:
		return a * b;
	case SH_REALLOCARRAY:
	case SH_REALLOCN_NZ:
		return b * c;
	case SH_POSIX_MEMALIGN:
		return c;
	default:
		return 0;
	}
}

static int resizes(unsigned int shape)
{
	return shape == SH_REALLOC || shape == SH_REALLOC_NZ ||
	       shape == SH_RALLOCX || shape == SH_REALLOCARRAY ||
	       shape == SH_REALLOCN_NZ;
}

/*
 * What a sampled recording keeps of a call (sample.h): take, the new
 * block is a sample; was, the old one (of a resize) was, and has been
 * dropped from the table before the call.
 */
static void record_sampled(unsigned int kind, unsigned int shape,
			   uint64_t addr, uint64_t size, uint64_t old,
			   int take, int was, uint32_t stack)
{
	if (shape == SH_XALLOCX) {
		/* resized in place: recorded as long as the block is */
		if (was) {
			emit(MT_EV_REALLOC, addr, size, old, MT_EVF_OLD_ADDR,
			     stack);
		}
		return;
	}
	if (!addr) {
		if (was && size) {
			(void)pl_sample_keep(old); /* failed: it stays */
		} else if (was) {
			emit(MT_EV_FREE, old, 0, 0, 0, 0); /* realloc(p, 0) */
		}
		return;
	}
	if (take && !pl_sample_keep(addr)) {
		take = 0; /* no room: not recorded, counted */
	}
	if (kind == MT_EV_REALLOC) {
		if (take) {
			/* from a block not recorded: as realloc(NULL, n) */
			emit(kind, addr, size, was ? old : 0, MT_EVF_OLD_ADDR,
			     stack);
		} else if (was) {
			emit(MT_EV_FREE, old, 0, 0, 0, 0);
		}
	} else if (take) {
		emit(kind, addr, size, 0, 0, stack);
	}
}

static void record(unsigned int kind, unsigned int shape, uint64_t ret,
		   uint64_t a, uint64_t b, uint64_t c, uint32_t stack,
		   int take, int was)
{
	uint64_t addr = ret, size = 0, old = 0;

	switch (shape) {
	case SH_SIZE1:
		size = a;
		break;
	case SH_SIZE2:
		size = b;
		break;
	case SH_MUL12:
		size = a * b;
		break;
	case SH_REALLOC:
	case SH_REALLOC_NZ:
	case SH_RALLOCX:
		old = a;
		size = b;
		break;
	case SH_REALLOCARRAY:
	case SH_REALLOCN_NZ:
		old = a;
		size = b * c;
		break;
	case SH_POSIX_MEMALIGN:
		if ((int)ret != 0) {
			return;
		}
		addr = (uint64_t)(uintptr_t)*(void **)(uintptr_t)a;
		size = c;
		break;
	case SH_MALLOCX:
		size = a;
		kind = (b & MALLOCX_ZERO) ? MT_EV_CALLOC :
		       (b & MALLOCX_LG_ALIGN_MASK) ? MT_EV_ALIGNED_ALLOC :
						       MT_EV_MALLOC;
		break;
	case SH_XALLOCX:
		/* the usable size: resized in place when >= size */
		if (ret < b) {
			return;
		}
		addr = old = a;
		size = b;
		break;
	default:
		return;
	}
	if (__builtin_expect(pl_sample_mean != 0, 0)) {
		if ((shape == SH_REALLOC || shape == SH_REALLOCARRAY) &&
		    !ret && old && !size) {
			size = 0; /* realloc(p, 0) freed p */
		} else if (!ret && resizes(shape)) {
			size = 1; /* failed: p stays */
		}
		record_sampled(kind, shape, addr, size, old, take, was, stack);
		return;
	}
	if ((shape == SH_REALLOC || shape == SH_REALLOCARRAY) && !ret && old &&
	    !size) {
		emit(MT_EV_FREE, old, 0, 0, 0, 0); /* realloc(p, 0) freed p */
		return;
	}
	if (!addr) {
		return; /* failed */
	}
	if (kind == MT_EV_REALLOC) {
		/* old_addr even when 0, as the eBPF source (and the
		 * reference) write realloc(NULL, n) */
		emit(kind, addr, size, old, MT_EVF_OLD_ADDR, stack);
	} else {
		emit(kind, addr, size, 0, 0, stack);
	}
}

/* caller: the hook's return address (scope_sym()); sampled_already: the
 * new block is a sample (call() decided) */
static uint64_t call_slow(struct pl_real *r, unsigned int kind,
			  unsigned int shape, uint64_t a, uint64_t b,
			  uint64_t c, uint64_t d, const void *caller,
			  int sampled_already)
{
	pl_fn fn = __atomic_load_n(&r->fn, __ATOMIC_ACQUIRE);
	uint32_t stack = 0;
	uint64_t ret;
	void *outer;
	int take = 1, was = 0; /* sampling: the new block is a sample, the
				* old one was (sample.h) */

	if (__builtin_expect(!fn, 0)) {
		fn = resolve(r, caller);
		if (!fn) {
			/* nothing to call (dlsym's own allocations get the
			 * arena; anything else: a failed call) */
			return 0;
		}
	}
	if (shape == SH_FREE && arena_owns(a)) {
		return 0; /* the arena's blocks are never given back */
	}
	if ((shape == SH_REALLOC || shape == SH_REALLOC_NZ) && arena_owns(a)) {
		return boot_realloc(a, b, 0, 0);
	}
	if (self.depth) {
		return fn(a, b, c, d);
	}
	/* for scope_sym(); put back after, in case we are a signal
	 * handler's call that came between the interrupted one's store and
	 * its call */
	outer = self.outer;
	self.outer = (void *)fn;
	if (!active()) {
		ret = fn(a, b, c, d);
		self.outer = outer;
		return ret;
	}
	if (__builtin_expect(__atomic_load_n(&pl_opt_dirty, __ATOMIC_RELAXED),
			     0) &&
	    !pl_in_vfork) {
		/* a dlopen since: bind the optional hooks in what it
		 * loaded (optional.h); not from a vfork child, which shares
		 * our memory and thread state (its parent does it) */
		self.depth++;
		pl_opt_rescan();
		self.depth--;
	}
	if (shape == SH_FREE) {
		/* before the block can be handed out again */
		if (a && (__builtin_expect(!pl_sample_mean, 1) ||
			  pl_sample_drop(a))) {
			emit(MT_EV_FREE, a, 0, 0, 0, 0);
		}
		self.depth++;
		ret = fn(a, b, c, d);
		self.depth--;
		self.outer = outer;
		return ret;
	}
	{
		__attribute__((cleanup(depth_restore))) int *dp = &self.depth;

		(*dp)++;
		if (__builtin_expect(pl_sample_mean != 0, 0)) {
			/* before the call: the old block of a resize may be
			 * handed out again by the time it returns */
			if (shape == SH_XALLOCX) {
				was = pl_sample_has(a);
			} else {
				if (!sampled_already) {
					take = pl_sample_take(
						asked(shape, a, b, c));
				}
				was = resizes(shape) && a && pl_sample_drop(a);
			}
		}
		/* before the allocator's locks; not from a handler that
		 * interrupted our own put, nor in a vfork child
		 * (interpose-stacks.h) */
		if (__builtin_expect(pl_stk_on, 0) && take && !self.in_ring &&
		    !pl_in_vfork &&
		    __atomic_load_n(&shm->enabled, __ATOMIC_RELAXED)) {
			self.own++;
			stack = pl_stk_capture();
			self.own--;
		}
		ret = fn(a, b, c, d);
	}
	self.outer = outer;
	record(kind, shape, ret, a, b, c, stack, take, was);
	return ret;
}

/*
 * The allocator's call one level deeper, as call_slow() makes it, for a
 * hook whose real function calls the allocator in turn through our hooks
 * (hooks.def's N: libstdc++'s new[] calls new, which calls malloc): those
 * calls are its own, not counted down again. Counted at each level, a
 * new[] of 16 B took 48 B of its thread's distance to the next sample
 * point and was sampled 3 times as often as the report's weight says
 * (test-sample.sh). Only there: for malloc the depth would cost the
 * fast path its tail call. The cleanup: new's exception unwinds through
 * here.
 */
static inline __attribute__((always_inline)) uint64_t
call_inner(pl_fn fn, uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
	__attribute__((cleanup(depth_restore))) int *dp = &self.depth;

	(*dp)++;
	return fn(a, b, c, d);
}

/*
 * Every hook's way in. With --sample-bytes, what is not a sample costs
 * the count down of its thread's distance to the next sample point, or
 * a free's look-up in the table of samples, and the call: inlined in each
 * hook (shape is a constant there), before call_slow()'s frame is built.
 * A resize goes the slow way: its old block may be a sample. nests: the
 * real function calls the allocator in turn (call_inner()).
 */
static inline __attribute__((always_inline)) uint64_t
call(struct pl_real *r, unsigned int kind, unsigned int shape, int nests,
     uint64_t a, uint64_t b, uint64_t c, uint64_t d, const void *caller)
{
	if (__builtin_expect(pl_sample_mean != 0, 0) && shape != SH_XALLOCX &&
	    !resizes(shape)) {
		pl_fn fn = __atomic_load_n(&r->fn, __ATOMIC_ACQUIRE);

		if (fn && !self.depth &&
		    !__atomic_load_n(&pl_opt_dirty, __ATOMIC_RELAXED)) {
			if (shape == SH_FREE) {
				if (!pl_sample_has(a) && !arena_owns(a)) {
					return fn(a, b, c, d);
				}
			} else if (!pl_sample_take(asked(shape, a, b, c))) {
				return nests ? call_inner(fn, a, b, c, d) :
					       fn(a, b, c, d);
			} else {
				return call_slow(r, kind, shape, a, b, c, d,
						 caller, 1);
			}
		}
	}
	return call_slow(r, kind, shape, a, b, c, d, caller, 0);
}

#define HOOK(sym, kind, shape, nests)                                       \
	static struct pl_real real_##sym = { #sym, NULL };                  \
	PL_EXPORT uint64_t hook_##sym(uint64_t a, uint64_t b, uint64_t c,   \
				      uint64_t d) __asm__(#sym);            \
	uint64_t hook_##sym(uint64_t a, uint64_t b, uint64_t c, uint64_t d) \
	{                                                                   \
		return call(&real_##sym, kind, shape, nests, a, b, c, d,    \
			    __builtin_return_address(0));                   \
	}

#define M(sym, shape) HOOK(sym, MT_EV_MALLOC, SH_##shape, 0)
#define N(sym, shape) HOOK(sym, MT_EV_MALLOC, SH_##shape, 1)
#define C(sym, shape) HOOK(sym, MT_EV_CALLOC, SH_##shape, 0)
#define R(sym, shape) HOOK(sym, MT_EV_REALLOC, SH_##shape, 0)
#define A(sym, shape) HOOK(sym, MT_EV_ALIGNED_ALLOC, SH_##shape, 0)
#define F(sym) HOOK(sym, MT_EV_FREE, SH_FREE, 0)
#define X(sym, shape) HOOK(sym, KIND_DERIVED, SH_##shape, 0)
#include "hooks.def"
#undef HOOK

/* The optional half: the same hooks, hidden, under no exported name
 * (optional.c binds them into the objects that bind the name). */
#define HOOK(sym, kind, shape, nests)                                       \
	static struct pl_real real_##sym = { #sym, NULL };                  \
	static uint64_t hook_##sym(uint64_t a, uint64_t b, uint64_t c,      \
				   uint64_t d)                              \
	{                                                                   \
		return call(&real_##sym, kind, shape, nests, a, b, c, d,    \
			    __builtin_return_address(0));                   \
	}
#define PL_HOOKS_OPTIONAL
#include "hooks.def"
#undef PL_HOOKS_OPTIONAL
#undef HOOK
#undef M
#undef N
#undef C
#undef R
#undef A
#undef F
#undef X

#define OH_(sym) { #sym, (void *)hook_##sym, (void **)&real_##sym.fn },
#define M(sym, shape) OH_(sym)
#define N(sym, shape) OH_(sym)
#define C(sym, shape) OH_(sym)
#define R(sym, shape) OH_(sym)
#define A(sym, shape) OH_(sym)
#define F(sym) OH_(sym)
#define X(sym, shape) OH_(sym)
#define PL_HOOKS_OPTIONAL
/* sorted by pl_opt_init() */
static struct pl_opt_hook opt_table[] = {
#include "hooks.def"
};
#undef PL_HOOKS_OPTIONAL
#undef M
#undef N
#undef C
#undef R
#undef A
#undef F
#undef X
#undef OH_

/* The optional hooks into the objects of the start-up (attach()); later
 * ones after their dlopen (call()). */
static void opt_attach(void)
{
	pl_opt_init(opt_table, sizeof(opt_table) / sizeof(opt_table[0]),
		    (const void *)opt_attach, &ring.quiet);
	pl_opt_rescan();
}

/* ------------------------------------------------------------------ */
/* mmap, munmap, mremap, brk, sbrk: the calls made through libc's      */
/* functions (malloc's own go to the kernel directly: not seen here)    */
/* ------------------------------------------------------------------ */

static void *real(const char *name, void **slot)
{
	void *p = __atomic_load_n(slot, __ATOMIC_ACQUIRE);

	if (!p) {
		p = next_sym(name);
		__atomic_store_n(slot, p, __ATOMIC_RELEASE);
	}
	return p;
}

#define REAL(type, name)                                                   \
	static void *real_##name##_p;                                      \
	type fn = (type)real(#name, &real_##name##_p)

typedef void *(*mmap_fn)(void *, size_t, int, int, int, off_t);

PL_EXPORT void *hook_mmap(void *addr, size_t len, int prot, int flags, int fd,
			  off_t off) __asm__("mmap");
void *hook_mmap(void *addr, size_t len, int prot, int flags, int fd,
		off_t off)
{
	REAL(mmap_fn, mmap);
	void *ret;

	if (__builtin_expect(self.own, 0) && (flags & MAP_ANONYMOUS)) {
		fd = PL_SELF_MMAP_FD; /* libunwind's memory is ours */
	}
	if (!fn) {
		return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd,
				       off);
	}
	if (self.depth || !active()) {
		return fn(addr, len, prot, flags, fd, off);
	}
	self.depth++;
	ret = fn(addr, len, prot, flags, fd, off);
	self.depth--;
	if (ret != MAP_FAILED) {
		emit(MT_EV_MMAP, (uint64_t)(uintptr_t)ret, len, 0, 0, 0);
	}
	return ret;
}

PL_EXPORT void *hook_mmap64(void *addr, size_t len, int prot, int flags,
			    int fd, off_t off) __asm__("mmap64");
void *hook_mmap64(void *addr, size_t len, int prot, int flags, int fd,
		  off_t off)
{
	return hook_mmap(addr, len, prot, flags, fd, off);
}

typedef int (*munmap_fn)(void *, size_t);

PL_EXPORT int hook_munmap(void *addr, size_t len) __asm__("munmap");
int hook_munmap(void *addr, size_t len)
{
	REAL(munmap_fn, munmap);
	int ret;

	if (!fn) {
		return (int)syscall(SYS_munmap, addr, len);
	}
	if (self.depth || !active()) {
		return fn(addr, len);
	}
	self.depth++;
	ret = fn(addr, len);
	self.depth--;
	if (ret == 0) {
		emit(MT_EV_MUNMAP, (uint64_t)(uintptr_t)addr, len, 0, 0, 0);
	}
	return ret;
}

typedef void *(*mremap_fn)(void *, size_t, size_t, int, ...);

PL_EXPORT void *hook_mremap(void *old, size_t old_len, size_t new_len,
			    int flags, ...) __asm__("mremap");
void *hook_mremap(void *old, size_t old_len, size_t new_len, int flags, ...)
{
	REAL(mremap_fn, mremap);
	void *to = NULL, *ret;
	va_list ap;

	if (flags & MREMAP_FIXED) {
		va_start(ap, flags);
		to = va_arg(ap, void *);
		va_end(ap);
	}
	if (!fn) {
		return (void *)syscall(SYS_mremap, old, old_len, new_len,
				       flags, to);
	}
	if (self.depth || !active()) {
		return fn(old, old_len, new_len, flags, to);
	}
	self.depth++;
	ret = fn(old, old_len, new_len, flags, to);
	self.depth--;
	if (ret != MAP_FAILED) {
		/* as the eBPF source: the old range gone, the new there */
		emit(MT_EV_MUNMAP, (uint64_t)(uintptr_t)old, old_len, 0, 0, 0);
		emit(MT_EV_MMAP, (uint64_t)(uintptr_t)ret, new_len, 0, 0, 0);
	}
	return ret;
}

typedef void *(*sbrk_fn)(intptr_t);
typedef int (*brk_fn)(void *);

PL_EXPORT void *hook_sbrk(intptr_t incr) __asm__("sbrk");
void *hook_sbrk(intptr_t incr)
{
	REAL(sbrk_fn, sbrk);
	char *ret;

	if (!fn) {
		errno = ENOMEM;
		return (void *)-1;
	}
	if (self.depth || !active()) {
		return fn(incr);
	}
	self.depth++;
	ret = fn(incr);
	self.depth--;
	if (ret != (char *)-1 && incr) {
		/* Brk: the new break, and how far it moved */
		emit(MT_EV_BRK, (uint64_t)(uintptr_t)(ret + incr),
		     incr > 0 ? (uint64_t)incr : (uint64_t)-incr, 0, 0, 0);
	}
	return ret;
}

PL_EXPORT int hook_brk(void *addr) __asm__("brk");
int hook_brk(void *addr)
{
	REAL(brk_fn, brk);
	static void *real_sbrk_p;
	sbrk_fn cur = (sbrk_fn)real("sbrk", &real_sbrk_p);
	char *before;
	int ret;

	if (!fn || !cur) {
		errno = ENOMEM;
		return -1;
	}
	if (self.depth || !active()) {
		return fn(addr);
	}
	self.depth++;
	before = cur(0);
	ret = fn(addr);
	self.depth--;
	if (ret == 0 && (char *)addr != before) {
		uint64_t a = (uint64_t)(uintptr_t)addr,
			 b = (uint64_t)(uintptr_t)before;

		emit(MT_EV_BRK, a, a > b ? a - b : b - a, 0, 0, 0);
	}
	return ret;
}

/* ------------------------------------------------------------------ */
/* exec: say which programs will run untraced                          */
/* ------------------------------------------------------------------ */

/* A notice for memtrack's stderr (source/source.c says it once per file),
 * through the ring (shm.h, PL_NOTICE_TAG). Async-signal-safe; a vfork
 * child shares our mapping. */
static void notice(int kind, const char *path)
{
	unsigned char rec[PL_NOTICE_HDR + PL_NOTICE_PATH];
	uint32_t k = (uint32_t)kind;
	int32_t pid;
	size_t len;

	if (!kind || !active()) {
		return;
	}
	pid = pid_now();
	len = strnlen(path, PL_NOTICE_PATH - 1);
	memcpy(rec, PL_NOTICE_TAG, 4);
	memcpy(rec + 4, &k, sizeof(k));
	memcpy(rec + 8, &pid, sizeof(pid));
	memcpy(rec + PL_NOTICE_HDR, path, len);
	rec[PL_NOTICE_HDR + len] = '\0';
	put_record(rec, PL_NOTICE_HDR + len + 1);
}

/*
 * The program installed a seccomp filter after it started (a launcher:
 * bwrap, minijail, a test's seccomp-run, set one up and exec their
 * target; libseccomp's seccomp_load() in a program): from then on make
 * no call it may not have allowed, as for a filter inherited at start
 * (seccomp_filtered()). The ring goes quiet, and the exec checks, whose
 * stat() and open() of the target could be what the filter kills, are
 * left to memtrack (PL_NOTE_UNCHECKED).
 */
static void went_sandboxed(void)
{
	__atomic_store_n(&ring.quiet, 1, __ATOMIC_RELAXED);
}

typedef int (*prctl_fn)(int, unsigned long, unsigned long, unsigned long,
			unsigned long);

PL_EXPORT int hook_prctl(int option, ...) __asm__("prctl");
int hook_prctl(int option, ...)
{
	REAL(prctl_fn, prctl);
	unsigned long a[4];
	va_list ap;
	int ret;

	va_start(ap, option);
	for (int i = 0; i < 4; i++) {
		a[i] = va_arg(ap, unsigned long);
	}
	va_end(ap);
	if (!fn) {
		ret = (int)syscall(SYS_prctl, option, a[0], a[1], a[2], a[3]);
	} else {
		ret = fn(option, a[0], a[1], a[2], a[3]);
	}
	if (ret == 0 && option == PR_SET_SECCOMP) {
		went_sandboxed();
	}
	return ret;
}

#if defined(__x86_64__)
/* syscall(2) without libc: the hook below must not look anything up (its
 * callers include our own allocation path) */
static long raw_syscall(long n, long a1, long a2, long a3, long a4, long a5,
			long a6)
{
	register long r10 __asm__("r10") = a4;
	register long r8 __asm__("r8") = a5;
	register long r9 __asm__("r9") = a6;
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a1), "S"(a2), "d"(a3), "r"(r10),
			   "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}

/* libseccomp and others call seccomp(2) through syscall(3) */
PL_EXPORT long hook_syscall(long nr, ...) __asm__("syscall");
long hook_syscall(long nr, ...)
{
	long a[6], ret;
	va_list ap;

	va_start(ap, nr);
	for (int i = 0; i < 6; i++) {
		a[i] = va_arg(ap, long);
	}
	va_end(ap);
	ret = raw_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	if (ret < 0 && ret > -4096) {
		errno = (int)-ret;
		return -1;
	}
	if ((nr == SYS_seccomp && (a[0] == SECCOMP_SET_MODE_FILTER ||
				   a[0] == SECCOMP_SET_MODE_STRICT)) ||
	    (nr == SYS_prctl && a[0] == PR_SET_SECCOMP)) {
		went_sandboxed();
	}
	return ret;
}
#endif

static void check_exec(const char *path, int fd, char *const envp[])
{
	int saved = errno;

	/* unrecorded: nobody to tell */
	if (!active()) {
		return;
	}
	if (__atomic_load_n(&ring.quiet, __ATOMIC_RELAXED)) {
		/* memtrack checks it for us: no call made here */
		notice(PL_NOTE_UNCHECKED, path);
	} else {
		notice(pl_exec_check(path, fd, envp), path);
	}
	errno = saved;
}

/*
 * An executable that defines malloc (jemalloc or mimalloc linked in
 * statically) comes first in the lookup order: its own calls, and
 * libc's, go to its allocator, never to ours. Say so once per file.
 */
/* our malloc itself: taking hook_malloc's address would go through the
 * GOT, to whichever malloc won */
static uint64_t own_malloc(uint64_t a, uint64_t b, uint64_t c, uint64_t d)
	__attribute__((alias("malloc")));

/*
 * --source auto: the eBPF source has a uprobe here (its file offset: the
 * section's). The trap tells it that this process's allocator calls are
 * ours from now on; every one before was its. Called once per process
 * image, by the thread that runs the constructors, in no allocator call.
 */
__attribute__((noinline, used, section("memtrack_hello"))) static void
pl_hello(void)
{
	__asm__ volatile("" ::: "memory");
}

__attribute__((constructor)) static void check_own_malloc(void)
{
	char exe[PL_NOTICE_PATH];
	ssize_t n;
	int defined, s;
	void *m;

	attach_early();
	s = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
	if (s != ST_ON && s != ST_PENDING) {
		return;
	}
	/* handover: nothing allocated before the hello that the program
	 * did not allocate (optional.h) */
	defined = s == ST_PENDING ? pl_opt_program_defines("malloc") : -1;
	if (defined < 0) {
		self.depth++;
		m = dlsym(RTLD_DEFAULT, "malloc");
		/* a non-PIE executable that takes &malloc has a PLT entry
		 * for it, which the lookup returns: not a malloc of its
		 * own (ownmalloc.h) */
		defined = m && m != (void *)own_malloc &&
			  pl_malloc_is_defined_at(m);
		self.depth--;
	}
	if (s == ST_PENDING) {
		/* handover: a program with its own malloc stays the eBPF
		 * source's, whose uprobes see that malloc */
		if (defined) {
			__atomic_store_n(&state, ST_OFF, __ATOMIC_RELEASE);
			if (__atomic_load_n(&shm->stack_depth,
					    __ATOMIC_RELAXED)) {
				note_self_deps(); /* not given at attach */
			}
			return;
		}
		pl_hello();
		__atomic_store_n(&state, ST_ON, __ATOMIC_RELEASE);
		if (__atomic_load_n(&shm->stack_depth, __ATOMIC_RELAXED)) {
			self.depth++;
			attach_stacks();
			self.depth--;
		}
		return;
	}
	if (!defined) {
		return;
	}
	if (ring.quiet) {
		/* under a filter: the name exec was given, no call made */
		const char *fn = (const char *)getauxval(AT_EXECFN);

		if (fn) {
			notice(PL_NOTE_OWN_MALLOC, fn);
		}
		return;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		notice(PL_NOTE_OWN_MALLOC, exe);
	}
}

/* execvp's search, to check the file it will run */
static void check_execp(const char *file, char *const envp[])
{
	char path[4096];
	const char *pathvar = NULL;
	size_t i;

	for (i = 0; environ && environ[i]; i++) {
		if (!strncmp(environ[i], "PATH=", 5)) {
			pathvar = environ[i] + 5;
			break;
		}
	}
	if (__atomic_load_n(&ring.quiet, __ATOMIC_RELAXED)) {
		check_exec(file, -1, envp); /* the search is a stat per dir */
	} else if (pl_exec_find(file, pathvar, path, sizeof(path)) == 0) {
		check_exec(path, -1, envp);
	}
}

typedef int (*execve_fn)(const char *, char *const[], char *const[]);

PL_EXPORT int hook_execve(const char *path, char *const argv[],
			  char *const envp[]) __asm__("execve");
int hook_execve(const char *path, char *const argv[], char *const envp[])
{
	REAL(execve_fn, execve);

	check_exec(path, -1, envp);
	if (!fn) {
		return (int)syscall(SYS_execve, path, argv, envp);
	}
	return fn(path, argv, envp);
}

PL_EXPORT int hook_execv(const char *path, char *const argv[])
	__asm__("execv");
int hook_execv(const char *path, char *const argv[])
{
	return hook_execve(path, argv, environ);
}

typedef int (*execvpe_fn)(const char *, char *const[], char *const[]);

PL_EXPORT int hook_execvpe(const char *file, char *const argv[],
			   char *const envp[]) __asm__("execvpe");
int hook_execvpe(const char *file, char *const argv[], char *const envp[])
{
	REAL(execvpe_fn, execvpe);

	check_execp(file, envp);
	if (!fn) {
		errno = ENOSYS;
		return -1;
	}
	return fn(file, argv, envp);
}

PL_EXPORT int hook_execvp(const char *file, char *const argv[])
	__asm__("execvp");
int hook_execvp(const char *file, char *const argv[])
{
	return hook_execvpe(file, argv, environ);
}

/* execl & co: the arguments into an array on the stack */
#define LIST_ARGS(first, ap, argv)                                          \
	do {                                                                \
		va_list cp;                                                 \
		size_t n_ = 1, i_;                                          \
		va_copy(cp, ap);                                            \
		while (va_arg(cp, char *)) {                                \
			n_++;                                               \
		}                                                           \
		va_end(cp);                                                 \
		argv = __builtin_alloca((n_ + 1) * sizeof(char *));         \
		argv[0] = (char *)(first);                                  \
		for (i_ = 1; i_ <= n_; i_++) {                              \
			argv[i_] = va_arg(ap, char *);                      \
		}                                                           \
	} while (0)

PL_EXPORT int hook_execl(const char *path, const char *arg, ...)
	__asm__("execl");
int hook_execl(const char *path, const char *arg, ...)
{
	char **argv;
	va_list ap;

	va_start(ap, arg);
	LIST_ARGS(arg, ap, argv);
	va_end(ap);
	return hook_execve(path, argv, environ);
}

PL_EXPORT int hook_execlp(const char *file, const char *arg, ...)
	__asm__("execlp");
int hook_execlp(const char *file, const char *arg, ...)
{
	char **argv;
	va_list ap;

	va_start(ap, arg);
	LIST_ARGS(arg, ap, argv);
	va_end(ap);
	return hook_execvpe(file, argv, environ);
}

PL_EXPORT int hook_execle(const char *path, const char *arg, ...)
	__asm__("execle");
int hook_execle(const char *path, const char *arg, ...)
{
	char **argv, **envp = NULL;
	va_list ap;

	va_start(ap, arg);
	LIST_ARGS(arg, ap, argv);
	envp = va_arg(ap, char **); /* after the NULL */
	va_end(ap);
	return hook_execve(path, argv, envp);
}

typedef int (*fexecve_fn)(int, char *const[], char *const[]);

PL_EXPORT int hook_fexecve(int fd, char *const argv[], char *const envp[])
	__asm__("fexecve");
int hook_fexecve(int fd, char *const argv[], char *const envp[])
{
	REAL(fexecve_fn, fexecve);
	char name[64] = "/proc/self/fd/", num[24];

	fmt_uint(num, sizeof(num), (unsigned long long)fd);
	strcat(name, num);
	check_exec(argv && argv[0] ? argv[0] : name, fd, envp);
	if (!fn) {
		errno = ENOSYS;
		return -1;
	}
	return fn(fd, argv, envp);
}

typedef int (*spawn_fn)(pid_t *, const char *,
			const posix_spawn_file_actions_t *,
			const posix_spawnattr_t *, char *const[],
			char *const[]);

PL_EXPORT int hook_posix_spawn(pid_t *pid, const char *path,
			       const posix_spawn_file_actions_t *fa,
			       const posix_spawnattr_t *attr,
			       char *const argv[], char *const envp[])
	__asm__("posix_spawn");
int hook_posix_spawn(pid_t *pid, const char *path,
		     const posix_spawn_file_actions_t *fa,
		     const posix_spawnattr_t *attr, char *const argv[],
		     char *const envp[])
{
	REAL(spawn_fn, posix_spawn);

	check_exec(path, -1, envp);
	if (!fn) {
		return ENOSYS;
	}
	return fn(pid, path, fa, attr, argv, envp);
}

PL_EXPORT int hook_posix_spawnp(pid_t *pid, const char *file,
				const posix_spawn_file_actions_t *fa,
				const posix_spawnattr_t *attr,
				char *const argv[], char *const envp[])
	__asm__("posix_spawnp");
int hook_posix_spawnp(pid_t *pid, const char *file,
		      const posix_spawn_file_actions_t *fa,
		      const posix_spawnattr_t *attr, char *const argv[],
		      char *const envp[])
{
	REAL(spawn_fn, posix_spawnp);

	check_execp(file, envp);
	if (!fn) {
		return ENOSYS;
	}
	return fn(pid, file, fa, attr, argv, envp);
}

/* ------------------------------------------------------------------ */
/* Signal handlers                                                     */
/* ------------------------------------------------------------------ */

/*
 * A handler that allocates while its thread is inside an allocator call
 * would look nested (depth > 0) and go unrecorded: handlers run through a
 * trampoline that starts them at depth 0 and puts the depth back after.
 * (A handler that longjmps out leaves it at 0, which is where the code it
 * jumps to is.) The ring needs nothing: a handler interrupting a write
 * keeps its events pending (ring.h, I4).
 */
typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);

static void *user_handler[_NSIG];
static int user_siginfo[_NSIG];

static void trampoline(int sig, siginfo_t *si, void *uc)
{
	int saved = self.depth;
	void *h = __atomic_load_n(&user_handler[sig], __ATOMIC_ACQUIRE);

	self.depth = 0;
	if (user_siginfo[sig]) {
		((void (*)(int, siginfo_t *, void *))h)(sig, si, uc);
	} else {
		((void (*)(int))h)(sig);
	}
	self.depth = saved;
}

PL_EXPORT int hook_sigaction(int sig, const struct sigaction *act,
			     struct sigaction *oact) __asm__("sigaction");
int hook_sigaction(int sig, const struct sigaction *act,
		   struct sigaction *oact)
{
	REAL(sigaction_fn, sigaction);
	struct sigaction mine;
	void *old_handler = NULL;
	int old_siginfo = 0, ret;

	if (!fn) {
		errno = ENOSYS;
		return -1;
	}
	if (sig <= 0 || sig >= _NSIG) {
		return fn(sig, act, oact);
	}
	old_handler = __atomic_load_n(&user_handler[sig], __ATOMIC_ACQUIRE);
	old_siginfo = user_siginfo[sig];
	if (act && act->sa_handler != SIG_DFL && act->sa_handler != SIG_IGN) {
		mine = *act;
		user_siginfo[sig] = !!(act->sa_flags & SA_SIGINFO);
		__atomic_store_n(&user_handler[sig],
				 user_siginfo[sig] ? (void *)act->sa_sigaction :
						     (void *)act->sa_handler,
				 __ATOMIC_RELEASE);
		mine.sa_sigaction = trampoline;
		mine.sa_flags |= SA_SIGINFO;
		act = &mine;
	}
	ret = fn(sig, act, oact);
	if (ret == 0 && oact && oact->sa_sigaction == trampoline &&
	    old_handler) {
		/* the program sees its own handler */
		if (old_siginfo) {
			oact->sa_sigaction = old_handler;
		} else {
			oact->sa_handler = (void (*)(int))old_handler;
			oact->sa_flags &= ~SA_SIGINFO;
		}
	}
	return ret;
}

PL_EXPORT sighandler_t hook_signal(int sig, sighandler_t handler)
	__asm__("signal");
sighandler_t hook_signal(int sig, sighandler_t handler)
{
	struct sigaction sa, old;

	/* glibc's signal(): BSD semantics */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, sig);
	if (hook_sigaction(sig, &sa, &old) < 0) {
		return SIG_ERR;
	}
	return old.sa_handler;
}

/* ------------------------------------------------------------------ */
/* dlsym: allocators reached through a handle of dlopen                */
/* ------------------------------------------------------------------ */

/*
 * dlsym(handle, "tc_malloc") on a library's handle finds that library's
 * definition, not ours: the program then calls it directly. For the
 * names of hooks.def, dlsym hands out a trampoline that records the calls
 * (one per distinct function; DL_SLOTS in all, past that the function is
 * returned as is and its calls are not seen).
 *
 * RTLD_NEXT and RTLD_DEFAULT depend on the caller's object: those calls
 * jump straight to libc's dlsym, which then sees the program's return
 * address, so a wrapper (ours or another preload's) finding the next
 * definition is not disturbed. That jump needs assembly: x86-64 only.
 * RTLD_DEFAULT of an optional allocator's name found in the global scope
 * is wrapped too (pl_dlsym_default): exported no more, our hook is not
 * what libc finds.
 */
#if defined(__x86_64__)

struct hook_info {
	const char *name;
	unsigned int kind, shape;
	void *hook;
};

#define H_(sym, k, s) { #sym, k, s, (void *)hook_##sym },
#define M(sym, shape) H_(sym, MT_EV_MALLOC, SH_##shape)
#define N(sym, shape) H_(sym, MT_EV_MALLOC, SH_##shape)
#define C(sym, shape) H_(sym, MT_EV_CALLOC, SH_##shape)
#define R(sym, shape) H_(sym, MT_EV_REALLOC, SH_##shape)
#define A(sym, shape) H_(sym, MT_EV_ALIGNED_ALLOC, SH_##shape)
#define F(sym) H_(sym, MT_EV_FREE, SH_FREE)
#define X(sym, shape) H_(sym, KIND_DERIVED, SH_##shape)
static const struct hook_info hook_table[] = {
#include "hooks.def"
#define PL_HOOKS_OPTIONAL
#include "hooks.def"
#undef PL_HOOKS_OPTIONAL
};
#undef M
#undef N
#undef C
#undef R
#undef A
#undef F
#undef X
#undef H_

#define DL_SLOTS 32

struct dl_slot {
	struct pl_real real;
	unsigned int kind, shape;
};

static struct dl_slot dl_slots[DL_SLOTS];
static uint32_t dl_used;

#define DLT(i)                                                              \
	static uint64_t dlt_##i(uint64_t a, uint64_t b, uint64_t c,         \
				uint64_t d)                                 \
	{                                                                   \
		return call(&dl_slots[i].real, dl_slots[i].kind,            \
			    dl_slots[i].shape, 0, a, b, c, d, NULL);        \
	}
DLT(0) DLT(1) DLT(2) DLT(3) DLT(4) DLT(5) DLT(6) DLT(7)
DLT(8) DLT(9) DLT(10) DLT(11) DLT(12) DLT(13) DLT(14) DLT(15)
DLT(16) DLT(17) DLT(18) DLT(19) DLT(20) DLT(21) DLT(22) DLT(23)
DLT(24) DLT(25) DLT(26) DLT(27) DLT(28) DLT(29) DLT(30) DLT(31)
static const pl_fn dl_tramps[DL_SLOTS] = {
	dlt_0, dlt_1, dlt_2, dlt_3, dlt_4, dlt_5, dlt_6, dlt_7,
	dlt_8, dlt_9, dlt_10, dlt_11, dlt_12, dlt_13, dlt_14, dlt_15,
	dlt_16, dlt_17, dlt_18, dlt_19, dlt_20, dlt_21, dlt_22, dlt_23,
	dlt_24, dlt_25, dlt_26, dlt_27, dlt_28, dlt_29, dlt_30, dlt_31,
};

/* A trampoline that records the calls of p, h's definition elsewhere
 * (one per distinct function, DL_SLOTS in all; past that p itself). */
static void *wrap_found(const struct hook_info *h, void *p)
{
	uint32_t i, n = __atomic_load_n(&dl_used, __ATOMIC_ACQUIRE);

	for (i = 0; i < n && i < DL_SLOTS; i++) {
		if (__atomic_load_n(&dl_slots[i].real.fn, __ATOMIC_ACQUIRE) ==
			    (pl_fn)p &&
		    dl_slots[i].kind == h->kind) {
			return (void *)dl_tramps[i];
		}
	}
	i = __atomic_fetch_add(&dl_used, 1, __ATOMIC_ACQ_REL);
	if (i >= DL_SLOTS) {
		return p;
	}
	dl_slots[i].kind = h->kind;
	dl_slots[i].shape = h->shape;
	dl_slots[i].real.name = h->name;
	__atomic_store_n(&dl_slots[i].real.fn, (pl_fn)p, __ATOMIC_RELEASE);
	return (void *)dl_tramps[i];
}

__attribute__((used)) void *pl_dlsym_handle(void *handle, const char *name);
void *pl_dlsym_handle(void *handle, const char *name)
{
	dlsym_fn next = libc_dlsym();
	const struct hook_info *h = NULL;
	uint32_t i;
	void *p;

	if (__atomic_load_n(&pl_opt_dirty, __ATOMIC_RELAXED) &&
	    __atomic_load_n(&state, __ATOMIC_ACQUIRE) == ST_ON) {
		/* after a dlopen, before the program calls into what it
		 * loaded (optional.h) */
		self.depth++;
		pl_opt_rescan();
		self.depth--;
	}

	p = next(handle, name);
	if (!p || !name) {
		return p;
	}
	for (i = 0; i < sizeof(hook_table) / sizeof(hook_table[0]); i++) {
		if (!strcmp(hook_table[i].name, name)) {
			h = &hook_table[i];
			break;
		}
	}
	if (!h || p == h->hook) {
		return p;
	}
	return wrap_found(h, p);
}

/*
 * dlsym(RTLD_DEFAULT, name) of an optional allocator's name (optional.c):
 * the definition, which the program would call untraced, wrapped as
 * above. Looked up in the global scope (ours); NULL when it is not there
 * (or the name is not optional), and the assembly then asks libc as the
 * caller, whose scope may hold it: the answer is libc's, unwrapped.
 */
__attribute__((used)) void *pl_dlsym_default(const char *name);
void *pl_dlsym_default(const char *name)
{
	const struct hook_info *h = NULL;
	dlsym_fn next = libc_dlsym();
	size_t i;
	void *p;

	if (!name || !next) {
		return NULL;
	}
	for (i = 0; i < sizeof(opt_table) / sizeof(opt_table[0]); i++) {
		if (!strcmp(opt_table[i].name, name)) {
			break;
		}
	}
	if (i == sizeof(opt_table) / sizeof(opt_table[0])) {
		return NULL;
	}
	for (i = 0; i < sizeof(hook_table) / sizeof(hook_table[0]); i++) {
		if (!strcmp(hook_table[i].name, name)) {
			h = &hook_table[i];
			break;
		}
	}
	if (!h) {
		return NULL;
	}
	/* a failed lookup allocates dlerror's message: not the program's */
	self.depth++;
	p = next(RTLD_DEFAULT, name);
	self.depth--;
	return p ? wrap_found(h, p) : NULL;
}

/*
 * vfork: glibc's, plus the flag. The return address is kept in a
 * register, since the child's calls overwrite our shared stack; the
 * parent resumes when the child has exec'd or exited, and clears it.
 */
__attribute__((used)) int pl_vfork_error(int err);
int pl_vfork_error(int err)
{
	errno = err;
	return -1;
}

__asm__(".text\n"
	".globl vfork\n"
	".type vfork, @function\n"
	"vfork:\n"
	"	movq pl_in_vfork@gottpoff(%rip), %rcx\n"
	"	movl $1, %fs:(%rcx)\n"
	"	popq %rdi\n"
	"	movl $58, %eax\n" /* SYS_vfork */
	"	syscall\n"
	"	pushq %rdi\n"
	"	testq %rax, %rax\n"
	"	jz 1f\n" /* the child: flagged */
	"	movq pl_in_vfork@gottpoff(%rip), %rcx\n"
	"	movl $0, %fs:(%rcx)\n"
	"	cmpq $-4095, %rax\n"
	"	jae 2f\n"
	"1:\n"
	"	ret\n"
	"2:\n"
	"	negl %eax\n"
	"	movl %eax, %edi\n"
	"	jmp pl_vfork_error\n"
	".size vfork, .-vfork\n");

__asm__(".text\n"
	".globl dlsym\n"
	".type dlsym, @function\n"
	"dlsym:\n"
	"	cmpq $-1, %rdi\n" /* RTLD_NEXT */
	"	je 1f\n"
	"	testq %rdi, %rdi\n" /* RTLD_DEFAULT */
	"	je 3f\n"
	"	jmp pl_dlsym_handle\n"
	"3:\n" /* an optional allocator's name: wrapped, else libc's */
	"	pushq %rdi\n"
	"	pushq %rsi\n"
	"	subq $8, %rsp\n"
	"	movq %rsi, %rdi\n"
	"	call pl_dlsym_default\n"
	"	addq $8, %rsp\n"
	"	popq %rsi\n"
	"	popq %rdi\n"
	"	testq %rax, %rax\n"
	"	jz 1f\n"
	"	ret\n"
	"1:\n"
	"	movq pl_real_dlsym(%rip), %rax\n"
	"	testq %rax, %rax\n"
	"	jz 2f\n"
	"	jmp *%rax\n"
	"2:\n"
	"	pushq %rdi\n"
	"	pushq %rsi\n"
	"	subq $8, %rsp\n"
	"	call pl_dlsym_resolve\n"
	"	addq $8, %rsp\n"
	"	popq %rsi\n"
	"	popq %rdi\n"
	"	jmp *%rax\n"
	".size dlsym, .-dlsym\n");

/*
 * dlopen: libc's, after marking the loaded objects dirty for the optional
 * hooks (optional.c binds them at the next entry point). A jump, not a
 * call: ld.so takes the return address for the caller's, whose RUNPATH
 * and $ORIGIN it searches.
 */
void *pl_real_dlopen;

__attribute__((used)) void *pl_dlopen_resolve(void);
void *pl_dlopen_resolve(void)
{
	void *p;

	self.depth++;
	p = dlvsym(RTLD_NEXT, "dlopen", "GLIBC_2.34");
	if (!p) {
		p = dlvsym(RTLD_NEXT, "dlopen", "GLIBC_2.2.5");
	}
	self.depth--;
	__atomic_store_n(&pl_real_dlopen, p, __ATOMIC_RELEASE);
	return p;
}

__asm__(".text\n"
	".globl dlopen\n"
	".type dlopen, @function\n"
	"dlopen:\n"
	"	movl $2, pl_opt_dirty(%rip)\n"
	"	movq pl_real_dlopen(%rip), %rax\n"
	"	testq %rax, %rax\n"
	"	jz 1f\n"
	"	jmp *%rax\n"
	"1:\n"
	"	pushq %rdi\n"
	"	pushq %rsi\n"
	"	subq $8, %rsp\n"
	"	call pl_dlopen_resolve\n"
	"	addq $8, %rsp\n"
	"	popq %rsi\n"
	"	popq %rdi\n"
	"	testq %rax, %rax\n"
	"	jz 2f\n"
	"	jmp *%rax\n"
	"2:\n"
	"	ret\n" /* no dlopen to call: NULL */
	".size dlopen, .-dlopen\n");

#endif /* __x86_64__ */
