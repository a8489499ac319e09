#!/bin/sh
# bench-attach.sh [BUILDDIR] - how long memtrack --pid holds a process up.
#
# A process with 200 libraries loaded (dlopen'd copies of a small one, as
# a plugin host has) runs malloc/free pairs in a loop and notes the
# longest gap between two iterations. It runs 1 s alone, then 1 s with
# memtrack attaching to it and recording, rounds alternated: the longest
# gap with memtrack, against the longest alone, is what the attach (and
# the detach after it) cost the process in one piece. The attach does not
# stop it: what it can feel is the mmap lock that placing (and, at the
# end, removing) each uprobe takes; the run lasts until the watchdog has
# removed them. memtrack's own "attached in N ms" is shown too. Needs root and
# a C compiler. Environment: BENCH_ATTACH_LIBS (200), BENCH_ATTACH_ROUNDS
# (3).
set -eu

builddir=${1:-.}
libs=${BENCH_ATTACH_LIBS:-200}
rounds=${BENCH_ATTACH_ROUNDS:-3}
memtrack=$builddir/memtrack
wait_wd=$(dirname "$0")/wait-watchdogs.sh
: "${MEMTRACK_PLUGIN_PATH:=$builddir/plugins/.libs}"
export MEMTRACK_PLUGIN_PATH
[ -x "$memtrack" ] || { echo "bench-attach: $memtrack is not built" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "bench-attach: needs root" >&2; exit 1; }

dir=$(mktemp -d /tmp/mt-bench-attach-XXXXXX)
trap 'rm -rf "$dir"' EXIT
echo 'int f(void) { return 1; }' >"$dir/f.c"
${CC:-cc} -shared -fPIC -o "$dir/base.so" "$dir/f.c"
i=0
while [ $i -lt "$libs" ]; do
	cp "$dir/base.so" "$dir/lib$i.so"
	i=$((i + 1))
done
cat >"$dir/t.c" <<'EOF'
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static volatile sig_atomic_t stop;
static void on_term(int s) { (void)s; stop = 1; }
static long long now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}
void *volatile sink;
int main(int argc, char **argv)
{
	char p[4096];
	long long prev, gap = 0, t;
	for (int i = 0; i < atoi(argv[2]); i++) {
		snprintf(p, sizeof(p), "%s/lib%d.so", argv[1], i);
		if (!dlopen(p, RTLD_NOW)) {
			fprintf(stderr, "%s\n", dlerror());
			return 1;
		}
	}
	signal(SIGTERM, on_term);
	snprintf(p, sizeof(p), "%s/ready", argv[1]);
	fclose(fopen(p, "w"));
	prev = now();
	while (!stop) {
		sink = malloc(64);
		free(sink);
		t = now();
		if (t - prev > gap)
			gap = t - prev;
		prev = t;
	}
	printf("%.3f\n", gap / 1e6);
	return 0;
}
EOF
${CC:-cc} -O1 -o "$dir/t" "$dir/t.c" -ldl

# run MODE: the longest gap of one 1 s run (MODE alone or attach)
run() {
	rm -f "$dir/ready"
	"$dir/t" "$dir" "$libs" >"$dir/gap" &
	pid=$!
	while [ ! -f "$dir/ready" ]; do sleep 0.01; done
	maps=$(wc -l <"/proc/$pid/maps")
	if [ "$1" = attach ]; then
		"$memtrack" -v --pid "$pid" --duration 1 --sink "file:$dir/r.mt" \
			2>"$dir/err"
		took=$(sed -n 's/.*attached to 1 process in \([0-9.]*\) ms.*/\1/p' "$dir/err")
		# the detach too (the watchdog closes the probes after
		# memtrack): within this run, not the next
		sh "$wait_wd" 60
	else
		sleep 1
		took=-
	fi
	kill -TERM "$pid"
	wait "$pid"
	echo "$1 $(cat "$dir/gap") $took $maps"
}

echo "bench-attach: a process with $libs libraries, 1 s per run"
printf '%-8s %16s %12s %8s\n' run "longest gap ms" "attach ms" maps
r=0
while [ $r -lt "$rounds" ]; do
	for m in alone attach; do
		run $m | awk '{ printf "%-8s %16s %12s %8s\n", $1, $2, $3, $4 }'
	done
	r=$((r + 1))
done
