#!/bin/sh
# bench-report.sh [BUILDDIR] - 'memtrack report' on a 10M-event trace.
#
# bench-report-gen writes the trace straight through the msgpack-zstd
# encoder (replaying 10M JSON lines would take longer than the report), then
# each measurement runs $reps times and the best wall time is kept:
# interference only ever makes a run slower. Also measured: decoding alone
# (the floor of any report; the decoder is the msgpack-zstd plugin's), so
# the time left is the analysis's. Goal: text report in at most 2 s.
#
# Environment: BENCH_REPORT_EVENTS (10000000), BENCH_REPS (3),
# BENCH_REPORT_GOAL_MS (2000).
set -eu

builddir=${1:-.}
events=${BENCH_REPORT_EVENTS:-10000000}
reps=${BENCH_REPS:-3}
goal=${BENCH_REPORT_GOAL_MS:-2000}
memtrack=$builddir/memtrack
gen=$builddir/bench/bench-report-gen
: "${MEMTRACK_PLUGIN_PATH:=$builddir/plugins/.libs}"
export MEMTRACK_PLUGIN_PATH

for f in "$memtrack" "$gen"; do
	if [ ! -x "$f" ]; then
		echo "bench-report: $f is not built (make bench-report)" >&2
		exit 1
	fi
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-report.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

# best_of CMD...: runs CMD $reps times, prints the best wall time in us
best_of() {
	best=
	i=0
	while [ "$i" -lt "$reps" ]; do
		t0=$(date +%s%N)
		"$@" >/dev/null
		t1=$(date +%s%N)
		t=$(( (t1 - t0) / 1000 ))
		if [ -z "$best" ] || [ "$t" -lt "$best" ]; then
			best=$t
		fi
		i=$((i + 1))
	done
	echo "$best"
}

t0=$(date +%s%N)
"$gen" --write "$tmp/in.mt" "$events"
t1=$(date +%s%N)
t_gen=$(( (t1 - t0) / 1000 ))
bytes=$(wc -c <"$tmp/in.mt")

# warm the page cache, and check the report saw every event
"$memtrack" report --format json "$tmp/in.mt" >"$tmp/r.json"
seen=$(sed -n 's/^{"file":"[^"]*","damaged":false,"events":\([0-9]*\),.*/\1/p' "$tmp/r.json")

t_dec=$(best_of "$gen" --decode "$tmp/in.mt")
t_text=$(best_of "$memtrack" report "$tmp/in.mt")
t_json=$(best_of "$memtrack" report --format json "$tmp/in.mt")
t_svg=$(best_of "$memtrack" report --format svg "$tmp/in.mt")

awk -v n="$events" -v seen="${seen:-0}" -v b="$bytes" -v g="$t_gen" \
    -v dec="$t_dec" -v text="$t_text" -v json="$t_json" -v svg="$t_svg" \
    -v goal="$goal" -v reps="$reps" -v cpus="$(nproc)" '
function row(name, us) {
	printf "%-40s %9.1f ms %8.2f Mev/s\n", name, us / 1e3, n / us
}
BEGIN {
	printf "bench-report: %d events, %.1f MB artifact, %d CPUs, best of %d (trace written in %.1f s)\n",
	       n, b / 1e6, cpus, reps, g / 1e6
	printf "events seen by the report: %d%s\n\n", seen,
	       seen == n ? "" : " (WRONG)"
	row("decode only (msgpack-zstd decoder)", dec)
	row("memtrack report (text)", text)
	row("memtrack report --format json", json)
	row("memtrack report --format svg", svg)
	printf "\ndecoding is %.0f%% of the text report'"'"'s wall time\n",
	       100 * dec / text
	printf "%s: text report of %d events in at most %d ms\n",
	       text <= goal * 1000 && seen == n ? "PASS" : "MISS", n, goal
}'
