#!/bin/sh
# bench-sample.sh [BUILDDIR] - what --sample-bytes costs a program (issue
# 26): bench-ebpf-work's malloc/free pairs on 1, 2 and 8 threads (the
# loops timed inside the program: start-up excluded) and jq building and
# joining 20,000 strings (whole runs), alone and under --source preload
# --sample-bytes 512K, with the preload source's libc syscalls mode (as
# without root: the BPF start-up of root mode is a fixed cost apart,
# bench-preload measures it). One run, rounds alternated, medians.
# Goal: overhead at most 5 % on each.
#
# Environment: BENCH_SAMPLE_PAIRS (10000000), BENCH_REPS (5),
# BENCH_SAMPLE_BYTES (512K).
set -eu

builddir=${1:-.}
pairs=${BENCH_SAMPLE_PAIRS:-10000000}
reps=${BENCH_REPS:-5}
rate=${BENCH_SAMPLE_BYTES:-512K}
memtrack=$builddir/memtrack
work=$builddir/bench/bench-ebpf-work
: "${MEMTRACK_PLUGIN_PATH:=$builddir/plugins/.libs}"
export MEMTRACK_PLUGIN_PATH
jqprog='[range(0;20000)] | map(tostring) | join(",") | length'

for f in "$memtrack" "$work"; do
	if [ ! -x "$f" ]; then
		echo "bench-sample: $f is not built (make bench-sample)" >&2
		exit 1
	fi
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-sample.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
have_jq=1
command -v jq >/dev/null 2>&1 || have_jq=0

sampled() {
	"$memtrack" -q --source preload:syscalls=libc --sample-bytes "$rate" \
		--sink "file:$tmp/out.mt" -- "$@"
}

# wall NAME CMD...: the run's wall time in ns, appended to $tmp/NAME
wall() {
	name=$1
	shift
	t0=$(date +%s%N)
	"$@" >/dev/null
	t1=$(date +%s%N)
	echo $((t1 - t0)) >>"$tmp/$name"
}

i=0
while [ "$i" -lt "$reps" ]; do
	for t in 1 2 8; do
		"$work" "$pairs" "$t" >>"$tmp/alone-$t"
		sampled "$work" "$pairs" "$t" >>"$tmp/sampled-$t"
	done
	if [ "$have_jq" = 1 ]; then
		wall alone-jq jq -n "$jqprog"
		wall sampled-jq sampled jq -n "$jqprog"
	fi
	i=$((i + 1))
done

median() {
	sort -n "$1" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

echo "bench-sample: --sample-bytes $rate, median of $reps rounds, $(nproc) CPUs"
printf '%-28s %12s %12s %10s\n' "" "alone" "sampled" "overhead"
miss=
for w in 1 2 8 jq; do
	[ -s "$tmp/alone-$w" ] || continue
	a=$(median "$tmp/alone-$w")
	s=$(median "$tmp/sampled-$w")
	case $w in
	jq) label="jq (whole runs)" ;;
	*) label="$pairs pairs, $w thread(s)" ;;
	esac
	pct=$(awk -v a="$a" -v s="$s" 'BEGIN { printf "%.1f", 100 * (s - a) / a }')
	printf '%-28s %9.1f ms %9.1f ms %9s%%\n' "$label" "$(echo "$a" | awk '{ print $1 / 1e6 }')" \
		"$(echo "$s" | awk '{ print $1 / 1e6 }')" "$pct"
	awk -v p="$pct" 'BEGIN { exit !(p > 5) }' && miss="$miss $w"
done
if [ -n "$miss" ]; then
	echo "MISS: overhead over 5 % for:$miss"
else
	echo "PASS: overhead at most 5 % on each"
fi
