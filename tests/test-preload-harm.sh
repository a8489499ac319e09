#!/bin/sh
# The preload source never harms the traced program, and never loses in
# silence, whatever the program does to the memory and descriptors it
# shares with memtrack, and whatever happens to memtrack (issue "Never
# harm the traced program"). Each case failed on 9e2f06c:
#   fdreuse    wake-up words were written into the program's own file
#   truncate   the program, and memtrack, died of SIGBUS
#   stray      one stray word at head hung the whole tree
#   forge      one slot of no known kind failed a batch: events lost
#   vandal     random words all over the mapping: hangs, crashes
#   stopped    a frozen memtrack left its producers waiting forever
#   reused     memtrack SIGKILLed, its pid reused: the same (root)
#   pidns      in a new pid namespace 93% of the events were dropped,
#              exit 0, and events carried the namespace's pids (root)
#   seccomp    under an allow-list of its own calls the program was killed
#              with SIGSYS (gettid, getpid, pidfd_open)
#   closefds   a child exec'd with its descriptors closed (Python's
#              subprocess) could not wake memtrack: 13-20x slower
#   verdicts   from the 1025th process on, as root with --stacks, the
#              interposer's libraries counted as the program's (root)
#   notices    after 128 execs of one untraced program, no other untraced
#              program was named (a table of notices, one per exec)
#   phantoms   a program that looks for mallocx, mi_malloc or tc_malloc
#              (a weak reference, dlsym(RTLD_DEFAULT)) found them in a
#              process without those allocators, and got NULL from them
# The programs are tests/progs/ring-harm (HARM_SIZE = 4321-byte pairs),
# tests/progs/seccomp-run and tests/progs/alloc-probe-api. Without root,
# the root cases are skipped (and said); the rest needs neither root nor
# BPF.
set -u

: "${MT_BUILDDIR:?}" "${MT_SRCDIR:?}"
. "$MT_SRCDIR/tests/lib.sh"

H="$MT_BUILDDIR/tests/progs/ring-harm"
SR="$MT_BUILDDIR/tests/progs/seccomp-run"
P="--source preload:syscalls=libc"

# mallocs FILE: the HARM_SIZE mallocs in FILE
mallocs() {
	"$MT" dump "$1" | grep -c '"type":"Malloc".*"size":4321[,}]'
}

# count_is NAME FILE N: FILE holds exactly N HARM_SIZE mallocs
count_is() {
	got=$(mallocs "$2")
	if [ "$got" -eq "$3" ]; then ok "$1: $3 mallocs"; else
		fail "$1: $got mallocs, want $3"; fi
}

# fdreuse: descriptors closed and reopened on files
mkdir -p "$T/files"
expect_exit 0 "fdreuse: exit 0" -- timeout 60 "$MT" -q $P \
	--sink "file:$T/fd.mt" -- "$H" fdreuse 300000 "$T/files"
has "$T/out" "fdreuse: the program's files stay empty" '^clean$'
count_is fdreuse "$T/fd.mt" 300000

# truncate: the ring cannot be shrunk
expect_exit 0 "truncate: exit 0" -- timeout 60 "$MT" -q $P \
	--sink "file:$T/tr.mt" -- "$H" truncate 300000
has "$T/out" "truncate: refused by the seals" '^truncate: EPERM$'
count_is truncate "$T/tr.mt" 300000

# stray: words of no lap over the slots at head
expect_exit 0 "stray: exit 0, nothing lost" -- timeout 60 "$MT" -q $P \
	--sink "file:$T/st.mt" -- "$H" stray 300000
count_is stray "$T/st.mt" 300000

# forge: a slot of no known kind among good events
expect_exit 1 "forge: exit 1" -- timeout 60 "$MT" -q $P \
	--sink "file:$T/fo.mt" -- "$H" forge 300000
has "$T/err" "forge: said" \
	'^memtrack: error: 1 records were damaged by a traced process'
count_is forge "$T/fo.mt" 300000

# vandal: random words over the whole mapping beside a good program; all
# of the good program's events are there but those the damage count owns
t0=$(date +%s)
timeout 120 "$MT" -q $P --sink "file:$T/va.mt" -- \
	sh -c "\"$H\" vandal 3 & \"$H\" loop 2000000; wait" >"$T/out" 2>"$T/err"
rc=$?
t1=$(date +%s)
case $rc in
0 | 1) ok "vandal: memtrack exits ($rc) after $((t1 - t0)) s" ;;
*) fail "vandal: exit $rc"; cat "$T/err" ;;
esac
[ $((t1 - t0)) -lt 60 ] && ok "vandal: within a minute" ||
	fail "vandal: $((t1 - t0)) s"
damaged=$(sed -n 's/^memtrack: error: \([0-9]*\) records were damaged.*/\1/p' \
	"$T/err")
damaged=${damaged:-0}
got=$(mallocs "$T/va.mt")
if [ "$got" -le 2000000 ] && [ $((got + damaged)) -ge 2000000 ]; then
	ok "vandal: $got mallocs, $damaged damaged records counted"
else
	fail "vandal: $got mallocs and $damaged damaged, want 2000000"
	cat "$T/err"
fi
if [ "$rc" -eq 1 ]; then
	grep -q "damaged\|stopped recording\|written over" "$T/err" &&
		ok "vandal: exit 1 says why" || { fail "vandal: exit 1, no cause"; cat "$T/err"; }
fi

# stopped: memtrack frozen while its ring is full; the program finishes
# (its producers give up after PL_GONE_MS), and memtrack, resumed, says
# how many processes stopped recording and exits 1
"$MT" -q $P --ring-size 64K --sink "file:$T/so.mt" -- \
	"$H" loop 20000000 >"$T/out" 2>"$T/err" &
mt=$!
sleep 0.5
kill -STOP "$mt"
prog=$(pgrep -P "$mt" ring-harm)
i=0
while kill -0 "$prog" 2>/dev/null && [ "$(cut -d' ' -f3 /proc/"$prog"/stat)" != Z ] &&
	[ $i -lt 300 ]; do
	sleep 0.1
	i=$((i + 1))
done
if [ $i -lt 300 ]; then ok "stopped: the program finished ($((i / 10)) s)"; else
	fail "stopped: the program still runs after 30 s"; fi
kill -CONT "$mt"
wait "$mt"
rc=$?
[ "$rc" -eq 1 ] && ok "stopped: memtrack exits 1" || fail "stopped: exit $rc"
has "$T/err" "stopped: said" \
	'^memtrack: error: 1 processes stopped recording: memtrack did not answer'

if [ "$(id -u)" -ne 0 ] || ! command -v unshare >/dev/null; then
	echo "SKIP (not root): reused, pidns"
else
	# reused: memtrack SIGKILLed and its pid given to another process,
	# in a pid namespace of the test's own (ns_last_pid)
	timeout 60 unshare --pid --fork --mount-proc sh -c '
		"$0" -q --source preload:syscalls=libc --ring-size 64K \
			--sink "file:$1/re.mt" -- "$2" loop 50000000 \
			>/dev/null 2>&1 &
		mt=$!
		sleep 0.5
		prog=$(pgrep -P $mt ring-harm)
		kill -9 $mt
		wait $mt
		echo $((mt - 1)) >/proc/sys/kernel/ns_last_pid
		sleep 60 &
		[ $! -eq $mt ] && echo "reused $mt" || echo "not reused"
		i=0
		while kill -0 $prog 2>/dev/null &&
			[ "$(cut -d" " -f3 /proc/$prog/stat)" != Z ] &&
			[ $i -lt 300 ]; do
			sleep 0.1
			i=$((i + 1))
		done
		kill $!
		[ $i -lt 300 ] && echo "finished" || echo "hung"
	' "$MT" "$T" "$H" >"$T/out" 2>&1
	has "$T/out" "reused: the pid went to another process" '^reused '
	has "$T/out" "reused: the program finished" '^finished$'

	# pidns: the traced program in a pid namespace of its own, with and
	# without a user namespace; and memtrack itself in one (a container)
	expect_exit 0 "pidns: exit 0" -- timeout 120 "$MT" -q $P \
		--sink "file:$T/ns.mt" -- \
		unshare --pid --fork --mount-proc "$H" loop 1000000
	count_is pidns "$T/ns.mt" 1000000
	expect_exit 0 "pidns+userns: exit 0" -- timeout 120 "$MT" -q $P \
		--sink "file:$T/nsu.mt" -- unshare --user --map-root-user \
		--pid --fork --mount-proc "$H" loop 1000000
	count_is "pidns+userns" "$T/nsu.mt" 1000000
	# one pid per process, memtrack's: the interposer's events (of the
	# namespace's ids, translated) and BPF's Mmaps (memtrack's) agree,
	# threads included; without BPF the ids are found in /proc
	expect_exit 0 "pidns ids: exit 0" -- timeout 120 "$MT" -q \
		--source preload --sink "file:$T/ids.mt" -- unshare --pid \
		--fork --mount-proc "$MT_BUILDDIR/tests/progs/alloc-storm" 2 3 20000
	"$MT" dump "$T/ids.mt" | grep '"type":"Malloc"' |
		sed 's/^{"pid":\([0-9]*\),.*/\1/' | sort -u >"$T/mpids"
	"$MT" dump "$T/ids.mt" | grep '"type":"Mmap"' |
		sed 's/^{"pid":\([0-9]*\),.*/\1/' | sort -u >"$T/bpids"
	if [ "$(wc -l <"$T/mpids")" -eq 4 ] && [ -z "$(comm -23 "$T/mpids" "$T/bpids")" ]; then
		ok "pidns ids: the 4 processes' mallocs carry the pids of their BPF Mmaps"
	else
		fail "pidns ids: malloc pids $(tr '\n' ' ' <"$T/mpids"), Mmap pids $(tr '\n' ' ' <"$T/bpids")"
	fi
	n=$("$MT" dump "$T/ids.mt" | grep -c '"type":"Malloc".*"size":700[0-9][0-9][,}]')
	[ "$n" -eq 120000 ] && ok "pidns ids: 120000 mallocs of the 6 threads" ||
		fail "pidns ids: $n mallocs of the 6 threads, want 120000"
	n=$("$MT" dump "$T/ids.mt" | grep '"type":"Malloc".*"size":700[0-9][0-9][,}]' |
		sed 's/^{"pid":[0-9]*,"tid":\([0-9]*\),.*/\1/' | sort -u | wc -l)
	[ "$n" -eq 6 ] && ok "pidns ids: 6 threads" || fail "pidns ids: $n threads, want 6"
	"$MT" dump "$T/ns.mt" | grep '"size":4321' |
		sed 's/^{"pid":\([0-9]*\),"tid":\([0-9]*\),.*/\1 \2/' | sort -u >"$T/ids"
	if [ "$(wc -l <"$T/ids")" -eq 1 ] && ! grep -q '^1 ' "$T/ids"; then
		ok "pidns ids without BPF: $(cat "$T/ids"), not the namespace's 1"
	else
		fail "pidns ids without BPF: $(tr '\n' ' ' <"$T/ids")"
	fi
	# verdicts: the interposer's own libraries are told from the
	# program's by a verdict per process, which came from a table of
	# 1024: from the 1025th process on, their Mmaps counted as the
	# program's (--stacks as root: 18 Mmaps a process instead of 9)
	expect_exit 0 "verdicts: exit 0" -- timeout 300 "$MT" -q \
		--source preload --stacks --sink "file:$T/ve.mt" -- sh -c \
		"i=0; while [ \$i -lt 1100 ]; do \"$MT_BUILDDIR/tests/progs/alloc-basic\" >/dev/null; i=\$((i + 1)); done"
	"$MT" dump "$T/ve.mt" | grep '"type":"Mmap"' |
		sed 's/^{"pid":\([0-9]*\),.*/\1/' | sort | uniq -c |
		awk '{print $1}' | sort | uniq -c >"$T/per"
	if [ "$(wc -l <"$T/per")" -eq 1 ] && [ "$(awk '{print $1}' "$T/per")" -eq 1101 ]; then
		ok "verdicts: 1101 processes, $(awk '{print $2}' "$T/per") Mmaps each"
	else
		fail "verdicts: Mmaps per process: $(tr '\n' ' ' <"$T/per")"
	fi
	expect_exit 0 "memtrack in a pid namespace: exit 0" -- timeout 120 \
		unshare --pid --fork --mount-proc "$MT" -q $P \
		--sink "file:$T/nsm.mt" -- "$H" loop 1000000
	count_is "memtrack in a pid namespace" "$T/nsm.mt" 1000000
fi

# seccomp: each program under an allow-list of the calls it makes alone
if ! command -v strace >/dev/null; then
	fail "seccomp: strace is missing (the quickstart installs it)"
else
	for prog in "$H loop 100000" "$MT_BUILDDIR/tests/progs/alloc-basic" \
		"$MT_BUILDDIR/tests/progs/alloc-storm 2 2 20000"; do
		pn=$(basename "${prog%% *}")
		# shellcheck disable=SC2086
		strace -f -qq -n -o "$T/strace" $prog >/dev/null 2>&1
		sed -n 's/^[0-9]* *\[ *\([0-9]*\)\].*/\1/p' "$T/strace" |
			sort -un >"$T/calls"
		# shellcheck disable=SC2086
		check "seccomp: $pn runs under its allow-list alone" -- \
			"$SR" "$T/calls" -- $prog
		# shellcheck disable=SC2086
		"$MT" -q $P --sink "file:$T/sc-alone.mt" -- $prog \
			>/dev/null 2>&1
		# shellcheck disable=SC2086
		expect_exit 0 "seccomp: $pn under memtrack" -- timeout 60 \
			"$MT" -q $P --sink "file:$T/sc.mt" -- "$SR" "$T/calls" -- \
			$prog
		a=$("$MT" dump "$T/sc-alone.mt" | grep -c '"type":"\(Malloc\|Free\|Calloc\|Realloc\)"')
		b=$("$MT" dump "$T/sc.mt" | grep -c '"type":"\(Malloc\|Free\|Calloc\|Realloc\)"')
		# seccomp-run's own few calls before its exec are its own
		if [ "$b" -ge "$a" ] && [ "$b" -le $((a + 20)) ]; then
			ok "seccomp: $pn: $b allocator events ($a without the filter)"
		else
			fail "seccomp: $pn: $b allocator events, $a without the filter"
		fi
	done
	# A launcher that installs its filter, then execs (bwrap, minijail;
	# libseccomp through syscall(3)): the exec wrapper makes none of its
	# checks' calls (a stat of a static program killed it), memtrack
	# checks the file and names it.
	ST="$MT_BUILDDIR/tests/progs/alloc-static"
	strace -f -qq -n -o "$T/strace" "$ST" >/dev/null 2>&1
	sed -n 's/^[0-9]* *\[ *\([0-9]*\)\].*/\1/p' "$T/strace" |
		sort -un >"$T/calls"
	for via in prctl syscall; do
		v=
		[ $via = syscall ] && v=1
		# shellcheck disable=SC2086
		expect_exit 0 "seccomp by $via, then a static program" -- \
			timeout 60 env ${v:+SECCOMP_RUN_SYSCALL=1} "$MT" $P \
			--sink "file:$T/sc.mt" -- "$SR" "$T/calls" -- "$ST"
		if grep -q "alloc-static.*a static executable" "$T/err"; then
			ok "seccomp by $via: memtrack names the static program"
		else
			fail "seccomp by $via: the static program is not named"
			sed 's/^/  | /' "$T/err"
		fi
	done
fi

# closefds: a child exec'd with its descriptors above 2 closed reaches
# the ring through /proc and wakes memtrack as any other: its producers
# wait about as long as those of the same program run directly
"$MT" -q $P --stats="$T/direct.json" --sink "file:$T/d.mt" -- \
	"$H" loop 3000000 >/dev/null 2>&1
"$MT" -q $P --stats="$T/sub.json" --sink "file:$T/s.mt" -- \
	"$PY" -c 'import subprocess, sys; sys.exit(subprocess.run(sys.argv[1:], close_fds=True).returncode)' \
	"$H" loop 3000000 >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" -eq 0 ] && ok "closefds: exit 0" || { fail "closefds: exit $rc"; cat "$T/err"; }
count_is closefds "$T/s.mt" 3000000
wd=$(sed -n 's/.*"what":"summary".*"wait_ns":\([0-9]*\).*/\1/p' "$T/direct.json")
ws=$(sed -n 's/.*"what":"summary".*"wait_ns":\([0-9]*\).*/\1/p' "$T/sub.json")
wd=${wd:-0} ws=${ws:-0}
if [ "$ws" -le $((4 * wd + 1000000000)) ]; then
	ok "closefds: waited $((ws / 1000000)) ms (direct: $((wd / 1000000)) ms)"
else
	fail "closefds: waited $((ws / 1000000)) ms, direct $((wd / 1000000)) ms"
fi

# notices: 200 runs of a static program, then a program exec'd without
# LD_PRELOAD: each named once
expect_exit 0 "notices: exit 0" -- timeout 120 "$MT" $P \
	--sink "file:$T/no.mt" -- sh -c \
	"i=0; while [ \$i -lt 200 ]; do \"$MT_BUILDDIR/tests/progs/alloc-static\" >/dev/null; i=\$((i + 1)); done; env -i /bin/true"
n=$(grep -c 'alloc-static.*a static executable' "$T/err")
[ "$n" -eq 1 ] && ok "notices: the static program named once" ||
	{ fail "notices: the static program named $n times"; cat "$T/err"; }
n=$(grep -c '/bin/true.*without LD_PRELOAD' "$T/err")
[ "$n" -eq 1 ] && ok "notices: the 201st untraced exec named too" ||
	{ fail "notices: env -i /bin/true named $n times"; cat "$T/err"; }

# phantoms: the allocator APIs a program finds under memtrack are those it
# finds alone (here none: it links no such allocator), and none of them is
# there only to return NULL
PA="$MT_BUILDDIR/tests/progs/alloc-probe-api"
if "$PA" >"$T/pa.alone" 2>&1; then
	ok "phantoms: the program runs alone"
else
	fail "phantoms: the program fails alone"; cat "$T/pa.alone"
fi
expect_exit 0 "phantoms: exit 0 under memtrack" -- timeout 60 "$MT" -q $P \
	--sink "file:$T/pa.mt" -- "$PA"
if cmp -s "$T/out" "$T/pa.alone"; then
	ok "phantoms: the same APIs found as alone"
else
	fail "phantoms: other APIs found than alone:"; cat "$T/out"
fi
has "$T/out" "phantoms: absent under memtrack" \
	'^mallocx weak=absent dlsym=absent$' \
	'^mi_malloc weak=absent dlsym=absent$' \
	'^tc_malloc weak=absent dlsym=absent$'

finish
