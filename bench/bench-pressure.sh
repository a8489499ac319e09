#!/bin/sh
# bench-pressure.sh [BUILDDIR] - producers against a slow consumer.
#
# A storm (tests/progs/alloc-storm: 4 processes x 2 threads of malloc/free
# pairs) is recorded into a 256 KiB ring by a consumer that sleeps 2 ms
# after each chunk (--throttle-us 2000). Producers faster than the reader
# are stopped above the high watermark and resumed below the low one. For
# each chunk size (the consumer's speed) and low watermark: the events, the
# drops (must be 0), the stops, stop-to-resume latency (min/median/max) and
# the share of the run the processes spent stopped (mean over processes),
# from the --stats JSON lines. A stop lasts as long as the reader needs to
# go from the high watermark down to the low one, so the latency follows
# (high - low) / consumer speed. Goal: median stop-to-resume at most 50 ms
# with the default chunk.
#
# A hold is a freeze (the cgroup freezer, plugins/ebpf/freeze.c: invisible
# to the parent) or, past the stop watermark or without a freezer, a
# SIGSTOP; `freeze` says which the source used (freeze=0 turns it off),
# `frozen`/`sigstop` how many of each, `req ms` the mean time from BPF's
# request to the process's move into the frozen cgroup.
#
# Environment: BENCH_PRESSURE_ITER (pairs per thread, 40000),
# BENCH_PRESSURE_GOAL_MS (50). Needs root.
set -eu

builddir=${1:-.}
iter=${BENCH_PRESSURE_ITER:-40000}
goal=${BENCH_PRESSURE_GOAL_MS:-50}
memtrack=$builddir/memtrack
storm=$builddir/tests/progs/alloc-storm
: "${MEMTRACK_PLUGIN_PATH:=$builddir/plugins/.libs}"
export MEMTRACK_PLUGIN_PATH

for f in "$memtrack" "$storm"; do
	if [ ! -x "$f" ]; then
		echo "bench-pressure: $f is not built (make bench-pressure)" >&2
		exit 1
	fi
done
if [ "$(id -u)" != 0 ]; then
	echo "bench-pressure: needs root (BPF); skipped"
	exit 0
fi
tmp=$(mktemp -d /tmp/bench-pressure.XXXXXX)
trap 'rm -rf "$tmp"' EXIT INT TERM

# num FIELD < summary line: the number after "FIELD":
num() {
	sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p"
}

echo "bench-pressure: 4 processes x 2 threads x $iter malloc/free pairs," \
	"ring 256 KiB, --throttle-us 2000"
printf '%-6s %-5s %-6s %9s %7s %6s %9s %9s %9s %8s %7s %7s %7s\n' chunk low \
	freeze events dropped stops "min ms" "med ms" "max ms" stopped frozen \
	sigstop "req ms"
status=0
for cfg in 1024:0.25:1 1024:0.25:0 256:0.25:1 64:0.25:1 64:0.25:0 64:0.5:1; do
	chunk=${cfg%%:*}
	rest=${cfg#*:}
	low=${rest%%:*}
	freeze=${rest#*:}
	"$memtrack" -v --source "ebpf:freeze=$freeze" --ring-size 256k \
		--throttle-us 2000 --chunk "$chunk" \
		--low-watermark "$low" --stats="$tmp/stats" \
		--sink file:"$tmp/out.mt" -- "$storm" 4 2 "$iter" \
		>/dev/null 2>"$tmp/err" || {
		echo "bench-pressure: memtrack failed:" >&2
		cat "$tmp/err" >&2
		exit 1
	}
	grep '"what":"summary"' "$tmp/stats" > "$tmp/sum" || {
		echo "bench-pressure: no summary in the --stats file" >&2
		exit 1
	}
	events=$(num events < "$tmp/sum")
	dropped=$(num dropped < "$tmp/sum")
	stops=$(num stops < "$tmp/sum")
	lat=$(sed -n 's/.*"stop_to_resume_ns":{\([^}]*\)}.*/\1/p' "$tmp/sum")
	min=$(echo "$lat" | num min)
	med=$(echo "$lat" | num median)
	max=$(echo "$lat" | num max)
	# mean of the per-process shares of the run spent stopped
	share=$(sed -n 's/.*"stopped_share":\[\(.*\)\].*/\1/p' "$tmp/sum" |
		tr '}' '\n' | sed -n 's/.*"share":\([0-9.]*\).*/\1/p' |
		awk '{ s += $1; n++ } END { printf "%.1f%%", n ? 100 * s / n : 0 }')
	# "full ring: N holds by the freezer (X ms ...), M by SIGSTOP"
	holds=$(grep 'full ring:' "$tmp/err" || true)
	frozen=$(echo "$holds" | sed -n 's/.*full ring: \([0-9]*\) holds.*/\1/p')
	sigstop=$(echo "$holds" | sed -n 's/.*), \([0-9]*\) by SIGSTOP.*/\1/p')
	req=$(echo "$holds" | sed -n 's/.*freezer (\([0-9.]*\) ms.*/\1/p')
	printf '%-6s %-5s %-6s %9s %7s %6s %9.2f %9.2f %9.2f %8s %7s %7s %7s\n' \
		"$chunk" "$low" "$freeze" \
		"$events" "$dropped" "$stops" "$(echo "${min:-0}" | awk '{print $1/1e6}')" \
		"$(echo "${med:-0}" | awk '{print $1/1e6}')" \
		"$(echo "${max:-0}" | awk '{print $1/1e6}')" "$share" \
		"${frozen:-0}" "${sigstop:-0}" "${req:--}"
	if [ "$dropped" != 0 ]; then
		echo "bench-pressure: $dropped events lost" >&2
		status=1
	fi
	if [ "$chunk" = 1024 ] && [ "${stops:-0}" -gt 0 ] &&
		[ "$(echo "$med" | awk -v g="$goal" '{print ($1 <= g * 1e6)}')" != 1 ]; then
		echo "bench-pressure: median stop-to-resume above the goal of $goal ms" >&2
		status=1
	fi
done
echo "goal: median stop-to-resume <= $goal ms with the default chunk (1024)"
exit $status
