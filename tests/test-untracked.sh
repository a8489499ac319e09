#!/bin/sh
# A process tree larger than the BPF map of traced processes: the events
# of the processes that did not fit are missing, and memtrack says so and
# exits 1 instead of writing an incomplete file in silence. The map
# (65,536 processes at a time) is made to hold 2 for the test
# (MEMTRACK_TEST_TRACKED_MAX): a shell and the first of three sleeps fit,
# the other two do not (all three are forked within a second of each
# other, before the first exits). The file holds the events of the two
# that fit, in full; under preload the interposer still records every
# process's allocations, and only the syscall tracepoints miss the two.
# Needs root and BPF: skips (77) without, fails under MEMTRACK_REQUIRE_BPF=1.
set -u

: "${MT_BUILDDIR:?}" "${MT_SRCDIR:?}"
. "$MT_SRCDIR/tests/lib.sh"

require_ebpf

tree='sleep 1 & sleep 1 & sleep 1 & wait'

# pids FILE [TYPE]: how many processes have events (of TYPE) in FILE
pids() {
	"$MT" dump "$1" | grep "\"type\":\"${2:-[A-Za-z]*}\"" |
		sed 's/^{"pid":\([0-9]*\),.*/\1/' | sort -u | wc -l
}

for src in ebpf preload; do
	expect_exit 0 "$src: the whole tree" -- \
		"$MT" -q --source "$src" --sink "file:$T/all.mt" -- sh -c "$tree"
	[ -s "$T/err" ] && { fail "$src: the whole tree: stderr"; cat "$T/err"; }
	expect_exit 1 "$src: a tree larger than the map" -- \
		env MEMTRACK_TEST_TRACKED_MAX=2 "$MT" -q --source "$src" \
		--sink "file:$T/two.mt" -- sh -c "$tree"
	stderr_is "$src: says how many were not followed" \
		"^memtrack: error: 2 processes of the traced tree were not followed (the source's map of processes was full): events of theirs are missing$"
	check "$src: the file reads to its end" -- "$MT" dump "$T/two.mt"
	expect_exit 1 "$src: --stats too" -- \
		env MEMTRACK_TEST_TRACKED_MAX=2 "$MT" -q --source "$src" \
		--stats="$T/stats" --sink "file:$T/two.mt" -- sh -c "$tree"
	has "$T/stats" "$src: --stats" '"what":"summary".*"untracked":2[,}]'
	case $src in
	ebpf)
		n=$(pids "$T/all.mt")
		[ "$n" -eq 4 ] && ok "ebpf: 4 processes in the whole tree" \
			|| fail "ebpf: $n processes in the whole tree, want 4"
		n=$(pids "$T/two.mt")
		[ "$n" -eq 2 ] && ok "ebpf: 2 processes followed" \
			|| fail "ebpf: $n processes followed, want 2"
		;;
	preload)
		n=$(pids "$T/two.mt" Malloc)
		[ "$n" -eq 4 ] && ok "preload: every process's mallocs" \
			|| fail "preload: mallocs of $n processes, want 4"
		n=$(pids "$T/all.mt" Mmap)
		[ "$n" -eq 4 ] && ok "preload: 4 processes' Mmaps in the whole tree" \
			|| fail "preload: Mmaps of $n processes in the whole tree, want 4"
		n=$(pids "$T/two.mt" Mmap)
		[ "$n" -eq 2 ] && ok "preload: 2 processes' Mmaps when 2 fit" \
			|| fail "preload: Mmaps of $n processes, want 2"
		;;
	esac
done

# More threads in a call at once than the BPF map of them holds (65,536;
# made to hold 1 here, MEMTRACK_TEST_THREADS_MAX): the calls that find no
# room are counted, said once at the end, exit 1. In sys-mix 10 the main
# thread holds the entry while three others run: one makes 80 malloc/free
# pairs, two make 10 mmap/munmap pairs each. The eBPF source misses all
# their calls (at least 200); preload only the mmaps and munmaps (at least
# 40): its interposer records the mallocs, all 80 of them.
mix="$MT_BUILDDIR/tests/progs/sys-mix"
for src in ebpf preload; do
	expect_exit 1 "$src: more threads in calls than the map" -- \
		env MEMTRACK_TEST_THREADS_MAX=1 "$MT" -q --source "$src" \
		--sink "file:$T/thr.mt" -- "$mix" 10
	stderr_is "$src: says how many calls were not recorded" \
		"^memtrack: error: [0-9][0-9]* calls of the traced tree were not recorded (the source's map of threads was full): their events are missing$"
	check "$src: the file reads to its end" -- "$MT" dump "$T/thr.mt"
	expect_exit 1 "$src: --stats too" -- \
		env MEMTRACK_TEST_THREADS_MAX=1 "$MT" -q --source "$src" \
		--stats="$T/stats" --sink "file:$T/thr.mt" -- "$mix" 10
	n=$(grep '"what":"summary"' "$T/stats" |
		sed -n 's/.*"unrecorded":\([0-9]*\).*/\1/p')
	case $src in ebpf) want=200 ;; *) want=40 ;; esac
	[ "${n:-0}" -ge "$want" ] && ok "$src: $n calls not recorded" ||
		fail "$src: ${n:-no} calls not recorded, want at least $want"
	if [ "$src" = preload ]; then
		n=$("$MT" dump "$T/thr.mt" | grep -c '"type":"Malloc".*"size":1013[,}]')
		[ "$n" -eq 80 ] && ok "preload: the 80 mallocs" ||
			fail "preload: $n mallocs of 1013 bytes, want 80"
	fi
	expect_exit 0 "$src: the map holding them all" -- \
		"$MT" -q --source "$src" --sink "file:$T/thr.mt" -- "$mix" 10
done
finish
