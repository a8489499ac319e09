#!/bin/sh
# The eBPF source's holds are invisible to the traced program's parent
# and debugger (issue 28, items 1 and 2). Each of 8 commands is a new
# executable file (a copy of true: its own inode), so each exec is held
# while its uprobes are attached. A shell in job-control mode must see
# no stop: every `cmd && echo next-N` prints its line, no "Stopped";
# on a pty (bash -i under script) and in a `set -m` script. A program run
# under gdb must run to its end, with no "Program received signal".
# The holds are the exec gate's (plugins/ebpf/gate.c): a seccomp filter
# the tree keeps after memtrack, so a tree whose memtrack was killed must
# still exec (the watchdog answers for it), and end.
# Needs root and BPF: skips (77) without, fails under MEMTRACK_REQUIRE_BPF=1.
set -u

: "${MT_BUILDDIR:?}" "${MT_SRCDIR:?}"
. "$MT_SRCDIR/tests/lib.sh"

require_ebpf
command -v bash >/dev/null || { echo "skip: no bash"; exit 77; }

# the programs, not the shell's builtins
for d in /usr/bin /bin; do
	[ -x "$d/true" ] && [ -x "$d/echo" ] && break
done
TRUE=$d/true
ECHO=$d/echo

# commands DIR: 8 lines `DIR/tN && echo next-N`, each tN a new file
commands() {
	for i in 1 2 3 4 5 6 7 8; do
		cp "$TRUE" "$1/t$i"
		echo "$1/t$i && echo next-$i"
	done
}

# A `set -m` script: the shell waits for its jobs with WUNTRACED.
mkdir "$T/m"
{ echo 'set -m'; commands "$T/m"; } >"$T/m.sh"
timeout 120 "$MT" -q --source ebpf --sink "file:$T/m.mt" -- bash "$T/m.sh" \
	>"$T/m.out" 2>&1
job_nexts "set -m script" "$T/m.out" 8

# bash -i on a pty: script(1) gives it one, stdin the command lines.
if command -v script >/dev/null; then
	mkdir "$T/i"
	{ commands "$T/i"; echo exit; } >"$T/i.cmds"
	timeout 120 script -qfec "$MT -q --source ebpf --sink file:$T/i.mt -- \
		bash --norc --noprofile -i" /dev/null <"$T/i.cmds" \
		>"$T/i.out" 2>&1
	job_nexts "bash -i on a pty" "$T/i.out" 8
else
	echo "skip: bash -i on a pty: no script(1)"
fi

# gdb runs a traced program to its end.
if command -v gdb >/dev/null; then
	cp "$ECHO" "$T/prog"
	timeout 120 "$MT" -q --source ebpf --sink "file:$T/gdb.mt" -- \
		gdb -nx -batch -ex run --args "$T/prog" ran-to-its-end \
		>"$T/gdb.out" 2>&1
	if grep -q '^ran-to-its-end$' "$T/gdb.out" &&
	   ! grep -q 'received signal' "$T/gdb.out"; then
		ok "gdb: the program ran to its end"
	else
		fail "gdb: the program did not run to its end"
		sed 's/^/  | /' "$T/gdb.out"
	fi
else
	echo "skip: gdb: not installed (quickstart installs it)"
fi

# memtrack killed: the rest of the tree runs on and still execs (a filter
# nobody answers fails exec with ENOSYS, or waits forever).
cp "$TRUE" "$T/after"
"$MT" -q --source ebpf --sink "file:$T/kill.mt" -- sh -c \
	"echo started >'$T/kill.out'; sleep 1; '$T/after' && echo exec-ok >>'$T/kill.out'" \
	2>"$T/kill.err" &
mt=$!
i=0
while ! grep -q started "$T/kill.out" 2>/dev/null && [ $i -lt 200 ]; do
	sleep 0.05
	i=$((i + 1))
done
kill -KILL $mt
wait $mt 2>/dev/null
i=0
while ! grep -q exec-ok "$T/kill.out" && [ $i -lt 200 ]; do
	sleep 0.05
	i=$((i + 1))
done
if grep -q exec-ok "$T/kill.out"; then
	ok "memtrack killed: the tree still execs"
else
	fail "memtrack killed: the tree's exec did not happen in 10 s"
	sed 's/^/  | /' "$T/kill.out" "$T/kill.err"
fi

finish
