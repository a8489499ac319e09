#!/bin/sh
# memtrack --pid PID (issue 25): attach the eBPF source to a running
# process. tests/progs/attach-target allocates before and after memtrack
# attaches (with threads, and a child forked after): every allocation made
# after the attach is in the file exactly (type, size, address, tid), none
# made before is, the frees of earlier blocks are there, the attach time
# is recorded (MTKA), and the process runs on at full speed when memtrack
# has gone, also after a SIGKILL. Bad pids are usage errors.
# Needs root and BPF: skips (77) without, fails under MEMTRACK_REQUIRE_BPF=1.
set -u

: "${MT_BUILDDIR:?}" "${MT_SRCDIR:?}"
. "$MT_SRCDIR/tests/lib.sh"
PROG="$MT_BUILDDIR/tests/progs/attach-target"

require_ebpf

# start_target DIR [WRAPPER...]: the target's pid in $tpid once it is
# ready (with a wrapper such as unshare, the pid of the target itself)
start_target() {
	d=$1
	shift
	mkdir -p "$d"
	"$@" "$PROG" "$d" &
	wpid=$!
	wait_for "$d/state" ready || { fail "the target never got ready"; return 1; }
	tpid=$(pgrep -f -n "^$PROG $d\$")
	[ -n "$tpid" ] || { fail "no target process"; return 1; }
}

# attach DIR NAME [OPTIONS...]: memtrack --pid on the target, released
# once attached; the recording in DIR/rec.mt, memtrack's exit in $mrc
attach() {
	d=$1 name=$2
	shift 2
	"$MT" -v "$@" --pid "$tpid" --sink "file:$d/rec.mt" \
		>"$d/mt.out" 2>"$d/mt.err" &
	mpid=$!
	if ! wait_for "$d/mt.err" "attached to 1 process"; then
		fail "$name: memtrack never said it was attached"
		sed 's/^/  | /' "$d/mt.err"
		return 1
	fi
	kill -USR1 "$tpid"
	wait_for "$d/state" done || { fail "$name: the target never finished"; return 1; }
}

# The recording against what the target wrote: exact.
verify() {
	d=$1 name=$2
	"$MT" dump "$d/rec.mt" >"$d/rec.jsonl" 2>"$d/dump.err" ||
		{ fail "$name: dump failed"; cat "$d/dump.err"; return 1; }
	if "$PY" - "$d" "$tpid" "$3" "${4:-}" <<'EOF' >"$d/verify.out" 2>&1; then
import json, sys
d, pid, want_pid = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
# ns: the target wrote its own namespace's tids; the file has memtrack's,
# one per thread, none of them the target's own view
ns = sys.argv[4] == "ns"
ev = [json.loads(l) for l in open(d + "/rec.jsonl")]
mallocs = {}
for e in ev:
    if e["type"] == "Malloc":
        mallocs.setdefault(e["size"], []).append(e)
bad = []
def want(size, lines, what):
    got = sorted((e["pid"], e["tid"], e["addr"]) for e in mallocs.get(size, []))
    exp = []
    for l in lines:
        who, addr = l.split()
        exp.append((want_pid if what != "child" else None, int(who), int(addr, 16)))
    if what == "child":
        got = sorted((e["tid"], e["addr"]) for e in mallocs.get(size, []))
        exp = sorted((w, a) for _, w, a in exp)
        kids = {e["pid"] for e in mallocs.get(size, [])}
        if len(kids) != 1 or want_pid in kids:
            bad.append("child: pids %s" % kids)
    else:
        exp = sorted(exp)
    if ns:
        tids = {g[-2] for g in got}
        if len(tids) != 1 or tids & {w for *_, w, a in [(None,) + x[-2:] for x in exp]}:
            bad.append("%s: tids %s in the file" % (what, tids))
        if what != "child" and {g[0] for g in got} != {want_pid}:
            bad.append("%s: pids %s, want %d" % (what, {g[0] for g in got}, want_pid))
        got = sorted(g[-1] for g in got)
        exp = sorted(x[-1] for x in exp)
    if got != exp:
        bad.append("%s: %d mallocs of %d bytes recorded, %d made" % (what, len(got), size, len(exp)))
for t in range(4):
    want(2000 + t, open("%s/after-%d" % (d, t)).read().split("\n")[:-1], "thread %d" % t)
want(3333, open(d + "/child").read().split("\n")[:-1], "child")
if mallocs.get(1111):
    bad.append("%d mallocs from before the attach" % len(mallocs[1111]))
before = [int(a, 16) for a in open(d + "/before").read().split()]
frees = {e["addr"] for e in ev if e["type"] == "Free" and e["pid"] == want_pid}
if sorted(a for a in before if a in frees) != sorted(before[:32]):
    bad.append("frees of earlier blocks: %d of 32" % len([a for a in before[:32] if a in frees]))
print("\n".join(bad) or "exact")
sys.exit(1 if bad else 0)
EOF
		ok "$name: every allocation after the attach, exactly, none before"
	else
		fail "$name: the recording differs"
		sed 's/^/  | /' "$d/verify.out"
	fi
}

# leave: the target exits; memtrack then ends, 0
leave() {
	d=$1 name=$2
	kill -USR2 "$tpid"
	i=0
	while kill -0 "$mpid" 2>/dev/null && [ $i -lt 400 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	if kill -0 "$mpid" 2>/dev/null; then
		fail "$name: memtrack still runs after the process exited"
		kill -KILL "$mpid"
	fi
	wait "$mpid"
	mrc=$?
	if [ "$mrc" -eq 0 ]; then ok "$name: memtrack ended with the process, exit 0"; else
		fail "$name: memtrack exit $mrc"; sed 's/^/  | /' "$d/mt.err"; fi
	wait "$wpid" 2>/dev/null
}

# 1. A plain process.
if start_target "$T/a" && attach "$T/a" "attach"; then
	leave "$T/a" "attach"
	verify "$T/a" "attach" "$tpid"
	# the report: frees of blocks the file does not hold are frees of
	# blocks allocated before the attach, not unmatched ones, in text
	# and json. They are the 32 "before" blocks (verify checked those)
	# and 2 per thread that glibc allocated inside malloc itself, with
	# no call the probes see, freed as the thread exits: counted from
	# the dump, exactly, as the report must count them.
	unseen=$("$PY" - "$T/a/rec.jsonl" "$tpid" <<'EOF'
import json, sys
pid, live, n = int(sys.argv[2]), set(), 0
for l in open(sys.argv[1]):
    e = json.loads(l)
    if e["pid"] != pid:
        continue
    a = e["addr"] if e["type"] == "Free" else e.get("old_addr", 0)
    if a and e["type"] in ("Free", "Realloc"):
        if a in live:
            live.discard(a)
        else:
            n += 1
    if e["type"] in ("Malloc", "Calloc", "Realloc", "AlignedAlloc") and e["addr"]:
        live.add(e["addr"])
print(n)
EOF
)
	if [ "${unseen:-0}" -lt 32 ]; then
		fail "attach: $unseen frees of blocks not in the file, want 32 at least"
	elif "$MT" report "$T/a/rec.mt" >"$T/a/report.txt" 2>"$T/a/report.err"; then
		awk -v p="$tpid" '$1 == "process" { on = $2 == p } on' "$T/a/report.txt" >"$T/a/proc.txt"
		if grep -q "^process $tpid (attached: recorded from the attach on)$" "$T/a/proc.txt" &&
			grep -q "^  frees before attach  *$unseen frees of blocks allocated before the attach" "$T/a/proc.txt" &&
			! grep -q "unmatched" "$T/a/proc.txt"; then
			ok "attach: the report says $unseen frees of blocks allocated before the attach (32 made by the program)"
		else
			fail "attach: the report's text, $unseen frees of blocks not in the file"
			sed 's/^/  | /' "$T/a/proc.txt"
		fi
	else
		fail "attach: report failed"
		sed 's/^/  | /' "$T/a/report.err"
	fi
	if "$MT" report --format json "$T/a/rec.mt" >"$T/a/report.json" 2>"$T/a/report.err" &&
		"$PY" - "$T/a/report.json" "$tpid" "${unseen:-0}" <<'EOF' >"$T/a/json.out" 2>&1; then
import json, sys
r = json.load(open(sys.argv[1]))
p = [x for x in r["processes"] if x["pid"] == int(sys.argv[2])]
assert len(p) == 1, [x["pid"] for x in r["processes"]]
got = (p[0]["attached"], p[0]["frees_before_attach"], p[0]["unmatched_frees"])
assert got == (True, int(sys.argv[3]), 0), got
assert p[0]["attached_time_ns"] <= 0, p[0]["attached_time_ns"]
EOF
		ok "attach: the json report says the same"
	else
		fail "attach: the json report"
		sed 's/^/  | /' "$T/a/json.out" "$T/a/report.err"
	fi
	# the leaks: the blocks allocated after the attach and never freed,
	# exactly: the 4 x 250 the threads kept among them, none from before
	if "$PY" - "$T/a/report.json" "$T/a/rec.jsonl" "$tpid" "$T/a" <<'EOF' >"$T/a/leak.out" 2>&1; then
import json, sys
r = json.load(open(sys.argv[1]))
pid, d = int(sys.argv[3]), sys.argv[4]
live = {}
for l in open(sys.argv[2]):
    e = json.loads(l)
    if e["pid"] != pid:
        continue
    if e["type"] in ("Free", "Realloc"):
        live.pop(e["addr"] if e["type"] == "Free" else e.get("old_addr", 0), None)
    if e["type"] in ("Malloc", "Calloc", "Realloc", "AlignedAlloc") and e["addr"]:
        live[e["addr"]] = e["size"]
kept = set()
for t in range(4):
    lines = open("%s/after-%d" % (d, t)).read().split("\n")[:-1]
    kept |= {int(l.split()[1], 16) for i, l in enumerate(lines) if i % 2}
p = [x for x in r["processes"] if x["pid"] == pid][0]
# the 32 earlier blocks the program never frees (the others' addresses
# may be reused after the attach)
before = {int(a, 16) for a in open(d + "/before").read().split()[32:]}
print("report: %d blocks, %d bytes; the file: %d blocks, %d bytes; kept by the threads %d" % (
    p["leaked_blocks"], p["leaked_bytes"], len(live), sum(live.values()), len(kept)))
assert (p["leaked_blocks"], p["leaked_bytes"]) == (len(live), sum(live.values()))
assert kept <= set(live) and not (before & set(live))
EOF
		ok "attach: leaks are the blocks allocated after the attach: $(cat "$T/a/leak.out")"
	else
		fail "attach: leaks"
		sed 's/^/  | /' "$T/a/leak.out"
	fi
	if "$PY" - "$T/a/rec.mt" "$tpid" <<'EOF'; then
import sys, struct
# the MTKA payload opens a skippable frame (magic 0x184D2A50, size)
data = open(sys.argv[1], "rb").read()
pid, found, at = int(sys.argv[2]), False, data.find(b"MTKA")
while at >= 8 and not found:
    magic, = struct.unpack_from("<I", data, at - 8)
    if magic == 0x184D2A50:
        n, = struct.unpack_from("<I", data, at + 8)
        for k in range(n):
            p, _, ts = struct.unpack_from("<IIQ", data, at + 16 + 16 * k)
            found |= p == pid and ts > 0
    at = data.find(b"MTKA", at + 1)
sys.exit(0 if found else 1)
EOF
		ok "attach: the file says when the process was attached (MTKA)"
	else
		fail "attach: no MTKA record for $tpid"
	fi
fi

# 2. In a pid namespace of its own: memtrack's pids in the file.
if command -v unshare >/dev/null; then
	if start_target "$T/ns" unshare --pid --fork --mount-proc && attach "$T/ns" "pid namespace"; then
		leave "$T/ns" "pid namespace"
		verify "$T/ns" "pid namespace" "$tpid" ns
	fi
else
	echo "skip: pid namespace: no unshare"
fi

# 3. memtrack killed while attached: the process runs on, not stopped,
# and once the probes are gone (the watchdog closes them) its mallocs
# cost what they cost without them: a tenth of their cost attached at
# most (a uprobe hit costs microseconds, a malloc nanoseconds; the time
# before the attach is only shown, other runs' probes may slow it).
# time_pairs: the target's time for 200,000 malloc/free pairs, in $ns
time_pairs() {
	echo waiting >"$T/k/state"
	kill -HUP "$tpid"
	wait_for "$T/k/state" timed || return 1
	ns=$(cat "$T/k/pairs")
}
if start_target "$T/k"; then
	kill -USR1 "$tpid"
	wait_for "$T/k/state" done && time_pairs
	base=${ns:-0}
	"$MT" -v --pid "$tpid" --sink "file:$T/k/rec.mt" >/dev/null 2>"$T/k/mt.err" &
	mpid=$!
	if wait_for "$T/k/mt.err" "attached to 1 process" && time_pairs; then
		during=$ns
		kill -KILL "$mpid"
		wait "$mpid" 2>/dev/null
		st=$(awk '{print $3}' "/proc/$tpid/stat" 2>/dev/null)
		case "$st" in
		S|R) ok "killed: the process runs on ($st)" ;;
		*) fail "killed: the process is '$st'" ;;
		esac
		fast=
		for i in $(seq 1 60); do
			time_pairs || break
			if [ "$ns" -lt $((during / 10)) ]; then
				fast=$ns
				break
			fi
			sleep 0.5
		done
		if [ -n "$fast" ]; then
			ok "killed: 200,000 pairs take $base ns before, $during ns attached, $fast ns after"
		else
			fail "killed: 200,000 pairs take $base ns before, $during ns attached, ${ns:-?} ns after"
		fi
	else
		fail "killed: memtrack never attached"
		sed 's/^/  | /' "$T/k/mt.err"
		kill -KILL "$mpid" 2>/dev/null
	fi
	kill -USR2 "$tpid"
	wait "$wpid" 2>/dev/null
fi

# 4. What cannot be attached to: exit 2, one line naming the pid.
expect_exit 2 "no such process" -- "$MT" --pid 999999999 --sink "file:$T/e.mt"
stderr_is "no such process: says so" "pid 999999999: no such process"
# a zombie: a child its parent does not reap
"$PY" -c 'import os, sys, time
p = os.fork()
if p == 0:
    os._exit(0)
print(p, flush=True)
time.sleep(30)' >"$T/zombie" &
zparent=$!
wait_for "$T/zombie" '[0-9]'
zpid=$(cat "$T/zombie")
sleep 0.1
expect_exit 2 "a zombie" -- "$MT" --pid "$zpid" --sink "file:$T/e.mt"
stderr_is "a zombie: says so" "pid $zpid: the process has exited"
kill "$zparent"
wait "$zparent" 2>/dev/null
expect_exit 2 "a kernel thread" -- "$MT" --pid 2 --sink "file:$T/e.mt"
stderr_is "a kernel thread: says so" "pid 2: a kernel thread"
expect_exit 2 "memtrack itself" -- sh -c "exec '$MT' --pid \$\$ --sink 'file:$T/e.mt'"
stderr_is "memtrack itself: says so" "that is memtrack itself"
expect_exit 2 "preload cannot attach" -- "$MT" --source preload --pid 1 --sink "file:$T/e.mt"
stderr_is "preload cannot attach: says so" "source 'preload' cannot attach to a running process.*use --source ebpf"
expect_exit 2 "--pid and a command" -- "$MT" --pid 1 -- true
stderr_is "--pid and a command: says so" "give one or the other"

# Without the capabilities BPF wants: an error naming them, exit 1.
if command -v setpriv >/dev/null; then
	sleep 10 &
	spid=$!
	expect_exit 1 "without CAP_BPF and CAP_PERFMON" -- setpriv --reuid 65534 \
		--regid 65534 --clear-groups "$MT" --pid "$spid" --sink file:/dev/null
	stderr_is "without CAP_BPF and CAP_PERFMON: says so" \
		"needs root (CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN)"
	kill "$spid"
	wait "$spid" 2>/dev/null
fi

finish
