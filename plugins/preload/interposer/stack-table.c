/* SPDX-License-Identifier: MIT */
/*
 * plugins/preload/interposer/stack-table.c - see stack-table.h.
 *
 * An open-addressing hash table (linear probing) whose slots hold one
 * 64-bit word, changed only by atomic operations, plus where the stack's
 * frames are in the arena:
 *
 *   word = 0                          empty
 *   word = h32 << 32 | PENDING | gen  claimed, its owner is sending it
 *   word = h32 << 32 | id             published: id may be used
 *   word = DEAD                       claimed when the arena was full
 *
 * h32 is odd, so DEAD (h32 0) matches no stack. A slot, once claimed,
 * holds the same stack forever (nothing is ever removed), so a reader
 * that sees a published word reads the slot's frames without a race: the
 * owner wrote them before its release store of the word.
 *
 * The invariant the caller relies on: an id is handed out as KNOWN only
 * after its owner published it, i.e. after the owner placed the stack's
 * record in the ring. A claim carries the fork generation of the process
 * that made it: in a child, a slot its parent's threads were still
 * sending (they did not come along) is recognisably abandoned and is
 * taken over by a CAS, so nobody waits for it.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "stack-table.h"
#include "selfmap.h"

#define PENDING 0x80000000u
#define GEN_MASK 0x7fffffffu
#define DEAD 1ull
#define NO_SLOT UINT32_MAX
#define MAX_PROBES 256
/* how long a thread waits for another to publish a stack it is sending,
 * counting only the time that one was seen asleep (not runnable) */
#define WAIT_NS 10000000ll
/* how often a waiter looks at the sender's state */
#define LOOK_NS 1000000ll

struct mtpl_stack_slot {
	uint64_t word;
	uint32_t off; /* in the arena, in frames */
	uint32_t n;
	int32_t owner; /* the thread that claimed it (0: not known yet) */
	uint32_t pad;
};

/* stacks this thread claimed and has not published yet: a signal handler
 * running on top of them must not wait for a pending slot (it could be
 * its own thread's) */
static __thread volatile sig_atomic_t pending
	__attribute__((tls_model("initial-exec")));

int mtpl_stack_table_init(struct mtpl_stack_table *t, unsigned slots_log2,
			  size_t arena_bytes, uint32_t *next_id)
{
	size_t nslots;

	memset(t, 0, sizeof(*t));
	if (slots_log2 < 10 || slots_log2 > 28 || arena_bytes < 4096 ||
	    arena_bytes / 8 > UINT32_MAX || !next_id) {
		return -EINVAL;
	}
	nslots = (size_t)1 << slots_log2;
	t->slots = pl_self_map(nslots * sizeof(*t->slots), MAP_NORESERVE);
	t->arena = pl_self_map(arena_bytes, MAP_NORESERVE);
	if (!t->slots || !t->arena) {
		mtpl_stack_table_destroy(t);
		return -ENOMEM;
	}
	t->mask = (uint32_t)(nslots - 1);
	t->limit = (uint32_t)(nslots / 4 * 3);
	t->arena_words = arena_bytes / 8;
	t->next_id = next_id;
	t->max_id = MTPL_STACK_ID_MAX;
	return 0;
}

void mtpl_stack_table_destroy(struct mtpl_stack_table *t)
{
	if (t->slots) {
		munmap(t->slots, ((size_t)t->mask + 1) * sizeof(*t->slots));
	}
	if (t->arena) {
		munmap(t->arena, t->arena_words * 8);
	}
	memset(t, 0, sizeof(*t));
}

void mtpl_stack_table_atfork_child(struct mtpl_stack_table *t)
{
	__atomic_add_fetch(&t->gen, 1, __ATOMIC_SEQ_CST);
	pending = 0;
}

static uint64_t hash_frames(const uint64_t *frames, uint32_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
	uint32_t i;

	for (i = 0; i < n; i++) {
		h = (h ^ frames[i]) * 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	h *= 0xc4ceb9fe1a85ec53ull;
	return h ^ (h >> 29);
}

/* The next id of the tree, or 0 when they are used up. */
static uint32_t new_id(struct mtpl_stack_table *t)
{
	uint32_t id = __atomic_add_fetch(t->next_id, 1, __ATOMIC_RELAXED);

	return id <= t->max_id ? id : 0;
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int is_pending(uint64_t w)
{
	return w != DEAD && ((uint32_t)w & PENDING);
}

/*
 * Is thread tid of this process runnable (running, or preempted and
 * waiting for a CPU)? /proc/self/task/TID/stat, state after the name.
 * Async-signal-safe: system calls only, no stdio. A thread not found, or
 * no /proc, counts as not runnable: the wait then gives up as a plain
 * timeout would.
 */
static int runnable(int32_t tid)
{
	char path[48] = "/proc/self/task/", digits[12], buf[256], *p;
	size_t len = 16, nd = 0;
	ssize_t n;
	int fd;

	if (tid <= 0) {
		return 1; /* its claimer has not named itself yet */
	}
	do {
		digits[nd++] = (char)('0' + tid % 10);
		tid /= 10;
	} while (tid);
	while (nd) {
		path[len++] = digits[--nd];
	}
	memcpy(path + len, "/stat", 6);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		return 0;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0) {
		return 0;
	}
	buf[n] = '\0';
	/* the name may hold anything: the state follows its last ')' */
	for (p = buf + n; p > buf && p[-1] != ')'; p--) {
	}
	return p > buf && p[0] == ' ' && p[1] == 'R';
}

/*
 * Wait while the slot is pending in this generation; returns its word,
 * still pending if the wait gave up. A sender that is runnable is only
 * slow (preempted on a busy machine: 10 ms is nothing there) and is
 * waited for, however long; the wait gives up once the sender was seen
 * asleep for WAIT_NS in all: it may be waiting for something this thread
 * holds (a loader lock, say), and a stack sent twice is harmless, a
 * deadlock is not. Asleep for long it may also just be waiting for room
 * in the ring: the stack is then sent again under a fresh id.
 */
static uint64_t wait_published(struct mtpl_stack_table *t,
			       struct mtpl_stack_slot *s, uint64_t w)
{
	uint32_t gen = __atomic_load_n(&t->gen, __ATOMIC_RELAXED) & GEN_MASK;
	int64_t asleep = 0, last = 0, now;
	int spins = 0, awake = 1;

	while (is_pending(w) && ((uint32_t)w & GEN_MASK) == gen) {
		if (pending) {
			break; /* perhaps our own, under this signal handler */
		}
		if (spins < 100) {
			__builtin_ia32_pause();
			spins++;
		} else {
			now = now_ns();
			if (!last) {
				last = now;
			} else if (now - last >= LOOK_NS) {
				/* the state seen last held since then */
				if (!awake) {
					asleep += now - last;
				}
				if (asleep >= WAIT_NS) {
					break;
				}
				awake = runnable(__atomic_load_n(
					&s->owner, __ATOMIC_RELAXED));
				last = now;
			}
			sched_yield();
		}
		w = __atomic_load_n(&s->word, __ATOMIC_ACQUIRE);
	}
	return w;
}

/* This caller owns slot i (its word is claim): store the frames, draw the
 * id. Returns NEW, or a negative errno after giving the slot up. */
static int fill(struct mtpl_stack_table *t, uint32_t i, uint64_t claim,
		const uint64_t *frames, uint32_t n,
		struct mtpl_stack_ref *ref)
{
	struct mtpl_stack_slot *s = &t->slots[i];
	uint64_t off;

	off = __atomic_fetch_add(&t->arena_used, n, __ATOMIC_RELAXED);
	if (off + n > t->arena_words) {
		__atomic_store_n(&t->full, 1, __ATOMIC_RELAXED);
		__atomic_store_n(&s->word, DEAD, __ATOMIC_RELEASE);
		return -ENOSPC;
	}
	ref->id = new_id(t);
	if (!ref->id) {
		__atomic_store_n(&s->word, DEAD, __ATOMIC_RELEASE);
		return -ENOSPC;
	}
	memcpy(t->arena + off, frames, (size_t)n * 8);
	s->off = (uint32_t)off;
	s->n = n;
	__atomic_store_n(&s->owner, (int32_t)syscall(SYS_gettid),
			 __ATOMIC_RELAXED);
	ref->slot = i;
	ref->claim = claim;
	pending++;
	return MTPL_STACK_NEW;
}

/* Not in the table and no room, or a wait gave up: a fresh id, sent
 * again. */
static int resend(struct mtpl_stack_table *t, struct mtpl_stack_ref *ref)
{
	ref->slot = NO_SLOT;
	ref->claim = 0;
	ref->id = new_id(t);
	if (!ref->id) {
		return -ENOSPC;
	}
	__atomic_add_fetch(&t->resent, 1, __ATOMIC_RELAXED);
	return MTPL_STACK_NEW;
}

int mtpl_stack_intern(struct mtpl_stack_table *t, const uint64_t *frames,
		      uint32_t n, struct mtpl_stack_ref *ref)
{
	uint64_t h = hash_frames(frames, n);
	uint64_t hi = ((h >> 32) | 1) << 32;
	uint32_t i = (uint32_t)h & t->mask;
	uint32_t gen, probes;
	int err;

	ref->id = 0;
	ref->slot = NO_SLOT;
	ref->claim = 0;
	gen = __atomic_load_n(&t->gen, __ATOMIC_RELAXED) & GEN_MASK;
	for (probes = 0; probes < MAX_PROBES;) {
		struct mtpl_stack_slot *s = &t->slots[i];
		uint64_t w = __atomic_load_n(&s->word, __ATOMIC_ACQUIRE);
		uint64_t mine = hi | PENDING | gen;

		if (!w) {
			/* full: what is in is still found, nothing more
			 * goes in */
			if (__atomic_load_n(&t->full, __ATOMIC_RELAXED)) {
				break;
			}
			if (__atomic_load_n(&t->used, __ATOMIC_RELAXED) >=
			    t->limit) {
				__atomic_store_n(&t->full, 1,
						 __ATOMIC_RELAXED);
				break;
			}
			if (__atomic_compare_exchange_n(&s->word, &w, mine, 0,
							__ATOMIC_ACQ_REL,
							__ATOMIC_ACQUIRE)) {
				__atomic_add_fetch(&t->used, 1,
						   __ATOMIC_RELAXED);
				err = fill(t, i, mine, frames, n, ref);
				return err == -ENOSPC ? resend(t, ref) : err;
			}
			/* lost the race for this slot: w is the winner's */
		}
		if ((w & 0xffffffff00000000ull) == hi) {
			w = wait_published(t, s, w);
			if (is_pending(w) && ((uint32_t)w & GEN_MASK) != gen) {
				/* abandoned at a fork: take it over */
				if (__atomic_compare_exchange_n(
					    &s->word, &w, mine, 0,
					    __ATOMIC_ACQ_REL,
					    __ATOMIC_ACQUIRE)) {
					err = fill(t, i, mine, frames, n, ref);
					return err == -ENOSPC ? resend(t, ref)
							      : err;
				}
				continue; /* someone else took it: again */
			}
			if (is_pending(w)) {
				break; /* the wait gave up */
			}
			if (s->n == n &&
			    !memcmp(t->arena + s->off, frames, (size_t)n * 8)) {
				ref->id = (uint32_t)w;
				return MTPL_STACK_KNOWN;
			}
		}
		i = (i + 1) & t->mask;
		probes++;
	}
	return resend(t, ref);
}

void mtpl_stack_publish(struct mtpl_stack_table *t,
			const struct mtpl_stack_ref *ref)
{
	uint64_t w = ref->claim;

	if (ref->slot == NO_SLOT) {
		return;
	}
	/* a CAS, not a store: in a child, another thread may have taken an
	 * abandoned claim over */
	__atomic_compare_exchange_n(&t->slots[ref->slot].word, &w,
				    (ref->claim & 0xffffffff00000000ull) |
					    ref->id,
				    0, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
	if (pending > 0) {
		pending--;
	}
}

size_t mtpl_stack_record(void *buf, size_t cap, uint32_t id, uint32_t pid,
			 const uint64_t *frames, uint32_t n)
{
	unsigned char *p = buf;
	size_t len = 12 + (size_t)n * 8;

	if (cap < len) {
		return 0;
	}
	memcpy(p, &id, 4);
	memcpy(p + 4, &pid, 4);
	memcpy(p + 8, &n, 4);
	memcpy(p + 12, frames, (size_t)n * 8);
	return len;
}

void mtpl_meta_seal(void *payload, size_t len, const char *tag,
		    uint32_t records)
{
	unsigned char *p = payload;
	uint32_t version = 1, h = 2166136261u;
	size_t i;

	for (i = MTPL_META_HDR; i < len; i++) {
		h = (h ^ p[i]) * 16777619u;
	}
	memcpy(p, tag, 4);
	memcpy(p + 4, &version, 4);
	memcpy(p + 8, &records, 4);
	memcpy(p + 12, &h, 4);
}
