#!/bin/sh
# bench-replay.sh [BUILDDIR] - re-encoding an artifact: memtrack against
# the zstd command line doing the same work (decompress, recompress at
# memtrack's default level, -5, the reference writer's), then what each
# zstd level costs memtrack's encoder with one worker: time and file size.
#
# A 1M-event trace is written by "bench-write --write" (the pipeline and the
# real encoder), then each command runs 3 times on it and the best wall time
# is kept: interference only ever makes a run slower, so the best is the
# least noisy. Goal: memtrack (default workers) no slower than the zstd pipe.
#
# Environment: BENCH_EVENTS (1000000), BENCH_REPS (3), ZSTD (zstd),
# BENCH_LEVELS ("-5 -1 1 3": the levels of the per-level table).
set -eu

builddir=${1:-.}
events=${BENCH_EVENTS:-1000000}
levels=${BENCH_LEVELS:--5 -1 1 3}
reps=${BENCH_REPS:-3}
memtrack=$builddir/memtrack
benchwrite=$builddir/bench/bench-write
zstd=${ZSTD:-zstd}
: "${MEMTRACK_PLUGIN_PATH:=$builddir/plugins/.libs}"
export MEMTRACK_PLUGIN_PATH

for f in "$memtrack" "$benchwrite"; do
	if [ ! -x "$f" ]; then
		echo "bench-replay: $f is not built (make bench)" >&2
		exit 1
	fi
done
if ! command -v "$zstd" >/dev/null 2>&1; then
	echo "bench-replay: no zstd command line (set ZSTD=...)" >&2
	exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-replay.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

# best_of CMD...: runs CMD $reps times, prints the best wall time in us
best_of() {
	best=
	i=0
	while [ "$i" -lt "$reps" ]; do
		t0=$(date +%s%N)
		"$@"
		t1=$(date +%s%N)
		t=$(( (t1 - t0) / 1000 ))
		if [ -z "$best" ] || [ "$t" -lt "$best" ]; then
			best=$t
		fi
		i=$((i + 1))
	done
	echo "$best"
}

run_memtrack() {
	"$memtrack" -q --source "replay:$tmp/in.mt" --sink "file:$tmp/out.mt" "$@"
}

run_zstd() {
	"$zstd" -q -dc "$tmp/in.mt" | "$zstd" -q --fast=5 -c >/dev/null
}

"$benchwrite" --write "$tmp/in.mt" "$events" >/dev/null
in_bytes=$(wc -c <"$tmp/in.mt")

# Warms the page cache, and checks that the re-encoding is lossless (same
# msgpack bytes), so that the race is between equal pieces of work.
run_memtrack
"$zstd" -q -dc "$tmp/in.mt" >"$tmp/in.msgpack"
"$zstd" -q -dc "$tmp/out.mt" >"$tmp/out.msgpack"
msgpack_bytes=$(wc -c <"$tmp/in.msgpack")
if cmp -s "$tmp/in.msgpack" "$tmp/out.msgpack"; then
	same=yes
else
	same="NO (the re-encoded events differ)"
fi
rm -f "$tmp/in.msgpack" "$tmp/out.msgpack"
run_zstd

t_mt=$(best_of run_memtrack)
t_mt1=$(best_of run_memtrack --workers 1)
t_z=$(best_of run_zstd)
out_bytes=$(wc -c <"$tmp/out.mt")

awk -v n="$events" -v inb="$in_bytes" -v mpb="$msgpack_bytes" \
    -v outb="$out_bytes" -v mt="$t_mt" -v mt1="$t_mt1" -v z="$t_z" \
    -v reps="$reps" -v same="$same" -v zv="$("$zstd" -V)" '
function row(name, us) {
	printf "%-44s %9.1f ms %8.2f Mev/s %8.1f MB/s msgpack\n", name,
	       us / 1e3, n / us, mpb / us
}
BEGIN {
	printf "bench-replay: %d events, %.2f MB artifact (%.2f MB msgpack, %.2f B/event), best of %d\n",
	       n, inb / 1e6, mpb / 1e6, inb / n, reps
	printf "%s\n", zv
	printf "re-encoded artifact: %.2f MB, same msgpack bytes: %s\n\n",
	       outb / 1e6, same
	row("memtrack --source replay: --sink file:", mt)
	row("memtrack ... --workers 1", mt1)
	row("zstd -dc | zstd --fast=5 -c >/dev/null", z)
	printf "\nzstd time / memtrack time: %.2f (default workers), %.2f (1 worker)\n",
	       z / mt, z / mt1
	printf "%s: memtrack replay no slower than zstd -dc | zstd --fast=5\n",
	       mt <= z ? "PASS" : "MISS"
}'

# What the level costs: the same re-encoding with one worker, per level,
# the encoder's own time (--stats' encode_ns, best of the runs: reading
# the input is not in it) and the file's size.
echo
printf "%-10s %12s %12s %10s\n" "level" "encode ms" "file MB" "B/event"
for level in $levels; do
	best=
	i=0
	while [ "$i" -lt "$reps" ]; do
		# --stats also says its totals on stderr: kept for a failure
		run_memtrack --workers 1 --encoder "msgpack-zstd:level=$level" \
			--stats="$tmp/stats" 2>"$tmp/err" || {
			cat "$tmp/err" >&2
			exit 1
		}
		t=$(sed -n 's/.*"what":"summary".*"encode_ns":\([0-9]*\).*/\1/p' \
			"$tmp/stats")
		if [ -z "$best" ] || [ "$t" -lt "$best" ]; then
			best=$t
		fi
		i=$((i + 1))
	done
	b=$(wc -c <"$tmp/out.mt")
	awk -v l="$level" -v t="$best" -v b="$b" -v n="$events" 'BEGIN {
		printf "%-10s %12.1f %12.2f %10.2f\n", l, t / 1e6, b / 1e6, b / n
	}'
done
