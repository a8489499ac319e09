#!/bin/sh
# bench-beside.sh [BUILDDIR] - what a recording costs the processes it
# does not trace, and what limiting the uprobes to the tree costs it.
#
# An untraced program makes N malloc/free pairs (200,000) and times them
# itself: alone; beside `memtrack --source ebpf -- sleep` (the default
# scope: uprobes trap in the traced tree only, plugins/ebpf/scope.c); and
# beside the same with scope=system (uprobes on libc for every process:
# each of the outsider's calls traps). The goal is the first ratio at
# 1.05 or less. Then the price, paid in the tree: a traced program makes
# 1,000 forks (each child exits at once) and 1,000 threads (each joined),
# alone, under memtrack, and under memtrack with scope=system: every
# fork and thread copies the tree's perf events. Rounds alternated,
# medians. Needs root and a C compiler. Environment: BENCH_BESIDE_PAIRS
# (200000), BENCH_BESIDE_ROUNDS (5).
set -eu

builddir=${1:-.}
pairs=${BENCH_BESIDE_PAIRS:-200000}
rounds=${BENCH_BESIDE_ROUNDS:-5}
memtrack=$builddir/memtrack
: "${MEMTRACK_PLUGIN_PATH:=$builddir/plugins/.libs}"
export MEMTRACK_PLUGIN_PATH
[ -x "$memtrack" ] || { echo "bench-beside: $memtrack is not built" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "bench-beside: needs root" >&2; exit 1; }

dir=$(mktemp -d /tmp/mt-bench-beside-XXXXXX)
trap 'rm -rf "$dir"' EXIT
cat >"$dir/loop.c" <<'CEOF'
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
int main(int argc, char **argv)
{
	long n = atol(argv[1]);
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < n; i++) {
		void *volatile p = malloc(64);
		free(p);
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("%.6f\n", (double)(b.tv_sec - a.tv_sec) +
				 (double)(b.tv_nsec - a.tv_nsec) / 1e9);
	return 0;
}
CEOF
${CC:-cc} -O2 -o "$dir/loop" "$dir/loop.c"
cat >"$dir/forks.c" <<'CEOF'
#include <pthread.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}
static void *thread_main(void *a) { return a; }
int main(void)
{
	double t0 = now(), t1, t2;
	int i;

	for (i = 0; i < 1000; i++) {
		pid_t p = fork();

		if (p == 0)
			_exit(0);
		waitpid(p, NULL, 0);
	}
	t1 = now();
	for (i = 0; i < 1000; i++) {
		pthread_t t;

		pthread_create(&t, NULL, thread_main, NULL);
		pthread_join(t, NULL);
	}
	t2 = now();
	printf("%.1f %.1f\n", (t1 - t0) * 1e3, (t2 - t1) * 1e3);
	return 0;
}
CEOF
${CC:-cc} -O2 -pthread -o "$dir/forks" "$dir/forks.c"
wait_wd() {
	# the previous run's watchdog closing its probes must not overlap
	sh "$(dirname "$0")/wait-watchdogs.sh" 2>/dev/null || sleep 3
}

# beside OPTS: the loop's time while memtrack records a sleeping tree
beside() {
	rm -f "$dir/ready"
	"$memtrack" -q --source ebpf${1:+:$1} --sink "file:$dir/out.mt" -- \
		sh -c "touch $dir/ready; exec sleep 60" &
	mt=$!
	i=0
	while [ ! -e "$dir/ready" ] && [ $i -lt 400 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	sleep 0.2
	"$dir/loop" "$pairs"
	pkill -P "$mt" -x sleep 2>/dev/null || pkill -f "^sleep 60$" || true
	wait "$mt" || true
	wait_wd
}
# forks OPTS: the forks program's times (ms for 1,000 forks, 1,000
# threads), traced (OPTS "-": alone)
forks() {
	if [ "$1" = - ]; then
		"$dir/forks"
	else
		"$memtrack" -q --source ebpf${1:+:$1} \
			--sink "file:$dir/forks.mt" -- "$dir/forks"
		wait_wd
	fi
}

: >"$dir/alone"
: >"$dir/tree"
: >"$dir/system"
: >"$dir/f-alone"
: >"$dir/f-tree"
: >"$dir/f-system"
r=0
while [ $r -lt "$rounds" ]; do
	"$dir/loop" "$pairs" >>"$dir/alone"
	beside "" >>"$dir/tree"
	beside scope=system >>"$dir/system"
	forks - >>"$dir/f-alone"
	forks "" >>"$dir/f-tree"
	forks scope=system >>"$dir/f-system"
	r=$((r + 1))
done
median() { sort -n "$1" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
# the median of column 2
median2() { awk '{ print $2 }' "$1" >"$1.2"; median "$1.2"; }
a=$(median "$dir/alone")
t=$(median "$dir/tree")
s=$(median "$dir/system")
echo "bench-beside: an untraced program, $pairs malloc/free pairs, medians of $rounds"
awk -v a="$a" -v t="$t" -v s="$s" 'BEGIN {
	printf "  alone                         %.3f s\n", a
	printf "  beside memtrack (tree scope)  %.3f s   %.2fx\n", t, t / a
	printf "  beside memtrack scope=system  %.3f s   %.2fx\n", s, s / a
}'
fa=$(median "$dir/f-alone") ft=$(median "$dir/f-tree") fs=$(median "$dir/f-system")
ta=$(median2 "$dir/f-alone") tt=$(median2 "$dir/f-tree") ts=$(median2 "$dir/f-system")
echo "bench-beside: in the tree, 1,000 forks (fork, exit, wait) and 1,000 threads (create, join), us each"
awk -v fa="$fa" -v ft="$ft" -v fs="$fs" -v ta="$ta" -v tt="$tt" -v ts="$ts" 'BEGIN {
	printf "  alone                         fork %6.0f   thread %6.0f\n", fa, ta
	printf "  memtrack (tree scope)         fork %6.0f   thread %6.0f\n", ft, tt
	printf "  memtrack scope=system         fork %6.0f   thread %6.0f\n", fs, ts
}'
