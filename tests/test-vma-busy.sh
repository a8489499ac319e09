#!/bin/sh
# An executable mapping BPF cannot look up still stops its process until
# its uprobes are attached. bpf_find_vma() only try-locks the mmap lock:
# another thread of the process, or any uprobe (un)registration on a file
# it maps (a previous memtrack's watchdog closing its libc probes), makes
# the lookup fail. The eBPF source used to skip the stop then, and the
# process ran unprobed: 1 run in 25 of back-to-back memtracks recorded a
# program's mmaps and not one of its mallocs. vma-busy dlopens N copies of
# libdlalloc.so (each its own inode, so each is new) while its second
# thread keeps the mmap lock busy, and calls each copy's tc_malloc once:
# every one of the N allocations must be in the file, with and without
# stacks. Needs root and BPF: skips (77) without, fails under
# MEMTRACK_REQUIRE_BPF=1.
set -u

: "${MT_BUILDDIR:?}" "${MT_SRCDIR:?}"
. "$MT_SRCDIR/tests/lib.sh"
PROG="$MT_BUILDDIR/tests/progs/vma-busy"
LIB="$MT_BUILDDIR/tests/progs/.libs/libdlalloc.so"
N=${MT_VMA_BUSY_LIBS:-40}

require_ebpf
[ -f "$LIB" ] || { fail "no $LIB"; finish; exit; }

libs=
k=1
while [ $k -le "$N" ]; do
	cp "$LIB" "$T/l$k.so"
	libs="$libs $T/l$k.so"
	k=$((k + 1))
done

# run NAME [memtrack options]: every tc_malloc(7000 + k) recorded, once
run() {
	name=$1
	shift
	# shellcheck disable=SC2086 # one argument per library
	"$MT" -q "$@" --sink "file:$T/$name.mt" -- "$PROG" $libs \
		>"$T/$name.out" 2>"$T/$name.err"
	rc=$?
	[ $rc -eq 0 ] && ok "$name: exit 0" || fail "$name: exit $rc"
	[ "$(cat "$T/$name.out")" = "$N" ] && ok "$name: $N blocks" \
		|| fail "$name: the command said '$(cat "$T/$name.out")'"
	[ -s "$T/$name.err" ] && { fail "$name: stderr"; cat "$T/$name.err"; } \
		|| ok "$name: stderr empty"
	"$MT" dump "$T/$name.mt" >"$T/$name.dump" 2>"$T/dump.err" \
		|| { fail "$name: dump"; cat "$T/dump.err"; }
	missing=
	k=1
	while [ $k -le "$N" ]; do
		c=$(grep '"type":"Malloc"' "$T/$name.dump" |
			grep -c "\"size\":$((7000 + k))[,}]")
		[ "$c" = 1 ] || missing="$missing l$k.so:$c"
		k=$((k + 1))
	done
	[ -z "$missing" ] && ok "$name: $N mallocs, one per library" \
		|| fail "$name: tc_malloc events per library not 1:$missing"
}

run plain --source ebpf
run stacks --source ebpf --stacks

# nostop NAME [options]: and no SIGSTOP for it. The gate attached each
# library (and, with stacks, recorded its mapping) before its mmap ran;
# where BPF could not look the mapping up, it asks the descriptor mapped
# instead. Without stacks that used to be a stop for every lookup that
# failed (5 to 39 of the 40 libraries here), and a stray one in CI's
# test-dl-many.sh, beside other tests' memtracks.
nostop() {
	name=$1
	shift
	# shellcheck disable=SC2086 # one argument per library
	"$MT" -vv "$@" --sink "file:$T/$name-v.mt" -- "$PROG" $libs \
		>/dev/null 2>"$T/$name-v.err"
	stops=$(sed -n 's/.*attach: \([0-9]*\) stops by SIGSTOP.*/\1/p' \
		"$T/$name-v.err")
	reads=$(sed -n 's/.*attach: \([0-9]*\) whole reads of a .proc.PID.maps.*/\1/p' \
		"$T/$name-v.err")
	if [ "${stops:-0}" = 0 ] && [ -n "$reads" ] && [ "$reads" -le 1 ]; then
		ok "$name: no stop, $reads whole reads of the maps"
	else
		fail "$name: stops '${stops:-0}' (want 0), whole reads of the maps '$reads' (want <= 1)"
		# which check stopped it (exec or mmap, which file) and what
		# the gate did; twice in CI it was the race that
		# tests/test-scope-race.sh shows
		grep -v 'libbpf' "$T/$name-v.err" |
			grep 'stopped\|gate\|attach\|cannot' | tail -n 30
	fi
}
nostop plain --source ebpf
nostop stacks --source ebpf --stacks

finish
