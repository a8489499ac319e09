#!/bin/sh
# The preload source as root (syscalls=auto: BPF syscall tracepoints) when
# tracing stops before the command ends: a sink error (/dev/full), a pipe
# whose reader went away, a control 'stop'. memtrack exits soon, with 1
# and a message for a sink error and the command's status for 'stop' (as
# --source ebpf does); the command finishes normally; the file is good up
# to its last complete frame; SIGTERM still ends memtrack. (Issue 27, item
# 8: a helper of the source's, forked once memtrack was a subreaper, was
# its child, and memtrack waited for it for ever.)
# Needs root and BPF: skips (77) without, fails under MEMTRACK_REQUIRE_BPF=1.
set -u

: "${MT_BUILDDIR:?}" "${MT_SRCDIR:?}"
. "$MT_SRCDIR/tests/lib.sh"
PROG="$MT_BUILDDIR/tests/progs/alloc-stress"
# 4 threads x N malloc/free pairs: frames are written while it runs
N=300000

[ -z "${MEMTRACK_NO_BPF:-}" ] || require_bpf "MEMTRACK_NO_BPF is set"
[ "$(id -u)" -eq 0 ] || require_bpf "needs root"
if ! "$MT" -q --source preload:syscalls=bpf --sink "file:$T/probe.mt" -- \
	true 2>"$T/probe.err"; then
	require_bpf "the preload source's BPF mode cannot run here: $(cat "$T/probe.err")"
fi

# The command: the program, its status in $T/done.NAME, then a while more,
# so that the tree outlives the stop.
cmd() {
	echo "\"$PROG\" $N >/dev/null; echo \$? >\"$T/done.$1\"; sleep 0.5"
}

# exited NAME WANT GOT SECS: memtrack exited GOT after SECS seconds
exited() {
	if [ "$3" -eq "$2" ] && [ "$4" -le 10 ]; then
		ok "$1: exits $2 after $4 s"
	else
		fail "$1: exit $3 after $4 s, want $2 within 10 s"
		cat "$T/err.$1"
	fi
}

# run NAME -- memtrack args...: memtrack for 20 s at most (then SIGKILL:
# a hung memtrack ignores SIGTERM), stderr in $T/err.NAME; its status in
# $T/rc.NAME, and the seconds it took
run() {
	name=$1
	shift 2
	t0=$(date +%s)
	timeout -k 1 20 "$MT" "$@" 2>"$T/err.$name"
	echo "$? $(($(date +%s) - t0))" >"$T/rc.$name"
}

# done_ok NAME: the command ran to its end and exited 0
done_ok() {
	if [ "$(cat "$T/done.$1" 2>/dev/null)" = 0 ]; then
		ok "$1: the program finished normally"
	else
		fail "$1: the program did not finish normally"
	fi
}

# dump_ok NAME FILE: memtrack dump reads FILE, with events
dump_ok() {
	if "$MT" dump "$2" >"$T/dump.$1" 2>"$T/dump-err.$1" &&
		grep -q '"type":"Malloc","size":9000[0-3]}' "$T/dump.$1"; then
		ok "$1: the file is readable, with events"
	else
		fail "$1: dump of $2"
		cat "$T/dump-err.$1"
	fi
}

# A sink error: disk full.
run full -- --source preload --sink file:/dev/full -- sh -c "$(cmd full)"
exited full 1 $(cat "$T/rc.full")
grep -q "No space left on device" "$T/err.full" && ok "full: says why" ||
	{ fail "full: no message"; cat "$T/err.full"; }
done_ok full

# A sink error: the pipe's reader exits.
run pipe -- --source preload --sink file:- -- sh -c "$(cmd pipe)" |
	head -c 100000 >"$T/pipe.mt"
exited pipe 1 $(cat "$T/rc.pipe")
grep -q "Broken pipe" "$T/err.pipe" && ok "pipe: says why" ||
	{ fail "pipe: no message"; cat "$T/err.pipe"; }
done_ok pipe
# the reader stopped inside a frame: the frames before it are a good file
if "$MT" dump "$T/pipe.mt" >/dev/null 2>"$T/cut.pipe"; then
	: >"$T/cut.pipe" # cut between two frames
fi
at=$(sed -n 's/.*truncated at byte 100000: the stream ends inside a zstd frame (frame [0-9]* at byte \([0-9]*\))$/\1/p' "$T/cut.pipe")
if [ ! -s "$T/cut.pipe" ]; then
	dump_ok pipe "$T/pipe.mt"
elif [ "$(wc -l <"$T/cut.pipe")" -eq 1 ] && [ -n "$at" ]; then
	ok "pipe: the file is cut inside its last frame only"
	head -c "$at" "$T/pipe.mt" >"$T/pipe-frames.mt"
	dump_ok pipe "$T/pipe-frames.mt"
else
	fail "pipe: dump says"
	cat "$T/cut.pipe"
fi

# A control 'stop' while the program runs: its status, as under eBPF.
CTL="\"$MT_BUILDDIR/tests/progs/alloc-basic\" >/dev/null; touch \"$T/go\"; $(cmd stop)"
run stop -- --source preload --control "$T/ctl" --sink "file:$T/stop.mt" \
	-- sh -c "$CTL" &
rpid=$!
for i in $(seq 200); do [ -e "$T/go" ] && break; sleep 0.05; done
$PY - "$T/ctl" "$T/stop.mt" >"$T/ctl.out" 2>&1 <<'PYEOF'
import os, socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
f = s.makefile("rw")
f.write("stop\n")
f.flush()
print("stop", f.readline().strip())
print("size-after-stop", os.path.getsize(sys.argv[2]))
PYEOF
wait "$rpid"
exited stop 0 $(cat "$T/rc.stop")
grep -q "^stop ok" "$T/ctl.out" && ok "stop: answered ok" ||
	{ fail "stop: answer"; cat "$T/ctl.out"; }
size=$(sed -n 's/^size-after-stop //p' "$T/ctl.out")
[ -n "$size" ] && [ "$size" -eq "$(wc -c <"$T/stop.mt")" ] &&
	ok "stop: file complete at stop" ||
	fail "stop: file size at stop $size, now $(wc -c <"$T/stop.mt")"
done_ok stop
dump_ok stop "$T/stop.mt"

# SIGTERM once tracing has stopped on a sink error, the command still
# running: memtrack passes it on and ends (1: the sink error).
timeout -k 1 20 "$MT" --source preload --sink file:/dev/full -- \
	sh -c "\"$PROG\" $N >/dev/null; exec sleep 30" 2>"$T/err.term" &
tpid=$!
for i in $(seq 200); do
	grep -q "No space left" "$T/err.term" 2>/dev/null && break
	sleep 0.05
done
sleep 0.5
t0=$(date +%s)
# (timeout passes it on to memtrack)
kill -TERM "$tpid"
wait "$tpid"
exited term 1 $? $(($(date +%s) - t0))

finish
