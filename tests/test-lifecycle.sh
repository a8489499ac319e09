#!/bin/sh
# The host's lifecycle with the real eBPF source: exit status, exec
# failure, sudo, signal forwarding, orphans, the control socket.
# Needs root and BPF: skips (77) without, fails under MEMTRACK_REQUIRE_BPF=1.
set -u

: "${MT_BUILDDIR:?}" "${MT_SRCDIR:?}"
. "$MT_SRCDIR/tests/lib.sh"
DEMO="$MT_BUILDDIR/demo/memtrack-demo"

require_ebpf

# The command's exit status, and 128+N for a signal.
"$MT" -q --sink "file:$T/a.mt" -- sh -c 'exit 3'
[ $? -eq 3 ] && ok "exit status passes through" || fail "exit status"
"$MT" -q --sink "file:$T/a.mt" -- sh -c 'kill -KILL $$'
[ $? -eq 137 ] && ok "killed by SIGKILL: 137" || fail "signal status"

# A command that cannot run: 127 and one line naming it.
"$MT" --sink "file:$T/a.mt" -- "$T/no-such-command" 2>"$T/err"
rc=$?
[ $rc -eq 127 ] && ok "missing command: 127" || fail "missing command: exit $rc"
grep -q "no-such-command: No such file or directory" "$T/err" \
	&& ok "missing command: says which" || { fail "missing command message"; cat "$T/err"; }

# Started through sudo: the command runs as the invoking user.
SUDO_UID=65534 SUDO_GID=65534 "$MT" -q --sink "file:$T/a.mt" -- id -u >"$T/out"
[ "$(cat "$T/out")" = 65534 ] && ok "sudo: command runs as SUDO_UID" \
	|| fail "sudo: ran as $(cat "$T/out")"

# Orphans: the tree is followed after its root has exited; their events
# are recorded and memtrack waits for them.
"$MT" -q --sink "file:$T/orphan.mt" -- sh -c "(sleep 0.3; exec \"$DEMO\" >/dev/null) & exit 0"
[ $? -eq 0 ] && ok "orphan run exits 0" || fail "orphan run"
"$MT" dump "$T/orphan.mt" >"$T/orphan.json"
# the demo leaks one 4096-byte block in each of its two processes
n=$(grep -c '"type":"Malloc","size":4096}' "$T/orphan.json")
[ "$n" -ge 2 ] && ok "orphan's allocations recorded ($n)" || fail "orphan's events: $n"

# SIGTERM to memtrack reaches the command; memtrack finishes the file.
"$MT" -q --sink "file:$T/term.mt" -- sleep 30 &
mpid=$!
sleep 1
kill -TERM "$mpid"
wait "$mpid"
rc=$?
[ $rc -eq 143 ] && ok "SIGTERM forwarded: 143" || fail "SIGTERM: exit $rc"
"$MT" dump "$T/term.mt" >/dev/null 2>"$T/err" && ok "file complete after SIGTERM" \
	|| { fail "file after SIGTERM"; cat "$T/err"; }

# The control socket: ping, drain, stop, errors; mode 0600.
"$MT" -q --control "$T/ctl" --sink "file:$T/ctl.mt" -- \
	sh -c "\"$DEMO\" >/dev/null; touch \"$T/demo-done\"; sleep 2" &
mpid=$!
for i in $(seq 50); do [ -S "$T/ctl" ] && break; sleep 0.1; done
mode=$(stat -c %a "$T/ctl" 2>/dev/null)
[ "$mode" = 600 ] && ok "control socket mode 0600" || fail "control socket mode: $mode"
# (attaching can wait behind the slow uprobe detach of an earlier run)
for i in $(seq 100); do [ -e "$T/demo-done" ] && break; sleep 0.1; done
$PY - "$T/ctl" "$T/ctl.mt" >"$T/ctl.out" 2>&1 <<'PYEOF'
import socket, sys, os, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
f = s.makefile("rw")
def ask(cmd):
    t = time.monotonic()
    f.write(cmd + "\n"); f.flush()
    return f.readline().strip(), time.monotonic() - t
for cmd in ("ping", "bogus", "drain", "stop", "enable"):
    answer, secs = ask(cmd)
    print(cmd, answer, "%.3f" % secs)
    if cmd == "stop":
        print("size-after-stop", os.path.getsize(sys.argv[2]))
PYEOF
wait "$mpid"
rc=$?
grep -q "^ping ok" "$T/ctl.out" && ok "ping" || { fail "ping"; cat "$T/ctl.out"; }
grep -q "^bogus error: unknown command" "$T/ctl.out" && ok "unknown command refused" || fail "bogus"
grep -q "^drain ok" "$T/ctl.out" && ok "drain" || fail "drain"
grep -q "^stop ok" "$T/ctl.out" && ok "stop" || fail "stop"
grep -q "^enable error" "$T/ctl.out" && ok "enable after stop refused" || fail "enable after stop"
[ $rc -eq 0 ] && ok "run with control exits 0" || fail "control run: exit $rc"
# stop completed the file while the command still ran: it did not grow.
size=$(sed -n 's/^size-after-stop //p' "$T/ctl.out")
[ -n "$size" ] && [ "$size" -eq "$(wc -c <"$T/ctl.mt")" ] && ok "file complete at stop" \
	|| fail "file size at stop $size, now $(wc -c <"$T/ctl.mt")"
n=$("$MT" dump "$T/ctl.mt" | grep -c '"type":"Malloc","size":4096}')
[ "$n" -ge 2 ] && ok "events before stop are in the file" || fail "events before stop: $n"

# The quick start's command (./quickstart demo): the demo with --stacks
# from the eBPF source; the summary names worker()'s calloc by its line
# (tests/test-report.sh checks the same under --source preload).
L=$(grep -nF 'blocks[i] = calloc(10, 100);' "$MT_SRCDIR/demo/memtrack-demo.c" | cut -d: -f1)
"$MT" -q --stacks --sink "file:$T/qs.mt" -- "$DEMO" >/dev/null &&
	"$MT" report "$T/qs.mt" >"$T/qs.txt" 2>&1 || fail "quick start: record and report"
# (the list by bytes allocated: the one at the peak may hold one too)
awk '/^top sites by bytes allocated$/ { p = 1; next } /^top sites/ { p = 0 } p' \
	"$T/qs.txt" >"$T/qs-bytes"
[ -n "$L" ] && [ "$(grep -Ec "^ +[0-9]+\. +100000 B .*  worker \(memtrack-demo\.c:$L\)$" "$T/qs-bytes")" -eq 2 ] &&
	ok "quick start: worker (memtrack-demo.c:$L) in both processes" ||
	{ fail "quick start: worker's site by line $L"; cat "$T/qs.txt"; }

# report --diff matches call stacks by their frames, not by their ids
# (which differ from one recording to the next).
STACKC="$MT_BUILDDIR/tests/progs/stack-c"
if [ -x "$STACKC" ]; then
	"$MT" -q --stacks --sink "file:$T/sa.mt" -- "$STACKC" >/dev/null &&
		"$MT" -q --stacks --sink "file:$T/sb.mt" -- "$STACKC" >/dev/null
	"$MT" report --diff "$T/sa.mt" "$T/sb.mt" >"$T/diff" 2>&1
	# (frames named with their lines: 'beta (stack-c.c:15)'); the site
	# first, then its callers, innermost first
	at='( \([^)]*\))?'
	grep -E -A2 "^ +12345 +12345 +\+0 +1 +1 +\+0  beta$at\$" "$T/diff" |
		sed -E 's/^ +[0-9].*  beta/beta/; s/^ +//; s/ \([^)]*\)$//' >"$T/row"
	printf 'beta\nfrom alpha\nfrom main\n' | cmp -s - "$T/row" &&
		ok "diff with stacks: beta from alpha from main" ||
		{ fail "diff with stacks"; cat "$T/diff"; }
	[ "$(grep -Ec "  beta$at\$" "$T/diff")" -eq 1 ] \
		&& ok "diff: one row for the stack" || { fail "diff rows"; cat "$T/diff"; }
else
	fail "$STACKC was not built"
fi

finish
