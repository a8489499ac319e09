/* SPDX-License-Identifier: MIT */
/*
 * tests/test-inproc-stacks.c - the preload interposer's stack machinery
 * (plugins/preload/interposer/stack-*). Needs neither root nor BPF.
 *
 * unwind: the stk-chain programs (built -O2 -fomit-frame-pointer, PIE,
 *   non-PIE, C++ through libstdc++'s operator new) unwind from their
 *   interposed malloc; the whole chain must come out in order down to
 *   main, __libc_start_main and _start, from a thread, a signal handler
 *   and forked children too, without the hook ever reentering malloc. A
 *   stack captured here, with the mappings written here, must be named
 *   by the report's symbolizer (report/symbolize.c) frame by frame.
 * table: one id per distinct stack, new exactly once even when threads
 *   race on it, nobody using an id before it is published, bounded
 *   memory with a sane fallback, fork while a stack is being sent.
 * maps: the MTKM records match /proc/self/maps and the files' build-ids;
 *   a dlopen'd library shows up after the dlopen, and only then.
 */
#include "config.h"

#include <check.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>

#ifdef HAVE_LIBELF
#include <libelf.h>

#include "elf-build-id.h"
#endif
#include "symbolize.h"
#include "plugins/preload/interposer/loader-walk.h"
#include "plugins/preload/interposer/stack-maps.h"
#include "plugins/preload/interposer/stack-table.h"
#include "plugins/preload/interposer/stack-unwind.h"

#define NOIPA __attribute__((noipa))

#if defined(__SANITIZE_ADDRESS__)
#define MT_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MT_UNDER_ASAN 1
#endif
#endif
#ifndef MT_UNDER_ASAN
#define MT_UNDER_ASAN 0
#endif

static const char *builddir(void)
{
	const char *d = getenv("MT_BUILDDIR");

	return d ? d : ".";
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ------------------------------------------------------------------ */
/* unwind: the stk-chain programs                                      */
/* ------------------------------------------------------------------ */

#define MAX_LINES 64

struct block {
	int n;
	char file[MAX_LINES][128];
	char sym[MAX_LINES][128];
};

static char *run_prog(const char *name, const char *args)
{
	char cmd[1024];
	size_t len = 0, cap = 1 << 16;
	char *out = calloc(1, cap);
	FILE *p;
	int status;

	snprintf(cmd, sizeof(cmd), "%s/tests/progs/%s %s", builddir(), name,
		 args);
	p = popen(cmd, "r");
	ck_assert_msg(p, "%s", cmd);
	while (len + 1 < cap && fgets(out + len, (int)(cap - len), p)) {
		len += strlen(out + len);
	}
	status = pclose(p);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "%s: status %d\n%s", cmd, status, out);
	return out;
}

/* The frames printed between "begin label" and "end label". */
static void get_block(const char *out, const char *label, struct block *b)
{
	char begin[64];
	const char *p;

	memset(b, 0, sizeof(*b));
	snprintf(begin, sizeof(begin), "begin %s\n", label);
	p = strstr(out, begin);
	ck_assert_msg(p, "no block '%s' in:\n%s", label, out);
	p += strlen(begin);
	while (!strncmp(p, "frame ", 6) && b->n < MAX_LINES) {
		ck_assert_int_eq(sscanf(p, "frame %127s %127s", b->file[b->n],
					b->sym[b->n]),
				 2);
		b->n++;
		p = strchr(p, '\n') + 1;
	}
	ck_assert_msg(!strncmp(p, "end ", 4), "block '%s' cut:\n%s", label,
		      out);
}

static void dump_block(const struct block *b, char *buf, size_t len)
{
	size_t at = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; i < b->n && at < len; i++) {
		at += (size_t)snprintf(buf + at, len - at, "\n  %s %s",
				       b->file[i], b->sym[i]);
	}
}

/* syms (NULL-terminated) appear at frames from..from+k-1, their names
 * containing syms[i] (C++ names are mangled) */
static void expect_at(const struct block *b, int from, const char **syms,
		      const char *what)
{
	char dump[4096];
	int i;

	dump_block(b, dump, sizeof(dump));
	for (i = 0; syms[i]; i++) {
		ck_assert_msg(from + i < b->n && strstr(b->sym[from + i], syms[i]),
			      "%s: frame %d is not %s:%s", what, from + i,
			      syms[i], dump);
	}
}

/* index of the first frame whose symbol contains sym, from `from` */
static int find_sym(const struct block *b, int from, const char *sym)
{
	int i;

	for (i = from; i < b->n; i++) {
		if (strstr(b->sym[i], sym)) {
			return i;
		}
	}
	return -1;
}

/* below main: libc's __libc_start_call_main (static: no name), then
 * __libc_start_main, then the program's _start, the last frame */
static void expect_libc_start(const struct block *b, int main_at,
			      const char *prog, const char *what)
{
	char dump[4096];

	dump_block(b, dump, sizeof(dump));
	ck_assert_msg(b->n == main_at + 4, "%s: %d frames:%s", what, b->n,
		      dump);
	ck_assert_msg(!strcmp(b->file[main_at + 1], "libc.so.6") &&
			      !strcmp(b->file[main_at + 2], "libc.so.6") &&
			      !strcmp(b->sym[main_at + 2], "__libc_start_main") &&
			      !strcmp(b->file[main_at + 3], prog) &&
			      !strcmp(b->sym[main_at + 3], "_start"),
		      "%s: not down to _start:%s", what, dump);
}

static const char *c_chain[] = { "stk_f6", "stk_f5", "stk_f4", "stk_f3",
				 "stk_f2", "stk_f1", NULL };

static void check_c_chain(const char *prog)
{
	char *out = run_prog(prog, "10");
	const char *main_sym[] = { "main", NULL };
	const char *thr[] = { "stk_thread_main", NULL };
	char dump[4096];
	struct block b;
	int at, i;

	/* from main: the cold capture (the process's first of this stack) */
	get_block(out, "main", &b);
	expect_at(&b, 0, c_chain, "main");
	expect_at(&b, 6, main_sym, "main");
	expect_libc_start(&b, 6, prog, "main");
	for (i = 0; i < 7; i++) {
		ck_assert_str_eq(b.file[i], prog);
	}

	/* from a thread: down to the thread's function, then libc's
	 * start_thread and clone3, nothing invented past them */
	get_block(out, "thread", &b);
	dump_block(&b, dump, sizeof(dump));
	expect_at(&b, 0, c_chain, "thread");
	expect_at(&b, 6, thr, "thread");
	ck_assert_msg(b.n == 9 && !strcmp(b.file[7], "libc.so.6") &&
			      !strcmp(b.file[8], "libc.so.6"),
		      "thread:%s", dump);

	/* from a signal handler: the handler, libc's signal trampoline and
	 * raise, then the interrupted chain down to _start */
	get_block(out, "signal", &b);
	dump_block(&b, dump, sizeof(dump));
	ck_assert_msg(!strcmp(b.sym[0], "sig_handler") &&
			      !strcmp(b.file[1], "libc.so.6"),
		      "signal:%s", dump);
	at = find_sym(&b, 1, "stk_f6");
	ck_assert_msg(at > 1, "signal: no stk_f6:%s", dump);
	expect_at(&b, at, c_chain, "signal");
	expect_at(&b, at + 6, main_sym, "signal");
	expect_libc_start(&b, at + 6, prog, "signal");

	/* in a child forked while two threads unwound and interned */
	get_block(out, "fork", &b);
	expect_at(&b, 0, c_chain, "fork");
	expect_at(&b, 6, main_sym, "fork");
	expect_libc_start(&b, 6, prog, "fork");
	ck_assert_msg(strstr(out, "forks 10/10\n"), "%s", out);

	/* nothing of the stack machinery allocated: no hook reentered */
	ck_assert_msg(strstr(out, "reentries 0 "), "%s", out);
	free(out);
}

START_TEST(chain_c_pie)
{
	check_c_chain("stk-chain");
}
END_TEST

static int elf_type(const char *path)
{
	Elf64_Ehdr eh;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	ck_assert_msg(fd >= 0, "%s", path);
	n = read(fd, &eh, sizeof(eh));
	close(fd);
	ck_assert_int_eq(n, sizeof(eh));
	return eh.e_type;
}

START_TEST(chain_c_nopie)
{
	char path[1024];

	snprintf(path, sizeof(path), "%s/tests/progs/stk-chain", builddir());
	ck_assert_int_eq(elf_type(path), ET_DYN);
	snprintf(path, sizeof(path), "%s/tests/progs/stk-chain-nopie",
		 builddir());
	ck_assert_int_eq(elf_type(path), ET_EXEC);
	check_c_chain("stk-chain-nopie");
}
END_TEST

START_TEST(chain_cxx)
{
	static const char *cxx_chain[] = { "stk2f6", "stk2f5", "stk2f4",
					   "stk2f3", "stk2f2", "stk2f1",
					   "main", NULL };
	char *out = run_prog("stk-chain-cxx", "");
	char dump[4096];
	struct block b;

	get_block(out, "main", &b);
	dump_block(&b, dump, sizeof(dump));
	/* first libstdc++'s operator new(unsigned long), then the chain */
	ck_assert_msg(!strcmp(b.file[0], "libstdc++.so.6") &&
			      !strcmp(b.sym[0], "_Znwm"),
		      "cxx:%s", dump);
	expect_at(&b, 1, cxx_chain, "cxx");
	expect_libc_start(&b, 7, "stk-chain-cxx", "cxx");
	ck_assert_msg(strstr(out, "reentries 0 "), "%s", out);
	free(out);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Payloads, and the report's symbolizer                               */
/* ------------------------------------------------------------------ */

struct payload {
	unsigned char buf[1 << 16];
	size_t len;
	uint32_t records;
};

static void payload_reset(struct payload *p)
{
	p->len = MTPL_META_HDR;
	p->records = 0;
}

static void payload_maps(struct payload *p, struct mtpl_maps *m,
			 unsigned flags)
{
	size_t need = 0;
	ssize_t n = mtpl_maps_write(m, (uint32_t)getpid(), flags,
				    p->buf + p->len, sizeof(p->buf) - p->len,
				    &p->records, &need);

	ck_assert_int_ge(n, 0);
	p->len += (size_t)n;
}

static void payload_stack(struct payload *p, uint32_t id,
			  const uint64_t *frames, int n)
{
	size_t len = mtpl_stack_record(p->buf + p->len,
				       sizeof(p->buf) - p->len, id,
				       (uint32_t)getpid(), frames,
				       (uint32_t)n);

	ck_assert_uint_eq(len, 12 + 8 * (size_t)n);
	p->len += len;
	p->records++;
}

/* names of stack id, root first, as `memtrack report` shows them */
static size_t symbolize(struct payload *maps, struct payload *stacks,
			uint32_t id, char names[][256], size_t max)
{
	struct mt_sym *s = mt_sym_new();
	size_t n;

	ck_assert_ptr_nonnull(s);
	mtpl_meta_seal(maps->buf, maps->len, "MTKM", maps->records);
	mtpl_meta_seal(stacks->buf, stacks->len, "MTKT", stacks->records);
	ck_assert_int_eq(mt_sym_meta(s, maps->buf, maps->len, "test"), 0);
	ck_assert_int_eq(mt_sym_meta(s, stacks->buf, stacks->len, "test"), 0);
	ck_assert_uint_eq(mt_sym_nstacks(s), stacks->records);
	n = mt_sym_frames(s, id, &names[0][0], 256, max);
	mt_sym_free(s);
	return n;
}

static uint64_t here[MTPL_UNWIND_MAX];
static int nhere;

static NOIPA int sym_leaf(int x)
{
	nhere = mtpl_unwind(here, MTPL_UNWIND_MAX, 0, NULL);
	__asm__ volatile("" : "+r"(x));
	return x + 1;
}

static NOIPA int sym_middle(int x)
{
	int r = sym_leaf(x + 1);

	__asm__ volatile("" : "+r"(r));
	return r + 1;
}

static NOIPA int sym_outer(int x)
{
	int r = sym_middle(x + 1);

	__asm__ volatile("" : "+r"(r));
	return r + 1;
}

/* frame shows function fn, with or without " (file:line)" after it */
static void frame_is(const char *frame, const char *fn)
{
	size_t n = strlen(fn);

	ck_assert_msg(!strncmp(frame, fn, n) &&
			      (!frame[n] || !strncmp(frame + n, " (", 2)),
		      "frame '%s', want function %s", frame, fn);
}

/* A stack unwound here and the mappings written here, read back by
 * report/symbolize.c: the frames are named, innermost last. */
START_TEST(symbolizer_names_frames)
{
	static struct payload maps, stacks;
	char names[MTPL_UNWIND_MAX][256];
	struct mtpl_maps m;
	size_t n;

	ck_assert_int_eq(mtpl_maps_init(&m), 0);
	payload_reset(&maps);
	payload_reset(&stacks);
	payload_maps(&maps, &m, MTPL_MAPS_EXEC);
	sym_outer(0);
	ck_assert_int_gt(nhere, 3);
	payload_stack(&stacks, 7, here, nhere);
	n = symbolize(&maps, &stacks, 7, names, MTPL_UNWIND_MAX);
	ck_assert_uint_eq(n, (size_t)nhere);
	/* root first, down to where sym_leaf (which unwound) returns */
	/* names, then " (file:line)" where the build has debug info */
	frame_is(names[n - 1], "sym_middle");
	frame_is(names[n - 2], "sym_outer");
	frame_is(names[n - 3], "symbolizer_names_frames_fn");
	frame_is(names[0], "_start");
	mtpl_maps_destroy(&m);
}
END_TEST

static volatile sig_atomic_t storm_total, storm_empty;

static void storm_handler(int sig)
{
	uint64_t f[MTPL_UNWIND_MAX];

	storm_total++;
	/* 0 frames when it interrupted a capture of this thread */
	if (!mtpl_unwind(f, MTPL_UNWIND_MAX, 0, NULL)) {
		storm_empty++;
	}
}

/* Captures interrupted by signal handlers that capture: neither side
 * breaks, every capture outside the handler is whole. */
START_TEST(unwind_signal_storm)
{
	struct itimerval it = { { 0, 100 }, { 0, 100 } };
	struct sigaction sa;
	int i, depth;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = storm_handler;
	sa.sa_flags = SA_RESTART;
	ck_assert_int_eq(sigaction(SIGPROF, &sa, NULL), 0);
	sym_outer(0);
	depth = nhere;
	ck_assert_int_gt(depth, 3);
	ck_assert_int_eq(setitimer(ITIMER_PROF, &it, NULL), 0);
	for (i = 0; i < 100000 || storm_total < 50; i++) {
		sym_outer(0);
		ck_assert_int_eq(nhere, depth);
	}
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_PROF, &it, NULL);
	ck_assert_int_gt(storm_total, 0);
	ck_assert_int_lt(storm_empty, storm_total);
}
END_TEST

#if !MT_UNDER_ASAN /* see fork_while_unwinding_cold */
static volatile int stop_cold;
static struct mtpl_maps cold_maps;

static void *cold_capture(void *arg)
{
	sym_outer(0); /* a new thread: libunwind's frame cache is empty */
	return arg;
}

/* run only in children: new code to libunwind there, whatever the parent
 * unwound (its caches are copied into the child) */
static NOIPA int child_leaf(int x)
{
	nhere = mtpl_unwind(here, MTPL_UNWIND_MAX, 0, NULL);
	__asm__ volatile("" : "+r"(x));
	return x + 1;
}

static NOIPA void *child_capture(void *arg)
{
	int r = child_leaf(1);

	__asm__ volatile("" : "+r"(r));
	return arg;
}

/* new threads capturing: libunwind's cold path, again and again */
static void *cold_loop(void *arg)
{
	while (!stop_cold) {
		pthread_t t;

		pthread_create(&t, NULL, cold_capture, NULL);
		pthread_join(t, NULL);
	}
	return arg;
}

/* every mapping written again and again: dl_iterate_phdr's lock held
 * most of the time */
static void *maps_loop(void *arg)
{
	static unsigned char buf[1 << 16];
	struct mtpl_maps m;

	ck_assert_int_eq(mtpl_maps_init(&m), 0);
	while (!stop_cold) {
		uint32_t records = 0;
		size_t need;

		mtpl_maps_write(&m, 1, MTPL_MAPS_EXEC, buf, sizeof(buf),
				&records, &need);
	}
	mtpl_maps_destroy(&m);
	return arg;
}

/* Forks while other threads are inside dl_iterate_phdr and libunwind's
 * cold path: glibc does not reset the loader's lock in the child, so
 * without the fork gate a child would hang at its next cold capture.
 *
 * Not run under AddressSanitizer: GCC 12's ASan allocator does not take
 * its region locks around fork(), so a child forked while cold_loop's
 * new threads allocate can hang in calloc (seen: pthread_getattr_np from
 * ASan's thread start-up), whatever memtrack does. glibc's malloc takes
 * its arena locks around fork(); the plain build runs this test. */
START_TEST(fork_while_unwinding_cold)
{
	pthread_t th[2];
	int i;

	ck_assert_int_eq(pthread_atfork(mtpl_unwind_atfork_prepare,
					mtpl_unwind_atfork_parent,
					mtpl_unwind_atfork_child),
			 0);
	ck_assert_int_eq(mtpl_maps_init(&cold_maps), 0);
	stop_cold = 0;
	pthread_create(&th[0], NULL, cold_loop, NULL);
	pthread_create(&th[1], NULL, maps_loop, NULL);
	for (i = 0; i < 100; i++) {
		int status;
		pid_t pid = fork();

		ck_assert_int_ge(pid, 0);
		if (pid == 0) {
			static unsigned char buf[1 << 16];
			uint32_t records = 0;
			size_t need;
			pthread_t t;

			/* hung: killed by SIGALRM, and the test fails. Check's
			 * own SIGALRM handler is inherited: it would kill the
			 * whole process group and hide which child hung. */
			signal(SIGALRM, SIG_DFL);
			alarm(5);
			nhere = 0;
			pthread_create(&t, NULL, child_capture, NULL);
			pthread_join(t, NULL);
			mtpl_maps_write(&cold_maps, 2, 0, buf, sizeof(buf),
					&records, &need);
			/* child_capture, start_thread, clone3 */
			_exit(nhere == 3 && records > 2 ? 0 : 1);
		}
		ck_assert_int_eq(waitpid(pid, &status, 0), pid);
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			      "child %d: status %#x", i, status);
	}
	stop_cold = 1;
	for (i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
	}
	mtpl_maps_destroy(&cold_maps);
}
END_TEST
#endif /* !MT_UNDER_ASAN */

/* ------------------------------------------------------------------ */
/* table                                                               */
/* ------------------------------------------------------------------ */

static void fake_stack(uint64_t *f, int n, uint64_t seed)
{
	int i;

	for (i = 0; i < n; i++) {
		f[i] = 0x400000 + seed * 0x1000 + (uint64_t)i * 8;
	}
}

START_TEST(table_same_and_distinct)
{
	struct mtpl_stack_table t;
	struct mtpl_stack_ref r1, r2, r3, r4;
	uint64_t a[10], b[10];
	uint32_t ids = 0;

	ck_assert_int_eq(mtpl_stack_table_init(&t, 16, 1 << 20, &ids), 0);
	fake_stack(a, 10, 1);
	fake_stack(b, 10, 2);
	ck_assert_int_eq(mtpl_stack_intern(&t, a, 10, &r1), MTPL_STACK_NEW);
	ck_assert_uint_eq(r1.id, 1);
	mtpl_stack_publish(&t, &r1);
	ck_assert_int_eq(mtpl_stack_intern(&t, a, 10, &r2), MTPL_STACK_KNOWN);
	ck_assert_uint_eq(r2.id, r1.id);
	ck_assert_int_eq(mtpl_stack_intern(&t, b, 10, &r3), MTPL_STACK_NEW);
	ck_assert_uint_ne(r3.id, r1.id);
	mtpl_stack_publish(&t, &r3);
	/* a prefix is another stack */
	ck_assert_int_eq(mtpl_stack_intern(&t, a, 9, &r4), MTPL_STACK_NEW);
	ck_assert_uint_ne(r4.id, r1.id);
	ck_assert_uint_ne(r4.id, r3.id);
	mtpl_stack_publish(&t, &r4);
	ck_assert_int_eq(mtpl_stack_intern(&t, b, 10, &r2), MTPL_STACK_KNOWN);
	ck_assert_uint_eq(r2.id, r3.id);
	ck_assert_uint_eq(ids, 3);
	ck_assert_uint_eq(t.resent, 0);
	mtpl_stack_table_destroy(&t);
}
END_TEST

#define RACERS 8

static struct {
	struct mtpl_stack_table t;
	pthread_barrier_t go;
	uint64_t frames[16];
	int round;
	int64_t hold_ns; /* the sender holds its claim this long ... */
	int hold_asleep; /* ... asleep (1) or spinning, runnable (0) */
	int64_t published_at;
	int results[RACERS];
	uint32_t ids[RACERS];
	int64_t done_at[RACERS];
} race;

static void *racer(void *arg)
{
	int me = (int)(intptr_t)arg;
	struct mtpl_stack_ref ref;
	int r;

	pthread_barrier_wait(&race.go);
	r = mtpl_stack_intern(&race.t, race.frames, 16, &ref);
	if (r == MTPL_STACK_NEW) {
		/* the record goes out now; slow it down so that the other
		 * threads must wait for it */
		usleep(race.round == 0 ? 3000 : 0);
		if (race.hold_asleep) {
			usleep((useconds_t)(race.hold_ns / 1000));
		} else if (race.hold_ns) {
			int64_t until = now_ns() + race.hold_ns;

			while (now_ns() < until) {
			}
		}
		__atomic_store_n(&race.published_at, now_ns(),
				 __ATOMIC_SEQ_CST);
		mtpl_stack_publish(&race.t, &ref);
	}
	race.done_at[me] = now_ns();
	race.results[me] = r;
	race.ids[me] = ref.id;
	return NULL;
}

/* Threads asking for the same new stack at once: exactly one sends it,
 * all get its id, and none gets it before it was published. */
START_TEST(table_race_one_new)
{
	pthread_t th[RACERS];
	uint32_t ids = 0;
	int round, i, nnew;

	ck_assert_int_eq(mtpl_stack_table_init(&race.t, 16, 1 << 20, &ids),
			 0);
	for (round = 0; round < 200; round++) {
		race.round = round;
		fake_stack(race.frames, 16, 100 + (uint64_t)round);
		pthread_barrier_init(&race.go, NULL, RACERS);
		for (i = 0; i < RACERS; i++) {
			pthread_create(&th[i], NULL, racer,
				       (void *)(intptr_t)i);
		}
		for (i = 0; i < RACERS; i++) {
			pthread_join(th[i], NULL);
		}
		pthread_barrier_destroy(&race.go);
		nnew = 0;
		for (i = 0; i < RACERS; i++) {
			nnew += race.results[i] == MTPL_STACK_NEW;
			ck_assert_int_ge(race.results[i], 0);
			ck_assert_uint_eq(race.ids[i], race.ids[0]);
			if (race.results[i] == MTPL_STACK_KNOWN) {
				ck_assert_int_ge(race.done_at[i],
						 race.published_at);
			}
		}
		ck_assert_int_eq(nnew, 1);
	}
	ck_assert_uint_eq(ids, 200);
	ck_assert_uint_eq(race.t.resent, 0);
	mtpl_stack_table_destroy(&race.t);
}
END_TEST

/* One round of RACERS threads on a new stack, its sender holding its
 * claim hold_ns, asleep or runnable; returns how many got it NEW. */
static int race_once(int64_t hold_ns, int asleep, uint64_t seed)
{
	pthread_t th[RACERS];
	int i, nnew = 0;

	race.round = 1;
	race.hold_ns = hold_ns;
	race.hold_asleep = asleep;
	fake_stack(race.frames, 16, seed);
	pthread_barrier_init(&race.go, NULL, RACERS);
	for (i = 0; i < RACERS; i++) {
		pthread_create(&th[i], NULL, racer, (void *)(intptr_t)i);
	}
	for (i = 0; i < RACERS; i++) {
		pthread_join(th[i], NULL);
	}
	pthread_barrier_destroy(&race.go);
	for (i = 0; i < RACERS; i++) {
		ck_assert_int_ge(race.results[i], 0);
		nnew += race.results[i] == MTPL_STACK_NEW;
	}
	race.hold_ns = 0;
	race.hold_asleep = 0;
	return nnew;
}

/* A sender that is slow but runnable (preempted on a loaded machine, here
 * spinning 40 ms, four times the give-up) is waited for: one record, one
 * id. With a wall-clock give-up the others sent it again. */
START_TEST(table_waits_for_runnable_sender)
{
	uint32_t ids = 0;
	int i;

	ck_assert_int_eq(mtpl_stack_table_init(&race.t, 16, 1 << 20, &ids),
			 0);
	ck_assert_int_eq(race_once(40 * 1000000ll, 0, 7001), 1);
	for (i = 0; i < RACERS; i++) {
		ck_assert_uint_eq(race.ids[i], race.ids[0]);
		if (race.results[i] == MTPL_STACK_KNOWN) {
			ck_assert_int_ge(race.done_at[i], race.published_at);
		}
	}
	ck_assert_uint_eq(race.t.resent, 0);
	ck_assert_uint_eq(ids, 1);
	mtpl_stack_table_destroy(&race.t);
}
END_TEST

/* A sender asleep with its claim (waiting for room in the ring, or for a
 * lock a waiter holds) is given up on after 10 ms asleep: the others send
 * the stack again under fresh ids rather than hang. */
START_TEST(table_gives_up_on_sleeping_sender)
{
	uint32_t ids = 0;
	int i, j;

	ck_assert_int_eq(mtpl_stack_table_init(&race.t, 16, 1 << 20, &ids),
			 0);
	ck_assert_int_eq(race_once(300 * 1000000ll, 1, 7002), RACERS);
	ck_assert_uint_eq(race.t.resent, RACERS - 1);
	ck_assert_uint_eq(ids, RACERS);
	for (i = 0; i < RACERS; i++) {
		for (j = i + 1; j < RACERS; j++) {
			ck_assert_uint_ne(race.ids[i], race.ids[j]);
		}
	}
	mtpl_stack_table_destroy(&race.t);
}
END_TEST

/* A full table: stacks already in keep their id, new ones are sent again
 * under a fresh id each time. Both bounds: slots and arena. */
START_TEST(table_full_falls_back)
{
	struct mtpl_stack_table t;
	struct mtpl_stack_ref r, again;
	uint64_t f[64];
	uint32_t ids = 0, first_id = 0;
	int i;

	ck_assert_int_eq(mtpl_stack_table_init(&t, 10, 1 << 20, &ids), 0);
	for (i = 0; i < 1000; i++) {
		fake_stack(f, 4, (uint64_t)i);
		ck_assert_int_eq(mtpl_stack_intern(&t, f, 4, &r),
				 MTPL_STACK_NEW);
		mtpl_stack_publish(&t, &r);
		if (!i) {
			first_id = r.id;
		}
	}
	ck_assert_uint_eq(t.used, 768); /* 3/4 of 1024 */
	ck_assert_uint_eq(t.resent, 1000 - 768);
	fake_stack(f, 4, 0);
	ck_assert_int_eq(mtpl_stack_intern(&t, f, 4, &again), MTPL_STACK_KNOWN);
	ck_assert_uint_eq(again.id, first_id);
	fake_stack(f, 4, 999);
	ck_assert_int_eq(mtpl_stack_intern(&t, f, 4, &again), MTPL_STACK_NEW);
	ck_assert_uint_eq(again.id, 1001);
	mtpl_stack_publish(&t, &again);
	mtpl_stack_table_destroy(&t);

	/* 4096 bytes of arena: 8 stacks of 64 frames */
	ids = 0;
	ck_assert_int_eq(mtpl_stack_table_init(&t, 10, 4096, &ids), 0);
	for (i = 0; i < 10; i++) {
		fake_stack(f, 64, (uint64_t)i);
		ck_assert_int_eq(mtpl_stack_intern(&t, f, 64, &r),
				 MTPL_STACK_NEW);
		mtpl_stack_publish(&t, &r);
	}
	fake_stack(f, 64, 3);
	ck_assert_int_eq(mtpl_stack_intern(&t, f, 64, &r), MTPL_STACK_KNOWN);
	fake_stack(f, 64, 9);
	ck_assert_int_eq(mtpl_stack_intern(&t, f, 64, &r), MTPL_STACK_NEW);
	ck_assert_uint_ge(t.resent, 3);
	mtpl_stack_table_destroy(&t);
}
END_TEST

START_TEST(table_ids_run_out)
{
	struct mtpl_stack_table t;
	struct mtpl_stack_ref r;
	uint32_t ids = MTPL_STACK_ID_MAX - 1;
	uint64_t f[4];

	ck_assert_int_eq(mtpl_stack_table_init(&t, 10, 1 << 20, &ids), 0);
	fake_stack(f, 4, 1);
	ck_assert_int_eq(mtpl_stack_intern(&t, f, 4, &r), MTPL_STACK_NEW);
	ck_assert_uint_eq(r.id, MTPL_STACK_ID_MAX);
	mtpl_stack_publish(&t, &r);
	fake_stack(f, 4, 2);
	ck_assert_int_eq(mtpl_stack_intern(&t, f, 4, &r), -ENOSPC);
	ck_assert_uint_eq(r.id, 0);
	/* the one that got an id keeps it */
	fake_stack(f, 4, 1);
	ck_assert_int_eq(mtpl_stack_intern(&t, f, 4, &r), MTPL_STACK_KNOWN);
	ck_assert_uint_eq(r.id, MTPL_STACK_ID_MAX);
	mtpl_stack_table_destroy(&t);
}
END_TEST

/* Fork while a stack is claimed and not published (another thread was
 * sending it): the child keeps the published ids and takes the claimed
 * stack over at once instead of waiting for a thread it does not have. */
START_TEST(table_fork_midway)
{
	struct mtpl_stack_table t;
	struct mtpl_stack_ref done, midway, r;
	uint64_t a[8], b[8];
	uint32_t *ids;
	int status;
	pid_t pid;

	/* the id counter lives in shared memory, as it will */
	ids = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(ids, MAP_FAILED);
	ck_assert_int_eq(mtpl_stack_table_init(&t, 12, 1 << 20, ids), 0);
	fake_stack(a, 8, 1);
	fake_stack(b, 8, 2);
	ck_assert_int_eq(mtpl_stack_intern(&t, a, 8, &done), MTPL_STACK_NEW);
	mtpl_stack_publish(&t, &done);
	ck_assert_int_eq(mtpl_stack_intern(&t, b, 8, &midway), MTPL_STACK_NEW);

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int64_t t0;
		int ok = 1;

		mtpl_stack_table_atfork_child(&t);
		ok &= mtpl_stack_intern(&t, a, 8, &r) == MTPL_STACK_KNOWN &&
		      r.id == done.id;
		t0 = now_ns();
		ok &= mtpl_stack_intern(&t, b, 8, &r) == MTPL_STACK_NEW &&
		      r.id != midway.id && r.id != done.id;
		ok &= now_ns() - t0 < 5000000; /* taken over, not waited */
		mtpl_stack_publish(&t, &r);
		ok &= mtpl_stack_intern(&t, b, 8, &r) == MTPL_STACK_KNOWN;
		ok &= t.resent == 0;
		_exit(ok ? 0 : 1);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* the parent's sender finishes as if nothing happened */
	mtpl_stack_publish(&t, &midway);
	ck_assert_int_eq(mtpl_stack_intern(&t, b, 8, &r), MTPL_STACK_KNOWN);
	ck_assert_uint_eq(r.id, midway.id);
	/* ids are unique across the two processes */
	ck_assert_uint_eq(*ids, 3);
	mtpl_stack_table_destroy(&t);
	munmap(ids, 4096);
}
END_TEST

static volatile int stop_churn;
static struct mtpl_stack_table churn_table;

static void *churn(void *arg)
{
	struct mtpl_stack_ref r;
	uint64_t f[8];
	uint64_t i = 0;

	while (!stop_churn) {
		fake_stack(f, 8, 1000 + i++ % 50000);
		if (mtpl_stack_intern(&churn_table, f, 8, &r) ==
		    MTPL_STACK_NEW) {
			mtpl_stack_publish(&churn_table, &r);
		}
	}
	return arg;
}

/* Forks while two threads intern: every child interns the same stacks
 * as they do, quickly, whatever they were doing at the fork. */
START_TEST(table_fork_while_busy)
{
	pthread_t th[2];
	uint32_t ids = 0;
	int i, j;

	ck_assert_int_eq(mtpl_stack_table_init(&churn_table, 18, 64 << 20,
					       &ids),
			 0);
	stop_churn = 0;
	for (i = 0; i < 2; i++) {
		pthread_create(&th[i], NULL, churn, NULL);
	}
	for (i = 0; i < 30; i++) {
		int status;
		pid_t pid;

		usleep(2000);
		pid = fork();
		ck_assert_int_ge(pid, 0);
		if (pid == 0) {
			struct mtpl_stack_ref r;
			int64_t t0 = now_ns();
			uint64_t f[8];

			/* (the parent's threads may have given a wait up) */
			uint64_t resent = churn_table.resent;

			mtpl_stack_table_atfork_child(&churn_table);
			for (j = 0; j < 50000; j++) {
				fake_stack(f, 8, 1000 + (uint64_t)j);
				if (mtpl_stack_intern(&churn_table, f, 8,
						      &r) < 0) {
					_exit(2);
				}
				mtpl_stack_publish(&churn_table, &r);
			}
			/* no wait for an abandoned claim (10 ms each) */
			_exit(now_ns() - t0 > 2000000000 ? 3
			      : churn_table.resent != resent ? 4
							 : 0);
		}
		ck_assert_int_eq(waitpid(pid, &status, 0), pid);
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			      "child %d: status %d", i, status);
	}
	stop_churn = 1;
	for (i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
	}
	mtpl_stack_table_destroy(&churn_table);
}
END_TEST

START_TEST(records_encode)
{
	unsigned char buf[64], hdr[MTPL_META_HDR + 9];
	uint64_t f[2] = { 0x1122334455667788ull, 0x99 };
	uint32_t v;

	ck_assert_uint_eq(mtpl_stack_record(buf, 27, 5, 42, f, 2), 0);
	ck_assert_uint_eq(mtpl_stack_record(buf, sizeof(buf), 5, 42, f, 2),
			  28);
	memcpy(&v, buf, 4);
	ck_assert_uint_eq(v, 5);
	memcpy(&v, buf + 4, 4);
	ck_assert_uint_eq(v, 42);
	memcpy(&v, buf + 8, 4);
	ck_assert_uint_eq(v, 2);
	ck_assert_int_eq(buf[12], 0x88);
	ck_assert_int_eq(buf[20], 0x99);

	ck_assert_uint_eq(mtpl_maps_fork_record(buf, 8, 7, 6), 0);
	ck_assert_uint_eq(mtpl_maps_fork_record(hdr + MTPL_META_HDR, 9, 7, 6),
			  9);
	ck_assert_int_eq(hdr[MTPL_META_HDR], MTPL_MAPS_REC_FORK);
	mtpl_meta_seal(hdr, sizeof(hdr), "MTKM", 1);
	ck_assert(!memcmp(hdr, "MTKM", 4));
	memcpy(&v, hdr + 4, 4);
	ck_assert_uint_eq(v, 1);
	memcpy(&v, hdr + 8, 4);
	ck_assert_uint_eq(v, 1);
}
END_TEST

/* ------------------------------------------------------------------ */
/* maps                                                                */
/* ------------------------------------------------------------------ */

struct maprec {
	uint32_t pid;
	uint64_t start, end, off;
	unsigned char bid[255];
	size_t bidlen;
	char path[4096];
};

/* Parse the records of p (after its header room): returns how many map
 * records went into out; *execs counts exec records. */
static int parse_maps(const struct payload *p, struct maprec *out, int max,
		      int *execs)
{
	size_t at = MTPL_META_HDR;
	uint32_t i;
	int n = 0;

	*execs = 0;
	for (i = 0; i < p->records; i++) {
		struct maprec *m = &out[n];
		uint16_t plen;

		ck_assert_uint_lt(at, p->len);
		if (p->buf[at] == MTPL_MAPS_REC_EXEC) {
			(*execs)++;
			at += 5;
			continue;
		}
		ck_assert_int_eq(p->buf[at], MTPL_MAPS_REC_MAP);
		ck_assert_int_lt(n, max);
		memcpy(&m->pid, p->buf + at + 1, 4);
		memcpy(&m->start, p->buf + at + 5, 8);
		memcpy(&m->end, p->buf + at + 13, 8);
		memcpy(&m->off, p->buf + at + 21, 8);
		m->bidlen = p->buf[at + 29];
		memcpy(m->bid, p->buf + at + 30, m->bidlen);
		at += 30 + m->bidlen;
		memcpy(&plen, p->buf + at, 2);
		ck_assert_uint_lt(plen, sizeof(m->path));
		memcpy(m->path, p->buf + at + 2, plen);
		m->path[plen] = '\0';
		at += 2 + (size_t)plen;
		n++;
	}
	ck_assert_uint_eq(at, p->len);
	return n;
}

/* The executable mapping of /proc/self/maps starting at start, if any:
 * its end, offset and inode. */
static int proc_map(uint64_t start, uint64_t *end, uint64_t *off,
		    unsigned long *ino)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[4096];
	int found = 0;

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long s, e, o, i;
		char perms[8];

		if (sscanf(line, "%lx-%lx %7s %lx %*x:%*x %lu", &s, &e, perms,
			   &o, &i) == 5 &&
		    s == start && perms[2] == 'x') {
			*end = e;
			*off = o;
			*ino = i;
			found = 1;
			break;
		}
	}
	fclose(f);
	return found;
}

static int find_rec(const struct maprec *r, int n, const char *base)
{
	int i;

	for (i = 0; i < n; i++) {
		const char *slash = strrchr(r[i].path, '/');

		if (slash && !strcmp(slash + 1, base)) {
			return i;
		}
	}
	return -1;
}

/* Every record is an executable mapping of /proc/self/maps, of the same
 * file, with the file's build-id; the test program and libc are there. */
START_TEST(maps_match_proc)
{
	static struct payload p;
	static struct maprec recs[256];
	struct mtpl_maps m;
	char exe[4096];
	ssize_t elen;
	int n, i, execs;

	ck_assert_int_eq(mtpl_maps_init(&m), 0);
	payload_reset(&p);
	payload_maps(&p, &m, MTPL_MAPS_EXEC);
	n = parse_maps(&p, recs, 256, &execs);
	ck_assert_int_eq(execs, 1);
	ck_assert_int_eq(p.buf[MTPL_META_HDR], MTPL_MAPS_REC_EXEC);
	ck_assert_int_ge(n, 3);
	for (i = 0; i < n; i++) {
		uint64_t end, off;
		unsigned long ino;
		struct stat st;

		ck_assert_uint_eq(recs[i].pid, (uint32_t)getpid());
		ck_assert_msg(proc_map(recs[i].start, &end, &off, &ino),
			      "%s: no executable mapping at %#lx",
			      recs[i].path, (unsigned long)recs[i].start);
		ck_assert_msg(end == recs[i].end && off == recs[i].off,
			      "%s: %#lx-%#lx+%#lx, maps say %#lx-%#lx+%#lx",
			      recs[i].path, (unsigned long)recs[i].start,
			      (unsigned long)recs[i].end,
			      (unsigned long)recs[i].off,
			      (unsigned long)recs[i].start,
			      (unsigned long)end, (unsigned long)off);
		ck_assert_int_eq(stat(recs[i].path, &st), 0);
		ck_assert_uint_eq(st.st_ino, ino);
#ifdef HAVE_LIBELF
		{
			unsigned char bid[64];
			size_t blen;
			int fd = open(recs[i].path, O_RDONLY | O_CLOEXEC);
			Elf *elf;

			ck_assert_int_ge(fd, 0);
			elf_version(EV_CURRENT);
			elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
			ck_assert_ptr_nonnull(elf);
			blen = mt_elf_build_id(elf, bid, sizeof(bid));
			elf_end(elf);
			close(fd);
			ck_assert_msg(blen == recs[i].bidlen &&
					      !memcmp(bid, recs[i].bid, blen),
				      "%s: build-id differs", recs[i].path);
		}
#endif
	}
	elen = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	ck_assert_int_gt(elen, 0);
	exe[elen] = '\0';
	i = find_rec(recs, n, strrchr(exe, '/') + 1);
	ck_assert_int_ge(i, 0);
	ck_assert_str_eq(recs[i].path, exe);
	ck_assert_uint_gt(recs[i].bidlen, 0);
	i = find_rec(recs, n, "libc.so.6");
	ck_assert_int_ge(i, 0);
	ck_assert_uint_eq(recs[i].bidlen, 20);

	/* nothing changed: nothing to write */
	ck_assert_int_eq(mtpl_maps_changed(&m), 0);
	payload_reset(&p);
	payload_maps(&p, &m, 0);
	ck_assert_uint_eq(p.len, MTPL_META_HDR);
	ck_assert_uint_eq(p.records, 0);
	mtpl_maps_destroy(&m);
}
END_TEST

START_TEST(maps_buffer_too_small)
{
	static unsigned char buf[1 << 16];
	struct mtpl_maps m;
	uint32_t records = 0;
	size_t need = 0;
	ssize_t n;

	ck_assert_int_eq(mtpl_maps_init(&m), 0);
	ck_assert_int_eq(mtpl_maps_write(&m, 1, MTPL_MAPS_EXEC, buf, 40,
					 &records, &need),
			 -ENOSPC);
	ck_assert_uint_gt(need, 40);
	ck_assert_uint_eq(records, 0);
	ck_assert_int_eq(mtpl_maps_changed(&m), 1); /* nothing written */
	n = mtpl_maps_write(&m, 1, MTPL_MAPS_EXEC, buf, need, &records,
			    &need);
	ck_assert_int_eq(n, (ssize_t)need);
	ck_assert_uint_gt(records, 2);
	mtpl_maps_destroy(&m);
}
END_TEST

typedef int (*dso_capture_fn)(int (*)(uint64_t *, int, int, int *),
			      uint64_t *, int);

/* A dlopen shows as a change; the records then written are the new
 * library's alone, and a stack captured in it is named through them. A
 * dlclose shows too, and everything is sent again. */
START_TEST(maps_dlopen)
{
	static struct payload maps, stacks, more;
	static struct maprec recs[256];
	char names[MTPL_UNWIND_MAX][256], path[4096];
	struct mtpl_maps m;
	dso_capture_fn capture;
	uint64_t f[MTPL_UNWIND_MAX];
	void *dso;
	int n, i, execs;
	size_t k;

	ck_assert_int_eq(mtpl_maps_init(&m), 0);
	payload_reset(&maps);
	payload_maps(&maps, &m, MTPL_MAPS_EXEC);
	ck_assert_int_eq(mtpl_maps_changed(&m), 0);

	/* by a relative path, which the loader keeps as it is */
	snprintf(path, sizeof(path), "%s/tests/progs", builddir());
	ck_assert_int_eq(chdir(path), 0);
	dso = dlopen("./.libs/stk-dso.so", RTLD_NOW | RTLD_LOCAL);
	ck_assert_msg(dso, "%s", dlerror());
	ck_assert_int_eq(mtpl_maps_changed(&m), 1);
	payload_reset(&more);
	payload_maps(&more, &m, 0);
	n = parse_maps(&more, recs, 256, &execs);
	ck_assert_int_eq(execs, 0);
	ck_assert_int_ge(n, 1);
	for (i = 0; i < n; i++) {
		struct stat a, b;

		ck_assert_msg(strstr(recs[i].path, "stk-dso.so"),
			      "not new: %s", recs[i].path);
		ck_assert_msg(recs[i].path[0] == '/', "%s", recs[i].path);
		ck_assert_int_eq(stat(recs[i].path, &a), 0);
		ck_assert_int_eq(stat("./.libs/stk-dso.so", &b), 0);
		ck_assert_uint_eq(a.st_ino, b.st_ino);
	}
	ck_assert_int_eq(mtpl_maps_changed(&m), 0);

	/* the stack, named through the mappings sent after the dlopen */
	*(void **)&capture = dlsym(dso, "stk_dso_capture");
	ck_assert_ptr_nonnull(capture);
	n = capture(mtpl_unwind, f, MTPL_UNWIND_MAX);
	ck_assert_int_gt(n, 2);
	memcpy(maps.buf + maps.len, more.buf + MTPL_META_HDR,
	       more.len - MTPL_META_HDR);
	maps.len += more.len - MTPL_META_HDR;
	maps.records += more.records;
	payload_reset(&stacks);
	payload_stack(&stacks, 3, f, n);
	k = symbolize(&maps, &stacks, 3, names, MTPL_UNWIND_MAX);
	ck_assert_uint_eq(k, (size_t)n);
	frame_is(names[k - 1], "stk_dso_capture");
	frame_is(names[k - 2], "maps_dlopen_fn");

	dlclose(dso);
	ck_assert_int_eq(mtpl_maps_changed(&m), 1);
	payload_reset(&more);
	payload_maps(&more, &m, 0);
	n = parse_maps(&more, recs, 256, &execs);
	ck_assert_int_ge(find_rec(recs, n, "libc.so.6"), 0);
	ck_assert_int_lt(find_rec(recs, n, "stk-dso.so"), 0);
	mtpl_maps_destroy(&m);
}
END_TEST

/* what dl_iterate_phdr says of each object, in its order */
struct lw_obj {
	ElfW(Addr) addr;
	const char *name;
	const ElfW(Phdr) *phdr;
	ElfW(Half) phnum;
	unsigned long long adds, subs;
};

struct lw_list {
	struct lw_obj o[512];
	size_t n, idx[512];
	size_t *counter; /* pl_dl_walk's index, NULL for dl_iterate_phdr */
	int stop_at;     /* return 1 at this call, -1 never */
};

static int lw_note(struct dl_phdr_info *info, size_t size, void *data)
{
	struct lw_list *l = data;
	size_t i = l->n;

	ck_assert_uint_ge(size, offsetof(struct dl_phdr_info, dlpi_subs) +
					sizeof(info->dlpi_subs));
	ck_assert_uint_lt(i, 512);
	l->o[i].addr = info->dlpi_addr;
	l->o[i].name = info->dlpi_name;
	l->o[i].phdr = info->dlpi_phdr;
	l->o[i].phnum = info->dlpi_phnum;
	l->o[i].adds = info->dlpi_adds;
	l->o[i].subs = info->dlpi_subs;
	l->idx[i] = l->counter ? (*l->counter)++ : i;
	l->n++;
	return (int)i == l->stop_at;
}

/* pl_dl_walk(skip) gives the first object, then those from skip - 1 on
 * (or, if it walked plainly, all of them), each as dl_iterate_phdr does
 * at the same index; fast says which it must have been. */
static void lw_check(size_t skip, int fast)
{
	static struct lw_list ref, got;
	size_t counter = 0, i;

	memset(&ref, 0, sizeof(ref));
	ref.stop_at = -1;
	dl_iterate_phdr(lw_note, &ref);
	memset(&got, 0, sizeof(got));
	got.stop_at = -1;
	got.counter = &counter;
	ck_assert_int_eq(pl_dl_walk(lw_note, &got, &counter, skip), 0);
	ck_assert_uint_ge(got.n, 1);
	ck_assert_uint_eq(got.idx[0], 0);
	if (fast) {
		ck_assert_uint_eq(got.n, 1 + ref.n - (skip - 1));
		ck_assert_uint_eq(got.idx[1], skip - 1);
	} else {
		ck_assert_uint_eq(got.n, ref.n);
	}
	for (i = 0; i < got.n; i++) {
		const struct lw_obj *a = &got.o[i], *b = &ref.o[got.idx[i]];

		ck_assert_uint_lt(got.idx[i], ref.n);
		ck_assert_uint_eq(a->addr, b->addr);
		ck_assert_ptr_eq(a->name, b->name);
		ck_assert_ptr_eq(a->phdr, b->phdr);
		ck_assert_uint_eq(a->phnum, b->phnum);
		ck_assert_uint_eq(a->adds, b->adds);
		ck_assert_uint_eq(a->subs, b->subs);
	}
}

START_TEST(loader_walk_from_prefix)
{
	static struct lw_list l;
	char path[4096];
	size_t n0, counter = 0;
	void *dso;

	memset(&l, 0, sizeof(l));
	l.stop_at = -1;
	dl_iterate_phdr(lw_note, &l);
	n0 = l.n;
	ck_assert_uint_ge(n0, 4); /* the program, vDSO, libc, ld.so, ... */

	lw_check(0, 0);
	lw_check(2, 0); /* nothing to skip */
	lw_check(3, 1);
	lw_check(n0, 1); /* the last object only */
	lw_check(n0, 1); /* again, from what the last walk remembered */
	lw_check(n0 + 1, 0); /* past the end: no such prefix, all walked */

	snprintf(path, sizeof(path), "%s/tests/progs/.libs/stk-dso.so",
		 builddir());
	dso = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	ck_assert_msg(dso, "%s", dlerror());
	/* the new object(s), from the old end on */
	lw_check(n0 + 1, 1);
	lw_check(3, 1);

	/* a callback that stops the walk stops it, and says so */
	memset(&l, 0, sizeof(l));
	l.stop_at = 1;
	l.counter = &counter;
	ck_assert_int_eq(pl_dl_walk(lw_note, &l, &counter, 3), 1);
	ck_assert_uint_eq(l.n, 2);
	ck_assert_uint_eq(l.idx[1], 2);

	/* an unload: what was remembered is forgotten, the walk still right */
	dlclose(dso);
	lw_check(n0, 1);
	lw_check(3, 1);
}
END_TEST

static int count_objects(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)info;
	(void)size;
	++*(int *)data;
	return 0;
}

/* pl_dl_redirect_iterate(): a lookup as libunwind's is offered the object
 * holding the address first, and every object still once. */
START_TEST(loader_walk_redirect)
{
	int (*lookup)(const void *, int *, int *);
	char path[4096];
	int calls, distinct, n = 0;
	void *h, *dso;

	dl_iterate_phdr(count_objects, &n);
	snprintf(path, sizeof(path), "%s/tests/progs/.libs/lw-lookup.so",
		 builddir());
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	ck_assert_msg(h, "%s", dlerror());
	*(void **)&lookup = dlsym(h, "lw_lookup");
	ck_assert_ptr_nonnull(lookup);

	/* before: the lookup of its own code walks to the last object */
	ck_assert_int_eq(lookup((const void *)lookup, &calls, &distinct), 1);
	ck_assert_int_eq(calls, n + 1);
	ck_assert_int_eq(pl_dl_redirect_iterate(h), 0);
	/* the import was changed: once only */
	ck_assert_int_eq(pl_dl_redirect_iterate(h), -1);

	ck_assert_int_eq(lookup((const void *)lookup, &calls, &distinct), 1);
	ck_assert_int_eq(calls, 1);
	ck_assert_int_eq(lookup((const void *)malloc, &calls, &distinct), 1);
	ck_assert_int_eq(calls, 1);
	/* the first object holds its own: offered once, as it comes */
	ck_assert_int_eq(lookup((const void *)&loader_walk_redirect_fn,
				&calls, &distinct), 1);
	ck_assert_int_eq(calls, 1);
	/* nobody's: every object, each once */
	ck_assert_int_eq(lookup((const void *)16, &calls, &distinct), 0);
	ck_assert_int_eq(calls, n + 1);
	ck_assert_int_eq(distinct, 1);

	/* a library loaded after, and gone again */
	snprintf(path, sizeof(path), "%s/tests/progs/.libs/stk-dso.so",
		 builddir());
	dso = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	ck_assert_msg(dso, "%s", dlerror());
	ck_assert_int_eq(lookup(dlsym(dso, "stk_dso_capture"), &calls,
				&distinct), 1);
	ck_assert_int_eq(calls, 1);
	dlclose(dso);
	ck_assert_int_eq(lookup((const void *)16, &calls, &distinct), 0);
	ck_assert_int_eq(calls, n + 1);
	ck_assert_int_eq(distinct, 1);
	dlclose(h);
}
END_TEST

static Suite *inproc_stacks_suite(void)
{
	Suite *s = suite_create("inproc-stacks");
	TCase *tc;

	tc = tcase_create("unwind");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, chain_c_pie);
	tcase_add_test(tc, chain_c_nopie);
	tcase_add_test(tc, chain_cxx);
	tcase_add_test(tc, symbolizer_names_frames);
	tcase_add_test(tc, unwind_signal_storm);
#if MT_UNDER_ASAN
	fputs("fork_while_unwinding_cold: not run under ASan (its allocator "
	      "is not fork-safe)\n",
	      stderr);
#else
	tcase_add_test(tc, fork_while_unwinding_cold);
#endif
	suite_add_tcase(s, tc);

	tc = tcase_create("table");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, table_same_and_distinct);
	tcase_add_test(tc, table_race_one_new);
	tcase_add_test(tc, table_waits_for_runnable_sender);
	tcase_add_test(tc, table_gives_up_on_sleeping_sender);
	tcase_add_test(tc, table_full_falls_back);
	tcase_add_test(tc, table_ids_run_out);
	tcase_add_test(tc, table_fork_midway);
	tcase_add_test(tc, table_fork_while_busy);
	tcase_add_test(tc, records_encode);
	suite_add_tcase(s, tc);

	tc = tcase_create("maps");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, maps_match_proc);
	tcase_add_test(tc, maps_buffer_too_small);
	tcase_add_test(tc, maps_dlopen);
	tcase_add_test(tc, loader_walk_from_prefix);
	tcase_add_test(tc, loader_walk_redirect);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	/* as the interposer does at attach: captures never set up */
	if (mtpl_unwind_init()) {
		fprintf(stderr, "cannot open %s\n", MTPL_UNWIND_SONAME);
		return 99;
	}
	SRunner *sr = srunner_create(inproc_stacks_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
