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
# With BENCH_REPORT_STACKS=N (issue 29), the allocations carry N distinct
# call stacks (bench-report-gen --stacks: a tree of call sites in the
# memtrack binary and its libc, which the report names through libdw), the
# trace has 20M events, and every format is measured, and --diff of the
# file against itself, each with its peak RSS (wait4's, as /usr/bin/time
# -f %M gives it). Goal: each in at most 15 s.
#
# Environment: BENCH_REPORT_EVENTS (10000000; 20000000 with stacks),
# BENCH_REPS (3), BENCH_REPORT_GOAL_MS (2000; 15000 with stacks),
# BENCH_REPORT_STACKS (0: none), BENCH_REPORT_ELF (the files the stacks'
# frames are in; default the memtrack binary and its libc, "none" for
# frames in no mapping, shown as addresses).
set -eu

builddir=${1:-.}
stacks=${BENCH_REPORT_STACKS:-0}
if [ "$stacks" -gt 0 ]; then
	events=${BENCH_REPORT_EVENTS:-20000000}
	goal=${BENCH_REPORT_GOAL_MS:-15000}
else
	events=${BENCH_REPORT_EVENTS:-10000000}
	goal=${BENCH_REPORT_GOAL_MS:-2000}
fi
reps=${BENCH_REPS:-3}
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

# the stacks' files: ELF, not a libtool wrapper
stack_args=
if [ "$stacks" -gt 0 ]; then
	stack_args="--stacks $stacks"
	elfs=${BENCH_REPORT_ELF-}
	if [ -z "$elfs" ]; then
		exe=$memtrack
		[ -x "$builddir/.libs/memtrack" ] && exe=$builddir/.libs/memtrack
		libc=$(ldd "$exe" 2>/dev/null | awk '$1 ~ /^libc\.so/ { print $3 }')
		elfs="$exe $libc"
	fi
	[ "$elfs" = none ] && elfs=
	for f in $elfs; do
		stack_args="$stack_args --elf $f"
	done
fi

t0=$(date +%s%N)
# shellcheck disable=SC2086 # word splitting wanted
"$gen" --write "$tmp/in.mt" "$events" $stack_args
t1=$(date +%s%N)
t_gen=$(( (t1 - t0) / 1000 ))
bytes=$(wc -c <"$tmp/in.mt")

# warm the page cache, and check the report saw every event
"$memtrack" report --format json "$tmp/in.mt" >"$tmp/r.json"
seen=$(sed -n 's/^{"file":"[^"]*","damaged":false,[^{]*"events":\([0-9]*\),.*/\1/p' "$tmp/r.json")

# measure NAME CMD...: runs CMD $reps times; one row: the best wall time
# (us), the largest peak RSS (KiB), the output's size (bytes)
measure() {
	name=$1
	shift
	best=
	rss=0
	i=0
	while [ "$i" -lt "$reps" ]; do
		r=$("$gen" --run "$tmp/out" "$@") || exit 1
		# shellcheck disable=SC2086 # "us KiB": two words
		set -- $r "$@"
		if [ -z "$best" ] || [ "$1" -lt "$best" ]; then
			best=$1
		fi
		[ "$2" -gt "$rss" ] && rss=$2
		shift 2
		i=$((i + 1))
	done
	echo "$name $best $rss $(wc -c <"$tmp/out")" >>"$tmp/rows"
}

if [ "$stacks" -gt 0 ]; then
	in=$tmp/in.mt
	: >"$tmp/rows"
	measure decode "$gen" --decode "$in"
	for fmt in text json collapsed svg html pprof; do
		measure "$fmt" "$memtrack" report --format "$fmt" "$in"
	done
	measure diff "$memtrack" report --diff "$in" "$in"
	measure diff-html "$memtrack" report --diff --format html "$in" "$in"
	awk -v n="$events" -v seen="${seen:-0}" -v b="$bytes" -v g="$t_gen" \
	    -v goal="$goal" -v reps="$reps" -v cpus="$(nproc)" \
	    -v stacks="$stacks" -v elfs="${elfs:-none}" '
	BEGIN {
		printf "bench-report: %d events, %d stacks (frames in: %s), %.1f MB artifact, %d CPUs, best of %d (trace written in %.1f s)\n",
		       n, stacks, elfs, b / 1e6, cpus, reps, g / 1e6
		printf "events seen by the report: %d%s\n\n", seen,
		       seen == n ? "" : " (WRONG)"
		printf "%-28s %10s %9s %10s %12s\n", "", "wall", "Mev/s",
		       "peak RSS", "output"
		ok = seen == n
	}
	{
		name = $1 == "decode" ? "decode only" : \
		       $1 == "diff" ? "report --diff A A" : \
		       $1 == "diff-html" ? "report --diff A A, html" : \
		       "report --format " $1
		printf "%-28s %7.1f ms %9.2f %6.1f MiB %9.1f KB\n", name,
		       $2 / 1e3, n / $2, $3 / 1024, $4 / 1e3
		if ($1 != "decode" && $2 > goal * 1000) {
			ok = 0
			miss = miss " " $1
		}
	}
	END {
		printf "%s: every format of %d events with stacks in at most %d ms%s\n",
		       ok ? "PASS" : "MISS", n, goal, miss ? " (over:" miss ")" : ""
	}' "$tmp/rows"
	exit 0
fi

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
