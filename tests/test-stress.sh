#!/bin/sh
# Processes that die at any moment of their attach are never an error of
# memtrack's. spawn-kill execs new executables (each its own inode, with
# its own copy of libc, so that every one is stopped and probed) and kills
# each after 0..MAX_US microseconds: while held, while its maps are read,
# while its probes are attached, after. Some rounds also end by SIGTERM to
# memtrack in the middle. memtrack's stderr stays empty; its exit status
# is the command's; its file is complete.
# Needs root and BPF: skips (77) without, fails under MEMTRACK_REQUIRE_BPF=1.
set -u

: "${MT_BUILDDIR:?}" "${MT_SRCDIR:?}"
. "$MT_SRCDIR/tests/lib.sh"
SPAWN="$MT_BUILDDIR/tests/progs/spawn-kill"
N=${MT_STRESS_CHILDREN:-24}
ROUNDS=${MT_STRESS_ROUNDS:-8}

require_ebpf

libc=$(ldd /bin/sleep | sed -n 's/.*libc\.so\.6 => \([^ ]*\).*/\1/p')
[ -f "$libc" ] || { fail "no libc.so.6 found for /bin/sleep"; finish; }
k=0
while [ $k -lt "$N" ]; do
	cp /bin/sleep "$T/s$k"
	mkdir "$T/lib$k"
	cp "$libc" "$T/lib$k/libc.so.6"
	k=$((k + 1))
done

# round R [--stacks]: the children killed after up to 60 ms; with
# term=1, memtrack gets SIGTERM after a few milliseconds more each round
round() {
	id=$1 term=$2
	shift 2
	"$MT" -q "$@" --sink "file:$T/r$id.mt" -- \
		"$SPAWN" "$T" "$N" 60000 "$id" >"$T/r$id.out" 2>"$T/r$id.err" &
	mpid=$!
	if [ "$term" = 1 ]; then
		# 50, 100, ... 300 ms: from memtrack's start-up to the end
		sleep "0.$(printf '%02d' $((id % 100 * 5)))"
		kill -TERM "$mpid" 2>/dev/null
	fi
	wait "$mpid"
	rc=$?
	what="round $id (sigterm $term) $*"
	if [ "$term" = 1 ]; then
		[ $rc -eq 0 ] || [ $rc -eq 143 ] && ok "$what: exit $rc" \
			|| fail "$what: exit $rc"
	else
		[ $rc -eq 0 ] && ok "$what: exit 0" || fail "$what: exit $rc"
		[ "$(cat "$T/r$id.out")" = "reaped $N" ] \
			&& ok "$what: the command ran" \
			|| fail "$what: the command said '$(cat "$T/r$id.out")'"
	fi
	[ -s "$T/r$id.err" ] && { fail "$what: stderr"; cat "$T/r$id.err"; } \
		|| ok "$what: stderr empty"
	"$MT" dump "$T/r$id.mt" >/dev/null 2>"$T/dump.err" \
		&& ok "$what: file complete" \
		|| { fail "$what: file"; cat "$T/dump.err"; }
}

r=1
while [ $r -le "$ROUNDS" ]; do
	round $r 0
	round $((r + 100)) 1
	round $((r + 200)) 1 --stacks
	r=$((r + 1))
done

finish
