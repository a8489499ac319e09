#!/bin/sh
# memtrack itself in a container: run as the init of a pid namespace of its
# own (unshare --pid --fork --mount-proc, as a container runtime starts its
# first process), with each source. It ends when the command ends (its
# own helpers, forked twice so as not to be its children, are its
# children there: it waited for them forever), nothing is left stopped
# (the eBPF source resumed held processes by their kernel-wide pid, which
# means nothing there: the command stayed stopped for good), and every
# call tests/progs/alloc-basic reports is in the file with the pid and tid
# the program saw, which are memtrack's namespace's.
# Needs root (skips with 77, fails under MEMTRACK_REQUIRE_BPF=1).
set -u

: "${MT_BUILDDIR:?}" "${MT_SRCDIR:?}"
. "$MT_SRCDIR/tests/lib.sh"

[ -z "${MEMTRACK_NO_BPF:-}" ] || require_bpf "MEMTRACK_NO_BPF is set"
[ "$(id -u)" -eq 0 ] || require_bpf "needs root"
command -v unshare >/dev/null || require_bpf "needs unshare (util-linux)"
if ! "$MT" -q --source ebpf --sink "file:$T/probe.mt" -- true 2>"$T/probe.err"; then
	require_bpf "the ebpf source cannot run here: $(cat "$T/probe.err")"
fi

prog="$MT_BUILDDIR/tests/progs/alloc-basic"

for src in ebpf preload preload:syscalls=libc auto; do
	name=$(echo "$src" | tr ':=' '__')
	t0=$(date +%s)
	timeout 60 unshare --pid --fork --mount-proc "$MT" -q --source "$src" \
		--sink "file:$T/$name.mt" -- "$prog" >"$T/out" 2>"$T/err"
	rc=$?
	[ "$rc" -eq 0 ] && ok "$src: exit 0 after $(($(date +%s) - t0)) s" ||
		{ fail "$src: exit $rc"; cat "$T/err"; }
	"$MT" dump "$T/$name.mt" >"$T/dump" 2>"$T/derr" ||
		{ fail "$src: the file does not read"; cat "$T/derr"; }
	# each reported call: KIND PID TID ADDR SIZE OLD
	miss=0 n=0
	while read -r kind pid tid addr size old; do
		[ "$kind" = Nothing ] && continue
		n=$((n + 1))
		a=$(printf '%d' "$addr")
		grep -q "^{\"pid\":$pid,\"tid\":$tid,[^}]*\"addr\":$a,\"type\":\"$kind\"" \
			"$T/dump" || { miss=$((miss + 1)); echo "missing: $kind $pid $tid $a $size"; }
	done <"$T/out"
	[ "$n" -gt 10 ] && [ "$miss" -eq 0 ] &&
		ok "$src: all $n reported calls, with the program's own pid and tid" ||
		fail "$src: $miss of $n reported calls missing"
	if [ "$src" != preload:syscalls=libc ]; then
		pid=$(head -1 "$T/out" | cut -d' ' -f2)
		grep -q "^{\"pid\":$pid,.*\"type\":\"Mmap\"" "$T/dump" &&
			ok "$src: the syscall records carry the same pid" ||
			fail "$src: no Mmap of pid $pid"
	fi
	left=$(ps -eo stat=,args= | grep -c "^T.*$prog")
	[ "$left" -eq 0 ] && ok "$src: nothing left stopped" ||
		fail "$src: $left processes left stopped"
done

# --stacks in the container: every stack resolves through the mappings
# and tables memtrack knows the process by (its namespace's pids, in BPF
# too), in the process and in the children it forks.
fprog="$MT_BUILDDIR/tests/progs/alloc-forktree"
for src in ebpf preload; do
	timeout 60 unshare --pid --fork --mount-proc "$MT" -q --source "$src" \
		--stacks --sink "file:$T/st.mt" -- "$fprog" >/dev/null 2>"$T/err"
	rc=$?
	[ "$rc" -eq 0 ] || { fail "$src --stacks: exit $rc"; cat "$T/err"; }
	"$MT" report --format json "$T/st.mt" >"$T/st.json" 2>"$T/err"
	if "$PY" - "$T/st.json" >"$T/st.out" <<'EOF'; then
import json, sys
r = json.load(open(sys.argv[1]))
sites = r["top_sites"]["bytes"] + r["top_sites"]["count"]
pids = {s["pid"] for s in sites}
cut = [s for s in sites if "[truncated]" in s["frames"]]
# whole: from _start, or from a thread's clone
whole = [s for s in sites if any(f == "_start" or f.startswith("__clone")
                                 for f in s["frames"])]
print("%d processes, %d sites, %d whole, %d cut" % (len(pids), len(sites), len(whole), len(cut)))
sys.exit(0 if len(pids) > 1 and not cut and len(whole) == len(sites) else 1)
EOF
		ok "$src --stacks: $(cat "$T/st.out")"
	else
		fail "$src --stacks: $(cat "$T/st.out")"
	fi
done

finish
