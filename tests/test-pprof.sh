#!/bin/sh
# memtrack report --format pprof, read back by Go's own pprof (Debian's
# golang-go: `go tool pprof -raw` and `-top`): for several recordings, the
# multi-process ones included, the sums of each sample type are the json
# report's totals (allocations, bytes allocated, live blocks and bytes at
# the end, bytes live at the peak with --at peak), every sample carries its
# pid, and the frames of a stack are functions with their file and line,
# the inlined one included, in mappings with build-ids.
set -u

: "${MT_BUILDDIR:?}" "${MT_SRCDIR:?}"
. "$MT_SRCDIR/tests/lib.sh"

GO=$(command -v go || echo /usr/lib/go/bin/go)
if [ ! -x "$GO" ] || [ ! -x "$PY" ]; then
	echo "SKIP: no go (golang-go) or no $PY: cannot read the profiles back" >&2
	exit 77
fi
# go keeps a cache and pprof a history: both in the scratch directory
HOME=$T GOCACHE=$T/gocache PPROF_TMPDIR=$T/pprof
export HOME GOCACHE PPROF_TMPDIR
P="$MT_BUILDDIR/tests/progs"

cat >"$T/sums.py" <<'PY'
# sums.py RAW JSON [peak]: the sample sums of `go tool pprof -raw` against
# the json report's totals
import json, re, sys
raw = open(sys.argv[1]).read()
r = json.load(open(sys.argv[2]))
t = r["total"]
head = [h.replace("[dflt]", "") for h in
        raw.split("Samples:\n", 1)[1].split("\n", 1)[0].split()]
assert head == ["alloc_objects/count", "alloc_space/bytes",
                "inuse_objects/count", "inuse_space/bytes"], head
sums = [0, 0, 0, 0]
pids = set()
nsamples = 0
lines = raw.split("Samples:\n", 1)[1].split("Locations")[0].splitlines()
for i, l in enumerate(lines):
    m = re.match(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+):", l)
    if not m:
        continue
    nsamples += 1
    for k in range(4):
        sums[k] += int(m.group(k + 1))
    p = re.search(r"pid:\[(\d+)\]", lines[i + 1])
    assert p, "sample without its pid: %r" % lines[i + 1]
    pids.add(int(p.group(1)))
want = [t["allocations"], t["bytes_allocated"], t["leaked_blocks"],
        t["leaked_bytes"]]
if len(sys.argv) > 3:
    want = want[:2] + [sums[2], t["peak"]]
assert sums == want, (sums, want)
assert pids == {p["pid"] for p in r["processes"] if p["allocations"]}, pids
print("%d samples, %d processes, sums %s" % (nsamples, len(pids), sums))
PY

# pprof_check NAME FILE.mt [REPORT-ARGS]: the profile's sums are the json's
pprof_check() {
	name=$1 mt=$2
	shift 2
	"$MT" report --format json "$@" "$mt" >"$T/r.json" &&
		"$MT" report --format pprof "$@" "$mt" >"$T/p.pb.gz" ||
		{ fail "$name: report"; return; }
	if ! "$GO" tool pprof -raw "$T/p.pb.gz" >"$T/raw" 2>"$T/go.err"; then
		fail "$name: go tool pprof cannot read it"; cat "$T/go.err"
		return
	fi
	peak=
	case "$*" in *peak*) peak=peak ;; esac
	check "$name: pprof sums = json totals" -- \
		"$PY" "$T/sums.py" "$T/raw" "$T/r.json" $peak
	cat "$T/check.out"
}

# JSON-lines fixtures (tests/test-report.sh has their figures): two
# processes, no stacks
"$MT" --source "replay:$MT_SRCDIR/tests/fixtures/report-a.jsonl" \
	--sink "file:$T/a.mt" || { echo "cannot replay" >&2; exit 99; }
pprof_check "report-a" "$T/a.mt"
pprof_check "report-a --at peak" "$T/a.mt" --at peak
pprof_check "report-a --pid 20" "$T/a.mt" --pid 20
"$GO" tool pprof -raw "$T/p.pb.gz" >"$T/raw" 2>&1
has "$T/raw" "report-a: a size class is a frame" "size 4096-8191 B"

# sym-sites with stacks: names, files, lines, inlined frames, mappings
expect_exit 0 "sym-sites recorded with stacks" -- "$MT" --source preload \
	--stacks --sink "file:$T/s.mt" -- "$P/sym-sites"
pprof_check "sym-sites" "$T/s.mt"
pprof_check "sym-sites --at peak" "$T/s.mt" --at peak
"$MT" report --format pprof "$T/s.mt" >"$T/s.pb.gz"
"$GO" tool pprof -raw "$T/s.pb.gz" >"$T/raw" 2>&1
SRC="$MT_SRCDIR/tests/progs/sym-sites.c"
LB=$(grep -n "@block \*/" "$SRC" | cut -d: -f1)
LH=$(grep -n "@helper \*/" "$SRC" | cut -d: -f1)
LI=$(grep -n "@inline \*/" "$SRC" | cut -d: -f1)
# -raw: "ID: 0xADDR M=MAPPING FUNCTION FILE:LINE s=START", inlined
# functions first, the function they are inlined into on the next line;
# files absolute (the compilation directory joined), or as the build mapped
# them (-ffile-prefix-map=DIR=., as Debian's package build does)
has "$T/raw" "sym-sites -raw" \
	"M=[1-9][0-9]* sym_block [^ ]*sym-sites\.c:$LB s=" \
	"M=[1-9][0-9]* sym_small [^ ]*sym-sites\.c:$LH s=" \
	"^ +main [^ ]*sym-sites\.c:$LI s=" \
	"M=[1-9][0-9]* __libc_start_call_main .*/libc_start_call_main\.h:[0-9]+ s=" \
	"^[0-9]+: 0x[0-9a-f]+/0x[0-9a-f]+/0x[0-9a-f]+ .*/sym-sites [0-9a-f]{40} \[FN\]\[FL\]\[LN\]\[IN\]$"
"$GO" tool pprof -top -sample_index=alloc_space "$T/s.pb.gz" >"$T/top" 2>&1
has "$T/top" "sym-sites -top" "Total samples = 7097B" \
	" 6777B .* sym_block$" " 320B .* sym_small \(inline\)$"

# several processes, with stacks: forks, vfork + exec
expect_exit 0 "pstk-chain fork recorded" -- "$MT" --source preload \
	--stacks --sink "file:$T/f.mt" -- "$P/pstk-chain" fork
pprof_check "pstk-chain fork (2 processes)" "$T/f.mt"
expect_exit 0 "alloc-forktree recorded" -- "$MT" --source preload \
	--stacks --sink "file:$T/t.mt" -- "$P/alloc-forktree" 0 3
pprof_check "alloc-forktree (4 processes, exec)" "$T/t.mt"
pprof_check "alloc-forktree --at peak" "$T/t.mt" --at peak

# usage
expect_exit 2 "--at noon" -- "$MT" report --format pprof --at noon "$T/a.mt"
stderr_is "--at noon: named" "--at 'noon': want end or peak"
finish
