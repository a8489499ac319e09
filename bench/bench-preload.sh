#!/bin/sh
# bench-preload.sh [BUILDDIR] - the preload source against heaptrack.
#
# Per-event cost = (whole run under the tracer - the program alone) / events,
# wall-clock time of the whole command (start-up, recording, the tracer's
# own finishing work), median of rounds in which every case runs in turn,
# so that all of them see the same machine.
#
#   1. 1M malloc/free pairs (bench-ebpf-work: 2M events) without stacks:
#      memtrack --source preload against heaptrack, which always records a
#      stack per allocation. Goal: at most 1/4 of heaptrack's cost. The
#      same 1M pairs on 2 and 8 threads at once, where the producers
#      contend for the shared ring: the same goal.
#   2. jq building and joining 20,000 strings (~148K allocations), with
#      stacks on both sides (memtrack --source preload --stacks). Goal:
#      memtrack's overhead at most 1/2 of heaptrack's.
#
# Then where memtrack's time goes for workload 1: the producer (the
# program's own loop, timed inside it), the producers' waits on a full ring,
# the encoders and the writer (from --stats).
#
# Environment: BENCH_PRELOAD_ROUNDS (5), BENCH_PRELOAD_PAIRS (1000000),
# BENCH_PRELOAD_THREADS ("1 2 8": the thread counts of workload 1; the
# breakdown is of the first).
# heaptrack and jq are Debian's packages: installed here when missing and
# run as root, else the case is skipped with a line saying so.
set -eu

builddir=${1:-.}
rounds=${BENCH_PRELOAD_ROUNDS:-5}
pairs=${BENCH_PRELOAD_PAIRS:-1000000}
threads=${BENCH_PRELOAD_THREADS:-1 2 8}
first_t=${threads%% *}
memtrack=$builddir/memtrack
work=$builddir/bench/bench-ebpf-work
: "${MEMTRACK_PLUGIN_PATH:=$builddir/plugins/.libs}"
export MEMTRACK_PLUGIN_PATH
jqprog='[range(0;20000)] | map(tostring) | join(",") | length'

for f in "$memtrack" "$work"; do
	if [ ! -x "$f" ]; then
		echo "bench-preload: $f is not built (make bench)" >&2
		exit 1
	fi
done
missing=
command -v heaptrack >/dev/null 2>&1 || missing="$missing heaptrack"
command -v jq >/dev/null 2>&1 || missing="$missing jq"
if [ -n "$missing" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
	echo "bench-preload: installing$missing"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
		--no-install-recommends $missing >/dev/null 2>&1 || true
fi
if ! command -v heaptrack >/dev/null 2>&1; then
	echo "bench-preload: heaptrack is not installed (Debian's heaptrack); skipped"
	exit 0
fi
have_jq=1
command -v jq >/dev/null 2>&1 || have_jq=0

tmp=$(mktemp -d /tmp/bench-preload.XXXXXX)
trap 'rm -rf "$tmp"' EXIT INT TERM

# BPF probes of an earlier memtrack make every malloc of the machine trap
# for a few seconds after it exits: wait until they are gone.
if [ -r "$(dirname "$0")/wait-watchdogs.sh" ]; then
	sh "$(dirname "$0")/wait-watchdogs.sh" || true
fi

now_ns() {
	date +%s%N
}

# timed NAME CMD...: append the command's wall time in ns to $tmp/NAME
timed() {
	name=$1
	shift
	t0=$(now_ns)
	"$@" >"$tmp/$name.out" 2>"$tmp/$name.err" || {
		echo "bench-preload: $name failed: $*" >&2
		cat "$tmp/$name.err" >&2
		exit 1
	}
	t1=$(now_ns)
	echo $((t1 - t0)) >>"$tmp/$name.ns"
}

median() {
	sort -n "$1" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

# summary field of the --stats JSON lines
num() {
	grep '"what":"summary"' "$2" | sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p"
}

mt() {
	"$memtrack" -q --source preload --stats="$tmp/stats" \
		--sink file:"$tmp/out.mt" "$@"
}

echo "bench-preload: $rounds rounds, every case in each round, median wall time"
r=0
while [ "$r" -lt "$rounds" ]; do
	for t in $threads; do
		timed "alone.$t" "$work" "$pairs" "$t"
		timed "heaptrack.$t" heaptrack -o "$tmp/ht" "$work" "$pairs" "$t"
		rm -f "$tmp"/ht*
		timed "preload.$t" mt -- "$work" "$pairs" "$t"
		cp "$tmp/stats" "$tmp/stats.preload.$t"
		cp "$tmp/preload.$t.out" "$tmp/loop.$t.$r"
		# as a user without root runs it: no BPF, mmap & co. through libc
		timed "preload_libc.$t" "$memtrack" -q \
			--source preload:syscalls=libc \
			--sink file:"$tmp/out-libc.mt" -- "$work" "$pairs" "$t"
	done
	# the fixed costs inside those figures: each tracer around a
	# program that allocates nearly nothing
	timed true_alone /bin/true
	timed true_preload mt -- /bin/true
	timed true_preload_libc "$memtrack" -q --source preload:syscalls=libc \
		--sink file:"$tmp/out-libc.mt" -- /bin/true
	timed true_heaptrack heaptrack -o "$tmp/ht" /bin/true
	rm -f "$tmp"/ht*
	if [ "$have_jq" = 1 ]; then
		timed jq_alone jq -n "$jqprog"
		timed jq_heaptrack heaptrack -o "$tmp/ht" jq -n "$jqprog"
		rm -f "$tmp"/ht*
		timed jq_preload mt --stacks -- jq -n "$jqprog"
		cp "$tmp/stats" "$tmp/stats.jq"
	fi
	r=$((r + 1))
done

status=0
cp "$tmp/stats.preload.$first_t" "$tmp/stats.preload"
ev=$(num events "$tmp/stats.preload")
alone=$(median "$tmp/alone.$first_t.ns")
ht=$(median "$tmp/heaptrack.$first_t.ns")
pl=$(median "$tmp/preload.$first_t.ns")
plc=$(median "$tmp/preload_libc.$first_t.ns")
echo
echo "1. $pairs malloc/free pairs on $first_t thread(s), $ev events, no stacks" \
	"for memtrack (heaptrack always records stacks)"
awk -v a="$alone" -v h="$ht" -v p="$pl" -v q="$plc" -v e="$ev" 'BEGIN {
	hc = (h - a) / e; pc = (p - a) / e; qc = (q - a) / e
	printf "   alone %.3f s, heaptrack %.3f s, memtrack preload %.3f s (syscalls=libc %.3f s)\n", a / 1e9, h / 1e9, p / 1e9, q / 1e9
	printf "   per event: heaptrack %.0f ns, memtrack preload %.0f ns, ratio %.2f (goal <= 0.25)\n", hc, pc, pc / hc
	printf "   per event with syscalls=libc (no root): %.0f ns, ratio %.2f\n", qc, qc / hc
	exit !(pc <= hc / 4)
}' || status=1

# Start-up and finishing, which the figures above spread over the events:
# the tracer around /bin/true. Heaptrack's is a shell script and a second
# process; memtrack's as root is mostly loading the BPF tracepoints of the
# preload source (libbpf parsing the kernel's BTF for CO-RE).
awk -v a="$(median "$tmp/true_alone.ns")" -v p="$(median "$tmp/true_preload.ns")" \
	-v q="$(median "$tmp/true_preload_libc.ns")" \
	-v h="$(median "$tmp/true_heaptrack.ns")" -v e="$ev" 'BEGIN {
	printf "   fixed cost (around /bin/true): heaptrack %.0f ms, memtrack preload %.0f ms (syscalls=libc %.0f ms);\n", (h - a) / 1e6, (p - a) / 1e6, (q - a) / 1e6
	printf "     spread over %d events: %.0f, %.0f (%.0f) ns each of the figures above\n", e, (h - a) / e, (p - a) / e, (q - a) / e
}'

# every thread count: wall s (medians) and the cost per event above the
# program alone, as root and without (syscalls=libc)
echo "   by threads: wall s (native, preload as root, preload syscalls=libc, heaptrack); per event ns; ratio to heaptrack"
for t in $threads; do
	awk -v t="$t" -v a="$(median "$tmp/alone.$t.ns")" \
		-v p="$(median "$tmp/preload.$t.ns")" \
		-v q="$(median "$tmp/preload_libc.$t.ns")" \
		-v h="$(median "$tmp/heaptrack.$t.ns")" \
		-v e="$(num events "$tmp/stats.preload.$t")" 'BEGIN {
		hc = (h - a) / e; pc = (p - a) / e; qc = (q - a) / e
		ok = pc <= hc / 4 && qc <= hc / 4
		printf "   %2d threads: %.3f %.3f %.3f %.3f s; %.0f %.0f %.0f ns; root %.2f, no root %.2f (goal <= 0.25) %s\n", t, a / 1e9, p / 1e9, q / 1e9, h / 1e9, pc, qc, hc, pc / hc, qc / hc, ok ? "PASS" : "MISS"
		exit !ok
	}' || status=1
done

# where memtrack's time goes (workload 1, first thread count)
loop=$(sort -n "$tmp"/loop."$first_t".* | awk 'NR == 1 { print $1 }')
awk -v l="$loop" -v a="$alone" -v e="$ev" \
	-v waits="$(num waits "$tmp/stats.preload")" \
	-v wait_ns="$(num wait_ns "$tmp/stats.preload")" \
	-v enc="$(num encode_ns "$tmp/stats.preload")" \
	-v wr="$(num write_ns "$tmp/stats.preload")" \
	-v secs="$(num seconds "$tmp/stats.preload")" 'BEGIN {
	printf "   where it goes: producer loop %.0f ns/event (best round, hooks + ring + waits),\n", l / e
	printf "     waits on a full ring %s (%.3f s), encoders %.3f s, writer %.3f s, memtrack run %.3f s\n", waits == "" ? "?" : waits, wait_ns / 1e9, enc / 1e9, wr / 1e9, secs
}'

# The same in CPU time, which a loaded machine does not blur: one more run
# under perf (task-clock every 0.1 ms), samples summed per thread and
# library. memtrack's first thread is the poller; those in libzstd are the
# encoders; the writer is the rest.
if command -v perf >/dev/null 2>&1 &&
	perf record -q -e task-clock -c 100000 -o "$tmp/perf.data" -- \
		"$memtrack" -q --source preload --sink file:"$tmp/out.mt" \
		-- "$work" "$pairs" "$first_t" >/dev/null 2>&1; then
	perf report -i "$tmp/perf.data" --sort pid,dso --stdio \
		-F period,pid,dso 2>/dev/null | grep -v '^#' | grep . |
		awk -v e="$ev" -v prog="$(basename "$work")" '
		{
			split($2, f, ":"); tid = f[1] + 0; comm = f[2]; ns = $1
			if (comm == prog) {
				p += ns
				if ($3 == "[vdso]") pclk += ns
				else if ($3 ~ /preload/) phook += ns
				else if ($3 ~ /^libc/) plibc += ns
				else if ($3 ~ /kernel/) pk += ns
				next
			}
			if (comm != "memtrack") next
			cpu[tid] += ns
			if ($3 ~ /^libzstd/) { zstd[tid] += ns; enc[tid] = 1 }
			if ($3 ~ /msgpack/) pack[tid] += ns
			if ($3 ~ /source-preload/) ring[tid] += ns
			if ($3 ~ /kernel/) kern[tid] += ns
			if (!main || tid < main) main = tid
		}
		END {
			for (t in cpu) {
				if (t + 0 == main) continue
				if (enc[t]) { en += cpu[t]; ez += zstd[t]; ep += pack[t] }
				else wr += cpu[t]
			}
			printf "   CPU per event (perf, one more run): program %.0f ns (timestamps %.0f, interposer %.0f, libc %.0f, kernel %.0f),\n", p / e, pclk / e, phook / e, plibc / e, pk / e
			printf "     poller %.0f ns (reading the ring %.0f, kernel %.0f), encoders %.0f ns (zstd %.0f, msgpack %.0f), writer %.0f ns\n", cpu[main] / e, ring[main] / e, kern[main] / e, en / e, ez / e, ep / e, wr / e
		}'
else
	echo "   (perf is not installed or not allowed: no CPU breakdown)"
fi

if [ "$have_jq" = 1 ]; then
	ev=$(num events "$tmp/stats.jq")
	alone=$(median "$tmp/jq_alone.ns")
	ht=$(median "$tmp/jq_heaptrack.ns")
	pl=$(median "$tmp/jq_preload.ns")
	echo
	echo "2. jq -n '$jqprog', $ev events, stacks on both sides"
	awk -v a="$alone" -v h="$ht" -v p="$pl" -v e="$ev" 'BEGIN {
		printf "   alone %.3f s, heaptrack %.3f s, memtrack preload --stacks %.3f s\n", a / 1e9, h / 1e9, p / 1e9
		printf "   overhead: heaptrack %.3f s (%.0f ns/event), memtrack %.3f s (%.0f ns/event), ratio %.2f (goal <= 0.5)\n", (h - a) / 1e9, (h - a) / e, (p - a) / 1e9, (p - a) / e, (p - a) / (h - a)
		exit !((p - a) <= (h - a) / 2)
	}' || status=1
else
	echo "2. jq is not installed: the stacks case is skipped"
fi
exit $status
