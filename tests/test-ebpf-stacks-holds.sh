#!/bin/sh
# With --stacks, the eBPF source records each new program image and each
# library's code before they run, and used to stop the process (SIGSTOP)
# at every exec and executable mmap to do it: a job-control stop, which
# bash -i and `set -m` scripts report as "Stopped" and gdb as a signal
# (issue 28). Now the exec gate holds the call while the poller records
# it (plugins/ebpf/gate.c): no stop for a dynamic program or for what the
# loader maps. Each command is tests/progs/dl-reuse, which dlopens two
# libraries and allocates 1000 x 40 B in each: the test wants every
# command to go on, no stop at all (memtrack -v counts them), every
# exec and mapping recorded ahead, and the stacks still right (each
# library's function named for its 40000 B per command). A static
# program still stops at exec (it allocates before any mmap): that stop
# is counted, which shows that the count counts. The `set -m` script
# also runs as if the mmap lock BPF looks the new vma up under were
# always busy (MEMTRACK_TEST_NO_FIND_VMA): still no stop.
# Needs root and BPF: skips (77) without, fails under
# MEMTRACK_REQUIRE_BPF=1.
set -u

: "${MT_BUILDDIR:?}" "${MT_SRCDIR:?}"
. "$MT_SRCDIR/tests/lib.sh"

require_ebpf
command -v bash >/dev/null || { echo "skip: no bash"; exit 77; }

PROG="$MT_BUILDDIR/tests/progs/dl-reuse"
A="$MT_BUILDDIR/tests/progs/.libs/libreuse-alpha.so"
B="$MT_BUILDDIR/tests/progs/.libs/libreuse-gamma.so"

# stops NAME ERRFILE STOPS MINEXECS MINMAPS: memtrack -v's count of stops
# is STOPS, at least MINEXECS execs and MINMAPS mappings were recorded
# while their caller waited, and no stack was taken before its process's
# mappings were known
stops() {
	line=$(grep 'attach: [0-9]* stops by SIGSTOP' "$2")
	s=$(echo "$line" | sed -n 's/.*attach: \([0-9]*\) stops.*/\1/p')
	e=$(echo "$line" | sed -n 's/.*without a stop: \([0-9]*\) execs.*/\1/p')
	m=$(echo "$line" | sed -n 's/.* \([0-9]*\) mappings recorded.*/\1/p')
	if [ "$s" = "$3" ] && [ -n "$e" ] && [ "$e" -ge "$4" ] &&
	   [ -n "$m" ] && [ "$m" -ge "$5" ]; then
		ok "$1: $s stops, $e execs and $m mappings recorded without"
	else
		fail "$1: stops '${s:-none}' (want $3), execs '${e:-none}' (want >= $4), mappings '${m:-none}' (want >= $5)"
		grep -E 'attach|gate|stop' "$2" | sed 's/^/  | /'
	fi
	if grep -q 'stacks were taken before' "$2"; then
		fail "$1: $(grep 'stacks were taken before' "$2")"
	fi
}

# sites NAME FILE N: alpha_alloc and gamma_alloc each 40000 B x N
sites() {
	if ! "$MT" report --format collapsed "$2" >"$T/sites.col"; then
		fail "$1: report failed"
		return
	fi
	got=$("$PY" -c 'import sys
w = {}
for l in open(sys.argv[1]):
    stack, n = l.rsplit(" ", 1)
    for f in reversed(stack.split(";")):
        name = f.split(" (")[0]
        if name in ("alpha_alloc", "gamma_alloc"):
            w[name] = w.get(name, 0) + int(n)
            break
print(w.get("alpha_alloc", 0), w.get("gamma_alloc", 0))' "$T/sites.col")
	want="$((40000 * $3)) $((40000 * $3))"
	if [ "$got" = "$want" ]; then
		ok "$1: alpha_alloc and gamma_alloc $want B"
	else
		fail "$1: alpha_alloc and gamma_alloc bytes: $got, want $want"
		grep -E 'alpha|gamma' "$T/sites.col" | head | sed 's/^/  | /'
	fi
}

commands() {
	for i in 1 2 3 4; do
		echo "$PROG $A $B >/dev/null && echo next-$i"
	done
}

# A `set -m` script: the shell waits for its jobs with WUNTRACED.
{ echo 'set -m'; commands; } >"$T/m.sh"
timeout 120 "$MT" -v --source ebpf --stacks --sink "file:$T/m.mt" -- bash "$T/m.sh" \
	>"$T/m.out" 2>"$T/m.err"
job_nexts "set -m script" "$T/m.out" 4
# bash, 4 programs; each maps libc, and its two libraries
stops "set -m script" "$T/m.err" 0 5 12
sites "set -m script" "$T/m.mt" 4

# The same script as if the mmap lock were always busy where BPF looks
# the new vma up (bpf_find_vma() only try-locks it, and another process
# attaching or detaching uprobes on a file this one maps write-locks it:
# two memtracks at once, as in CI, where this script once saw a stop).
# The gate's record is then matched by the call's descriptor and range:
# no stop either (12 of 12 mappings stopped without that).
MEMTRACK_TEST_NO_FIND_VMA=1 timeout 120 "$MT" -v --source ebpf --stacks \
	--sink "file:$T/mb.mt" -- bash "$T/m.sh" >"$T/mb.out" 2>"$T/mb.err"
job_nexts "mmap lock busy" "$T/mb.out" 4
stops "mmap lock busy" "$T/mb.err" 0 5 12
sites "mmap lock busy" "$T/mb.mt" 4

# bash -i on a pty
if command -v script >/dev/null; then
	{ commands; echo exit; } >"$T/i.cmds"
	# memtrack's stderr to a file, the shell's (its "Stopped") to the pty
	timeout 120 script -qfec "$MT -v --source ebpf --stacks --sink file:$T/i.mt -- \
		sh -c 'exec bash --norc --noprofile -i 2>/dev/tty' \
		2>$T/i.err" /dev/null <"$T/i.cmds" >"$T/i.out" 2>&1
	job_nexts "bash -i on a pty" "$T/i.out" 4
	stops "bash -i on a pty" "$T/i.err" 0 6 12
	sites "bash -i on a pty" "$T/i.mt" 4
else
	echo "skip: bash -i on a pty: no script(1)"
fi

# gdb runs the program to its end, and sees no signal
if command -v gdb >/dev/null; then
	timeout 120 "$MT" -v --source ebpf --stacks --sink "file:$T/gdb.mt" -- \
		gdb -nx -batch -ex run --args "$PROG" "$A" "$B" \
		>"$T/gdb.out" 2>"$T/gdb.err"
	if grep -q 'exited normally' "$T/gdb.out" &&
	   ! grep -q 'received signal' "$T/gdb.out"; then
		ok "gdb: the program ran to its end"
	else
		fail "gdb: the program did not run to its end"
		sed 's/^/  | /' "$T/gdb.out"
	fi
	stops "gdb" "$T/gdb.err" 0 2 3
	sites "gdb" "$T/gdb.mt" 1
else
	echo "skip: gdb: not installed (quickstart installs it)"
fi

# A static program: stopped at its exec, once, and still recorded whole
"$MT" -v --source ebpf --stacks --sink "file:$T/st.mt" -- \
	"$MT_BUILDDIR/tests/progs/alloc-static" >/dev/null 2>"$T/st.err"
stops "static program" "$T/st.err" 1 0 0
if grep -q 'at exec' "$T/st.err" &&
   grep 'attach:' "$T/st.err" | grep -q '(1 at exec)'; then
	ok "static program: its one stop was at exec"
else
	fail "static program: $(grep 'attach:' "$T/st.err")"
fi

finish
