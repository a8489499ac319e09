#!/bin/sh
# Thousands of libraries with --stacks (issue 24, item 2): tests/progs/
# dl-many dlopens N copies of libreuse-alpha.so (N = 4,500 by default,
# past the 4,096 code segments the interposer used to remember and the
# 1,024 objects its binder did) and allocates 40 B in each through its
# alpha_alloc as it loads it. Under each source the test wants every
# library's code mapping recorded exactly once (before, each dlopen past
# the cap sent every mapping again: 8.6 MB of metadata for 4,500
# libraries, 409 of them sent more than once), all N blocks named
# alpha_alloc, and their stacks reaching main. Then 40 B more through
# each library once all are loaded: stacks through code loaded long ago
# reach main too (the eBPF unwinder knew 256 code mappings per process,
# and stacks through the others stopped in the library: 190200 of 360000
# bytes from main; it now keeps the rest in chunks, MT_UNW_CHUNKS), in a
# forked child as well, and in its parent after the child ended; and
# under eBPF past the 8,448 mappings its unwinder's table held (9,000
# libraries, MT_DL_MANY_BIG), writing a chunk of that table per ~128
# libraries, not every chunk per library. MT_DL_MANY_N sets N. The eBPF part needs root and BPF: skips without,
# fails under MEMTRACK_REQUIRE_BPF=1.
set -u

: "${MT_BUILDDIR:?}" "${MT_SRCDIR:?}"
. "$MT_SRCDIR/tests/lib.sh"

N=${MT_DL_MANY_N:-4500}
PROG="$MT_BUILDDIR/tests/progs/dl-many"
LIB="$MT_BUILDDIR/tests/progs/.libs/libreuse-alpha.so"
mkdir -p "$T/libs"
i=0
while [ $i -lt "$N" ]; do
	cp "$LIB" "$T/libs/l$i.so"
	i=$((i + 1))
done

# check SOURCE BLOCKS [late|fork|dlmopen]: record, then count the mapping
# records of the copies and the allocations through alpha_alloc (BLOCKS
# of 40 B)
check() {
	src=$1 blocks=$2
	shift 2
	once=1
	# a dlmopen changes the loader's count of unloads (dlpi_subs, twice
	# for a new namespace), and the preload source then sends every
	# mapping again: the libraries loaded before it are recorded three
	# times. That is per dlmopen, not per library, and left as it is;
	# naming every block is what is checked
	[ "${1:-}" = dlmopen ] && once=0
	if ! timeout 300 "$MT" --source "$src" --stacks \
		--sink "file:$T/$src.mt" -- "$PROG" "$T/libs" "$N" "$@" \
		>"$T/$src.out" 2>"$T/$src.err"; then
		fail "$src: memtrack failed: $(head -5 "$T/$src.err")"
		return
	fi
	# MTKM map records (plugins/ebpf/README.md) of the copies, per path
	maps=$("$PY" -c 'import collections, re, struct, sys
import zstandard
data = open(sys.argv[1], "rb").read()
seen = collections.Counter()
pos = 0
while pos + 8 <= len(data):
    magic, size = struct.unpack_from("<II", data, pos)
    if magic & 0xFFFFFFF0 == 0x184D2A50:
        p = data[pos + 8:pos + 8 + size]
        pos += 8 + size
        if p[:4] != b"MTKM":
            continue
        off = 16
        for _ in range(struct.unpack_from("<I", p, 8)[0]):
            t = p[off]
            if t == 1:
                off += 5
            elif t == 3:
                off += 9
            else:
                blen = p[off + 29]
                off += 30 + blen
                plen = struct.unpack_from("<H", p, off)[0]
                path = p[off + 2:off + 2 + plen].decode(errors="replace")
                off += 2 + plen
                if re.search(r"/l[0-9]+\.so$", path):
                    seen[path] += 1
        continue
    d = zstandard.ZstdDecompressor().decompressobj()
    d.decompress(data[pos:])
    pos = len(data) - len(d.unused_data)
twice = sum(1 for v in seen.values() if v > 1)
print(len(seen), twice)' "$T/$src.mt")
	if [ "$once" = 0 ] && [ "${maps% *}" = "$N" ]; then
		ok "$src, $*: each of the $N libraries' code recorded"
	elif [ "$maps" = "$N 0" ]; then
		ok "$src: each of the $N libraries' code recorded once"
	else
		fail "$src: libraries recorded, and of them recorded more than once: $maps (want $N 0)"
	fi
	"$MT" report --format collapsed "$T/$src.mt" >"$T/$src.col" ||
		{ fail "$src: report failed"; return; }
	got=$("$PY" -c 'import sys
named = from_main = 0
for l in open(sys.argv[1]):
    stack, n = l.rsplit(" ", 1)
    names = [f.split(" (")[0] for f in stack.split(";")]
    if "alpha_alloc" in names:
        named += int(n)
        if "main" in names[:names.index("alpha_alloc")]:
            from_main += int(n)
print(named, from_main)' "$T/$src.col")
	want="$((40 * blocks)) $((40 * blocks))"
	if [ "$got" = "$want" ]; then
		ok "$src: $blocks blocks of 40 B under alpha_alloc, called from main"
	else
		fail "$src: bytes under alpha_alloc, and of them from main: $got (want $want)"
	fi
	ls -l "$T/$src.mt" | awk '{ print "  recording: " $5 " bytes" }'
}

check preload $((2 * N)) late
# a namespace of its own half-way (dlmopen): the libraries loaded after
# it are listed before its objects, where the interposer's walks skip
# what they saw whole (issue 24); each must still be recorded once
check preload "$N" dlmopen
require_ebpf
check ebpf $((2 * N)) late
# the same late pass in a forked child, then in the parent once the child
# has ended: the child unwinds with its parent's chunks, and its end does
# not drop them
check ebpf $((3 * N)) fork
if grep -q 'its stacks use frame pointers' "$T/ebpf.err"; then
	fail "ebpf: $(grep 'frame pointers' "$T/ebpf.err")"
fi

# Item 1: the work per library is the library's, not a read of the whole
# process again. Each dlopen used to stop the process and read all of
# /proc/PID/maps (twice with --stacks): 1,000 libraries cost 5 s, 5,000
# with --stacks 250 s. Now the exec gate attaches each new file ahead and
# records its one mapping; memtrack -v counts the whole reads of a maps
# file, which stay a few per process (the root's at exec) at any N.
linear() {
	name=$1
	shift
	if ! timeout 300 "$MT" -v --source ebpf "$@" --sink "file:$T/lin.mt" \
		-- "$PROG" "$T/libs" "$N" >/dev/null 2>"$T/lin.err"; then
		fail "ebpf $name: memtrack failed: $(head -5 "$T/lin.err")"
		return
	fi
	reads=$(sed -n 's/.*attach: \([0-9]*\) whole reads of a .proc.PID.maps.*/\1/p' \
		"$T/lin.err")
	stops=$(sed -n 's/.*attach: \([0-9]*\) stops by SIGSTOP.*/\1/p' "$T/lin.err")
	blocks=$("$MT" dump "$T/lin.mt" | grep -c '"type":"Malloc".*"size":40[,}]')
	if [ -n "$reads" ] && [ "$reads" -le 4 ] && [ "${stops:-0}" = 0 ] &&
	   [ "$blocks" = "$N" ]; then
		ok "ebpf $name: $N libraries, $reads whole reads of the maps, no stop, $blocks blocks of 40 B"
	else
		fail "ebpf $name: $N libraries: whole reads of the maps '$reads' (want <= 4), stops '${stops:-0}' (want 0), blocks of 40 B $blocks (want $N)"
	fi
	# each library's mapping goes to the unwinder in the part of the
	# process's table it falls in: a chunk written per ~128 libraries
	# (a part is cut in two when full), not every chunk per library
	# (4,500 libraries wrote ~40,000 chunks of 14 KB)
	[ "$name" = "with --stacks" ] || return
	writes=$(sed -n 's/.*stacks: [0-9]* pushes.*, \([0-9]*\) chunks written.*/\1/p' \
		"$T/lin.err")
	if [ -n "$writes" ] && [ "$writes" -le $((N / 32)) ]; then
		ok "ebpf $name: $writes unwinder chunks written for $N libraries"
	else
		fail "ebpf $name: unwinder chunks written: '$writes' (want <= $((N / 32)))"
	fi
}
linear "without --stacks"
linear "with --stacks" --stacks

# Past what the eBPF unwinder's table held (256 mappings in a process's
# entry and 32 chunks of 256: 8,448): the rest unwound by frame pointers
# and, built without them, stopped in the library. MT_DL_MANY_BIG sets
# how many (9,000; 0: not run).
BIG=${MT_DL_MANY_BIG:-9000}
if [ "$BIG" -gt "$N" ]; then
	while [ $i -lt "$BIG" ]; do
		cp "$LIB" "$T/libs/l$i.so"
		i=$((i + 1))
	done
	N=$BIG
	check ebpf $((2 * N)) late
	if grep -q 'its stacks use frame pointers' "$T/ebpf.err"; then
		fail "ebpf, $N libraries: $(grep 'frame pointers' "$T/ebpf.err")"
	fi
fi

finish
