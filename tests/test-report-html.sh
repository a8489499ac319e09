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
    f = stack.split(";")
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
names = [g.find(ns + "title").text.rsplit(" (", 1)[0] for g in frames]
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
	'<td class="site" title="pid [0-9]+;[^"]*;main;shape_wide">shape_wide</td><td title="1048576 B">1\.0 MiB</td><td>16</td>' \
	'<td class="site" title="[^"]*;shape_narrow">shape_narrow</td><td title="65536 B">64\.0 KiB</td><td>1</td>' \
	'<td class="site" title="[^"]*;shape_deep">shape_deep</td><td title="1 B">1 B</td><td>1</td>' \
	'<td title="[0-9]+ ns">[0-9]+\.[0-9]{3} m?s</td>'
grep -q '<td>1114113</td>' "$T/shape.html" &&
	fail "html: a raw byte count in a cell" || ok "html: no raw byte count in a cell"

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
has "$T/selftest" "browser" "^ok$" "^frame: shape_wide$" \
	"^frame: shape_narrow$" "^frame: main$" \
	"^zoom: shape_narrow width 1100\.00 of 1100\.00$" \
	"^zoom: shown all \| pid [0-9]+ \|.* \| main \| shape_narrow$" \
	"^zoom: faded all \| pid [0-9]+ \|.* \| main$" \
	"^search: highlighted 1: 1 frame matches: 64\.0 KiB, 5\.88% of all$" \
	"^reset: shape_narrow width ([0-9.]+) \(was \1\), shown ([0-9]+) of \2$" \
	"^search start: 2 frames match: 1\.1 MiB, 100\.00% of all$"
grep -q '^frame: shape_deep' "$T/selftest" &&
	fail "browser: the 1-byte frame is drawn" || ok "browser: the 1-byte frame is not drawn"

# weighed by count: the share in allocations (1 of 18)
"$MT" report --format html --weight count "$T/shape.mt" >"$T/count.html"
browse "$T/count.html" "#selftest=shape_narrow"
has "$T/selftest" "browser, by count" "^ok$" \
	"^search: highlighted 1: 1 frame matches: 1 allocations, 5\.56% of all$"
grep -q 'error:' "$T/selftest" && fail "browser, by count: script error" ||
	ok "browser, by count: no script error"

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
	'<title>shape_narrow \(65536 bytes, 5\.88%\)</title>'

# the harness sees a script error: the same page with a broken script
sed 's/^\t.use strict.;$/&\n\tnot_defined();/' "$T/shape.html" >"$T/broken.html"
cmp -s "$T/shape.html" "$T/broken.html" && fail "could not break the page"
browse "$T/broken.html" "#selftest=shape_narrow"
grep -q '^error: .*not_defined' "$T/selftest" && ! grep -q '^ok$' "$T/selftest" &&
	ok "browser: a broken script is reported" ||
	{ fail "browser: a broken script went unseen"; cat "$T/selftest"; }

finish
