#!/bin/sh
# A signal reaches the command once, whoever sent it and however (issue
# 28, item 4). tests/progs/sig-count counts the SIGTERMs (SIGINTs) it gets
# and prints "signals N"; under memtrack it must say 1 when:
#   timeout -s TERM sends to memtrack, then to its whole group;
#   timeout --foreground sends to memtrack alone;
#   `kill -TERM -PGID` signals the group memtrack and the command share;
#   `kill -TERM PID` signals memtrack alone;
#   a terminal's Ctrl-C (a pty) signals the foreground group.
# memtrack used to forward every signal but a terminal's, so the command
# got a group's signal twice. The preload source always; ebpf with root
# and BPF (skipped without, a failure under MEMTRACK_REQUIRE_BPF=1).
set -u

: "${MT_BUILDDIR:?}" "${MT_SRCDIR:?}"
. "$MT_SRCDIR/tests/lib.sh"
COUNT="$MT_BUILDDIR/tests/progs/sig-count"

sources=preload
if [ -z "${MEMTRACK_NO_BPF:-}" ] && [ "$(id -u)" -eq 0 ] &&
	"$MT" -q --source ebpf --sink "file:$T/probe.mt" -- true 2>"$T/probe.err"; then
	sources="ebpf preload auto"
elif [ "${MEMTRACK_REQUIRE_BPF:-0}" = 1 ]; then
	echo "FAIL: BPF required: the ebpf source cannot run here"
	exit 99
else
	echo "note: ebpf not available here: preload only"
fi

wait_ready() {
	for i in $(seq 200); do [ -e "$1" ] && return 0; sleep 0.05; done
	return 1
}

# counted NAME: $T/out says the command got exactly one signal
counted() {
	if grep -qx "signals 1" "$T/out"; then ok "$1: the command got it once"
	else fail "$1: the command said '$(cat "$T/out")', want 'signals 1'"
		cat "$T/err"; fi
}

for src in $sources; do
	run="$MT -q --source $src --sink file:$T/$src.mt --"

	# timeout: the signal at 3 s, once the command (started within
	# ~1 s) is ready; it signals memtrack, then its own group.
	rm -f "$T/ready"
	timeout -s TERM 3 $run "$COUNT" 15 "$T/ready" >"$T/out" 2>"$T/err"
	counted "$src: timeout -s TERM"
	"$MT" dump "$T/$src.mt" >/dev/null 2>&1 && ok "$src: timeout: file valid" \
		|| fail "$src: timeout: file not valid"

	rm -f "$T/ready"
	timeout --foreground -s TERM 3 $run "$COUNT" 15 "$T/ready" \
		>"$T/out" 2>"$T/err"
	counted "$src: timeout --foreground -s TERM"

	# the group memtrack leads (setsid: its pid is the group's id)
	rm -f "$T/ready"
	setsid $run "$COUNT" 15 "$T/ready" >"$T/out" 2>"$T/err" &
	pid=$!
	wait_ready "$T/ready"
	$PY -c "import os, signal; os.killpg($pid, signal.SIGTERM)"
	wait "$pid"
	counted "$src: kill -TERM -PGID"

	# memtrack alone, in this script's group
	rm -f "$T/ready"
	$run "$COUNT" 15 "$T/ready" >"$T/out" 2>"$T/err" &
	pid=$!
	wait_ready "$T/ready"
	kill -TERM "$pid"
	wait "$pid"
	counted "$src: kill -TERM PID (memtrack alone)"

	# a terminal's Ctrl-C: memtrack on a pty, in its foreground group
	rm -f "$T/ready"
	$PY - "$T/ready" $run "$COUNT" 2 "$T/ready" >"$T/out" 2>"$T/err" <<'PYEOF'
import os, pty, sys, time
ready, argv = sys.argv[1], sys.argv[2:]
pid, fd = pty.fork()
if pid == 0:
    os.execv(argv[0], argv)
for i in range(400):
    if os.path.exists(ready):
        break
    time.sleep(0.05)
os.write(fd, b"\x03")
out = b""
while True:
    try:
        b = os.read(fd, 4096)
    except OSError:
        break
    if not b:
        break
    out += b
os.waitpid(pid, 0)
for line in out.decode(errors="replace").splitlines():
    if "signals" in line:  # after the terminal's echo of ^C
        print(line[line.index("signals"):].strip())
PYEOF
	counted "$src: Ctrl-C on a terminal"
done
finish
