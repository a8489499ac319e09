#!/bin/sh
# The preload source's BPF program, as root, loads from the light skeleton
# (the kernel relocates it: source/syscalls.c, "Loading"), and from
# libbpf's where that fails (MEMTRACK_TEST_LIBBPF_SKEL forces it here).
# Either way the syscall tracepoints record the same: sys-mix's two
# threads make 2N mmap/munmap pairs of 20 KiB beside 8N malloc/free pairs
# of 1013 B, every one of them in the file, once. Needs root and BPF:
# skips (77) without, fails under MEMTRACK_REQUIRE_BPF=1.
set -u

: "${MT_BUILDDIR:?}" "${MT_SRCDIR:?}"
. "$MT_SRCDIR/tests/lib.sh"
PROG="$MT_BUILDDIR/tests/progs/sys-mix"
N=500

require_ebpf

# count FILE TYPE SIZE: events of TYPE and SIZE in FILE
count() {
	grep "\"type\":\"$2\"" "$1" | grep -c "\"size\":$3[,}]"
}

# run NAME [env]: one recording, the events checked
run() {
	name=$1
	shift
	if ! env "$@" "$MT" -vv --source preload --sink "file:$T/$name.mt" \
		-- "$PROG" "$N" >/dev/null 2>"$T/$name.err"; then
		fail "$name: memtrack failed: $(grep -v '^memtrack: preload: ' "$T/$name.err" | head -3)"
		return
	fi
	"$MT" dump "$T/$name.mt" >"$T/$name.dump" 2>"$T/dump.err" \
		|| { fail "$name: dump: $(cat "$T/dump.err")"; return; }
	got="$(count "$T/$name.dump" Mmap 20480) $(count "$T/$name.dump" Munmap 20480) $(count "$T/$name.dump" Malloc 1013)"
	want="$((2 * N)) $((2 * N)) $((8 * N))"
	if [ "$got" = "$want" ]; then
		ok "$name: $want mmaps, munmaps and mallocs"
	else
		fail "$name: mmaps, munmaps, mallocs: $got, want $want"
	fi
}

run light
if grep -q 'BPF program loaded by the kernel (light skeleton)' "$T/light.err"; then
	ok "light: the kernel loaded the program"
else
	fail "light: not the light skeleton: $(grep -i 'skeleton' "$T/light.err")"
fi
run libbpf MEMTRACK_TEST_LIBBPF_SKEL=1
if grep -q 'light skeleton' "$T/libbpf.err"; then
	fail "libbpf: the light skeleton was tried"
else
	ok "libbpf: libbpf loaded the program"
fi

finish
