#!/bin/sh
# One run per control socket path (issue 28, item 5): a path a live run
# holds is refused (exit 1, one line naming it) and the first run still
# answers; a stale socket, left by a run killed with SIGKILL, is replaced;
# a run removes only the socket it made, not one another run has put at
# its path since; a file that is not a socket is never removed. The
# preload source: needs neither root nor BPF.
set -u

: "${MT_BUILDDIR:?}" "${MT_SRCDIR:?}"
. "$MT_SRCDIR/tests/lib.sh"
run="$MT -q --source preload"
P="$T/ctl"

wait_socket() {
	for i in $(seq 100); do [ -S "$1" ] && return 0; sleep 0.05; done
	return 1
}

# answers NAME: something answers 'ping' with 'ok' at $P
answers() {
	if $PY - "$P" <<'PYEOF' >"$T/ping" 2>&1
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(5)
s.connect(sys.argv[1])
s.sendall(b"ping\n")
sys.exit(0 if s.makefile().readline() == "ok\n" else 1)
PYEOF
	then ok "$1"; else fail "$1"; cat "$T/ping"; fi
}

# A live run's path: the second run is refused, the first keeps it.
$run --control "$P" --sink "file:$T/a.mt" -- sleep 3 &
a=$!
wait_socket "$P"
ino=$(stat -c %i "$P")
expect_exit 1 "a second run on a live path: exit 1" -- \
	$run --control "$P" --sink "file:$T/b.mt" -- true
stderr_is "a second run on a live path: says which" "--control $P: a live socket"
[ "$(stat -c %i "$P" 2>/dev/null)" = "$ino" ] && ok "the first run's socket is still there" \
	|| fail "the first run's socket was replaced or removed"
answers "the first run still answers"
wait "$a"
[ ! -e "$P" ] && ok "the first run removed its socket at its end" \
	|| fail "the first run left its socket"

# A stale socket (its run killed by SIGKILL) is replaced.
$run --control "$P" --sink "file:$T/k.mt" -- sh -c "echo \$\$ >\"$T/k.pid\"; exec sleep 30" &
k=$!
wait_socket "$P"
kill -KILL "$k"
wait "$k" 2>/dev/null
kill -KILL "$(cat "$T/k.pid")" 2>/dev/null
[ -S "$P" ] && ok "SIGKILL left a stale socket" || fail "no stale socket left"
$run --control "$P" --sink "file:$T/c.mt" -- sleep 2 &
c=$!
sleep 0.5
answers "the stale socket was replaced by a live one"

# The path taken over while a run is going on (its socket removed by
# hand, another run's put there): the first run's end leaves it.
rm -f "$P"
$run --control "$P" --sink "file:$T/d.mt" -- sleep 4 &
d=$!
wait_socket "$P"
wait "$c"
[ -S "$P" ] && ok "a run's end leaves the socket another run made" \
	|| fail "a run's end removed another run's socket"
answers "the later run still answers"
wait "$d"

# Not a socket: refused, never removed.
echo data >"$P"
expect_exit 1 "a regular file at the path: exit 1" -- \
	$run --control "$P" --sink "file:$T/e.mt" -- true
stderr_is "a regular file at the path: says so" "--control $P: exists and is not a socket"
[ "$(cat "$P")" = data ] && ok "the file is left alone" || fail "the file was changed"
finish
