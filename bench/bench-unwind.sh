#!/bin/sh
# SPDX-License-Identifier: MIT
# bench/bench-unwind.sh BUILDDIR - the eBPF source's stacks on a real
# allocation-heavy program built without frame pointers (Debian's jq),
# in one run (issue 12):
#   - time: memtrack without --stacks, with --stacks (goal: <= 1.3x);
#   - the share of allocations whose stack reaches __libc_start_main,
#     memtrack --stacks against heaptrack on the same command (goal: 95 %
#     or more), and the frames outside every mapping (goal: none: the
#     report shows them as 0x...).
# Needs root (BPF); heaptrack is optional. `make bench-unwind`.
set -eu
b=${1:-.}
reps=${REPS:-5}
tmp=$(mktemp -d /tmp/mt-bench-unwind.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export MEMTRACK_PLUGIN_PATH=${MEMTRACK_PLUGIN_PATH:-$b/plugins/.libs}
prog='[range(0;20000)] | map(tostring) | join(",") | length'

# median wall time (s) of "$@", reps runs
median() {
	i=0
	while [ $i -lt "$reps" ]; do
		s=$(date +%s.%N)
		"$@" > /dev/null 2>&1
		e=$(date +%s.%N)
		echo "$e - $s" | bc -l
		i=$((i + 1))
	done | sort -n | awk '{ v[NR] = $1 } END { printf "%.3f", v[int((NR + 1) / 2)] }'
}

plain=$(median "$b/memtrack" -q --sink "file:$tmp/a.mt" -- jq -n "$prog")
stacks=$(median "$b/memtrack" -q --stacks --sink "file:$tmp/b.mt" -- jq -n "$prog")
echo "jq -n '$prog' ($reps runs, median)"
echo "  memtrack:          $plain s"
echo "  memtrack --stacks: $stacks s ($(echo "$stacks / $plain" | bc -l | cut -c1-4)x)"

# share of allocations (count) whose stack has __libc_start_main
"$b/memtrack" -q --stacks --stats --sink "file:$tmp/b.mt" -- jq -n "$prog" \
	> /dev/null 2> "$tmp/stats"
grep -E "stacks|events in" "$tmp/stats" | sed 's/^/  /'
"$b/memtrack" report --format collapsed --weight count "$tmp/b.mt" \
	> "$tmp/b.col"
awk '{ n = $NF; all += n; if (/__libc_start_main/) root += n;
       if (/;0x/) bad += n; if (/\[truncated\]/) cut += n }
     END { printf "  memtrack --stacks: %d allocations, %.1f %% reach __libc_start_main, %.1f %% truncated, %d with a frame outside every mapping\n",
	   all, 100 * root / all, 100 * cut / all, bad }' "$tmp/b.col"

if command -v heaptrack > /dev/null && command -v heaptrack_print > /dev/null; then
	heaptrack -o "$tmp/ht" jq -n "$prog" > /dev/null 2>&1
	ht=$(ls "$tmp"/ht*.zst "$tmp"/ht*.gz 2>/dev/null | head -n 1)
	heaptrack_print -f "$ht" --flamegraph-cost-type allocations \
		-F "$tmp/ht.col" > /dev/null 2>&1
	awk '{ n = $NF; all += n; if (/__libc_start_main/) root += n }
	     END { printf "  heaptrack:         %d allocations, %.1f %% reach __libc_start_main\n",
		   all, 100 * root / all }' "$tmp/ht.col"
else
	echo "  heaptrack: not installed, no comparison"
fi
