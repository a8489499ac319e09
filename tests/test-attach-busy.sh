#!/bin/sh
# memtrack --pid on a process whose 4 threads allocate all along, so that
# the attach happens while they do (issue 25): every malloc that returned
# after the attach time the file gives (MTKA) is in the file, with its
# size, address and tid; none is from before it. With --stacks, every
# stack is whole (from the thread's clone through thread_main).
# Needs root and BPF: skips (77) without, fails under MEMTRACK_REQUIRE_BPF=1.
set -u

: "${MT_BUILDDIR:?}" "${MT_SRCDIR:?}"
. "$MT_SRCDIR/tests/lib.sh"
PROG="$MT_BUILDDIR/tests/progs/attach-busy"

require_ebpf

cat >"$T/verify.py" <<'EOF'
import json, struct, sys
rec, d, pid, stacks = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "--stacks"
data = open(rec + "/rec.mt", "rb").read()
attached, at = None, data.find(b"MTKA")
while at >= 8:
    if struct.unpack_from("<I", data, at - 8)[0] == 0x184D2A50:
        for k in range(struct.unpack_from("<I", data, at + 8)[0]):
            p, _, ts = struct.unpack_from("<IIQ", data, at + 16 + 16 * k)
            if p == pid:
                attached = ts
    at = data.find(b"MTKA", at + 1)
if attached is None:
    print("no MTKA record for", pid)
    sys.exit(1)
ev = [json.loads(l) for l in open(rec + "/rec.jsonl") if json.loads(l)["pid"] == pid]
got = {(e["tid"], e["addr"], e["size"]) for e in ev
       if e["type"] == "Malloc" and 5000 <= e.get("size", 0) < 5004}
early = [e for e in ev if e["timestamp"] < attached]
bad, want = [], 0
for t in range(4):
    for line in open("%s/log-%d" % (d, t)):
        tid, ns, addr = line.split()
        # a call that returned 1 ms after the attach time: after it
        if int(ns) > attached + 1000000:
            want += 1
            if (int(tid), int(addr, 16), 5000 + t) not in got:
                bad.append(line.strip())
print("%d mallocs after the attach, %d missing, %d events before it" % (want, len(bad), len(early)))
ok = want > 100 and not bad and not early
if stacks:
    r = json.load(open(rec + "/rec.json"))
    sites = [s for s in r["top_sites"]["bytes"] if 5000 <= s["bytes"] / max(s["count"], 1) < 5004]
    cut = [s for s in sites if "[truncated]" in s["frames"] or not any(f.startswith("thread_main") for f in s["frames"])]
    print("%d sites of the threads, %d not through thread_main" % (len(sites), len(cut)))
    ok = ok and sites and not cut
sys.exit(0 if ok else 1)
EOF

for opts in "" "--stacks"; do
	name="attach while 4 threads allocate${opts:+ ($opts)}"
	d="$T/d${opts:+s}"
	mkdir -p "$d"
	"$PROG" "$d" &
	tpid=$!
	wait_for "$d/state" ready || { fail "$name: the program never got ready"; kill "$tpid"; continue; }
	sleep 0.2
	# shellcheck disable=SC2086
	"$MT" -v $opts --pid "$tpid" --sink "file:$d/rec.mt" 2>"$d/mt.err" &
	mpid=$!
	if ! wait_for "$d/mt.err" "attached to 1 process"; then
		fail "$name: memtrack never attached"
		sed 's/^/  | /' "$d/mt.err"
		kill "$tpid" "$mpid"
		continue
	fi
	sleep 0.5
	kill -USR2 "$tpid"
	wait "$tpid"
	wait "$mpid"
	rc=$?
	[ "$rc" -eq 0 ] || { fail "$name: memtrack exit $rc"; sed 's/^/  | /' "$d/mt.err"; }
	"$MT" dump "$d/rec.mt" >"$d/rec.jsonl"
	"$MT" report --format json "$d/rec.mt" >"$d/rec.json"
	if "$PY" "$T/verify.py" "$d" "$d" "$tpid" "$opts" >"$d/verify.out" 2>&1; then
		ok "$name: $(head -c 300 "$d/verify.out" | tr '\n' ';')"
	else
		fail "$name"
		sed 's/^/  | /' "$d/verify.out" | head -20
	fi
done

# The run ends without the process: Ctrl-C (SIGINT), SIGTERM, --duration,
# a control stop. Each time memtrack exits 0 with a whole file, and the
# process runs on, not stopped.
mkdir -p "$T/e"
"$PROG" "$T/e" &
epid=$!
wait_for "$T/e/state" ready
for how in SIGINT SIGTERM duration stop; do
	rm -f "$T/e/mt.err"
	case $how in
	duration) extra="--duration 0.5" ;;
	stop) extra="--control $T/e/ctl" ;;
	*) extra= ;;
	esac
	# shellcheck disable=SC2086
	"$MT" -v $extra --pid "$epid" --sink "file:$T/e/$how.mt" 2>"$T/e/mt.err" &
	mpid=$!
	wait_for "$T/e/mt.err" "attached to 1 process" || { fail "$how: never attached"; continue; }
	sleep 0.3
	case $how in
	SIGINT) kill -INT "$mpid" ;;
	SIGTERM) kill -TERM "$mpid" ;;
	stop) "$PY" -c 'import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b"stop\n"); s.recv(64)' "$T/e/ctl" ;;
	esac
	wait "$mpid"
	rc=$?
	st=$(awk '{print $3}' "/proc/$epid/stat" 2>/dev/null)
	n=$("$MT" dump "$T/e/$how.mt" 2>/dev/null | grep -c '"size":500[0-3]')
	if [ "$rc" -eq 0 ] && [ "$n" -gt 100 ] && { [ "$st" = S ] || [ "$st" = R ]; }; then
		ok "ended by $how: exit 0, $n of its mallocs in a whole file, the process runs on ($st)"
	else
		fail "ended by $how: exit $rc, $n mallocs, the process is '$st'"
		sed 's/^/  | /' "$T/e/mt.err"
	fi
done
kill -USR2 "$epid"
wait "$epid"

# Two processes at once: both from their attach on.
mkdir -p "$T/p1" "$T/p2"
"$PROG" "$T/p1" &
p1=$!
"$PROG" "$T/p2" &
p2=$!
if wait_for "$T/p1/state" ready && wait_for "$T/p2/state" ready; then
	"$MT" -v --pid "$p1" --pid "$p2" --sink "file:$T/p1/rec.mt" 2>"$T/p1/mt.err" &
	mpid=$!
	if wait_for "$T/p1/mt.err" "attached to 2 processes"; then
		sleep 0.5
		kill -USR2 "$p1" "$p2"
		wait "$p1" "$p2"
		wait "$mpid" || fail "two processes: memtrack exit $?"
		"$MT" dump "$T/p1/rec.mt" >"$T/p1/rec.jsonl"
		for n in 1 2; do
			eval "pn=\$p$n"
			if "$PY" "$T/verify.py" "$T/p1" "$T/p$n" "$pn" "" >"$T/v$n.out" 2>&1; then
				ok "two processes: process $n: $(cat "$T/v$n.out")"
			else
				fail "two processes: process $n: $(cat "$T/v$n.out")"
			fi
		done
	else
		fail "two processes: memtrack never attached"
		sed 's/^/  | /' "$T/p1/mt.err"
		kill "$p1" "$p2" "$mpid"
	fi
fi

finish
