#!/bin/sh
# bench-dlopen.sh [BUILDDIR [dlopen|procs]] - memtrack's cost per item as
# the items grow in number (issue 24), under each source.
#
# dlopen (the default): a program dlopens N libraries (copies of one:
# each its own file, as a plugin host's are), each of which mallocs 32
# bytes from its function. procs: a shell runs N short processes (/bin/true,
# one after another), as a build system or a test runner does. Each is run
# alone, then under memtrack --source ebpf and --source preload, each
# without and with --stacks. For each N: the seconds, and memtrack's
# overhead per item; then the ratio of the per-item overhead at the
# largest N to that at the smallest, and the recording's bytes per item.
# Goal: that ratio at most 1.5 (the cost per item does not grow with the
# number of items); cases over it are named. Each time is the median of
# rounds (3), every case run once in each round, in turn for each N, so
# that a moment of noise on this 2-core machine does not decide a ratio
# (one run of 1,000 processes alone once took 0.98 s, another 0.56 s).
#
# Environment: BENCH_DLOPEN_N (the counts; dlopen "1000 2000 5000",
# procs "1000 5000"), BENCH_DLOPEN_SOURCES ("ebpf preload"; ebpf needs
# root), BENCH_DLOPEN_ROUNDS (3). CC builds the program and the library.
set -eu

builddir=${1:-.}
mode=${2:-dlopen}
memtrack=$builddir/memtrack
case $mode in
dlopen) ns=${BENCH_DLOPEN_N:-1000 2000 5000} item=library ;;
procs) ns=${BENCH_DLOPEN_N:-1000 5000} item=process ;;
*) echo "bench-dlopen: no workload '$mode' (dlopen, procs)" >&2; exit 2 ;;
esac
sources=${BENCH_DLOPEN_SOURCES:-ebpf preload}
rounds=${BENCH_DLOPEN_ROUNDS:-3}
: "${MEMTRACK_PLUGIN_PATH:=$builddir/plugins/.libs}"
export MEMTRACK_PLUGIN_PATH
[ "$(id -u)" = 0 ] || sources=$(echo "$sources" | sed 's/ebpf//')

dir=$(mktemp -d /tmp/bench-dlopen.XXXXXX)
trap 'rm -rf "$dir"' EXIT INT TERM
cat >"$dir/lib.c" <<'C'
#include <stdlib.h>
void *volatile keep;
__attribute__((noinline)) void f(void) { keep = malloc(32); }
C
cat >"$dir/main.c" <<'C'
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv)
{
	int n = atoi(argv[2]), i;
	char p[4096];

	for (i = 0; i < n; i++) {
		void *h;
		void (*f)(void);

		snprintf(p, sizeof(p), "%s/l%d.so", argv[1], i);
		h = dlopen(p, RTLD_NOW | RTLD_LOCAL);
		if (!h || !(f = (void (*)(void))dlsym(h, "f"))) {
			fprintf(stderr, "%s\n", dlerror());
			return 1;
		}
		f();
	}
	return 0;
}
C
cat >"$dir/procs.sh" <<'SH'
i=0
while [ $i -lt "$2" ]; do
	/bin/true
	i=$((i + 1))
done
SH
max=0
for n in $ns; do
	[ "$n" -gt "$max" ] && max=$n
done
if [ "$mode" = dlopen ]; then
	${CC:-cc} -O1 -shared -fPIC -o "$dir/lib.so" "$dir/lib.c"
	${CC:-cc} -O1 -o "$dir/main" "$dir/main.c" -ldl
	i=0
	while [ $i -lt "$max" ]; do
		cp "$dir/lib.so" "$dir/l$i.so"
		i=$((i + 1))
	done
	set -- "$dir/main" "$dir"
else
	set -- /bin/sh "$dir/procs.sh" "$dir"
fi
# the workload's command, then N
cmd="$*"

# the files in the page cache, the loader warm: no first case pays for it
# shellcheck disable=SC2086
$cmd "$max" >/dev/null

now() { date +%s.%N; }
wait_wd=$(dirname "$0")/wait-watchdogs.sh
# run NAME N CMD...: seconds, into $dir/t.NAME.N; after the watchdog of
# an eBPF run is done closing its uprobes (until then every malloc of the
# machine traps)
run() {
	name=$1 n=$2
	shift 2
	sh "$wait_wd" || true
	t0=$(now)
	if ! "$@" >/dev/null 2>"$dir/err"; then
		echo "bench-dlopen: $name, $n ${item}s: failed:" >&2
		cat "$dir/err" >&2
		exit 1
	fi
	t1=$(now)
	echo "$t0 $t1" | awk '{ printf "%.3f\n", $2 - $1 }' >>"$dir/r.$name.$n"
}

# the median of a case's rounds, into $dir/t.NAME.N
median() {
	sort -n "$dir/r.$1.$2" | awk '{ v[NR] = $1 }
		END { printf "%.3f", v[int((NR + 1) / 2)] }' >"$dir/t.$1.$2"
}

cases=
for s in $sources; do
	cases="$cases $s $s-stacks"
done
if [ "$mode" = dlopen ]; then
	echo "bench-dlopen: N dlopens of libraries of one malloc each; seconds, overhead per library (ms), recording bytes per library"
else
	echo "bench-dlopen procs: a shell running N short processes (/bin/true); seconds, overhead per process (ms), recording bytes per process"
fi
printf '%-16s' case
for n in $ns; do
	printf ' %22s' "N=$n"
done
printf ' %8s\n' ratio
r=0
while [ "$r" -lt "$rounds" ]; do
	for n in $ns; do
		# shellcheck disable=SC2086
		run alone "$n" $cmd "$n"
		for c in $cases; do
			src=${c%-stacks}
			st=
			[ "$c" != "$src" ] && st=--stacks
			# shellcheck disable=SC2086
			run "$c" "$n" "$memtrack" -q --source "$src" $st \
				--sink "file:$dir/out.$c.$n.mt" -- $cmd "$n"
			stat -c %s "$dir/out.$c.$n.mt" >"$dir/b.$c.$n"
			rm -f "$dir/out.$c.$n.mt"
		done
	done
	r=$((r + 1))
done
for n in $ns; do
	median alone "$n"
	for c in $cases; do
		median "$c" "$n"
	done
done
status=0
printf '%-16s' alone
for n in $ns; do
	printf ' %22s' "$(cat "$dir/t.alone.$n") s"
done
echo
for c in $cases; do
	printf '%-16s' "$c"
	first= last=
	for n in $ns; do
		per=$(awk -v t="$(cat "$dir/t.$c.$n")" -v a="$(cat "$dir/t.alone.$n")" \
			-v n="$n" 'BEGIN { printf "%.3f", (t - a) * 1000 / n }')
		bytes=$(awk -v b="$(cat "$dir/b.$c.$n")" -v n="$n" \
			'BEGIN { printf "%.0f", b / n }')
		printf ' %22s' "$(cat "$dir/t.$c.$n")s $per ms ${bytes}B"
		[ -n "$first" ] || first=$per
		last=$per
	done
	ratio=$(awk -v f="$first" -v l="$last" 'BEGIN { printf "%.2f", (f > 0 ? l / f : 0) }')
	printf ' %8s\n' "$ratio"
	if awk -v r="$ratio" 'BEGIN { exit !(r > 1.5) }'; then
		echo "bench-dlopen: $c: the cost per $item grows with N (ratio $ratio > 1.5)" >&2
		status=1
	fi
done
echo "goal: overhead per $item at the largest N within 1.5x of that at the smallest"
exit $status
