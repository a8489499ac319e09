#!/bin/sh
# A library loaded where a dlclose'd one was (issue 24, item 3):
# tests/progs/dl-reuse allocates 1000 x 40 B through alpha_alloc of one
# library, closes it, loads another of the same layout at the same
# address and allocates 1000 x 40 B through its gamma_alloc. The return
# addresses of the two sites are the same; each must still be named by
# its own library: 40000 B under alpha_alloc and 40000 B under
# gamma_alloc, with each source and --stacks. Before, the eBPF source
# gave the second site the first's stack id (deduplicated by address)
# and never recorded the new mapping (seen by its start alone).
# The eBPF part needs root and BPF: skips without, fails under
# MEMTRACK_REQUIRE_BPF=1.
set -u

: "${MT_BUILDDIR:?}" "${MT_SRCDIR:?}"
. "$MT_SRCDIR/tests/lib.sh"

PROG="$MT_BUILDDIR/tests/progs/dl-reuse"
A="$MT_BUILDDIR/tests/progs/.libs/libreuse-alpha.so"
B="$MT_BUILDDIR/tests/progs/.libs/libreuse-gamma.so"

# sites SOURCE: record and check the two sites' bytes
sites() {
	src=$1
	if ! "$MT" -q --source "$src" --stacks --sink "file:$T/$src.mt" -- \
		"$PROG" "$A" "$B" >"$T/$src.out" 2>"$T/$src.err"; then
		fail "$src: memtrack failed: $(cat "$T/$src.err")"
		return
	fi
	a=$(sed -n 's/^base A //p' "$T/$src.out")
	b=$(sed -n 's/^base B //p' "$T/$src.out")
	if [ -z "$a" ] || [ "$a" != "$b" ]; then
		echo "SKIP: $src: the loader put the second library at $b, the first at $a: nothing to tell apart"
		return
	fi
	"$MT" report --format collapsed "$T/$src.mt" >"$T/$src.col" ||
		{ fail "$src: report failed"; return; }
	# the innermost frame that is not malloc's: the library function
	got=$("$PY" -c 'import sys
w = {}
for l in open(sys.argv[1]):
    stack, n = l.rsplit(" ", 1)
    for f in reversed(stack.split(";")):
        name = f.split(" (")[0]
        if name in ("alpha_alloc", "gamma_alloc"):
            w[name] = w.get(name, 0) + int(n)
            break
print(w.get("alpha_alloc", 0), w.get("gamma_alloc", 0))' "$T/$src.col")
	if [ "$got" = "40000 40000" ]; then
		ok "$src: alpha_alloc 40000 B, gamma_alloc 40000 B at the same address"
	else
		fail "$src: alpha_alloc and gamma_alloc bytes: $got, want 40000 40000"
		grep -E 'alpha|gamma' "$T/$src.col" | sed 's/^/  | /'
	fi
}

sites preload

require_ebpf
sites ebpf

finish
