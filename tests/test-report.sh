#!/bin/sh
# memtrack report end to end: JSON-lines fixtures with figures worked out by
# hand (see the comments), replayed into .mt files, then every format
# checked: exact numbers in text, json, collapsed and diff; svg and html
# parsed as documents; a damaged file; usage errors.
set -u

: "${MT_BUILDDIR:?}" "${MT_SRCDIR:?}"
. "$MT_SRCDIR/tests/lib.sh"
F="$MT_SRCDIR/tests/fixtures"

if [ ! -x "$PY" ]; then
	echo "no $PY: cannot parse the outputs" >&2
	exit 77
fi

"$MT" --source "replay:$F/report-a.jsonl" --sink "file:$T/a.mt" &&
	"$MT" --source "replay:$F/report-b.jsonl" --sink "file:$T/b.mt" &&
	"$MT" --source "replay:$F/report-a.jsonl" --batch 4 --sink "file:$T/a4.mt" ||
	{ echo "cannot replay the fixtures" >&2; exit 99; }

# --- text ----------------------------------------------------------------
# report-a.jsonl, by hand (times relative to the first event, 1 ms):
#   pid 10: 5 allocations (9300 B), 4 frees (4300 B); temporary: 0x1000
#     (freed at once), 0x4000 (tid 11 made nothing after it; freed by
#     tid 10), 0x3000 (tid 10's latest when freed at 13 ms) = 3; live
#     4000 B at 3 ms, 8000 B at 7 ms = peak; 0x5000 (5000 B) leaks;
#     mmap 64 KiB at 8 ms, munmapped; brk 0x600000 -> 0x610000 -> 0x608000
#   pid 20: 3 allocations (64 + 4096 + 128), 2 frees (64 + 4096), one
#     unmatched; peak 4224 B at 16 ms; 128 B leak
#   together: 5000 (pid 10) + 4224 (pid 20) = 9224 B at 16 ms, not the sum
#   of the peaks (12224)
expect_exit 0 "report text" -- "$MT" report "$T/a.mt"
cp "$T/out" "$T/text"
awk '/^process 10$/ { p = 1; next } /^process 20$/ { p = 0 } p' "$T/text" >"$T/p10"
has "$T/p10" "pid 10" "allocations +5$" "frees +4$" "temporary +3 " \
	"bytes allocated +9300 B" "bytes freed +4300 B" \
	"peak live heap +8000 B" "peak heap time +7\.000 ms$" \
	"live at end +1 blocks, 5000 B$" "peak mmap'd +65536 B" \
	"peak mmap'd time +8\.000 ms$" "munmapped +65536 B" \
	"brk growth \(max\) +65536 B" "brk growth \(end\) +32768 B"
awk '/^process 20$/ { p = 1; next } /^total/ { p = 0 } p' "$T/text" >"$T/p20"
has "$T/p20" "pid 20" "allocations +3$" "unmatched frees +1$" \
	"temporary +0 " "peak live heap +4224 B" "peak heap time +16\.000 ms$" \
	"live at end +1 blocks, 128 B$"
awk '/^total/ { p = 1; next } /^largest/ { p = 0 } p' "$T/text" >"$T/tot"
has "$T/tot" "total" "allocations +8$" "frees +6$" "temporary +3 " \
	"bytes allocated +13588 B" "peak live heap +9224 B" \
	"peak heap time +16\.000 ms$" "live at end +2 blocks, 5128 B$"
has "$T/text" "largest" \
	"^ +1\. +5000 B .* pid 10 tid 11  Malloc at 7\.000 ms$" \
	"^ +2\. +4096 B .* pid 20 tid 20  AlignedAlloc at 15\.000 ms$" \
	"^ +8\. +64 B .* pid 20 tid 20  Malloc at 14\.000 ms$"
has "$T/text" "histogram" "^  64-127 B +2 x #+ +164 B$" \
	"^  128-255 B +2 x #+ +328 B$" "^  4096-8191 B +2 x #+ +9096 B$"
grep -c "^  [0-9]*-[0-9]* B  .* x #" "$T/text" >"$T/n"
[ "$(cat "$T/n")" -eq 5 ] && ok "histogram: 5 buckets" || fail "histogram buckets: $(cat "$T/n")"

# --- json: the same figures, parsed ---------------------------------------
expect_exit 0 "report json" -- "$MT" report --format json "$T/a.mt"
cp "$T/out" "$T/a.json"
cat >"$T/check.py" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
p = {x["pid"]: x for x in r["processes"]}
t = r["total"]
def site(s):
    return ";".join(s["frames"])
checks = [
    ("events read", r["events"], 19),
    ("not damaged", r["damaged"], False),
    ("pid 10 temporary", p[10]["temporary"], 3),
    ("pid 10 peak", p[10]["peak"], 8000),
    ("pid 10 peak time", p[10]["peak_time_ns"], 7000000),
    ("pid 10 leaks", (p[10]["leaked_blocks"], p[10]["leaked_bytes"]), (1, 5000)),
    ("pid 10 brk", (p[10]["brk_growth_max"], p[10]["brk_growth_end"]), (65536, 32768)),
    ("pid 10 mmap", (p[10]["peak_mmapped"], p[10]["peak_mmapped_time_ns"], p[10]["munmapped"]), (65536, 8000000, 65536)),
    ("pid 20 peak", (p[20]["peak"], p[20]["peak_time_ns"]), (4224, 16000000)),
    ("pid 20 unmatched", p[20]["unmatched_frees"], 1),
    ("total peak", (t["peak"], t["peak_time_ns"]), (9224, 16000000)),
    ("total leaks", (t["leaked_blocks"], t["leaked_bytes"]), (2, 5128)),
    ("total temporary", t["temporary"], 3),
    ("total bytes", (t["allocations"], t["bytes_allocated"], t["frees"], t["bytes_freed"]), (8, 13588, 6, 8460)),
    ("histogram", [(h["min"], h["max"], h["count"], h["bytes"]) for h in r["histogram"]],
     [(64, 127, 2, 164), (128, 255, 2, 328), (512, 1023, 1, 1000), (2048, 4095, 1, 3000), (4096, 8191, 2, 9096)]),
    ("largest", [(b["size"], b["pid"], b["time_ns"]) for b in r["largest"]][:3],
     [(5000, 10, 7000000), (4096, 20, 15000000), (3000, 10, 3000000)]),
    ("top by bytes", [(site(s), s["bytes"]) for s in r["top_sites"]["bytes"]][:3],
     [("pid 10;size 4096-8191 B", 5000), ("pid 20;size 4096-8191 B", 4096), ("pid 10;size 2048-4095 B", 3000)]),
    ("top by count: 8 sites of 1", [s["count"] for s in r["top_sites"]["count"]], [1] * 8),
    ("top by peak", [(site(s), s["at_peak"]) for s in r["top_sites"]["peak"]],
     [("pid 10;size 4096-8191 B", 5000), ("pid 20;size 4096-8191 B", 4096), ("pid 20;size 128-255 B", 128)]),
    ("top by leaks", [(site(s), s["leaked_bytes"]) for s in r["top_sites"]["leaks"]],
     [("pid 10;size 4096-8191 B", 5000), ("pid 20;size 128-255 B", 128)]),
    ("temporary per site", sorted((site(s), s["temporary"]) for s in r["top_sites"]["bytes"] if s["temporary"]),
     [("pid 10;size 128-255 B", 1), ("pid 10;size 2048-4095 B", 1), ("pid 10;size 64-127 B", 1)]),
]
bad = 0
for name, got, want in checks:
    if got == want:
        print("ok: json " + name)
    else:
        print("FAIL: json %s: got %r, want %r" % (name, got, want))
        bad += 1
sys.exit(1 if bad else 0)
PY
"$PY" "$T/check.py" "$T/a.json" >"$T/py.out" 2>&1
pyrc=$?
cat "$T/py.out"
passes=$((passes + $(grep -c '^ok:' "$T/py.out")))
fails=$((fails + $(grep -c '^FAIL:' "$T/py.out")))
[ "$pyrc" -eq 0 ] || [ "$(grep -c '^FAIL:' "$T/py.out")" -gt 0 ] ||
	fail "json check did not run"

# --- the same events in 5 frames give the same report ---------------------
"$MT" report --format json "$T/a4.mt" | sed 's/a4\.mt/a.mt/' >"$T/a4.json"
cmp -s "$T/a.json" "$T/a4.json" && ok "5 frames: same json" || fail "5 frames: json differs"

# --- --pid ------------------------------------------------------------------
expect_exit 0 "--pid 20" -- "$MT" report --pid 20 --format json "$T/a.mt"
check "--pid 20: one process, its figures, times from its first event" -- \
	"$PY" -c 'import json,sys; r = json.load(open(sys.argv[1]))
assert [p["pid"] for p in r["processes"]] == [20], r["processes"]
assert r["events"] == 5 and r["total"]["peak"] == 4224, r["total"]
assert r["total"]["peak_time_ns"] == 2000000, r["total"]["peak_time_ns"]
assert r["pid_filter"] == 20' "$T/out"
expect_exit 0 "--pid of no process" -- "$MT" report --pid 99 "$T/a.mt"
has "$T/out" "--pid 99" "^total \(0 processes\)$" "allocations +0$"

# --- collapsed ----------------------------------------------------------------
expect_exit 0 "collapsed" -- "$MT" report --format collapsed "$T/a.mt"
cat >"$T/want" <<'EOF'
pid 10;size 64-127 B 100
pid 10;size 128-255 B 200
pid 10;size 512-1023 B 1000
pid 10;size 2048-4095 B 3000
pid 10;size 4096-8191 B 5000
pid 20;size 64-127 B 64
pid 20;size 128-255 B 128
pid 20;size 4096-8191 B 4096
EOF
cmp -s "$T/out" "$T/want" && ok "collapsed by bytes" ||
	{ fail "collapsed by bytes"; diff "$T/out" "$T/want"; }
expect_exit 0 "collapsed by count" -- "$MT" report --format collapsed \
	--weight count --pid 20 "$T/a.mt"
printf 'pid 20;size 64-127 B 1\npid 20;size 128-255 B 1\npid 20;size 4096-8191 B 1\n' >"$T/want"
cmp -s "$T/out" "$T/want" && ok "collapsed by count, --pid 20" ||
	{ fail "collapsed by count"; diff "$T/out" "$T/want"; }

# --- diff ---------------------------------------------------------------------
# A per size class (over processes): 64-127 2/164, 128-255 2/328,
# 512-1023 1/1000, 2048-4095 1/3000, 4096-8191 2/9096; B: 64-127 3/300,
# 4096-8191 1/8000, 1048576-2097151 1/1048576.
expect_exit 0 "diff" -- "$MT" report --diff "$T/a.mt" "$T/b.mt"
cp "$T/out" "$T/diff"
sed -n '3p' "$T/diff" | grep -E -q '^ +0 +1048576 +\+1048576 +0 +1 +\+1  size 1048576-2097151 B$' &&
	ok "diff: biggest change first" || { fail "diff first row"; cat "$T/diff"; }
has "$T/diff" "diff" '^ +3000 +0 +-3000 +1 +0 +-1  size 2048-4095 B$' \
	'^ +9096 +8000 +-1096 +2 +1 +-1  size 4096-8191 B$' \
	'^ +164 +300 +\+136 +2 +3 +\+1  size 64-127 B$' \
	'^ +13588 +1056876 +\+1043288 +8 +5 +-3  total$'
expect_exit 0 "diff json" -- "$MT" report --diff --format json "$T/a.mt" "$T/b.mt"
check "diff json: sorted by |delta|, totals" -- "$PY" -c 'import json,sys
r = json.load(open(sys.argv[1]))
d = [s["bytes_delta"] for s in r["sites"]]
assert d == [1048576, -3000, -1096, -1000, -328, 136], d
assert r["total"]["bytes_delta"] == 1043288 and r["total"]["count_delta"] == -3' "$T/out"
expect_exit 0 "diff of a file with itself" -- "$MT" report --diff "$T/a.mt" "$T/a.mt"
[ "$(grep -c ' +0 .* +0  ' "$T/out")" -eq 6 ] && ok "self diff: all deltas 0" ||
	{ fail "self diff"; cat "$T/out"; }

# --- whole frame names (issue 29) --------------------------------------------
# tests/progs/long-names: make<T>() instantiated twice, the two names alike
# for their first 140 bytes. Names cut at 127 bytes made the two one site:
# --diff of a recording allocating in the first against one allocating in
# the second read "+0", and no output showed the file:line after the cut.
LN="$MT_BUILDDIR/tests/progs/long-names"
LM=$(grep -n "@make$" "$MT_SRCDIR/tests/progs/long-names.cc" | cut -d: -f1)
PFX='void* memtrack_test::make<memtrack_test::an_allocation_site_whose_template_argument_list_is_long_enough_to_pass_any_fixed_buffer<memtrack_test::'
N1="${PFX}first_instantiation> >(unsigned long) (long-names.cc:$LM)"
N2="${PFX}second_instantiation> >(unsigned long) (long-names.cc:$LM)"
# the same, as a grep -E pattern
re() { printf '%s' "$1" | sed 's/[][\.*^$()+?{}|]/\\&/g'; }
mkrec() { "$PY" "$MT_SRCDIR/tests/mkrec.py" "$@"; }
if ! "$PY" -c 'import msgpack, zstandard' 2>/dev/null; then
	echo "SKIP: no $PY with msgpack and zstandard: whole names not checked"
elif ! mkrec long "$T/ln1.mt" "$LN" 100 0 ||
	! mkrec long "$T/ln2.mt" "$LN" 0 100 ||
	! mkrec long "$T/ln12.mt" "$LN" 100 200; then
	fail "long names: cannot write the recordings"
else
	expect_exit 0 "long names: diff" -- "$MT" report --diff "$T/ln1.mt" "$T/ln2.mt"
	has "$T/out" "long names: diff, a row each, named whole" \
		"^ +100 +0 +-100 +1 +0 +-1  $(re "$N1")$" \
		"^ +0 +100 +\+100 +0 +1 +\+1  $(re "$N2")$"
	# each row: its site, then its caller on the next line
	for n in "$N1" "$N2"; do
		grep -E -A1 "  $(re "$n")\$" "$T/out" | tail -n 1 |
			grep -E -q '^ +from main \(long-names\.cc:[0-9]+\)$' ||
			{ fail "long names: diff, no caller under $n"; cat "$T/out"; }
	done
	[ "$(wc -l <"$T/out")" -eq 7 ] && ok "long names: diff, 2 rows of 2 lines" ||
		{ fail "long names: diff rows"; cat "$T/out"; }
	expect_exit 0 "long names: diff json" -- "$MT" report --diff --format json "$T/ln1.mt" "$T/ln2.mt"
	check "long names: diff json, frames and name as the report gives them" -- "$PY" -c 'import json, re, sys
r = json.load(open(sys.argv[1]))
assert r["damaged"] is False and r["damaged_a"] is False and r["damaged_b"] is False, r
got = [(s["frames"][1:], s["name"], s["bytes_delta"], s["count_delta"]) for s in r["sites"]]
assert got == [([sys.argv[2]], sys.argv[2], -100, -1), ([sys.argv[3]], sys.argv[3], 100, 1)], got
for s in r["sites"]:
    assert len(s["frames"]) == 2 and re.fullmatch(r"main \(long-names\.cc:[0-9]+\)", s["frames"][0]), s' \
		"$T/out" "$N1" "$N2"
	expect_exit 0 "long names: json" -- "$MT" report --format json "$T/ln12.mt"
	check "long names: json frames whole" -- "$PY" -c 'import json, sys
r = json.load(open(sys.argv[1]))
got = [(s["frames"][0], s["frames"][-1], s["bytes"]) for s in r["top_sites"]["bytes"]]
assert got == [("pid 1", sys.argv[3], 200), ("pid 1", sys.argv[2], 100)], got' \
		"$T/out" "$N1" "$N2"
	expect_exit 0 "long names: collapsed" -- "$MT" report --format collapsed "$T/ln12.mt"
	has "$T/out" "long names: collapsed" \
		"^pid 1;main \(long-names\.cc:[0-9]+\);$(re "$N1") 100$" \
		"^pid 1;main \(long-names\.cc:[0-9]+\);$(re "$N2") 200$"
	expect_exit 0 "long names: text" -- "$MT" report "$T/ln12.mt"
	has "$T/out" "long names: text" "$(re "$N1")" "$(re "$N2")"
	expect_exit 0 "long names: svg" -- "$MT" report --format svg "$T/ln12.mt"
	check "long names: svg titles name each site whole" -- "$PY" -c 'import sys, xml.etree.ElementTree as ET
root = ET.fromstring(open(sys.argv[1]).read())
titles = [t.text for t in root.iter() if t.tag.endswith("title") and t.text]
for n in sys.argv[2:]:
    assert any(t.startswith(n + " (") for t in titles), (n, titles)' \
		"$T/out" "$N1" "$N2"
	# the html page's views are drawn from its data: the names are there
	expect_exit 0 "long names: html" -- "$MT" report --format html "$T/ln12.mt"
	check "long names: html data names each site whole" -- "$PY" -c 'import sys, json, re
src = open(sys.argv[1]).read()
d = json.loads(re.search(r"<script type=\"application/json\" id=\"mt-data\">(.*?)</script>", src, re.S).group(1))
leaves = [d["names"][s[0][-1]] for s in d["sites"]]
for n in sys.argv[2:]:
    assert n in leaves, (n, leaves)
assert "<" not in src.split("id=\"mt-data\">")[1].split("</script>")[0]' \
		"$T/out" "$N1" "$N2"
	expect_exit 0 "long names: html" -- "$MT" report --format html "$T/ln12.mt"
	check "long names: html top sites hold the whole stacks" -- "$PY" -c 'import sys
src = open(sys.argv[1]).read()
for n in sys.argv[2:]:
    assert (n.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") + "\"") in src, n' \
		"$T/out" "$N1" "$N2"
fi

# the program recorded live (--source preload --stacks, no root): each
# allocation is named by its whole instantiation, not by malloc, operator
# new or main (make<> was a tail call to malloc, no frame of its own)
if ! "$MT" -q --source preload --stacks --sink "file:$T/ln-live.mt" -- "$LN" \
	2>"$T/ln.err"; then
	fail "long names, live: cannot record: $(cat "$T/ln.err")"
else
	expect_exit 0 "long names, live: json" -- "$MT" report --format json "$T/ln-live.mt"
	check "long names, live: each site named by its whole instantiation" -- "$PY" -c 'import json, sys
r = json.load(open(sys.argv[1]))
top = r["top_sites"]["bytes"]
named = dict((s["bytes"], (s["name"], s["count"], s["frames"][-1])) for s in top)
assert named.get(100) == (sys.argv[2], 1, sys.argv[2]), named
assert named.get(200) == (sys.argv[3], 1, sys.argv[3]), named' \
		"$T/out" "$N1" "$N2"
	expect_exit 0 "long names, live: text" -- "$MT" report "$T/ln-live.mt"
	awk '/^top sites by bytes allocated$/ { p = 1; next } /^top sites/ { p = 0 } p' \
		"$T/out" >"$T/ln-text"
	has "$T/ln-text" "long names, live: text" "^ +[0-9]+\. +200 B +$(re "$N2")$" \
		"^ +[0-9]+\. +100 B +$(re "$N1")$"
fi

# --- a site is named by its first frame past the allocator (issue 29) ----------
# tests/progs/alloc-wrappers: my_xmalloc() (three callers) and make_string()
# (two, over my_xmalloc) pass allocations through; make_node() has one
# caller; copy_text() allocates in the C library. The HTML table named
# four of the six sites my_xmalloc, and the text printed each as one
# root-first line.
if ! "$PY" -c 'import msgpack, zstandard' 2>/dev/null; then
	echo "SKIP: no $PY with msgpack and zstandard: site names not checked"
elif ! mkrec wrappers "$T/wr.mt" "$MT_BUILDDIR/tests/progs/alloc-wrappers"; then
	fail "wrappers: cannot write the recording"
else
	expect_exit 0 "wrappers: text" -- "$MT" report "$T/wr.mt"
	awk '/^top sites by bytes allocated$/ { p = 1; next } /^top sites/ { p = 0 } p' "$T/out" |
		sed -E 's/\(alloc-wrappers\.c:[0-9]+\)/(L)/' >"$T/wr-text"
	cat >"$T/want" <<'EOF'
   1.          300 B             direct_alloc (L)
          from main (L)
            in pid 1
   2.          200 B             parse_b (L)
           via my_xmalloc (L)
           via make_string (L)
          from main (L)
            in pid 1
   3.          100 B             parse_a (L)
           via my_xmalloc (L)
           via make_string (L)
          from main (L)
            in pid 1
   4.           48 B             make_node (L)
           via my_xmalloc (L)
          from build_tree (L)
          from main (L)
            in pid 1
   5.           10 B             main (L)
           via my_xmalloc (L)
            in pid 1
   6.            5 B             copy_text (L)
           via libc.so.6+0x11
          from main (L)
            in pid 1
EOF
	cmp -s "$T/wr-text" "$T/want" &&
		ok "wrappers: text names each site past its wrappers, frames innermost first" ||
		{ fail "wrappers: text sites"; diff "$T/wr-text" "$T/want"; }
	expect_exit 0 "wrappers: html" -- "$MT" report --format html "$T/wr.mt"
	check "wrappers: html top sites named past the wrappers" -- "$PY" -c 'import re, sys
src = open(sys.argv[1]).read().split("<div id=\"sites\">")[1].split("</div>")[0]
got = [re.sub(r" \(alloc-wrappers\.c:[0-9]+\)$", "", n)
       for n in re.findall(r"<td class=\"site\" title=\"[^\"]*\" data-frames=\x27[^\x27]*\x27><span class=\"name\">([^<]*)</span>", src)]
assert got == ["direct_alloc", "parse_b", "parse_a", "make_node", "main", "copy_text"], got' "$T/out"
	expect_exit 0 "wrappers: json" -- "$MT" report --format json "$T/wr.mt"
	check "wrappers: json names each site as the html does, among its frames" -- "$PY" -c 'import json, re, sys
r = json.load(open(sys.argv[1]))
top = r["top_sites"]["bytes"]
got = [re.sub(r" \(alloc-wrappers\.c:[0-9]+\)$", "", s["name"]) for s in top]
assert got == ["direct_alloc", "parse_b", "parse_a", "make_node", "main", "copy_text"], got
assert all(s["name"] in s["frames"] for s in top), top' "$T/out"
	cp "$T/out" "$T/wr.json"
	expect_exit 0 "wrappers: diff json" -- "$MT" report --diff --format json "$T/wr.mt" "$T/wr.mt"
	check "wrappers: diff json names each site as the report json does" -- "$PY" -c 'import json, sys
rep = json.load(open(sys.argv[1]))["top_sites"]["bytes"]
diff = json.load(open(sys.argv[2]))["sites"]
want = sorted((s["frames"][1:], s["name"]) for s in rep)
got = sorted((s["frames"], s["name"]) for s in diff)
assert len(want) == 6 and got == want, (got, want)' "$T/wr.json" "$T/out"
fi

# --- a jq-like program recorded live (issue 29) -------------------------------
# tests/progs/jq-like under --source preload --stacks (no root): its five
# sites all allocate through jv_mem_alloc, as jq's do, three of them also
# through jv_string_sized, a wrapper of it. On jq the report named every
# site jv_mem_alloc. Each must be named by the caller that made it, with
# the wrappers in its stack, and print lines no other site prints: the two
# parse_string sites differ only in the line of parse_value that called
# them. The bytes are worked out in the program's opening comment.
JQ="$MT_BUILDDIR/tests/progs/jq-like"
JQ_KEY=$(grep -n "/\* the key \*/" "$MT_SRCDIR/tests/progs/jq-like.c" | cut -d: -f1)
JQ_VALUE=$(grep -n "/\* the value \*/" "$MT_SRCDIR/tests/progs/jq-like.c" | cut -d: -f1)
if ! "$MT" -q --source preload --stacks --sink "file:$T/jq.mt" -- "$JQ" \
	2>"$T/jq.err"; then
	fail "jq-like: cannot record: $(cat "$T/jq.err")"
else
	expect_exit 0 "jq-like: text" -- "$MT" report "$T/jq.mt"
	awk '/^top sites by bytes allocated$/ { p = 1; next } /^top sites/ { p = 0 } p' \
		"$T/out" >"$T/jq-text"
	# each site: its bytes and its lines, the first without rank and figures
	cat >"$T/jq-sites.py" <<'PY'
import re, sys
sites = []
for l in open(sys.argv[2]).read().splitlines():
    m = re.fullmatch(r" +[0-9]+\. +([0-9]+) B +(?:[0-9.]+ [KMGTPE]iB +)?(\S.*)", l)
    if m:
        sites.append((int(m.group(1)), [m.group(2)]))
    else:
        sites[-1][1].append(l.strip())
PY
	check "jq-like: text sites named by the wrapper's callers, the wrappers in the stack, bytes exact" -- \
		"$PY" -c 'import re, sys
exec(open(sys.argv[1]).read())
got = [(b, re.sub(r" \(jq-like\.c:[0-9]+\)$", "", lines[0])) for b, lines in sites]
assert got == [(1280, "parse_string"), (640, "parse_string"), (480, "jv_array_new"),
               (320, "jv_object_new"), (200, "dump_value")], sites
for b, lines in sites:
    assert re.fullmatch(r"via jv_mem_alloc \(jq-like\.c:[0-9]+\)", lines[1]), lines
# the two parse_string sites: called for a value and for a key
vk = [[x for x in lines if x.startswith("from parse_value ")] for b, lines in sites[:2]]
assert vk == [["from parse_value (jq-like.c:%s)" % sys.argv[3]],
              ["from parse_value (jq-like.c:%s)" % sys.argv[4]]], vk' \
		"$T/jq-sites.py" "$T/jq-text" "$JQ_VALUE" "$JQ_KEY"
	check "jq-like: text, each site's lines distinct from every other site's" -- \
		"$PY" -c 'import sys
exec(open(sys.argv[1]).read())
assert len(sites) == 5, sites
for i, (bi, li) in enumerate(sites):
    for bj, lj in sites[i + 1:]:
        assert li != lj, ("alike", bi, bj, li)' "$T/jq-sites.py" "$T/jq-text"
fi

# --- stack lines (issue 29: --stack-lines N) -----------------------------------
# tests/progs/deep-sites under --source preload --stacks (no root): the
# sites of deep_a (16000 B) and deep_b (8000 B) share deep_f6 and its five
# callers deep_f1..f5, and differ at the sixth; main's own 4000 B is
# shallow. By default each site shows what tells it apart from the others
# of the list (deep_*: six callers, then "... N more"), 3 callers at
# least; --stack-lines N shows N, 0 the whole stack.
DS="$MT_BUILDDIR/tests/progs/deep-sites"
if ! "$MT" -q --source preload --stacks --sink "file:$T/ds.mt" -- "$DS" \
	2>"$T/ds.err"; then
	fail "deep sites: cannot record: $(cat "$T/ds.err")"
else
	# sites NAME ARGS...: the first ranking's frames, names only
	sites() {
		"$MT" report "$@" "$T/ds.mt" >"$T/ds.out" 2>"$T/ds.err" ||
			fail "deep sites: report $*: $(cat "$T/ds.err")"
		awk '/^top sites by bytes allocated$/ { p = 1; next }
			/^top sites/ { p = 0 } p' "$T/ds.out" |
			sed -E -e 's/ \([^()]*:[0-9]+\)( \[inlined\])?$//' \
			-e 's/^ +[0-9]+\. +[0-9]+ B +[0-9.]+ [KMG]?i?B +/site /' \
			-e 's/^ +(from|via|in|\.\.\.) /\1 /' \
			-e 's/^in pid [0-9]+$/in pid/'
	}
	# what must be in the default: deep_a's site, six callers, the rest
	# counted; main's site, three callers at least
	cat >"$T/ds-want" <<'EOF'
site deep_f6
from deep_f5
from deep_f4
from deep_f3
from deep_f2
from deep_f1
from deep_a
... 4 more frames (--stack-lines 0: all)
in pid
site deep_f6
from deep_f5
from deep_f4
from deep_f3
from deep_f2
from deep_f1
from deep_b
... 4 more frames (--stack-lines 0: all)
in pid
site main
from __libc_start_call_main
from __libc_start_main_impl
from _start
in pid
EOF
	sites >"$T/ds-got"
	cmp -s "$T/ds-got" "$T/ds-want" &&
		ok "deep sites: by default, the callers that tell the sites apart" ||
		{ fail "deep sites: default stack lines"; diff "$T/ds-got" "$T/ds-want"; }
	sites --stack-lines 2 >"$T/ds-got"
	if grep -qx 'from deep_f4' "$T/ds-got" && ! grep -qx 'from deep_f3' "$T/ds-got" &&
		[ "$(grep -cx '\.\.\. 8 more frames (--stack-lines 0: all)' "$T/ds-got")" -eq 2 ]; then
		ok "deep sites: --stack-lines 2 shows two callers, counts the rest"
	else
		fail "deep sites: --stack-lines 2"; cat "$T/ds-got"
	fi
	sites --stack-lines 0 >"$T/ds-got"
	if [ "$(grep -cx 'from _start' "$T/ds-got")" -eq 3 ] &&
		! grep -q '^\.\.\.' "$T/ds-got"; then
		ok "deep sites: --stack-lines 0 shows every frame"
	else
		fail "deep sites: --stack-lines 0"; cat "$T/ds-got"
	fi
	# the html's top sites: the two deep_f6 rows read apart by their
	# callers, as in the text, each with its process (they read alike)
	"$MT" report --format html "$T/ds.mt" >"$T/ds.html" 2>"$T/ds.err" ||
		fail "deep sites: html: $(cat "$T/ds.err")"
	check "deep sites: html top sites, the callers that tell them apart and the pid" -- "$PY" -c 'import html, re, sys
src = open(sys.argv[1]).read().split("<div id=\"sites\">")[1].split("</div>")[0]
rows = re.findall(r"<td class=\"site\" title=\"pid ([0-9]+);[^\"]*\" data-frames=\x27[^\x27]*\x27>(.*?)</td>", src)
got = []
for pid, cell in rows:
    lines = [html.unescape(re.sub(r" \([^()]*:[0-9]+\)( \[inlined\])?$", "", x))
             for x in re.findall(r"<span class=\"(?:name|call)\">([^<]*)</span>", cell)]
    assert lines and lines[-1] == "in pid " + pid, (lines, cell)
    got.append(lines[:-1])
def deep(caller):
    return ["deep_f6"] + ["from deep_f%d" % i for i in range(5, 0, -1)] + \
        ["from " + caller, "\u2026 4 more frames (click: the whole stack)"]
assert got[:2] == [deep("deep_a"), deep("deep_b")], got
assert got[2][:4] == ["main", "from __libc_start_call_main", "from __libc_start_main_impl", "from _start"], got[2]' "$T/ds.html"
	# counts in units, the exact figure in the title: 1000 allocations
	# at each deep site, 2001 in all
	has "$T/ds.html" "deep sites: html counts in units" \
		'<tr><td>total</td><td title="2001">2\.0k</td>' \
		'^<tr><td>1</td><td class="site" .*</td><td title="16000 B">15\.6 KiB</td><td title="1000">1\.0k</td>' \
		'^<tr><td>2</td><td class="site" .*</td><td title="8000 B">7\.8 KiB</td><td title="1000">1\.0k</td>' \
		'^<tr><td>3</td><td class="site" .*</td><td title="4000 B">3\.9 KiB</td><td title="1">1</td>'
	# report --diff prints its rows the same way, without the process (a
	# row is summed over processes); its rows were one root-first line
	diff_sites() {
		"$MT" report --diff "$@" "$T/ds.mt" "$T/ds.mt" >"$T/ds.out" \
			2>"$T/ds.err" || fail "deep sites: diff $*: $(cat "$T/ds.err")"
		sed -n '3,$p' "$T/ds.out" | grep -v '  total$' |
			sed -E -e 's/ \([^()]*:[0-9]+\)( \[inlined\])?$//' \
			-e 's/^ +[0-9]+ +[0-9]+ +\+0 +[0-9]+ +[0-9]+ +\+0  /site /' \
			-e 's/^ +(from|via|in|\.\.\.) /\1 /'
	}
	grep -v '^in pid$' "$T/ds-want" >"$T/ds-want-diff"
	diff_sites >"$T/ds-got"
	cmp -s "$T/ds-got" "$T/ds-want-diff" &&
		ok "deep sites: diff, the callers that tell the rows apart" ||
		{ fail "deep sites: diff stack lines"; diff "$T/ds-got" "$T/ds-want-diff"; }
	diff_sites --stack-lines 2 >"$T/ds-got"
	if grep -qx 'from deep_f4' "$T/ds-got" && ! grep -qx 'from deep_f3' "$T/ds-got" &&
		[ "$(grep -cx '\.\.\. 8 more frames (--stack-lines 0: all)' "$T/ds-got")" -eq 2 ]; then
		ok "deep sites: diff --stack-lines 2 shows two callers, counts the rest"
	else
		fail "deep sites: diff --stack-lines 2"; cat "$T/ds-got"
	fi
fi
expect_exit 2 "--stack-lines x" -- "$MT" report --stack-lines x "$T/ds.mt"
stderr_is "--stack-lines x message" "report --stack-lines 'x': want a number of frames"

# --- the quick start's demo names its sites by function and line (issue 29) ----
# ./quickstart demo records demo/memtrack-demo with --stacks; its summary
# read 'pid N;size 64-127 B'. Each of its two processes makes worker()'s
# 100 callocs of 1000 B, work()'s 1000 mallocs of 64 B and its leak of
# 4096 B: each site is named by its function and the line of the call, as
# the source has it (work() is inlined into main at -O2: "[inlined]").
DEMO="$MT_BUILDDIR/demo/memtrack-demo"
DEMO_C="$MT_SRCDIR/demo/memtrack-demo.c"
# src_line LITERAL: the line of the source holding LITERAL (exactly one)
src_line() {
	[ "$(grep -cF -- "$1" "$DEMO_C")" -eq 1 ] && grep -nF -- "$1" "$DEMO_C" | cut -d: -f1
}
L_CALLOC=$(src_line 'blocks[i] = calloc(10, 100);')
L_MALLOC=$(src_line 'blocks[i] = malloc(64);')
L_LEAK=$(src_line 'leak = malloc(4096);')
if [ -z "$L_CALLOC" ] || [ -z "$L_MALLOC" ] || [ -z "$L_LEAK" ]; then
	fail "demo: the allocations are not where the test looks: $DEMO_C changed"
elif ! "$MT" -q --source preload --stacks --sink "file:$T/demo.mt" -- "$DEMO" \
	>/dev/null 2>"$T/demo.err"; then
	fail "demo: cannot record: $(cat "$T/demo.err")"
else
	expect_exit 0 "demo: text" -- "$MT" report "$T/demo.mt"
	# section TITLE: the site lines (numbered) of a top list
	section() {
		awk -v t="$1" '$0 == t { p = 1; next } /^top sites/ { p = 0 }
			p && /^ +[0-9]+\. /' "$T/out"
	}
	inl='( \[inlined\])?'
	section "top sites by bytes allocated" >"$T/demo-bytes"
	section "top sites by leaks (live at end)" >"$T/demo-leaks"
	# in each process: once per process, both processes
	for want in \
		"bytes:^ +[0-9]+\. +100000 B +97\.7 KiB  worker \(memtrack-demo\.c:$L_CALLOC\)$" \
		"bytes:^ +[0-9]+\. +64000 B +62\.5 KiB  work \(memtrack-demo\.c:$L_MALLOC\)$inl$" \
		"leaks:^ +[0-9]+\. +4096 B +4\.0 KiB in 1 blocks  work \(memtrack-demo\.c:$L_LEAK\)$inl$"; do
		n=$(grep -Ec -- "${want#*:}" "$T/demo-${want%%:*}")
		[ "$n" -eq 2 ] && ok "demo: site in both processes: ${want#*:}" ||
			{ fail "demo: $n sites (want 2) matching ${want#*:}"; cat "$T/demo-${want%%:*}"; }
	done
	grep -E -q '  (pid [0-9]+;)?size [0-9]' "$T/demo-bytes" &&
		fail "demo: a site named by its size class" ||
		ok "demo: no site named by its size class"
fi

# --- a process attached to (memtrack --pid, issue 25) ---------------------------
# tests/mkrec.py attach: pid 1 marked attached (MTKA) at 500 ns, before its
# first event at 1000 ns; 3 frees of blocks the recording lacks (one a
# realloc's old block), 250 B live at the end; pid 2, not attached, one
# unmatched free. Those frees are of blocks allocated before the attach,
# said so in every output, not "unmatched"; a mark that fails its checks
# is left out whole (counted, said) and changes nothing.
if ! "$PY" -c 'import msgpack, zstandard' 2>/dev/null; then
	echo "SKIP: no $PY with msgpack and zstandard: attach marks not checked"
else
	mkrec attach "$T/att.mt" || fail "attach: cannot write the recording"
	expect_exit 0 "attach: text" -- "$MT" report "$T/att.mt"
	[ -s "$T/err" ] && { fail "attach: stderr"; cat "$T/err"; }
	awk '/^process 1( |$)/ { p = 1; print; next } /^process 2$/ { p = 0 } p' "$T/out" >"$T/p1"
	awk '/^process 2$/ { p = 1; next } /^total/ { p = 0 } p' "$T/out" >"$T/p2"
	has "$T/p1" "attach: text, pid 1" \
		"^process 1 \(attached: recorded from the attach on\)$" \
		"^  attached at +-0\.00[01] ms .*not in the recording$" \
		"^  allocations +3$" "^  frees +1$" \
		"^  frees before attach +3 frees of blocks allocated before the attach \(sizes not recorded\)$" \
		"^  peak live heap +250 B$" "^ +above the heap at the attach, which is unknown$" \
		"^  live at end +2 blocks, 250 B \(allocated after the attach\)$"
	grep -q "unmatched" "$T/p1" && fail "attach: text calls pid 1's frees unmatched" ||
		ok "attach: text, pid 1 has no unmatched frees"
	has "$T/p2" "attach: text, pid 2 (not attached)" "^  unmatched frees +1$" \
		"^  live at end +1 blocks, 10 B$"
	grep -q "attach" "$T/p2" && fail "attach: text says pid 2 was attached" ||
		ok "attach: text, pid 2 says nothing of an attach"
	has "$T/out" "attach: text, total" "^total \(2 processes; 1 attached\)$" \
		"^top sites by leaks \(live at end; of an attached process, allocated after the attach\)$"
	expect_exit 0 "attach: json" -- "$MT" report --format json "$T/att.mt"
	check "attach: json, pid 1 attached, its frees of earlier blocks apart" -- "$PY" -c 'import json, sys
r = json.load(open(sys.argv[1]))
p = {x["pid"]: x for x in r["processes"]}
t = r["total"]
f = lambda x: (x["attached"], x["attached_time_ns"], x["frees_before_attach"], x["unmatched_frees"])
assert f(p[1]) == (True, -500, 3, 0), f(p[1])
assert (p[1]["allocations"], p[1]["frees"], p[1]["peak"], p[1]["leaked_blocks"], p[1]["leaked_bytes"]) == (3, 1, 250, 2, 250), p[1]
assert f(p[2]) == (False, None, 0, 1), f(p[2])
assert (t["attached_processes"], t["frees_before_attach"], t["unmatched_frees"]) == (1, 3, 1), t
assert r["damaged_metadata"] == 0 and r["damaged"] is False, r' "$T/out"
	expect_exit 0 "attach: html" -- "$MT" report --format html "$T/att.mt"
	check "attach: html says it, and counts the frees of earlier blocks" -- "$PY" -c 'import re, sys
src = open(sys.argv[1]).read()
assert "<th>frees before attach</th>" in src
rows = re.findall(r"<tr><td>(pid [0-9]+[^<]*|total)</td><td title=\"[0-9]+\">([0-9]+)</td><td title=\"[0-9]+\">([0-9]+)</td><td title=\"[0-9]+\">([0-9]+)</td>", src)
assert rows == [("pid 1 (attached)", "3", "1", "3"), ("pid 2", "1", "0", "0"), ("total", "4", "1", "3")], rows
assert re.search(r"<p><strong>pid 1 was attached to</strong> \([^)]* before the first event\): .*3 frees of blocks allocated before the attach", src)
assert "pid 2 was attached" not in src' "$T/out"
	expect_exit 0 "attach: pprof" -- "$MT" report --format pprof "$T/att.mt"
	check "attach: pprof says it; in use is what was allocated after, never negative" -- "$PY" -c 'import gzip, sys
def fields(b):
    i = 0
    def varint():
        nonlocal i
        v = s = 0
        while True:
            c = b[i]; i += 1
            v |= (c & 0x7f) << s; s += 7
            if c < 0x80:
                return v
    while i < len(b):
        k = varint()
        if k & 7 == 0:
            yield k >> 3, 0, varint()
        elif k & 7 == 2:
            n = varint(); yield k >> 3, 2, b[i:i + n]; i += n
        else:
            raise ValueError("wire type %d" % (k & 7))
def _vs(b):
    """a packed repeated varint field"""
    out, i = [], 0
    while i < len(b):
        v = s = 0
        while True:
            c = b[i]; i += 1
            v |= (c & 0x7f) << s; s += 7
            if c < 0x80:
                break
        out.append(v)
    return out
prof = gzip.open(sys.argv[1]).read()
strings, comments, samples = [], [], []
for num, wt, v in fields(prof):
    if num == 6:
        strings.append(v.decode())
    elif num == 13:
        comments += [v] if wt == 0 else _vs(v)
    elif num == 2:
        vals, pid = [], None
        for n2, w2, v2 in fields(v):
            if n2 == 2:
                vals += [v2] if w2 == 0 else _vs(v2)
            elif n2 == 3:
                pid = dict((a, c) for a, _, c in fields(v2)).get(3)
        samples.append((pid, vals))
said = [strings[c] for c in comments]
assert said == ["pid 1: attached, recorded from the attach on: in use counts only blocks allocated after it; 3 frees of blocks allocated before the attach are not counted"], said
assert all(x < 1 << 63 for _, v in samples for x in v), samples
inuse = {}
for pid, v in samples:
    inuse[pid] = [a + b for a, b in zip(inuse.get(pid, [0, 0]), v[2:])]
assert inuse == {1: [2, 250], 2: [1, 10]}, inuse' "$T/out"
	# a recording whose mark is left out: the same events, not attached
	mkrec attach "$T/att-bad.mt" badsum
	expect_exit 0 "attach: diff" -- "$MT" report --diff "$T/att.mt" "$T/att-bad.mt"
	has "$T/out" "attach: diff says which side was attached" \
		"^A: recorded from an attach on \(pid 1\): what it allocated before it is not counted$"
	grep -q "^B: recorded" "$T/out" && fail "attach: diff says B was attached" ||
		ok "attach: diff, B not attached"
	expect_exit 0 "attach: diff json" -- "$MT" report --diff --format json "$T/att-bad.mt" "$T/att.mt"
	check "attach: diff json, attached_b" -- "$PY" -c 'import json, sys
r = json.load(open(sys.argv[1]))
assert (r["attached"], r["attached_a"], r["attached_b"]) == (True, False, True), r' "$T/out"

	# hostile marks: left out whole, counted, said once; pid 1 is then
	# a process like any other (its frees unmatched)
	for how in badsum cut count short; do
		mkrec attach "$T/att-$how.mt" $how
		expect_exit 0 "attach, $how mark: json" -- "$MT" report --format json "$T/att-$how.mt"
		grep -q "damaged attach metadata ignored" "$T/err" &&
			[ "$(wc -l <"$T/err")" -eq 1 ] && ok "attach, $how mark: said once" ||
			{ fail "attach, $how mark: not said"; cat "$T/err"; }
		check "attach, $how mark: not trusted, counted as damage" -- "$PY" -c 'import json, sys
r = json.load(open(sys.argv[1]))
p = {x["pid"]: x for x in r["processes"]}
assert r["damaged_metadata"] == 1, r["damaged_metadata"]
assert [(x["attached"], x["frees_before_attach"], x["unmatched_frees"]) for x in (p[1], p[2])] == [(False, 0, 3), (False, 0, 1)], p
assert r["total"]["attached_processes"] == 0 and (p[1]["peak"], p[1]["leaked_bytes"]) == (250, 250), p[1]' "$T/out"
	done
	expect_exit 0 "attach, bad mark: text" -- "$MT" report "$T/att-count.mt"
	has "$T/out" "attach, bad mark: text" "^  damaged metadata +1 payload left out$" \
		"^total \(2 processes\)$"
	mkrec attach "$T/att-pids.mt" pids
	expect_exit 0 "attach, marks of unknown pids: json" -- "$MT" report --format json "$T/att-pids.mt"
	check "attach, marks of unknown pids: no process made up, none attached" -- "$PY" -c 'import json, sys
r = json.load(open(sys.argv[1]))
assert [(x["pid"], x["attached"], x["unmatched_frees"]) for x in r["processes"]] == [(1, False, 3), (2, False, 1)], r["processes"]
assert r["damaged_metadata"] == 0 and r["total"]["attached_processes"] == 0, r' "$T/out"
	[ -s "$T/err" ] && { fail "attach, unknown pids: stderr"; cat "$T/err"; } ||
		ok "attach, unknown pids: nothing on stderr"
	mkrec attach "$T/att-late.mt" late
	expect_exit 0 "attach, a mark at 2^64 - 1: json" -- "$MT" report --format json "$T/att-late.mt"
	check "attach, a mark at 2^64 - 1: its time saturates at 2^63 - 1" -- "$PY" -c 'import json, sys
r = json.load(open(sys.argv[1]))
p = r["processes"][0]
assert (p["pid"], p["attached"], p["attached_time_ns"], p["frees_before_attach"]) == (1, True, (1 << 63) - 1, 3), p' "$T/out"
	mkrec attach "$T/att-twice.mt" twice
	expect_exit 0 "attach, pid marked twice: json" -- "$MT" report --format json "$T/att-twice.mt"
	check "attach, pid marked twice: the first mark holds" -- "$PY" -c 'import json, sys
r = json.load(open(sys.argv[1]))
p = r["processes"][0]
assert (p["pid"], p["attached_time_ns"]) == (1, -500) and r["total"]["attached_processes"] == 1, p' "$T/out"
fi

# --- a sampled recording (memtrack --sample-bytes, issue 26) --------------------
# tests/mkrec.py sampled: N = 1000 B (MTKR), pid 1. A 1000-byte allocation
# was recorded with probability 1 - e^-1 and stands for 1.58198
# allocations and round(1581.98) = 1582 B; a 100-byte one for 10.50833
# and round(1050.83) = 1051 B. 0x1000 (1000 B) and 0x2000 (100 B), 0x1000
# freed: peak 2633 B; a realloc of 0x9000, which was not sampled (not an
# unmatched free), to 0x3000 (1000 B), freed before the next allocation
# (temporary: 1.58 -> 2), then 0x2000 freed: live 0. Allocations 2 x
# 1.58198 + 10.50833 = 13.67 -> 14 (per event rounding would say 15),
# 4215 B; the 4096 B mmap exact.
if ! "$PY" -c 'import msgpack, zstandard' 2>/dev/null; then
	echo "SKIP: no $PY with msgpack and zstandard: sampled recordings not checked"
else
	mkrec sampled "$T/smp.mt" || fail "sampled: cannot write the recording"
	expect_exit 0 "sampled: text" -- "$MT" report "$T/smp.mt"
	[ -s "$T/err" ] && { fail "sampled: stderr"; cat "$T/err"; }
	head -n 1 "$T/out" >"$T/first"
	has "$T/first" "sampled: text says it first" \
		"^sampled: one allocation per 1000 B on average \(--sample-bytes, seed 42\); allocation figures are estimates$"
	has "$T/out" "sampled: text, the estimates" \
		"^  allocations +14$" "^  frees +14$" "^  temporary +2 " \
		"^  bytes allocated +4215 B" "^  bytes freed +4215 B" \
		"^  peak live heap +2633 B" "^  live at end +0 blocks, 0 B$" \
		"^  mmap'd +4096 B" "^  64-127 B +11 x #+ +1051 B$" \
		"^  512-1023 B +3 x #+ +3164 B$"
	grep -q "unmatched" "$T/out" && fail "sampled: the realloc of a block not sampled is unmatched" ||
		ok "sampled: a realloc's old block not sampled is not unmatched"
	expect_exit 0 "sampled: json" -- "$MT" report --format json "$T/smp.mt"
	check "sampled: json, exact estimates" -- "$PY" -c 'import json, sys
r = json.load(open(sys.argv[1]))
assert r["sampled"] == {"mean_bytes": 1000, "seed": 42}, r["sampled"]
t = r["total"]
got = [t[k] for k in ("allocations", "frees", "unmatched_frees", "temporary", "bytes_allocated", "bytes_freed", "peak", "peak_time_ns", "leaked_blocks", "leaked_bytes", "mmapped")]
assert got == [14, 14, 0, 2, 4215, 4215, 2633, 1000, 0, 0, 4096], got
h = [(x["min"], x["count"], x["bytes"]) for x in r["histogram"]]
assert h == [(64, 11, 1051), (512, 3, 3164)], h
peak = {s["frames"][1]: s["at_peak"] for s in r["top_sites"]["peak"]}
assert peak == {"size 512-1023 B": 1582, "size 64-127 B": 1051}, peak
assert r["top_sites"]["leaks"] == [] and r["damaged_metadata"] == 0, r
assert max(r["timeline"]["series"][0]["heap"]) == 2633, r["timeline"]' "$T/out"
	mkrec sampled "$T/smp-noseed.mt" noseed
	expect_exit 0 "sampled, no seed: json" -- "$MT" report --format json "$T/smp-noseed.mt"
	check "sampled, no seed: json seed null" -- "$PY" -c 'import json, sys
r = json.load(open(sys.argv[1]))
assert r["sampled"] == {"mean_bytes": 1000, "seed": None}, r["sampled"]' "$T/out"
	expect_exit 0 "sampled: json of an unsampled recording" -- "$MT" report --format json "$T/a.mt"
	check "sampled: an unsampled recording has no \"sampled\"" -- "$PY" -c 'import json, sys
assert "sampled" not in json.load(open(sys.argv[1]))' "$T/out"
	expect_exit 0 "sampled: pprof" -- "$MT" report --format pprof "$T/smp.mt"
	check "sampled: pprof period 1000 bytes of space, values the estimates" -- "$PY" -c 'import gzip, sys
def fields(b):
    i = 0
    def varint():
        nonlocal i
        v = s = 0
        while True:
            c = b[i]; i += 1
            v |= (c & 0x7f) << s; s += 7
            if c < 0x80:
                return v
    while i < len(b):
        k = varint()
        if k & 7 == 0:
            yield k >> 3, 0, varint()
        elif k & 7 == 2:
            n = varint(); yield k >> 3, 2, b[i:i + n]; i += n
        else:
            raise ValueError("wire type %d" % (k & 7))
def _vs(b):
    out, i = [], 0
    while i < len(b):
        v = s = 0
        while True:
            c = b[i]; i += 1
            v |= (c & 0x7f) << s; s += 7
            if c < 0x80:
                break
        out.append(v)
    return out
prof = gzip.open(sys.argv[1]).read()
strings, comments, samples, period, ptype = [], [], [], None, None
for num, wt, v in fields(prof):
    if num == 6:
        strings.append(v.decode())
    elif num == 11:
        ptype = dict((a, c) for a, _, c in fields(v))
    elif num == 12:
        period = v
    elif num == 13:
        comments += [v] if wt == 0 else _vs(v)
    elif num == 2:
        vals = []
        for n2, w2, v2 in fields(v):
            if n2 == 2:
                vals += [v2] if w2 == 0 else _vs(v2)
        samples.append(vals)
assert period == 1000, period
assert (strings[ptype[1]], strings[ptype[2]]) == ("space", "bytes"), ptype
assert sorted(samples) == [[3, 3164, 0, 0], [11, 1051, 0, 0]], samples
said = [strings[c] for c in comments]
assert len(said) == 1 and said[0].startswith("sampled recording: one allocation per 1000 B on average"), said' "$T/out"
	expect_exit 0 "sampled: pprof --at peak" -- "$MT" report --format pprof --at peak "$T/smp.mt"
	expect_exit 0 "sampled: html" -- "$MT" report --format html "$T/smp.mt"
	has "$T/out" "sampled: html says it" \
		"<p><strong>Sampled recording: one allocation per 1000 B on average \(--sample-bytes\); the allocation figures are estimates\.</strong></p>"
	expect_exit 0 "sampled: svg" -- "$MT" report --format svg "$T/smp.mt"
	check "sampled: svg parses and says it" -- "$PY" -c 'import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
texts = [t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text")]
assert any(t.startswith("Sampled recording: one allocation per 1000 B") for t in texts), texts' "$T/out"
	expect_exit 0 "sampled: collapsed" -- "$MT" report --format collapsed "$T/smp.mt"
	has "$T/out" "sampled: collapsed, the estimates" "^pid 1;size 64-127 B 1051$" \
		"^pid 1;size 512-1023 B 3164$"
	stderr_is "sampled: collapsed says it on stderr" \
		"sampled recording (one allocation per 1000 B on average): the weights are estimates"
	expect_exit 0 "sampled: diff with an unsampled recording" -- "$MT" report --diff "$T/a.mt" "$T/smp.mt"
	has "$T/out" "sampled: diff says which side, and what it compares" \
		"^B: sampled, one allocation per 1000 B on average: its figures are estimates$" \
		"^B is sampled and A is not: the deltas compare estimates with exact figures$"
	grep -q "^A: sampled" "$T/out" && fail "sampled: diff says A is sampled" ||
		ok "sampled: diff, A not sampled"
	expect_exit 0 "sampled: diff json" -- "$MT" report --diff --format json "$T/smp.mt" "$T/a.mt"
	check "sampled: diff json, sampled_a, estimates against exact figures" -- "$PY" -c 'import json, sys
r = json.load(open(sys.argv[1]))
assert (r["sampled"], r["sampled_a"], r["sampled_b"], r["estimates_vs_exact"]) == (True, {"mean_bytes": 1000, "seed": 42}, None, True), r
assert (r["total"]["count_a"], r["total"]["bytes_a"]) == (14, 4215), r["total"]' "$T/out"
	# two sampled recordings: the deltas are the differences of the
	# estimates. The same events at N = 2000 (mkrec sampled n2000): a
	# 1000-byte block stands for 1 / (1 - e^-0.5) = 2.54149 allocations
	# and 2541 B, a 100-byte one for 20.50417 and 2050 B. 512-1023 B:
	# 3 (3.16) x 3164 B -> 5 (5.08) x 5082 B, +2 and +1918 B; 64-127 B:
	# 11 -> 21 (20.50), +10 and 1051 -> 2050 B, +999 B; total 14 -> 26
	# (25.59), +12, and 4215 -> 7132 B, +2917 B.
	mkrec sampled "$T/smp-2k.mt" n2000
	expect_exit 0 "sampled: diff of two sampled recordings" -- "$MT" report --diff "$T/smp.mt" "$T/smp-2k.mt"
	has "$T/out" "sampled: diff of two sampled, the estimates' differences" \
		"^A: sampled, one allocation per 1000 B on average: its figures are estimates$" \
		"^B: sampled, one allocation per 2000 B on average: its figures are estimates$" \
		'^ +3164 +5082 +\+1918 +3 +5 +\+2  size 512-1023 B$' \
		'^ +1051 +2050 +\+999 +11 +21 +\+10  size 64-127 B$' \
		'^ +4215 +7132 +\+2917 +14 +26 +\+12  total$'
	expect_exit 0 "sampled: report of the N = 2000 recording" -- "$MT" report --format json "$T/smp-2k.mt"
	cp "$T/out" "$T/smp-2k.json"
	expect_exit 0 "sampled: report of the N = 1000 recording" -- "$MT" report --format json "$T/smp.mt"
	cp "$T/out" "$T/smp.json"
	expect_exit 0 "sampled: diff json of two sampled recordings" -- "$MT" report --diff --format json "$T/smp.mt" "$T/smp-2k.mt"
	# the same, from the events by Go's scaling (bytes rounded per
	# event, counts per site and in all), and each side's totals those
	# of its own report
	# shellcheck disable=SC2016 # python
	check "sampled: diff json of two sampled, the estimates' differences" -- "$PY" -c 'import json, math, sys
r = json.load(open(sys.argv[1]))
assert (r["sampled"], r["sampled_a"], r["sampled_b"], r["estimates_vs_exact"]) == (True, {"mean_bytes": 1000, "seed": 42}, {"mean_bytes": 2000, "seed": 42}, False), r
sizes = {"size 512-1023 B": [1000, 1000], "size 64-127 B": [100]}
def est(n, blocks):
    w = [1 / (1 - math.exp(-s / n)) for s in blocks]
    return round(sum(w)), sum(round(s * x) for s, x in zip(blocks, w))
want = []
for site, blocks in sizes.items():
    (ca, ba), (cb, bb) = est(1000, blocks), est(2000, blocks)
    want.append({"frames": [site], "name": site, "count_a": ca, "count_b": cb, "count_delta": cb - ca,
                 "bytes_a": ba, "bytes_b": bb, "bytes_delta": bb - ba})
assert r["sites"] == want, (r["sites"], want)
allb = [s for b in sizes.values() for s in b]
(ca, ba), (cb, bb) = est(1000, allb), est(2000, allb)
assert r["total"] == {"count_a": ca, "count_b": cb, "count_delta": cb - ca, "bytes_a": ba, "bytes_b": bb, "bytes_delta": bb - ba}, r["total"]
assert (r["total"]["bytes_delta"], r["total"]["count_delta"]) == (2917, 12), r["total"]
for k, path in (("a", sys.argv[2]), ("b", sys.argv[3])):
    t = json.load(open(path))["total"]
    assert (r["total"]["count_" + k], r["total"]["bytes_" + k]) == (t["allocations"], t["bytes_allocated"]), (k, t)' \
		"$T/out" "$T/smp.json" "$T/smp-2k.json"
	expect_exit 0 "sampled: diff of two unsampled recordings" -- "$MT" report --diff --format json "$T/a.mt" "$T/b.mt"
	check "sampled: diff json of unsampled sides has no \"sampled\"" -- "$PY" -c 'import json, sys
assert "sampled" not in json.load(open(sys.argv[1]))' "$T/out"

	# damaged records, and one too late to weigh the recording whole:
	# left out, counted, said once; the allocations count as recorded
	for how in badsum short version count zero late; do
		mkrec sampled "$T/smp-$how.mt" $how
		expect_exit 0 "sampled, $how record: json" -- "$MT" report --format json "$T/smp-$how.mt"
		grep -q "sampling metadata ignored" "$T/err" &&
			[ "$(wc -l <"$T/err")" -eq 1 ] && ok "sampled, $how record: said once" ||
			{ fail "sampled, $how record: not said"; cat "$T/err"; }
		check "sampled, $how record: left out, counted as damage" -- "$PY" -c 'import json, sys
r = json.load(open(sys.argv[1]))
t = r["total"]
assert "sampled" not in r and r["damaged_metadata"] == 1, r
assert (t["allocations"], t["bytes_allocated"], t["peak"], t["unmatched_frees"]) == (3, 2100, 1100, 1), t' "$T/out"
	done
	expect_exit 0 "sampled, bad record: text" -- "$MT" report "$T/smp-zero.mt"
	has "$T/out" "sampled, bad record: text" "^  damaged metadata +1 payload left out$"
	grep -q "^sampled:" "$T/out" && fail "sampled, bad record: text says sampled" ||
		ok "sampled, bad record: text does not say sampled"
	mkrec sampled "$T/smp-twice.mt" twice
	expect_exit 0 "sampled, two rates: json" -- "$MT" report --format json "$T/smp-twice.mt"
	stderr_is "sampled, two rates: said" "a second sampling rate (one allocation per 2000 B) ignored: the first, one per 1000 B, holds"
	check "sampled, two rates: the first holds" -- "$PY" -c 'import json, sys
r = json.load(open(sys.argv[1]))
assert r["sampled"] == {"mean_bytes": 1000, "seed": 42} and r["damaged_metadata"] == 0, r
assert (r["total"]["allocations"], r["total"]["bytes_allocated"]) == (14, 4215), r["total"]' "$T/out"
fi

# --- svg and html: well-formed, self-contained, with chart and flamegraph -------
expect_exit 0 "svg" -- "$MT" report --format svg "$T/a.mt"
check "svg parses; 2 processes x 2 lines; a frame per site + pids + root" -- \
	"$PY" -c 'import sys, xml.etree.ElementTree as ET
ns = "{http://www.w3.org/2000/svg}"
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == ns + "svg", root.tag
lines = root.findall(".//" + ns + "polyline")
assert len(lines) == 4, len(lines)
frames = [g for g in root.iter(ns + "g") if g.get("class") == "f"]
names = [g.find(ns + "title").text.split(" (")[0] for g in frames]
assert len(frames) == 11, names
assert "pid 10" in names and "size 4096-8191 B" in names and "all" in names
assert "all (13588 bytes, 100.00%)" in [g.find(ns + "title").text for g in frames]' "$T/out"
grep -E -q 'href|xlink|<script|@import|url\(' "$T/out" &&
	fail "svg refers to something outside" || ok "svg is self-contained"
expect_exit 0 "html" -- "$MT" report --format html --weight count "$T/a.mt"
check "html parses (html.parser and as XML), with inline svg and script" -- \
	"$PY" -c 'import sys, html.parser, xml.etree.ElementTree as ET
class P(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(); self.tags = []; self.stack = []
    def handle_starttag(self, t, a):
        self.tags.append(t)
        if t not in ("meta", "br", "img", "link"): self.stack.append(t)
    def handle_startendtag(self, t, a): self.tags.append(t)
    def handle_endtag(self, t):
        assert self.stack and self.stack[-1] == t, (t, self.stack[-3:])
        self.stack.pop()
src = open(sys.argv[1]).read()
p = P(); p.feed(src); p.close()
assert not p.stack, p.stack
for t in ("html", "table", "svg", "polyline", "rect", "script"): assert t in p.tags, t
ET.fromstring(src.split("\n", 1)[1])
import json, re
d = json.loads(re.search(r"<script type=\"application/json\" id=\"mt-data\">(.*?)</script>", src, re.S).group(1))
assert d["weight"] == "count" and sum(s[3] for s in d["sites"]) == 8, d' "$T/out"
grep -E -q 'src=|href=|@import|url\(' "$T/out" &&
	fail "html refers to something outside" || ok "html is self-contained"

# --- the timeline keeps at most 1024 points a series, and the peak ------------
awk 'BEGIN { for (i = 1; i <= 5000; i++)
	printf "{\"pid\":1,\"tid\":1,\"timestamp\":%d,\"addr\":%d,\"type\":\"Malloc\",\"size\":10}\n", i * 1000, i * 16 }' \
	>"$T/long.jsonl"
"$MT" --source "replay:$T/long.jsonl" --sink "file:$T/long.mt"
expect_exit 0 "long trace json" -- "$MT" report --format json "$T/long.mt"
check "timeline downsampled, peak kept" -- "$PY" -c 'import json,sys
r = json.load(open(sys.argv[1]))
s = r["timeline"]["series"][0]
assert 500 <= len(s["heap"]) <= 1024, len(s["heap"])
assert max(s["heap"]) == 50000 == r["total"]["peak"], max(s["heap"])
assert s["heap"] == sorted(s["heap"])
assert r["timeline"]["bucket_ns"] * len(s["heap"]) >= 4999000' "$T/out"
expect_exit 0 "long trace svg" -- "$MT" report --format svg "$T/long.mt"
check "svg polyline at most 1024 points" -- "$PY" -c 'import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
for l in root.iter("{http://www.w3.org/2000/svg}polyline"):
    assert len(l.get("points").split()) <= 1024' "$T/out"

# --- a heap near 2^64 (found by fuzz-report): the chart's top label ------
printf '{"pid":1,"tid":1,"timestamp":1,"addr":4096,"type":"Malloc","size":18446744073709551615}\n' \
	>"$T/huge.jsonl"
"$MT" --source "replay:$T/huge.jsonl" --sink "file:$T/huge.mt"
expect_exit 0 "huge heap svg" -- "$MT" report --format svg "$T/huge.mt"
has "$T/out" "huge heap: top label" ">16384\.0 PiB</text>"

# --- damaged files ----------------------------------------------------------------
# a4.mt holds 5 frames; cut inside the last: the first 16 events remain
# (before memtrack's trailing summary frame, a zstd skippable frame)
size=$("$PY" -c 'import sys; d = open(sys.argv[1], "rb").read(); print(d.rfind(bytes.fromhex("502a4d18")))' "$T/a4.mt")
head -c $((size - 10)) "$T/a4.mt" >"$T/cut.mt"
expect_exit 0 "truncated file: exit 0" -- "$MT" report --format json "$T/cut.mt"
grep -q "damaged" "$T/err" && ok "truncated file: warning" ||
	{ fail "truncated file: no warning"; cat "$T/err"; }
check "truncated file: the events before the cut" -- "$PY" -c 'import json,sys
r = json.load(open(sys.argv[1]))
assert r["damaged"] is True and r["events"] == 16, (r["damaged"], r["events"])
assert r["total"]["allocations"] == 7, r["total"]["allocations"]' "$T/out"
expect_exit 0 "truncated file: diff json" -- "$MT" report --diff --format json "$T/cut.mt" "$T/a.mt"
check "truncated file: the diff json says which file is damaged" -- "$PY" -c 'import json,sys
r = json.load(open(sys.argv[1]))
assert (r["damaged"], r["damaged_a"], r["damaged_b"]) == (True, True, False), r' "$T/out"
expect_exit 0 "truncated file: diff" -- "$MT" report --diff "$T/a.mt" "$T/cut.mt"
has "$T/out" "truncated file: the diff says so" "^B: damaged file, the 16 events before the damage$"
expect_exit 0 "truncated file: text" -- "$MT" report "$T/cut.mt"
has "$T/out" "truncated text" "^total \(2 processes; damaged file"
printf 'this is not zstd' >"$T/junk.mt"
expect_exit 1 "junk: exit 1" -- "$MT" report "$T/junk.mt"
grep -q "no event could be read" "$T/err" && ok "junk: says why" ||
	{ fail "junk message"; cat "$T/err"; }
expect_exit 1 "missing file: exit 1" -- "$MT" report "$T/none.mt"
grep -q "none.mt: No such file" "$T/err" && ok "missing file: says why" ||
	{ fail "missing file message"; cat "$T/err"; }

# --- usage ----------------------------------------------------------------------
expect_exit 2 "bad --format" -- "$MT" report --format pdf "$T/a.mt"
grep -q "format 'pdf'" "$T/err" && ok "bad --format named" || fail "bad --format message"
expect_exit 2 "bad --weight" -- "$MT" report --weight kg "$T/a.mt"
expect_exit 2 "bad --pid" -- "$MT" report --pid x "$T/a.mt"
expect_exit 2 "--diff with one file" -- "$MT" report --diff "$T/a.mt"
expect_exit 2 "two files without --diff" -- "$MT" report "$T/a.mt" "$T/b.mt"
# --stack-lines is for the text --diff too, and not for the html (whose
# top sites show the default, the whole stack a click away)
expect_exit 0 "report --help" -- "$MT" report --help
has "$T/out" "report --help: --stack-lines" \
	"^  --stack-lines N +callers shown per site in the text report and$" \
	"^ +the text --diff \(0: all; default: enough to tell$" \
	"^ +the sites apart, 3 at least, as the html shows\)$"
expect_exit 0 "--help documents report" -- "$MT" --help
has "$T/out" "help" "report FILE \[--format text\|json\|collapsed\|svg\|html\|pprof\]" \
	"report --diff A B" "damaged file"

finish
