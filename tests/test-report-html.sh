#!/bin/sh
# memtrack report --format svg and html on a recording of known shape
# (tests/progs/flame-shape under --source preload --stacks: no root, no
# BPF): the svg's flamegraph is as tall as its drawn frames, the html's
# tables give human units with exact titles, and in a real browser
# (Debian's chromium, headless) the page runs without script error, draws
# the known functions, zooms into one and searches frames. The page's
# script reports what it did into <pre id="selftest"> when the URL says
# '#selftest=NAME'; chromium's --dump-dom hands that back. Skips (77) when
# chromium is missing (quickstart installs it).
set -u

: "${MT_BUILDDIR:?}" "${MT_SRCDIR:?}"
. "$MT_SRCDIR/tests/lib.sh"
PROG="$MT_BUILDDIR/tests/progs/flame-shape"
CHROMIUM=${MT_CHROMIUM:-chromium}

if [ ! -x "$PY" ]; then
	echo "no $PY: cannot parse the outputs" >&2
	exit 77
fi
"$MT" --source preload --stacks --sink "file:$T/shape.mt" -- "$PROG" ||
	{ echo "cannot record $PROG" >&2; exit 99; }

# --- the recording is what the program says --------------------------------
"$MT" report --format collapsed "$T/shape.mt" >"$T/collapsed"
check "collapsed: wide 1 MiB, narrow 64 KiB, deep 1 B under 60 calls" -- \
	"$PY" -c 'import sys
w = {}
for l in open(sys.argv[1]):
    stack, n = l.rsplit(" ", 1)
    f = [x.split(" (")[0] for x in stack.split(";")]  # no (file:line)
    w[f[-1]] = (int(n), f.count("shape_deep"))
assert w["shape_wide"] == (1048576, 0), w
assert w["shape_narrow"] == (65536, 0), w
assert w["shape_deep"][0] == 1 and w["shape_deep"][1] >= 55, w' "$T/collapsed"

# --- svg: the flamegraph's height fits its drawn frames ---------------------
# shape_deep's stack (over 60 frames) is 1 B of 1114113: not drawn, so it
# must leave no empty rows above the others (the top row right under the
# heading, 20 px under the bottom row)
expect_exit 0 "svg" -- "$MT" report --format svg "$T/shape.mt"
check "svg: height fits the drawn frames" -- "$PY" -c 'import sys
import xml.etree.ElementTree as ET
ns = "{http://www.w3.org/2000/svg}"
root = ET.parse(sys.argv[1]).getroot()
frames = [g for g in root.iter(ns + "g") if g.get("class") == "f"]
names = [g.find(ns + "title").text.split(" (", 1)[0] for g in frames]
assert "shape_wide" in names and "shape_narrow" in names, names
assert "shape_deep" not in names, names
rects = [g.find(ns + "rect") for g in frames]
ys = sorted(set(float(r.get("y")) for r in rects))
rows = len(ys)
assert rows == names.index("shape_wide") + 1, (rows, names)
head = [t for t in root.iter(ns + "text") if (t.text or "").startswith("Allocations by")][0]
top = float(head.get("y")) + 15
bottom = max(ys) + float(rects[0].get("height"))
h = float(root.get("height"))
assert min(ys) == top, ("empty space above the frames", min(ys), top)
assert h - bottom <= 21, ("empty space below the frames", h, bottom)
assert root.get("viewBox") == "0 0 1200 %d" % h, root.get("viewBox")' "$T/out"

# --- html: one well-formed file, nothing fetched, human units ---------------
expect_exit 0 "html" -- "$MT" report --format html "$T/shape.mt"
cp "$T/out" "$T/shape.html"
check "html parses as XML, nothing outside" -- "$PY" -c 'import sys, re
import xml.etree.ElementTree as ET
src = open(sys.argv[1]).read()
ET.fromstring(src.split("\n", 1)[1])
assert not re.search(r"src=|href=|@import|url\(|//[a-z]", src.replace("http://www.w3.org/", "")), "external reference"' "$T/shape.html"
has "$T/shape.html" "html tables" \
	'<td title="1114113 B">1\.1 MiB</td>' \
	'<td class="site" title="pid [0-9]+;[^"]*;main[^;"]*;shape_wide[^;"]*" data-frames='\''\[[^'\'']*"shape_wide[^"]*"\]'\''><span class="name">shape_wide[^<]*</span>(<span class="call">[^<]*</span>)+</td><td title="1048576 B">1\.0 MiB</td><td title="16">16</td>' \
	'<td class="site" title="[^"]*;shape_narrow[^;"]*" data-frames='\''\[[^'\'']*"shape_narrow[^"]*"\]'\''><span class="name">shape_narrow[^<]*</span>(<span class="call">[^<]*</span>)+</td><td title="65536 B">64\.0 KiB</td><td title="1">1</td>' \
	'<td class="site" title="[^"]*;shape_deep[^;"]*" data-frames='\''\[[^'\'']*"shape_deep[^"]*"\]'\''><span class="name">shape_deep[^<]*</span>(<span class="call">[^<]*</span>)+</td><td title="1 B">1 B</td><td title="1">1</td>' \
	'<td title="[0-9]+ ns">[0-9]+\.[0-9]{3} m?s</td>'
grep -q '<td>1114113</td>' "$T/shape.html" &&
	fail "html: a raw byte count in a cell" || ok "html: no raw byte count in a cell"

# --- past 10000 sites the data sums the rest of each process into one -----
# 260 processes x 40 size classes, one never-freed block each: 10400 sites
"$PY" -c 'import json
for pid in range(1, 261):
    for k in range(40):
        print(json.dumps({"pid": pid, "tid": pid, "timestamp": 1000 + pid * 100 + k,
                          "addr": 4096 * (k + 1), "type": "Malloc", "size": 1 << k}))' >"$T/many.jsonl"
"$MT" --source "replay:$T/many.jsonl" --sink "file:$T/many.mt" &&
	"$MT" report --format html "$T/many.mt" >"$T/many.html" ||
	fail "html of 10400 sites"
check "html data: 10000 sites whole, the others summed per process, totals whole" -- \
	"$PY" -c 'import sys, json, re
src = open(sys.argv[1]).read()
d = json.loads(re.search(r"<script type=\"application/json\" id=\"mt-data\">(.*?)</script>", src, re.S).group(1))
names = d["names"]
other = [s for s in d["sites"] if names[s[0][-1]].endswith(" other sites)")]
assert d["left_out"] == 400, d["left_out"]
assert len(d["sites"]) == 10000 + len(other), (len(d["sites"]), len(other))
assert sum(int(names[s[0][-1]].split()[0][1:]) for s in other) == 400
assert sum(s[3] for s in d["sites"]) == 10400
total = 260 * ((1 << 40) - 1)
for i, what in ((2, "allocated"), (5, "at peak"), (6, "leaked")):
    assert sum(s[i] for s in d["sites"]) == total, (what, sum(s[i] for s in d["sites"]), total)
per = {}
for s in d["sites"]:
    per[names[s[0][0]]] = per.get(names[s[0][0]], 0) + s[2]
assert len(per) == 260 and set(per.values()) == {(1 << 40) - 1}, per' "$T/many.html"

# --- in a browser -----------------------------------------------------------
if ! command -v "$CHROMIUM" >/dev/null 2>&1; then
	echo "SKIP: no $CHROMIUM (apt-get install chromium; quickstart does)"
	[ "$fails" -eq 0 ] || finish
	exit 77
fi

# browse PAGE HASH: the page's self-test report into $T/selftest
browse() {
	timeout 120 "$CHROMIUM" --headless=new --no-sandbox --disable-gpu \
		--user-data-dir="$T/chromium" --dump-dom \
		--virtual-time-budget=2000 "file://$1$2" >"$T/dom" 2>"$T/chromium.err"
	sed -n '/<pre id="selftest"/,/<\/pre>/p' "$T/dom" |
		sed -e 's/^<pre id="selftest"[^>]*>//' -e 's/<\/pre>$//' >"$T/selftest"
	if [ ! -s "$T/dom" ]; then
		echo "chromium dumped nothing:"
		tail -5 "$T/chromium.err"
	fi
}

browse "$T/shape.html" "#selftest=shape_narrow&search=start"
cat "$T/selftest"
grep -q 'error:' "$T/selftest" && fail "browser: script error" ||
	ok "browser: no script error"
# (frames are named with their source line where known: 'main (f.c:60)')
at='( \([^)]*\))?'
has "$T/selftest" "browser" "^ok$" "^frame: shape_wide$at$" \
	"^frame: shape_narrow$at$" "^frame: main$at$" \
	"^zoom: shape_narrow width 1100\.00 of 1100\.00$" \
	"^zoom: shown all \| pid [0-9]+ \|.* \| main$at \| shape_narrow$at$" \
	"^zoom: faded all \| pid [0-9]+ \|.* \| main$at$" \
	"^search: highlighted 1: 1 frame matches: 64\.0 KiB, 5\.88% of all$" \
	"^reset: shape_narrow width ([0-9.]+) \(was \1\), shown ([0-9]+) of \2$" \
	"^search start: [2-9] frames match: 1\.1 MiB, 100\.00% of all$"
grep -q '^frame: shape_deep' "$T/selftest" &&
	fail "browser: the 1-byte frame is drawn" || ok "browser: the 1-byte frame is not drawn"

# weighed by count: the share in allocations (1 of 18)
"$MT" report --format html --weight count "$T/shape.mt" >"$T/count.html"
browse "$T/count.html" "#selftest=shape_narrow"
has "$T/selftest" "browser, by count" "^ok$" \
	"^search: highlighted 1: 1 frame matches: 1 allocations, 5\.56% of all$"
grep -q 'error:' "$T/selftest" && fail "browser, by count: script error" ||
	ok "browser, by count: no script error"

# counts in units, as the tables give them: tests/progs/deep-sites's two
# sites of deep_f6 make 1000 allocations each
"$MT" --source preload --stacks --sink "file:$T/deep.mt" -- \
	"$MT_BUILDDIR/tests/progs/deep-sites" &&
	"$MT" report --format html --weight count "$T/deep.mt" >"$T/deep.html" ||
	fail "html of deep-sites"
browse "$T/deep.html" "#selftest=deep_a&search=deep_f6"
has "$T/selftest" "browser, counts in units" "^ok$" \
	"^search deep_f6: 2 frames match: 2\.0k allocations, 99\.95% of all$"
grep -q 'error:' "$T/selftest" && fail "browser, counts in units: script error" ||
	ok "browser, counts in units: no script error"

# a frame whose name holds a ';' (tests/progs/odd-file: its functions say
# they are in "odd;name.c"): a search finds it in the flame graph, marks
# its top site and its live site (the run's end), and its stack opens
# whole under its row, innermost first, a frame a line; a term across two
# frames ("...:10);semi") matches nothing anywhere, since every view
# matches frame by frame
"$MT" --source preload --stacks --sink "file:$T/odd.mt" -- \
	"$MT_BUILDDIR/tests/progs/odd-file" &&
	"$MT" report --format html "$T/odd.mt" >"$T/odd.html" ||
	fail "html of odd-file"
check "html with a ';' in a frame parses as XML" -- "$PY" -c 'import sys
import xml.etree.ElementTree as ET
ET.fromstring(open(sys.argv[1]).read().split("\n", 1)[1])' "$T/odd.html"
browse "$T/odd.html" "#selftest=semi_site&search=site%20(odd%3Bname"
cat "$T/selftest"
semi='semi_site \(odd;name\.c:[0-9]+\)'
has "$T/selftest" "browser, a ';' in a frame" "^ok$" \
	"^search site \(odd;name: 1 frame matches: 64\.0 KiB, 98\.46% of all$" \
	"^marked site \(odd;name: top sites 1 of 2: $semi$" \
	"^marked site \(odd;name: live 1 of 2: $semi$" \
	"^marked site \(odd;name: its stack $semi \| main \(odd;name\.c:[0-9]+\) \| .* \| _start \| pid [0-9]+$"
grep -q 'error:' "$T/selftest" && fail "browser, a ';' in a frame: script error" ||
	ok "browser, a ';' in a frame: no script error"
browse "$T/odd.html" "#selftest=semi_site&search=10)%3Bsemi"
has "$T/selftest" "browser, a term across two frames" "^ok$" \
	"^search 10\);semi: 0 frames match: 0 B, 0\.00% of all$" \
	"^marked 10\);semi: top sites 0 of 2$" \
	"^marked 10\);semi: live 0 of 2$"

# no allocation, no flamegraph: the script still runs
printf '{"pid":1,"tid":1,"timestamp":1000,"addr":4096,"type":"Mmap","size":4096}\n' >"$T/none.jsonl"
"$MT" --source "replay:$T/none.jsonl" --sink "file:$T/none.mt" &&
	"$MT" report --format html "$T/none.mt" >"$T/none.html" ||
	fail "html of a recording without allocation"
browse "$T/none.html" "#selftest=main"
has "$T/selftest" "browser, no flamegraph" "^frames: 0$" "^FAIL: no frame main$" "^ok$"
grep -q 'error:' "$T/selftest" && fail "browser, no flamegraph: script error" ||
	ok "browser, no flamegraph: no script error"

# the svg alone: a browser reads it as a document and keeps its frames
"$MT" report --format svg "$T/shape.mt" >"$T/shape.svg"
timeout 120 "$CHROMIUM" --headless=new --no-sandbox --disable-gpu \
	--user-data-dir="$T/chromium" --dump-dom --virtual-time-budget=2000 \
	"file://$T/shape.svg" >"$T/svgdom" 2>"$T/chromium.err"
grep -q -e '<parsererror' -e 'error on line' "$T/svgdom" && fail "browser: the svg does not parse" ||
	ok "browser: the svg parses"
has "$T/svgdom" "browser, svg alone" '<g id="flame">' \
	"<title>shape_narrow$at \\(65536 bytes, 5\\.88%\\)</title>"

# --- the views, on a run of known shape (tests/progs/phases) ----------------
# every figure's flame graph, upright and inverted; both trees, sorted by
# each column and opened; search in a tree; the sites' share on the chart;
# a range dragged on the chart: during the first phase only phase_one's
# 1 MiB is live, during the second only phase_two's two
"$MT" --source preload --stacks --sink "file:$T/phases.mt" -- \
	"$MT_BUILDDIR/tests/progs/phases" ||
	{ echo "cannot record phases" >&2; exit 99; }
"$MT" report --format html "$T/phases.mt" >"$T/phases.html" ||
	fail "html of phases"
# the checkpoints end with the run: the last one holds the last event
# (they halve as the run goes on, and their count with them)
"$MT" dump "$T/phases.mt" >"$T/phases.jsonl" 2>/dev/null
check "html data: the last checkpoint holds the last event" -- \
	"$PY" -c 'import sys, json, re
src = open(sys.argv[1]).read()
d = json.loads(re.search(r"<script type=\"application/json\" id=\"mt-data\">(.*?)</script>", src, re.S).group(1))
ts = [json.loads(l)["timestamp"] for l in open(sys.argv[2]) if l.startswith("{")]
end = ts[-1] - ts[0]
c = d["charts"][0]
assert c["id"] == "chart" and c["cpN"] > 1, c
assert (c["cpN"] - 1) * c["cpStep"] <= end < c["cpN"] * c["cpStep"], (c, end)
assert all(s[7] == 0 or len(s[7]) == c["cpN"] for s in d["sites"]), c' \
	"$T/phases.html" "$T/phases.jsonl"
# the page says how exact a range is before any is dragged
has "$T/phases.html" "html: the selection's precision" \
	'<p id="range">drag across the chart to see what was live at the end of a time range; the end snaps to the end of its checkpoint \([0-9]+ checkpoints, one every [0-9.]+ ms\)</p>'
browse "$T/phases.html" "#views=0.1,0.4"
cat "$T/selftest"
grep -q 'error:' "$T/selftest" && fail "views: script error" ||
	ok "views: no script error"
f='[0-9]+ frames'
has "$T/selftest" "views: flame graphs" "^ok$" \
	"^flame allocated: 3159824 bytes, $f; pid [0-9]+=3159824$" \
	"^flame allocations: 104 allocations, $f; pid [0-9]+=104$" \
	"^flame temporary: 102 allocations, $f; pid [0-9]+=102$" \
	"^flame at peak: 2097152 bytes, $f; pid [0-9]+=2097152$" \
	"^flame leaked: 4096 bytes, $f; pid [0-9]+=4096$" \
	"^flame allocated inverted: 3159824 bytes, $f; phase_one$at=1048576 \| phase_two$at=1048576 \| phase_two$at=1048576 \| temp_loop$at=10000 \| leak_some$at=4096$" \
	"^flame allocations inverted: 104 allocations, $f; temp_loop$at=100 \| leak_some$at=1 \| phase_one$at=1 \| phase_two$at=1 \| phase_two$at=1$" \
	"^flame temporary inverted: 102 allocations, $f; temp_loop$at=100 \| phase_one$at=1 \| phase_two$at=1$" \
	"^flame at peak inverted: 2097152 bytes, $f; phase_two$at=1048576 \| phase_two$at=1048576$" \
	"^flame leaked inverted: 4096 bytes, $f; leak_some$at=4096$"
m='[0-9]+:main'
has "$T/selftest" "views: trees" \
	"^top-down by allocated: 0:all=3159824 \| 1:pid [0-9]+=3159824 \| .* \| $m$at=2097152 \| $m$at=1048576 \| $m$at=10000 \| $m$at=4096$" \
	"^top-down sorted by allocations: .* \| $m$at=100 \| $m$at=2 \| $m$at=1 \| $m$at=1$" \
	"^top-down sorted by leaked: .* \| $m$at=4096 \| $m$at=0 \| $m$at=0 \| $m$at=0$" \
	"^top-down opened: .* \| $m$at=4096 \| [0-9]+:leak_some$at=4096 \| $m$at=0 \| $m$at=0 \| $m$at=0$" \
	"^bottom-up by allocated: 0:all=3159824 \| 1:phase_one$at=1048576 \| 1:phase_two$at=1048576 \| 1:phase_two$at=1048576 \| 1:temp_loop$at=10000 \| 1:leak_some$at=4096$" \
	"^bottom-up sorted by temporary: 0:all=102 \| 1:temp_loop$at=100 \| 1:phase_one$at=1 \| 1:phase_two$at=1 \| " \
	"^bottom-up sorted by at peak: 0:all=2097152 \| 1:phase_two$at=1048576 \| 1:phase_two$at=1048576 \| 1:leak_some$at=0 \| " \
	"^bottom-up opened: 0:all=4096 \| 1:leak_some$at=4096 \| 2:main$at=4096 \| 1:phase_one" \
	"^bottom-up search phase_: 3 frames match: 3\.0 MiB, 99\.55% of all; marked 3$"
has "$T/selftest" "views: the chart and the first phase" \
	"^shares: phase_one$at=1048576 \| phase_two$at=1048576 \| phase_two$at=1048576 \| leak_some$at=4096; drawn 4$" \
	"^range: selected [0-9.]+ ms to [0-9.]+ ms: live at [0-9.]+ ms \(checkpoints every [0-9.]+ ms\); the range's end snaps to the end of its checkpoint$" \
	"^range: figure 5, checkpoint [0-9]+, selection [0-9.]+\.\.[0-9.]+, snapped to [0-9.]+ \(within a checkpoint after the end\)$" \
	"^live flame: 1048576 bytes; pid [0-9]+=1048576$" \
	"^live table: phase_one$at=1\.0 MiB$" \
	"^live head: Sites live at [0-9.]+ ms: 1\.0 MiB$" \
	"^top-down live: .* \| $m$at=1048576( \| ([0-9]+:main|[0-9]+:leak_some)$at=0)+$"
# a search marks (in the page's colour) the rows of the top sites and of
# the live sites whose stack holds a frame that matches, in any case:
# main marks every site
has "$T/selftest" "views: search marks the top and the live sites" \
	"^marked by \"phase_one\": top sites 1 of 5: phase_one$at; live 1 of 1: phase_one$at$" \
	"^marked by \"phase_two\": top sites 2 of 5: phase_two$at \| phase_two$at; live 0 of 1$" \
	"^marked by \"MAIN\": top sites 5 of 5: phase_one$at \| phase_two$at \| phase_two$at \| temp_loop$at \| leak_some$at; live 1 of 1: phase_one$at$" \
	"^marked by \"\": top sites 0 of 5; live 0 of 1$"
has "$T/selftest" "views: a top site's whole stack, innermost first" \
	"^site stack: phase_one$at \\| main$at \\| __libc_start_call_main.* \\| _start \\| pid [0-9]+$" \
	"^site search: phase_one$at$" "^site stack closed: 0$"
browse "$T/phases.html" "#views=0.6,0.9"
has "$T/selftest" "views: the second phase" "^ok$" \
	"^live flame: 2097152 bytes; pid [0-9]+=2097152$" \
	"^live table: phase_two$at=1\.0 MiB \| phase_two$at=1\.0 MiB$" \
	"^live head: Sites live at [0-9.]+ ms: 2\.0 MiB$" \
	"^marked by \"phase_one\": top sites 1 of 5: phase_one$at; live 0 of 2$" \
	"^marked by \"phase_two\": top sites 2 of 5: phase_two$at \| phase_two$at; live 2 of 2: phase_two$at \| phase_two$at$"
grep -q 'error:' "$T/selftest" && fail "views, second phase: script error" ||
	ok "views, second phase: no script error"

# --- report --diff as html: A the run above, B one that makes half the
# temporaries, leaks twice as much and first (held through both phases),
# and frees phase_two's second MiB at once; what went away still shows,
# red for growth and blue for shrinkage
"$MT" --source preload --stacks --sink "file:$T/more.mt" -- \
	"$MT_BUILDDIR/tests/progs/phases" more ||
	{ echo "cannot record phases more" >&2; exit 99; }
"$MT" report --diff --format html "$T/phases.mt" "$T/more.mt" >"$T/diff.html" ||
	fail "html diff"
check "html diff parses as XML" -- "$PY" -c 'import sys
import xml.etree.ElementTree as ET
ET.fromstring(open(sys.argv[1]).read().split("\n", 1)[1])' "$T/diff.html"
has "$T/diff.html" "html diff: totals" \
	'<td class="shrink" title="-904">-904 B</td>' \
	'<td class="shrink" title="-50">-50</td>'
has "$T/diff.html" "html diff: the selection's precision" \
	"<p id=\"range\">drag across either chart to see what was live in both at the end of a time range, times from each recording's start; the end snaps to the end of its checkpoint \\(A: [0-9]+ checkpoints, one every [0-9.]+ ms; B: [0-9]+ checkpoints, one every [0-9.]+ ms\\)</p>"
# both memory charts, A's then B's, on one scale; each site's live bytes
# at each side's checkpoints, the last of which is what each side leaked
check "html diff: both charts, both sides' checkpoints" -- "$PY" -c 'import sys, json, re
import xml.etree.ElementTree as ET
src = open(sys.argv[1]).read()
root = ET.fromstring(src.split("\n", 1)[1])
svg = {e.get("id"): e for e in root.iter("{http://www.w3.org/2000/svg}svg")}
for id in ("chartA", "chartB"):
    assert id in svg, (id, list(svg))
    assert len(list(svg[id].iter("{http://www.w3.org/2000/svg}polyline"))) == 2, id
d = json.loads(re.search(r"<script type=\"application/json\" id=\"mt-data\">(.*?)</script>", src, re.S).group(1))
a, b = d["charts"]
assert (a["id"], a["col"], b["id"], b["col"]) == ("chartA", 13, "chartB", 7), d["charts"]
assert a["span"] == b["span"] and a["ymax"] == b["ymax"] and a["cpN"] > 1 and b["cpN"] > 1, d["charts"]
for c, leaked in ((a, 4096), (b, 8192)):
    cps = [s[c["col"]] for s in d["sites"] if s[c["col"]]]
    assert all(len(x) == c["cpN"] for x in cps), c
    assert sum(x[-1] for x in cps) == leaked, (c["id"], [x[-1] for x in cps])' "$T/diff.html"
browse "$T/diff.html" "#diff=0.1,0.4,0.6,0.9"
cat "$T/selftest"
grep -q 'error:' "$T/selftest" && fail "diff: script error" ||
	ok "diff: no script error"
g='-&gt;'
has "$T/selftest" "views of the diff" "^ok$" \
	"^diff inverted allocated: leak_some$at=4096${g}8192 grow rgb\(255,145,145\) \| phase_one$at=1048576${g}1048576 same rgb\(225,225,225\) \| .* \| temp_loop$at=10000${g}5000 shrink rgb\(145,145,255\)$" \
	"^diff inverted allocations: .*temp_loop$at=100${g}50 shrink " \
	"^diff inverted leaked: leak_some$at=4096${g}8192 grow rgb\(255,145,145\)$" \
	"^diff bottom-up: 0:all=3159824${g}3158920 \| 1:temp_loop$at=10000${g}5000 \| 1:leak_some$at=4096${g}8192 \| 1:phase_one" \
	"^diff cells: 3\.0 MiB \(-904 B\) \| 4\.9 KiB \(-4\.9 KiB\) \| 8\.0 KiB \(\+4\.0 KiB\) \| 1\.0 MiB \(\+0 B\)" \
	"^diff search phase_two: 2 frames match: 2\.0 MiB $g 2\.0 MiB \(\+0 B\)$"
# each chart draws its sites' share (phase_two's second MiB, freed at once
# in B, is live at no checkpoint but by chance)
has "$T/selftest" "the diff's charts" \
	"^diff charts: chartA 2 lines, shares phase_one$at=1048576 \| phase_two$at=1048576 \| phase_two$at=1048576 \| leak_some$at=4096; drawn 4; chartB 2 lines, shares phase_one$at=1048576 \| phase_two$at=1048576 \| (phase_two$at=1048576 \| )?leak_some$at=8192; drawn [34]$"
# a range dragged on A's chart during the first phase: the same in both
# charts, each snapped to the end of its checkpoint; phase_one's MiB in
# both (same, grey), B's leak already live (grew, red)
sel='selection [0-9.]+\.\.[0-9.]+'
snap='snapped to [0-9.]+ \(within a checkpoint after the end\)'
has "$T/selftest" "diff: a range on A's chart, the first phase" \
	"^diff range on chartA 0\.1\.\.0\.4: selected [0-9.]+ ms to [0-9.]+ ms after each recording's start: A live at [0-9.]+ ms \(checkpoints every [0-9.]+ ms\), B live at [0-9.]+ ms \(checkpoints every [0-9.]+ ms\); the range's end snaps to the end of its checkpoint$" \
	"^diff range on chartA checkpoints: chartA [0-9]+, ($sel), $snap; chartB [0-9]+, \1, $snap$" \
	"^diff range on chartA figure 5, flame: leak_some$at=0${g}8192 grow rgb\(255,60,60\) \| phase_one$at=1048576${g}1048576 same rgb\(225,225,225\)$" \
	"^diff range on chartA live table: leak_some$at=0 B${g}8\.0 KiB \+8\.0 KiB grow \| phase_one$at=1\.0 MiB${g}1\.0 MiB \+0 B same$" \
	"^diff range on chartA live head: Sites live at A [0-9.]+ ms, B [0-9.]+ ms: 1\.0 MiB $g 1\.0 MiB \(\+8\.0 KiB\)$" \
	"^diff range on chartA bottom-up: 0:all=1048576${g}1056768 \| 1:leak_some$at=0${g}8192 \| 1:phase_one$at=1048576${g}1048576 \| "
# and on B's chart during the second: phase_two's second MiB went (shrank,
# blue), its first stayed, the leak grew
has "$T/selftest" "diff: a range on B's chart, the second phase" "^ok$" \
	"^diff range on chartB 0\.6\.\.0\.9: selected [0-9.]+ ms to [0-9.]+ ms after each recording's start: " \
	"^diff range on chartB checkpoints: chartA [0-9]+, ($sel), $snap; chartB [0-9]+, \1, $snap$" \
	"^diff range on chartB figure 5, flame: leak_some$at=0${g}8192 grow rgb\(255,60,60\) \| phase_two$at=1048576${g}1048576 same rgb\(225,225,225\) \| phase_two$at=1048576${g}0 shrink rgb\(60,60,255\)$" \
	"^diff range on chartB live table: phase_two$at=1\.0 MiB${g}0 B -1\.0 MiB shrink \| leak_some$at=0 B${g}8\.0 KiB \+8\.0 KiB grow \| phase_two$at=1\.0 MiB${g}1\.0 MiB \+0 B same$" \
	"^diff range on chartB live head: Sites live at A [0-9.]+ ms, B [0-9.]+ ms: 2\.0 MiB $g 1\.0 MiB \(-1016\.0 KiB\)$" \
	"^diff range on chartB bottom-up: 0:all=2097152${g}1056768 \| 1:phase_two$at=1048576${g}0 \| 1:leak_some$at=0${g}8192 \| "

# the harness sees a script error: the same page with a broken script
sed 's/^\t.use strict.;$/&\n\tnot_defined();/' "$T/shape.html" >"$T/broken.html"
cmp -s "$T/shape.html" "$T/broken.html" && fail "could not break the page"
browse "$T/broken.html" "#selftest=shape_narrow"
grep -q '^error: .*not_defined' "$T/selftest" && ! grep -q '^ok$' "$T/selftest" &&
	ok "browser: a broken script is reported" ||
	{ fail "browser: a broken script went unseen"; cat "$T/selftest"; }

finish
