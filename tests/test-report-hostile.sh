#!/bin/sh
# memtrack report on crafted recordings (issue 15): a recording is input,
# not trust. Each is made by tests/mkrec.py (stack tables and mappings as
# plugins/ebpf/README.md describes them) and reported under a memory limit
# and a timeout: nothing may hang, blow up or lie.
set -u

: "${MT_BUILDDIR:?}" "${MT_SRCDIR:?}"
. "$MT_SRCDIR/tests/lib.sh"

if ! "$PY" -c 'import msgpack, zstandard' 2>/dev/null; then
	echo "no $PY with msgpack and zstandard: cannot craft recordings" >&2
	exit 77
fi
mkrec() { "$PY" "$MT_SRCDIR/tests/mkrec.py" "$@"; }

# bounded MB SECONDS command...: under 'ulimit -v' and a timeout (124)
# An ASan build reserves terabytes of address space for its shadow, so
# no address-space limit can hold it: there the time bound alone is
# checked (the memory bound is the plain build's), and the time is 4x.
if ldd "$MT_BUILDDIR/.libs/memtrack" "$MT" 2>/dev/null | grep -q libasan; then
	asan=1
	echo "ASan build: memory bounds not checked (ulimit -v), times x4"
else
	asan=
fi
bounded() {
	mb=$1 secs=$2
	shift 2
	if [ -n "$asan" ]; then
		timeout $((secs * 4)) "$@"
	else
		(ulimit -v $((mb * 1024)) && exec timeout "$secs" "$@")
	fi
}

# --- a module path naming a FIFO: never opened blocking --------------------
mkfifo "$T/fifo.so"
mkrec fifo "$T/fifo.mt" "$T/fifo.so"
expect_exit 0 "fifo module: the report ends" -- \
	bounded 300 20 "$MT" report --format collapsed "$T/fifo.mt"
has "$T/out" "fifo module: frame as an offset" '^pid 1;fifo\.so\+0x11 100$'
grep -q "fifo.so: not a regular file" "$T/err" && ok "fifo module: said" ||
	{ fail "fifo module: no warning"; cat "$T/err"; }
# --- a stack id near 2^26 in a 112-byte file: memory follows the stacks ------
# (an array indexed by id took 1.5 GB)
mkrec bigid "$T/bigid.mt"
expect_exit 0 "stack id 2^26-1: report within 300 MB" -- \
	bounded 300 20 "$MT" report --format collapsed "$T/bigid.mt"
has "$T/out" "stack id 2^26-1" '^pid 1;0x1234 100$'

# --- forks copying a parent's table: shared, not copied ----------------------
# 3000 mappings, 4000 children forked from their parent (300 KB): copies
# took 32 bytes x 12 million. Each child's stack names the parent's modules.
mkrec forks "$T/forks.mt" 3000 4000
expect_exit 0 "4000 forks of 3000 mappings: report within 300 MB" -- \
	bounded 300 60 "$MT" report --format collapsed "$T/forks.mt"
awk '$0 != "pid " (NR + 999) ";lib0.so+0x31;lib2999.so+0xbb7021 " (10 + (NR - 1) % 7)' \
	"$T/out" >"$T/bad-lines"
[ "$(wc -l <"$T/out")" -eq 4000 ] && [ ! -s "$T/bad-lines" ] &&
	ok "forks: 4000 stacks named through the parent's mappings" ||
	{ fail "forks: $(wc -l <"$T/out") lines, unexpected ones:"; head -3 "$T/bad-lines"; }

# --- 100,000 modules: lookups in O(log n), not scans ---------------------------
# (time grew with the square of the module count: 40,000 took 4 to 19 s;
# 100,000 now take well under a second of CPU, minutes before)
mkrec modules "$T/mods.mt" 100000
expect_exit 0 "100000 modules: text report" -- \
	bounded 300 60 "$MT" report "$T/mods.mt"
has "$T/out" "100000 modules" "^ +allocations +100000$" \
	'^ +1\. +8 B +mod0\.so\+0x41$' '^ +in pid 1$'

expect_exit 0 "100000 modules: html (flamegraph of 100000 callees)" -- \
	bounded 300 60 "$MT" report --format html "$T/mods.mt"
# the page holds 10000 sites whole and sums the others: small, totals whole
check "100000 modules: html data of 10000 sites and one of the 90000 others, 800000 bytes" -- \
	"$PY" -c 'import json, os, re, sys
src = open(sys.argv[1]).read()
d = json.loads(re.search(r"<script type=\"application/json\" id=\"mt-data\">(.*?)</script>", src, re.S).group(1))
assert len(d["sites"]) == 10001 and d["left_out"] == 90000, (len(d["sites"]), d["left_out"])
assert d["names"][d["sites"][-1][0][-1]] == "(90000 other sites)", d["sites"][-1]
assert sum(s[2] for s in d["sites"]) == 800000
assert os.path.getsize(sys.argv[1]) < 2000000, os.path.getsize(sys.argv[1])' "$T/out"
expect_exit 0 "100000 modules: diff with itself" -- \
	bounded 300 60 "$MT" report --diff "$T/mods.mt" "$T/mods.mt"
[ "$(grep -E -c '^ +8 +8 +[+]0 +1 +1 +[+]0  mod[0-9]*[.]so[+]0x41$' "$T/out")" -eq 100000 ] &&
	ok "diff: 100000 rows, all unchanged" || { fail "diff rows"; head -5 "$T/out"; }

# --- 60,000 processes of one event each: the timeline within a budget ---------
# (each took 1024 buckets at once: a 100 KB recording, 300 MB)
mkrec pids "$T/pids.mt" 60000
expect_exit 0 "60000 processes: json within 300 MB" -- \
	bounded 300 60 "$MT" report --format json "$T/pids.mt"
check "60000 processes: every figure, the timeline's first processes" -- \
	"$PY" -c 'import json,sys
r = json.load(open(sys.argv[1]))
assert r["events"] == 60000 and len(r["processes"]) == 60000
assert r["total"]["allocations"] == 60000, r["total"]
assert r["total"]["peak"] == 480000, r["total"]["peak"]
s = r["timeline"]["series"]
assert 100 <= len(s) <= 60000 and s[0]["pid"] == 1, len(s)
assert max(s[-1]["heap"]) == 8' "$T/out"

# --- names with ';', a newline, markup and invalid UTF-8 ------------------------
# Frames show as "file+0xoffset" (the files do not exist): the names come
# straight from the recording. collapsed never splits a frame; JSON and
# XML stay valid UTF-8 (U+FFFD for each invalid byte) and well-formed.
mkrec names "$T/names.mt" /nonexistent
expect_exit 0 "names: collapsed" -- "$MT" report --format collapsed "$T/names.mt"
printf '%s\n' 'pid 1;semi\x3bcolon.so+0x11 100' 'pid 1;new\x0aline.so+0x11 101' \
	'pid 1;xml<&">.so+0x11 102' >"$T/want"
printf 'pid 1;bad\377\376utf8.so+0x11 103\npid 1;cut\303.so+0x11 104\npid 1;ok-\303\251.so+0x11 105\n' >>"$T/want"
cmp -s "$T/out" "$T/want" && ok "names: collapsed, one frame each" ||
	{ fail "names: collapsed"; od -c "$T/out" | head -20; }
expect_exit 0 "names: json" -- "$MT" report --format json "$T/names.mt"
check "names: strict JSON, U+FFFD for each invalid byte" -- "$PY" -c 'import json,sys
r = json.loads(open(sys.argv[1], "rb").read().decode("utf-8", "strict"))
got = sorted(s["frames"][1] for s in r["top_sites"]["bytes"])
want = sorted(["semi;colon.so+0x11", "new\nline.so+0x11", "xml<&\">.so+0x11",
    "bad\ufffd\ufffdutf8.so+0x11", "cut\ufffd.so+0x11", "ok-\u00e9.so+0x11"])
assert got == want, got' "$T/out"
for fmt in svg html; do
	expect_exit 0 "names: $fmt" -- "$MT" report --format $fmt "$T/names.mt"
	# the svg's titles; the html's data, which its script draws from
	check "names: $fmt is well-formed XML, the names in it" -- "$PY" -c 'import json, re, sys, xml.etree.ElementTree as ET
src = open(sys.argv[1], "rb").read().decode("utf-8", "strict")
if src.startswith("<!DOCTYPE"):
    src = src.split("\n", 1)[1]
root = ET.fromstring(src)
titles = [t.text for t in root.iter() if t.tag.endswith("title") and t.text]
data = [e.text for e in root.iter() if e.get("id") == "mt-data"]
if data:
    titles = [n + " (" for n in json.loads(data[0])["names"]]
for want in ("semi;colon.so+0x11", "new\nline.so+0x11", "xml<&\">.so+0x11",
        "bad\ufffd\ufffdutf8.so+0x11", "cut\ufffd.so+0x11", "ok-\u00e9.so+0x11"):
    assert any(t.startswith(want + " (") for t in titles), (want, titles)
assert data or "<!DOCTYPE" not in open(sys.argv[1]).read(1000)' "$T/out"
done
expect_exit 0 "names: diff" -- "$MT" report --diff "$T/names.mt" "$T/names.mt"
# a frame on a line of its own: ';' as it is, a newline escaped
has "$T/out" "names: diff, one row each" '  semi;colon\.so\+0x11$' \
	'  new\\x0aline\.so\+0x11$'
[ "$(wc -l <"$T/out")" -eq 9 ] && ok "names: diff, a line per row" ||
	{ fail "names: diff lines"; cat "$T/out"; }

# --- sizes whose sum wraps around 2^64 -------------------------------------------
# The flame graph's frames sum their callees' bytes: a wrapped sum made the
# whole 1 byte and pid 1 a frame 2^64 times wider than the graph (and its
# width a double no integer holds: UBSan stops there; found by fuzz-report).
# Sums saturate: no frame is wider than the graph's 1100 pixels.
mkrec huge "$T/huge.mt"
expect_exit 0 "huge sizes: svg" -- "$MT" report --format svg "$T/huge.mt"
check "huge sizes: svg, no frame wider than the graph" -- "$PY" -c 'import re, sys
src = open(sys.argv[1]).read()
w = [float(x) for x in re.findall(r"<rect x=\"[0-9.]+\" y=\"[0-9.]+\" width=\"([0-9.]+)\" height=\"[0-9]+\" rx=", src)]
assert w and max(w) <= 1100, w' "$T/out"
# the html's script draws from its data (and never wider than the graph):
# each figure there is a saturated sum, none wrapped
expect_exit 0 "huge sizes: html" -- "$MT" report --format html "$T/huge.mt"
check "huge sizes: html data, figures saturated, none wrapped" -- "$PY" -c 'import json, re, sys
src = open(sys.argv[1]).read()
d = json.loads(re.search(r"<script type=\"application/json\" id=\"mt-data\">(.*?)</script>", src, re.S).group(1))
v = [x for s in d["sites"] for x in s[2:7]]
assert v and max(v) <= 2**64 - 1, v
assert max(s[2] for s in d["sites"]) >= 2**63, v' "$T/out"

# --- sums past 2^64 saturate (issue 29) -------------------------------------------
# pid 1 allocates 2^64 - 1, 2^63 and 16 bytes and frees the first; pid 2
# 2^63. Sums wrapped: pid 1's "bytes allocated" read 2^63 + 14, the total
# less than a process, pprof's signed values negative. A sum saturates at
# 2^64 - 1 and the outputs say so; a level (live) is exact while it goes
# up and down: pid 1 ends with 2^63 + 16 live.
mkrec wrap "$T/wrap.mt"
expect_exit 0 "wrapping sums: json" -- "$MT" report --format json "$T/wrap.mt"
check "wrapping sums: saturated, never less than a part" -- "$PY" -c 'import json, sys
r = json.load(open(sys.argv[1]))
M = (1 << 64) - 1
p = {x["pid"]: x for x in r["processes"]}
t = r["total"]
assert r["saturated"] is True, r["saturated"]
assert p[1]["bytes_allocated"] == M and p[1]["peak"] == M, p[1]
assert p[1]["leaked_bytes"] == (1 << 63) + 16, p[1]["leaked_bytes"]
assert p[2]["bytes_allocated"] == 1 << 63, p[2]
for k in ("bytes_allocated", "bytes_freed", "peak", "leaked_bytes"):
    assert all(t[k] >= x[k] for x in p.values()), (k, t[k])
    assert t[k] == min(M, sum(x[k] for x in p.values())) or k == "peak", (k, t[k])
assert t["leaked_bytes"] == M, t
h = [x["bytes"] for x in r["histogram"] if x["min"] == 1 << 63]
assert h == [M], r["histogram"]
s = [(x["frames"], x["bytes"], x["leaked_bytes"]) for x in r["top_sites"]["bytes"]]
assert (["pid 1", "size 9223372036854775808-18446744073709551615 B"], M, 1 << 63) in s, s' "$T/out"
expect_exit 0 "wrapping sums: text" -- "$MT" report "$T/wrap.mt"
has "$T/out" "wrapping sums: text says saturated" \
	"^  bytes allocated +18446744073709551615 B \(16384\.0 PiB, saturated: at least that\)$" \
	"^  18446744073709551615 B, in any figure: saturated"
# the page says it once, above its tables, and each saturated cell says
# "at least" with the exact figure in its title
expect_exit 0 "wrapping sums: html" -- "$MT" report --format html "$T/wrap.mt"
check "wrapping sums: html says saturated, its cells at least that" -- "$PY" -c 'import re, sys
src = open(sys.argv[1]).read()
banner = "<p><strong>Some figures reached 18446744073709551615 B and saturated there (&#x2265;): the sums are at least that.</strong></p>"
assert src.count(banner) == 1, "no banner"
assert src.index(banner) < src.index("<table>"), "banner after the tables"
cells = re.findall(r"<tr><td>(pid 1|pid 2|total)</td>(.*?)</tr>", src)
sat = "<td title=\"18446744073709551615 B, saturated: at least that\">&#x2265; 16384.0 PiB</td>"
got = dict((who, row.count(sat)) for who, row in cells)
# pid 1: allocated and peak; pid 2 none (2^63 each); the total: allocated,
# peak and leaked
assert got == {"pid 1": 2, "pid 2": 0, "total": 3}, got' "$T/out"
expect_exit 0 "wrapping sums: pprof" -- "$MT" report --format pprof "$T/wrap.mt"
check "wrapping sums: pprof values never negative, saturation said" -- "$PY" -c 'import gzip, sys
def fields(b):
    """(number, wire type, value) of a protobuf message"""
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
def signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v
def varints(b):
    """a packed repeated varint field"""
    out = []
    i = 0
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
strings, comments, values = [], [], []
for num, wt, v in fields(prof):
    if num == 6:
        strings.append(v.decode())
    elif num == 13:
        comments += [v] if wt == 0 else varints(v)
    elif num == 2:
        for n2, w2, v2 in fields(v):
            if n2 == 2:
                values += [signed(x) for x in ([v2] if w2 == 0 else varints(v2))]
assert values and min(values) >= 0, values
assert (1 << 63) - 1 in values, values
said = [strings[c] for c in comments]
assert any("saturated" in c for c in said), said' "$T/out"

# a delta of 2^63 or more: signed 64 bits read it negative
printf '{"pid":1,"tid":1,"timestamp":1,"addr":4096,"type":"Malloc","size":%s}\n' \
	8 >"$T/small.jsonl"
printf '{"pid":1,"tid":1,"timestamp":1,"addr":4096,"type":"Malloc","size":%s}\n' \
	9223372036854775808 >"$T/big.jsonl"
"$MT" --source "replay:$T/small.jsonl" --sink "file:$T/small.mt" &&
	"$MT" --source "replay:$T/big.jsonl" --sink "file:$T/big.mt" ||
	fail "cannot replay the 2^63 recordings"
expect_exit 0 "delta of 2^63: diff" -- "$MT" report --diff "$T/small.mt" "$T/big.mt"
has "$T/out" "delta of 2^63: diff" \
	"^ +0 9223372036854775808 \+9223372036854775808 +0 +1 +\+1  size 9223372036854775808-18446744073709551615 B$" \
	"^ +8 9223372036854775808 \+9223372036854775800 +1 +1 +\+0  total$"
for ab in "small big" "big small"; do
	set -- $ab
	expect_exit 0 "delta of 2^63: diff json $1 $2" -- "$MT" report --diff --format json "$T/$1.mt" "$T/$2.mt"
	check "delta of 2^63: diff json $1 $2, deltas exact" -- "$PY" -c 'import json, sys
r = json.load(open(sys.argv[1]))
for s in r["sites"] + [r["total"]]:
    assert s["bytes_b"] - s["bytes_a"] == s["bytes_delta"], s
assert len(r["sites"]) == 2 and r["saturated"] is False, r' "$T/out"
done

# --- a module without function symbols ------------------------------------------
# (qsort(NULL, 0) of its symbols: undefined, UBSan stops there)
mkrec nosyms "$T/nosyms.mt" "$T/nosyms.so"
expect_exit 0 "module without symbols" -- "$MT" report --format collapsed "$T/nosyms.mt"
printf 'pid 1;nosyms.so+0x11 100\n' >"$T/want"
cmp -s "$T/out" "$T/want" && ok "module without symbols: frame as an offset" ||
	{ fail "module without symbols"; cat "$T/out" "$T/err"; }

# --- one file under 2000 spellings, or under 2000 build-ids: loaded once ---------
# ("/" repeated: 2000 loads of libc took 800 MB; a build-id that differs
# kept the file mapped)
libc=$(ldd "$MT" | awk '/libc\.so/ { print $3 }')
if [ -f "$libc" ]; then
	mkrec spellings "$T/spell.mt" "$libc" 2000
	expect_exit 0 "2000 spellings of libc: within 300 MB" -- \
		bounded 300 60 "$MT" report --format collapsed "$T/spell.mt"
	# the 2000 stacks name alike: one site of 2000 x 8 bytes
	sort -u "$T/out" >"$T/uniq"
	[ "$(wc -l <"$T/out")" -eq 1 ] &&
		grep -Eq '^pid 1;[A-Za-z_][A-Za-z0-9_]*( \([^)]*\))? 16000$' "$T/uniq" &&
		ok "2000 spellings: one function named, every time ($(cat "$T/uniq"))" ||
		{ fail "2000 spellings"; head -3 "$T/uniq"; }
	mkrec buildids "$T/bids.mt" "$libc" 5000
	expect_exit 0 "libc under 5000 build-ids: within 300 MB" -- \
		bounded 300 60 "$MT" report --format collapsed "$T/bids.mt"
	[ "$(grep -c '^pid 1;libc\.so\.6+0x[0-9a-f]* 8$' "$T/out")" -eq 5000 ] &&
		ok "5000 build-ids: none used, each frame an offset" ||
		{ fail "5000 build-ids"; sort "$T/out" | uniq -c | head -3; }
else
	echo "no libc path from ldd: spellings not tried"
fi

finish
