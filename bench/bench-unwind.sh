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
# Needs root (BPF) and /usr/bin/time; heaptrack is optional.
# `make bench-unwind`; REPS=N runs of each (default 5), interleaved.
set -eu
b=${1:-.}
reps=${REPS:-5}
if [ ! -x /usr/bin/time ]; then
	echo "bench-unwind: needs /usr/bin/time (Debian: apt-get install time)" >&2
	exit 1
fi
tmp=$(mktemp -d /tmp/mt-bench-unwind.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export MEMTRACK_PLUGIN_PATH=${MEMTRACK_PLUGIN_PATH:-$b/plugins/.libs}
prog='[range(0;20000)] | map(tostring) | join(",") | length'

# wall time (s) of one run of "$@" into $1, CPU time (user + sys, the
# command's included: memtrack waits for it) into $2
wall() {
	wf=$1
	cf=$2
	shift 2
	/usr/bin/time -f "%e %U %S" -o "$tmp/time" "$@" > /dev/null 2>&1
	awk '{ print $1 }' "$tmp/time" >> "$wf"
	awk '{ print $2 + $3 }' "$tmp/time" >> "$cf"
}

med() {
	sort -n "$1" | awk '{ v[NR] = $1 } END { printf "%.3f", v[int((NR + 1) / 2)] }'
}

# interleaved, so that a change of the machine's load hits both alike
i=0
while [ $i -lt "$reps" ]; do
	wall "$tmp/ta" "$tmp/ca" "$b/memtrack" -q --sink "file:$tmp/a.mt" -- \
		jq -n "$prog"
	wall "$tmp/tb" "$tmp/cb" "$b/memtrack" -q --stacks \
		--sink "file:$tmp/b.mt" -- jq -n "$prog"
	i=$((i + 1))
done
plain=$(med "$tmp/ta")
stacks=$(med "$tmp/tb")
cplain=$(med "$tmp/ca")
cstacks=$(med "$tmp/cb")
echo "jq -n '$prog' ($reps runs, median)"
echo "  memtrack:          $plain s wall, $cplain s CPU"
echo "  memtrack --stacks: $stacks s wall ($(echo "$stacks / $plain" | bc -l | cut -c1-4)x), $cstacks s CPU ($(echo "$cstacks / $cplain" | bc -l | cut -c1-4)x)"
echo "  load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"

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
