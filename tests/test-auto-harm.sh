#!/bin/sh
# What a traced program may do to --source auto's order (host/source-auto.c:
# the preload source's events stamped after a read began wait for the
# next read). tests/progs/ring-harm (HARM_SIZE = 4321-byte pairs):
#   future   one event of the shared ring stamped an hour ahead, between
#            two halves of 300000 malloc/free pairs: it held back every
#            event after it, in memtrack's memory, until the recording
#            ended (300000 at once). Now it goes on at once, counted and
#            said, and holds nothing back.
#   question the interposer's question to the exec gate (common/gate-ask.h)
#            asked by the program itself, once its interposer asked:
#            "not yours" (0), and without the magic ENOSYS; it changes
#            nothing of what is recorded (alloc-basic's lines after it).
#            python's subprocess closes every descriptor before its exec
#            of alloc-basic: the gate still guesses right, the interposer
#            reaching the shared memory through /proc as root.
# Needs root and BPF: skips (77) without, fails under
# MEMTRACK_REQUIRE_BPF=1.
set -u

: "${MT_BUILDDIR:?}" "${MT_SRCDIR:?}"
. "$MT_SRCDIR/tests/lib.sh"

require_ebpf
H="$MT_BUILDDIR/tests/progs/ring-harm"

# count NAME FILE SIZE N: FILE holds exactly N mallocs of SIZE bytes
count() {
	got=$("$MT" dump "$2" | grep -c "\"type\":\"Malloc\".*\"size\":$3[,}]")
	if [ "$got" -eq "$4" ]; then ok "$1: $4 mallocs of $3 B"; else
		fail "$1: $got mallocs of $3 B, want $4"; fi
}

# the interposer's clock is CLOCK_MONOTONIC, as the forged time is
expect_exit 0 "future: exit 0" -- timeout 60 "$MT" -v \
	--source auto:clock=monotonic --sink "file:$T/fu.mt" -- \
	"$H" future 300000
has "$T/err" "future: said" \
	"^memtrack: warning: source 'auto': 1 events stamped over 100 ms after they were read"
count future "$T/fu.mt" 4321 300000
count future "$T/fu.mt" 4322 1
peak=$(sed -n 's/.*events held for the next read, at most \([0-9]*\) at once$/\1/p' \
	"$T/err")
if [ "${peak:-0}" -lt 30000 ]; then
	ok "future: at most ${peak:-0} events held at once"
else
	fail "future: $peak events held at once"
fi

# a program asking the gate what only its interposer should
cat >"$T/ask.py" <<'PEOF'
import ctypes, os, subprocess, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
r = libc.syscall(ctypes.c_long(0x4d5400), ctypes.c_ulong(0x6d656d747261636b))
e = libc.syscall(ctypes.c_long(0x4d5400), ctypes.c_ulong(1))
print("answer %d; stray %d errno %d" % (r, e, ctypes.get_errno()))
sys.stdout.flush()
subprocess.run([sys.argv[1]])
PEOF
expect_exit 0 "question: exit 0" -- timeout 60 "$MT" -vv --source auto \
	--sink "file:$T/q.mt" -- /usr/bin/python3 "$T/ask.py" \
	"$MT_BUILDDIR/tests/progs/alloc-basic"
has "$T/out" "question: not yours, and ENOSYS without the magic" \
	"^answer 0; stray -1 errno 38$"
has "$T/err" "question: python3 and alloc-basic recorded from their exec" \
	"early: 2 execs guessed the interposer's, 2 seen so, 2 of them asked; 0 handed over"
count question "$T/q.mt" 10001 1

finish
