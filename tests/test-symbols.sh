#!/bin/sh
# Frames named as a debugger names them (issue 13), on tests/progs/sym-sites
# (its header lists its sites and figures), recorded with --source preload
# --stacks: no root needed, and DWARF-unwound stacks reach through libc's
# code without frame pointers down to _start.
#   - each site's frames end with `function (sym-sites.c:LINE)`, LINE the
#     allocating call's (the line of each @marker of the source)
#   - the static inline helper is a frame of its own, marked [inlined]
#   - the three calls of one line are one site, in every output
#   - libc's __libc_start_call_main is named with its source line through
#     its separate debug file, where /usr/lib/debug has one (else skipped)
#   - PIE and non-PIE executables alike
#   - a replay of the recording reports the same collapsed stacks
set -u

: "${MT_BUILDDIR:?}" "${MT_SRCDIR:?}"
. "$MT_SRCDIR/tests/lib.sh"
SRC="$MT_SRCDIR/tests/progs/sym-sites.c"

# the line of an @marker of the source
line() { grep -n "@$1 \*/" "$SRC" | cut -d: -f1; }
LB=$(line block) L3=$(line three) LI=$(line inline) LH=$(line helper)
LL=$(line leak)
F=sym-sites.c

for prog in sym-sites sym-sites-nopie; do
	P="$MT_BUILDDIR/tests/progs/$prog"
	expect_exit 0 "$prog: recorded with preload stacks" -- \
		"$MT" --source preload --stacks --sink "file:$T/$prog.mt" -- "$P"
	expect_exit 0 "$prog: collapsed" -- \
		"$MT" report --format collapsed "$T/$prog.mt"
	# the frames from main on, by site (the root frames, _start and
	# libc's, are checked below)
	sed -n 's/^.*;\(main (.*\)$/\1/p' "$T/out" | sort >"$T/got"
	cat >"$T/want" <<-EOF2
	main ($F:$L3);sym_block ($F:$LB) 6000
	main ($F:$LI);sym_small ($F:$LH) [inlined] 320
	main ($F:$LL);sym_block ($F:$LB) 777
	EOF2
	sort -o "$T/want" "$T/want"
	if cmp -s "$T/got" "$T/want"; then
		ok "$prog: sites with their lines, one for the three calls of line $L3"
	else
		fail "$prog: sites"; diff "$T/want" "$T/got"; cat "$T/out"
	fi
	cp "$T/out" "$T/$prog.collapsed"
done

# the same three sites in the text report (top sites by bytes) and json
expect_exit 0 "json" -- "$MT" report --format json "$T/sym-sites.mt"
check "json: three sites, by bytes, named with their lines" -- \
	"$PY" -c 'import json, sys
r = json.load(open(sys.argv[1]))
t = r["total"]
assert (t["allocations"], t["bytes_allocated"], t["frees"]) == (9, 7097, 8), t
assert (t["leaked_blocks"], t["leaked_bytes"]) == (1, 777), t
top = [(s["frames"][-1], s["count"], s["bytes"]) for s in r["top_sites"]["bytes"]]
want = [("sym_block (%s:%s)" % (sys.argv[2], sys.argv[3]), 3, 6000),
	("sym_block (%s:%s)" % (sys.argv[2], sys.argv[3]), 1, 777),
	("sym_small (%s:%s) [inlined]" % (sys.argv[2], sys.argv[4]), 5, 320)]
assert top == want, top' "$T/out" "$F" "$LB" "$LH"
expect_exit 0 "text" -- "$MT" report "$T/sym-sites.mt"
n=$(grep -c "main ($F:$L3)" "$T/out")
# one line per top list the site is in: bytes, count, peak
[ "$n" -eq 3 ] && ok "text: the site of line $L3 once per list" ||
	{ fail "text: the site of line $L3 shown $n times"; cat "$T/out"; }

# libc through its debug file: Debian's libc6-dbg, by build-id
libc=$(ldd "$MT_BUILDDIR/tests/progs/sym-sites" | awk '/libc\.so/ { print $3 }')
bid=$(readelf -n "$libc" 2>/dev/null | awk '/Build ID/ { print $3 }')
dbg=/usr/lib/debug/.build-id/$(echo "$bid" | cut -c1-2)/$(echo "$bid" | cut -c3-).debug
if [ -n "$bid" ] && [ -r "$dbg" ]; then
	has "$T/sym-sites.collapsed" "libc named through $dbg" \
		";__libc_start_call_main \(libc_start_call_main\.h:[0-9]+\);main \($F:"
else
	echo "SKIP (one case): no debug file for $libc ($dbg): libc6-dbg not installed"
fi

# replay carries the stack table and mappings
expect_exit 0 "replay of a --stacks recording" -- \
	"$MT" --source "replay:$T/sym-sites.mt" --sink "file:$T/copy.mt"
expect_exit 0 "collapsed of the copy" -- \
	"$MT" report --format collapsed "$T/copy.mt"
if cmp -s "$T/out" "$T/sym-sites.collapsed"; then
	ok "the copy reports the same collapsed stacks"
else
	fail "the copy's collapsed stacks differ"; diff "$T/sym-sites.collapsed" "$T/out"
fi
finish
