#!/bin/sh
# The uprobe events of the eBPF source are shared by every memtrack on the
# machine (plugins/ebpf/scope.c), and any of them removes those nobody
# holds: each memtrack as it starts, each watchdog as its memtrack ends
# (every 50 ms, for a second or more). An event a memtrack has just made
# is held by nobody until its perf event is open: a remover in between
# took it, and the probes with it. The run then missed allocations
# silently, or stopped the program with SIGSTOP to attach again (CI:
# tests/test-vma-busy.sh, twice). Makers and removers now take an flock
# on tracefs's uprobe_events.
#
# Here a remover does what memtrack's removers do, as fast as it can,
# under that lock, while memtrack makes its events with the window held
# open (MEMTRACK_TEST_SCOPE_HOLD_MS). Without the maker's lock, every run
# lost all of libc's mallocs and stopped the program twice. Needs root
# and BPF: skips (77) without, fails under MEMTRACK_REQUIRE_BPF=1.
set -u

: "${MT_BUILDDIR:?}" "${MT_SRCDIR:?}"
. "$MT_SRCDIR/tests/lib.sh"
PROG="$MT_BUILDDIR/tests/progs/vma-busy"
LIB="$MT_BUILDDIR/tests/progs/.libs/libdlalloc.so"

require_ebpf
[ -f "$LIB" ] || { fail "no $LIB"; finish; exit; }
cp "$LIB" "$T/l1.so" && cp "$LIB" "$T/l2.so" || { fail "copy"; finish; exit; }

# record NAME [env...]: the run's Malloc sizes, sorted, in $T/NAME.sizes;
# its -v lines in $T/NAME.err
record() {
	name=$1
	shift
	env "$@" "$MT" -vv --source ebpf --sink "file:$T/$name.mt" -- \
		"$PROG" "$T/l1.so" "$T/l2.so" >"$T/$name.out" 2>"$T/$name.err"
	rc=$?
	[ $rc -eq 0 ] && ok "$name: exit 0" || fail "$name: exit $rc"
	[ "$(cat "$T/$name.out")" = 2 ] && ok "$name: 2 blocks" \
		|| fail "$name: the command said '$(cat "$T/$name.out")'"
	"$MT" dump "$T/$name.mt" 2>"$T/dump.err" |
		sed -n 's/.*"type":"Malloc".*"size":\([0-9]*\).*/\1/p' |
		sort -n >"$T/$name.sizes" || fail "$name: dump"
}

record alone
grep -q 'uprobes trap in the traced tree only' "$T/alone.err" || {
	echo "uprobes cannot be scoped to the tree here: nothing to race"
	grep -v libbpf "$T/alone.err" | grep 'uprobes are attached'
	exit 77
}
grep -qx 7001 "$T/alone.sizes" && grep -qx 7002 "$T/alone.sizes" &&
	ok "alone: tc_malloc(7001) and (7002) recorded" ||
	fail "alone: tc_malloc's 7001 and 7002 not in '$(tr '\n' ' ' <"$T/alone.sizes")'"

U=$(sed -n 's/.*uprobes trap in the traced tree only (\([^,]*\),.*/\1/p' \
	"$T/alone.err")/uprobe_events
[ -w "$U" ] || { fail "no $U"; finish; exit; }

# the remover: every event of the group, as ebpf_scope_remove_group()
# deletes them, pass after pass under the lock, until told to stop
rm -f "$T/stop" "$T/rounds"
(
	while [ ! -e "$T/stop" ]; do
		flock "$U" sh -c '
			grep -o "memtrack/[A-Za-z0-9_]*" "$1" | sort -u |
			while read -r e; do
				echo "-:$e" >>"$1" 2>/dev/null
			done' sh "$U"
		echo >>"$T/rounds"
	done
) &
remover=$!

record race MEMTRACK_TEST_SCOPE_HOLD_MS=100
touch "$T/stop"
wait $remover
rounds=$(wc -l <"$T/rounds")
# the remover ran all along: many passes in the run's second or more
[ "$rounds" -ge 5 ] && ok "the remover made $rounds passes" \
	|| fail "the remover made $rounds passes (want >= 5)"

cmp -s "$T/alone.sizes" "$T/race.sizes" &&
	ok "race: the same $(wc -l <"$T/race.sizes") mallocs as alone" ||
	fail "race: mallocs '$(tr '\n' ' ' <"$T/race.sizes")', alone '$(tr '\n' ' ' <"$T/alone.sizes")'"
stops=$(sed -n 's/.*attach: \([0-9]*\) stops by SIGSTOP.*/\1/p' "$T/race.err")
[ "${stops:-0}" = 0 ] && ok "race: no stop" || {
	fail "race: $stops stops"
	grep -v libbpf "$T/race.err" | grep 'stopped\|gate\|cannot'
}

finish
