#!/bin/sh
# --sample-bytes (issue 26), the recording: tests/progs/sample-mix makes
# allocations of five sizes (each its own site: 100000 x 16 B, 20000 x
# 1 KiB, 200 x 256 KiB, 4 x 1 MiB freed at once, 1000 x 512 B kept) under
# --source preload --sample-bytes 64K, seeds 1 to 50. From each recording
# (memtrack dump: ordinary events) the test estimates each site's bytes
# the way the report does, Go's: a sampled block of s bytes stands for
# s / (1 - exp(-s/N)). Over the 50 runs each site's mean estimate is
# within 10 % of the truth, the spread of the estimates is the one the
# Poisson sampling predicts (its standard deviation within 0.6x-1.6x of
# sqrt(sum s^2 (1 - p) / p)), and so for the bytes in use at the end.
# Exact parts stay exact: every recorded free is of a recorded block, the
# 1 MiB blocks (p = 1 - e^-16) are all there, and the same seed gives the
# same recording. The other ways in (realloc, reallocarray, calloc,
# posix_memalign, aligned_alloc) keep the recording exact: every free
# and realloc is of a live recorded block. Also: two threads at once; the
# eBPF source refuses the option, saying why; a bad size is refused
# naming it. No root needed.
set -u

: "${MT_BUILDDIR:?}" "${MT_SRCDIR:?}"
. "$MT_SRCDIR/tests/lib.sh"
PROG="$MT_BUILDDIR/tests/progs/sample-mix"
RUNS=${MT_SAMPLE_RUNS:-50}

# record SEED NAME [ARG]: $T/NAME.jsonl, the events of one sampled run
record() {
	"$MT" --source preload --sample-bytes 64K --seed "$1" \
		--sink "file:$T/$2.mt" -- "$PROG" ${3:+"$3"} 2>"$T/$2.err" &&
		"$MT" dump "$T/$2.mt" >"$T/$2.jsonl" ||
		{ fail "run $2: $(head -3 "$T/$2.err")"; return 1; }
}

i=1
while [ "$i" -le "$RUNS" ]; do
	record "$i" "run$i" || break
	i=$((i + 1))
done

# shellcheck disable=SC2016 # python
check "sampling: $RUNS seeded runs estimate every site within 10 %, spread as Poisson sampling predicts" -- \
	"$PY" -c 'import json, math, sys
N = 65536
sites = {16: 100000, 1024: 20000, 262144: 200, 1048576: 4, 512: 1000}
def p(s):
    return 1 - math.exp(-s / N)
est = {s: [] for s in sites}
live = []
for path in sys.argv[1:]:
    got = {s: 0.0 for s in sites}
    blocks = {}
    for line in open(path):
        e = json.loads(line)
        t = e["type"]
        if t == "Malloc" and e["size"] in sites:
            got[e["size"]] += e["size"] / p(e["size"])
            blocks[e["addr"]] = e["size"]
        elif t == "Free":
            # exact: only the blocks recorded are freed
            assert e["addr"] in blocks, ("free of a block not recorded", path, e)
            del blocks[e["addr"]]
    for s in sites:
        est[s].append(got[s])
    live.append(sum(s / p(s) for s in blocks.values()))
    # the 1 MiB blocks are sampled but with probability e^-16 each
    assert got[1048576] == 4 * 1048576 / p(1048576), (path, got[1048576])
def check(name, values, truth, var):
    mean = sum(values) / len(values)
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))
    want = math.sqrt(var)
    print("%-10s truth %10d  mean %12.0f (%+.2f %%)  sd %10.0f, predicted %10.0f" %
          (name, truth, mean, 100 * (mean - truth) / truth, sd, want))
    assert abs(mean - truth) <= 0.10 * truth, (name, mean, truth)
    # (the 1 MiB blocks are all sampled but once in 2.5 million runs:
    # a spread that small is not seen in 50)
    if want > 0.01 * truth:
        assert 0.6 * want <= sd <= 1.6 * want, (name, sd, want)
for s, n in sites.items():
    check("%d B" % s, est[s], s * n, n * s * s * (1 - p(s)) / p(s))
check("in use", live, 512 * 1000, 1000 * 512 * 512 * (1 - p(512)) / p(512))' \
	"$T"/run*.jsonl

# the report's estimates (report.c, the MTKR payload) are those above,
# and so on average the truth: 121204 allocations, 1000 x 512 B in use
for f in "$T"/run*.mt; do
	"$MT" report --format json "$f" >"${f%.mt}.json" 2>>"$T/report.err" ||
		fail "report of $f"
done
# shellcheck disable=SC2016 # python
check "sampling: the report estimates as Go's scaling says, on average the truth" -- \
	"$PY" -c 'import json, math, sys
N = 65536
def w(s):
    return 1 / (1 - math.exp(-s / N))
n = b = allocs = leaked = 0
for path in sys.argv[1:]:
    r = json.load(open(path))
    assert r["sampled"] == {"mean_bytes": N, "seed": int(path.split("run")[-1][:-5])}, r["sampled"]
    t = r["total"]
    mine_b = mine_n = 0.0
    for line in open(path[:-5] + ".jsonl"):
        e = json.loads(line)
        if e["type"] == "Malloc":
            mine_b += round(e["size"] * w(e["size"]))
            mine_n += w(e["size"])
    assert abs(t["bytes_allocated"] - mine_b) <= 1e-9 * mine_b + 1, (path, t["bytes_allocated"], mine_b)
    assert abs(t["allocations"] - mine_n) <= 1, (path, t["allocations"], mine_n)
    n += 1
    allocs += t["allocations"]
    leaked += t["leaked_bytes"]
print("mean allocations %.0f (truth 121204), in use %.0f (512000)" % (allocs / n, leaked / n))
assert abs(allocs / n - 121204) <= 0.1 * 121204
assert abs(leaked / n - 512000) <= 0.1 * 512000' "$T"/run*.json

# the same seed, the same allocations sampled (a single-threaded program;
# addresses and times differ from run to run)
seq() {
	sed -n 's/.*"type":"\([A-Za-z]*\)".*"size":\([0-9]*\).*/\1 \2/p' "$1"
}
record 1 again &&
	if [ "$(seq "$T/run1.jsonl" | md5sum)" = "$(seq "$T/again.jsonl" | md5sum)" ]; then
		ok "seed 1 twice: the same allocations sampled"
	else
		fail "seed 1 twice: different samples"
	fi
[ "$(seq "$T/run1.jsonl" | md5sum)" != "$(seq "$T/run2.jsonl" | md5sum)" ] &&
	ok "seeds 1 and 2: different samples" || fail "seeds 1 and 2 sampled alike"

# two threads at once: every free still of a recorded block, the file says
# it is sampled (an MTKR payload before the first event)
record 3 threads threads && check "two threads: every recorded free is of a recorded block; MTKR first" -- \
	"$PY" -c 'import json, struct, sys
blocks = set()
n = 0
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e["type"] == "Malloc":
        blocks.add((e["pid"], e["addr"])); n += 1
    elif e["type"] == "Free":
        assert (e["pid"], e["addr"]) in blocks, e
        blocks.discard((e["pid"], e["addr"]))
assert n > 100, n
d = open(sys.argv[2], "rb").read()
magic, size = struct.unpack_from("<II", d, 0)
assert magic & 0xFFFFFFF0 == 0x184D2A50 and d[8:12] == b"MTKR", d[:16]
p = d[8:8 + size]
assert size == 40 and struct.unpack_from("<IIQQI", p, 4)[0:2] == (1, 1), p
assert struct.unpack_from("<QQI", p, 16) == (65536, 3, 1), struct.unpack_from("<QQI", p, 16)' \
	"$T/threads.jsonl" "$T/threads.mt"

# The reference reader reads a sampled file (the MTKR record and the
# summary in skippable frames, sampled events ordinary ones): every event
# memtrack dump gives, in its order, field for field (without the
# extension keys dump shows and the reference ignores), and nothing after.
if ! "$PY" -c 'import msgpack, zstandard' 2>/dev/null; then
	echo "SKIP: no $PY with msgpack and zstandard: the reference reader not run"
elif "$PY" "$MT_SRCDIR/tests/reference-read.py" "$T/threads.mt" \
	>"$T/threads.ref" 2>"$T/ref.err"; then
	# shellcheck disable=SC2016 # python
	check "two threads: the reference reader reads every event dump gives" -- \
		"$PY" -c 'import json, sys
known = ("pid", "tid", "timestamp", "addr", "type", "old_addr", "size")
dump = [dict((k, v) for k, v in json.loads(l).items() if k in known) for l in open(sys.argv[1])]
ref = [json.loads(l) for l in open(sys.argv[2])]
assert len(dump) > 100, len(dump)
for i, (d, r) in enumerate(zip(dump, ref)):
    assert d == r, ("event %d" % i, d, r)
assert len(ref) == len(dump), ("the reference read %d events, dump %d" % (len(ref), len(dump)))
print("%d events" % len(ref))' "$T/threads.jsonl" "$T/threads.ref"
else
	fail "two threads: the reference reader failed: $(tail -3 "$T/ref.err")"
fi

# The other ways in, single-threaded (sample-mix resize): realloc (of
# sampled and unsampled blocks, from NULL, to 0), reallocarray, calloc,
# posix_memalign, aligned_alloc. On what is recorded: every Free and every
# Realloc's old_addr is a block recorded before and still live (so none is
# freed twice), no block is recorded again while live; each kind is seen
# (counts for 200000 calls with sizes 16 B-256 KiB at 64K: thousands, at
# least 100 asked); the program's last calls recorded as it says (stdout).
for s in 1 2 3; do
	"$MT" --source preload --sample-bytes 64K --seed "$s" \
		--sink "file:$T/resize$s.mt" -- "$PROG" resize \
		>"$T/resize$s.out" 2>"$T/resize$s.err" &&
		"$MT" dump "$T/resize$s.mt" >"$T/resize$s.jsonl" ||
		fail "resize, seed $s: $(head -3 "$T/resize$s.err")"
	# shellcheck disable=SC2016 # python
	check "resize, seed $s: every free and realloc of a live recorded block; each way in recorded" -- \
		"$PY" -c 'import json, sys
BIG = 1 << 20
live, seen, evs = {}, {}, []
moved = from_null = 0
for n, line in enumerate(open(sys.argv[1])):
    e = json.loads(line)
    t, a = e["type"], e["addr"]
    if t not in ("Malloc", "Calloc", "AlignedAlloc", "Realloc", "Free"):
        continue
    evs.append(e)
    if t == "Realloc":
        t = "Realloc from 0" if not e["old_addr"] else "Realloc"
    seen[t] = seen.get(t, 0) + 1
    if t == "Free":
        assert a in live, ("free of a block not recorded or not live", n, e)
        del live[a]
        continue
    if t == "Realloc":
        assert e["old_addr"] in live, ("realloc of a block not recorded or not live", n, e)
        del live[e["old_addr"]]
        moved += e["old_addr"] != a
    assert a not in live, ("recorded again while live", n, e)
    live[a] = e["size"]
print(seen, "moved", moved)
for t in ("Malloc", "Calloc", "AlignedAlloc", "Realloc", "Realloc from 0", "Free"):
    assert seen.get(t, 0) >= 100, (t, seen)
assert moved >= 100, moved
said = dict((w[0], [int(x) for x in w[1:]]) for w in (l.split() for l in open(sys.argv[2])))
g, q, z, za, nw = said["grow"], said["shrink"][0], said["zero"][0], said["zeroarray"][0], said["new"][0]
want = [("Malloc", g[0], BIG, None), ("Realloc", g[1], 2 * BIG, g[0]),
        ("Free", q, None, None),
        ("Malloc", z, BIG, None), ("Free", z, None, None),
        ("Malloc", za, BIG, None), ("Free", za, None, None),
        ("Realloc", nw, BIG, 0), ("Free", nw, None, None)]
got = [(e["type"], e["addr"], e.get("size"), e.get("old_addr")) for e in evs[-len(want):]]
assert got == want, ("the last calls", got, want)' "$T/resize$s.jsonl" "$T/resize$s.out"
done

# C++'s operators call malloc (or aligned_alloc) inside: what the program
# asked for is counted down once, not at each level. Seed 7, 1000000 x
# 16 B from new (its four kinds) and from malloc: the same sample points,
# so the same events (~244 each, at least 100 asked); counted at each
# level they were 2 to 4 times as many.
for how in new malloc; do
	"$MT" --source preload --sample-bytes 64K --seed 7 \
		--sink "file:$T/cxx-$how.mt" -- "$MT_BUILDDIR/tests/progs/sample-new" \
		"$how" 2>"$T/cxx-$how.err" &&
		"$MT" dump "$T/cxx-$how.mt" >"$T/cxx-$how.jsonl" ||
		fail "C++ operators, $how: $(head -3 "$T/cxx-$how.err")"
done
n_new=$(seq "$T/cxx-new.jsonl" | grep -c "Malloc 16$")
n_malloc=$(seq "$T/cxx-malloc.jsonl" | grep -c "Malloc 16$")
if [ "$n_malloc" -ge 100 ] && [ "$(seq "$T/cxx-new.jsonl" | md5sum)" = "$(seq "$T/cxx-malloc.jsonl" | md5sum)" ]; then
	ok "C++ operators: sampled as malloc is ($n_new and $n_malloc blocks of 16 B)"
else
	fail "C++ operators: $n_new blocks of 16 B sampled from new, $n_malloc from malloc"
fi

# refused where it cannot pay, and a bad size named
expect_exit 2 "ebpf: --sample-bytes refused" -- \
	"$MT" --source ebpf --sample-bytes 512K --sink "file:$T/x.mt" -- true
has "$T/err" "ebpf: refused with the reason" \
	"--sample-bytes does not apply to source 'ebpf': sampling saves nothing where every allocator call pays a uprobe's trap"
expect_exit 2 "a bad size: refused" -- \
	"$MT" --source preload --sample-bytes 12Q --sink "file:$T/x.mt" -- true
stderr_is "a bad size: named, once" "--sample-bytes '12Q': want a size from 1 to 1T"
expect_exit 2 "a bad seed: refused" -- \
	"$MT" --source preload --sample-bytes 1M --seed -1 --sink "file:$T/x.mt" -- true
stderr_is "a bad seed: named, once" "--seed '-1': want a number from 0 to 2^64 - 1"
# the bounds it names are taken, and a size past 2^64 does not wrap
# (17179869185G is 2^64 + 1G: it was taken as 1G)
"$MT" --source preload --sample-bytes 1T --sink "file:$T/x.mt" -- true \
	2>"$T/err" && ok "1T: taken" || fail "1T: refused: $(cat "$T/err")"
expect_exit 2 "17179869185G: refused" -- \
	"$MT" --source preload --sample-bytes 17179869185G --sink "file:$T/x.mt" -- true
has "$T/err" "17179869185G: named" "--sample-bytes '17179869185G': want a size from 1 to 1T"
# the source's own parser (its args) says the same
expect_exit 1 "preload:sample-bytes=0: refused" -- \
	"$MT" --source preload:sample-bytes=0 --sink "file:$T/x.mt" -- true
has "$T/err" "preload:sample-bytes=0: named" "--sample-bytes 0: a size from 1 to 1T expected"

finish
