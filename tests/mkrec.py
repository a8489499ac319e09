#!/usr/bin/python3
"""Craft memtrack recordings with stack tables and mappings metadata.

Hostile inputs for 'memtrack report' (tests/test-report-hostile.sh): the
events are MessagePack maps in one zstd frame, the metadata zstd skippable
frames holding MTKM (mappings) and MTKT (stack table) payloads as
plugins/ebpf/README.md describes them.

usage: mkrec.py SCENARIO OUT [ARG...]
  fifo PATH        one stack in a module whose path is PATH (a FIFO)
  bigid            one stack whose id is 2^26 - 1
  forks MAPS N     a process with MAPS mappings, N children forked from it,
                   a stack of each child in the parent's last module
  modules N        one process mapping N modules, a stack in each
  names DIR        modules named with ';', a newline, '<&"' and invalid
                   UTF-8 (in DIR, which need not exist), a stack in each
  nosyms PATH      writes PATH, an ELF file without function symbols, and
                   one stack in it
  pids N           N processes of one 8-byte allocation each, one a us
  spellings FILE N FILE (an ELF shared object with a .dynsym) under N
                   spellings ("/" repeated), a stack in its first function
  buildids FILE N  FILE under N made-up build-ids, the same way
  huge             2^64 - 1 bytes in pid 1, 2 in pid 2
  wrap             pid 1: 2^64 - 1, 2^63 and 16 bytes, the first freed;
                   pid 2: 2^63 bytes (no stacks)
  long FILE A B    FILE (tests/progs/long-names) mapped, A bytes allocated
                   in its make<...first_instantiation> and B in its
                   make<...second_instantiation>, each called from main
                   (0: none)
  wrappers FILE    FILE (tests/progs/alloc-wrappers) mapped, and a libc
                   that is not there: the stacks of its allocations
  attach [HOW]     pid 1 attached at 500 ns (an MTKA record, as for
                   memtrack --pid), pid 2 not: see attach() for the
                   events. HOW spoils the mark: badsum (its checksum),
                   cut (a record cut short, the checksum right for what
                   is left), count (a count of 1000, checksum right),
                   short (8 bytes), pids (marks for pids 99 and 2^32 - 1
                   instead), late (pid 1 marked at 2^64 - 1), twice (pid 1
                   marked a second time, at 100 ns: the first holds)
  sampled [HOW]    a sampled recording (an MTKR record, as for memtrack
                   --sample-bytes 1000 --seed 42): see sampled() for the
                   events. HOW spoils the record: badsum, short (36
                   bytes), version (2), count (2 records), zero (N = 0),
                   late (after the first allocation), twice (a second
                   one, N = 2000, after it: the first holds), noseed
                   (flags 0: no seed given); or n2000: well made, the
                   same events at N = 2000
"""
import struct
import sys

import msgpack
import zstandard

SKIPPABLE = 0x184D2A50
BASE = 0x10000000  # the first mapping's start
SPAN = 0x1000      # each mapping's size


def fnv1a(data):
    h = 2166136261
    for b in data:
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return h


def meta(tag, records):
    body = b"".join(records)
    payload = tag + struct.pack("<III", 1, len(records), fnv1a(body)) + body
    return struct.pack("<II", SKIPPABLE, len(payload)) + payload


def m_exec(pid):
    return struct.pack("<BI", 1, pid)


def m_map(pid, start, end, off, path, bid=b""):
    return (struct.pack("<BIQQQB", 2, pid, start, end, off, len(bid)) + bid +
            struct.pack("<H", len(path)) + path)


def m_fork(child, parent):
    return struct.pack("<BII", 3, child, parent)


def t_stack(sid, pid, addrs):
    return struct.pack("<III", sid, pid, len(addrs)) + b"".join(
        struct.pack("<Q", a) for a in addrs)


def malloc(pid, ts, addr, size, stack):
    return msgpack.packb({"pid": pid, "tid": pid, "timestamp": ts,
                          "addr": addr, "type": "Malloc", "size": size,
                          "stack": stack})


def events(evs):
    return zstandard.ZstdCompressor().compress(b"".join(evs))


def one_module(path, pid=1):
    """A process with one module at BASE, one stack 1 in it (offset 0x10
    into the mapping), one allocation of 100 bytes there."""
    return (meta(b"MTKM", [m_exec(pid), m_map(pid, BASE, BASE + SPAN, 0,
                                              path)]) +
            meta(b"MTKT", [t_stack(1, pid, [BASE + 0x11])]) +
            events([malloc(pid, 1000, 0x5000, 100, 1)]))


def minimal_elf():
    """An ELF shared object of this machine's class with one PT_LOAD, no
    section table: no function symbol at all."""
    ehdr = struct.pack("<4sBBBBB7xHHIQQQIHHHHHH", b"\x7fELF", 2, 1, 1, 0, 0,
                       3, 62, 1, 0, 64, 0, 0, 64, 56, 1, 0, 0, 0)
    phdr = struct.pack("<IIQQQQQQ", 1, 5, 0, 0, 0, 0x2000, 0x2000, 0x1000)
    return (ehdr + phdr).ljust(0x2000, b"\0")


def first_function(path):
    """File offset of the first sized function of path's .dynsym."""
    d = open(path, "rb").read()
    phoff, shoff = struct.unpack_from("<QQ", d, 0x20)
    phnum = struct.unpack_from("<H", d, 0x38)[0]
    shnum = struct.unpack_from("<H", d, 0x3c)[0]
    loads = []
    for i in range(phnum):
        t, _, off, va, _, fsz = struct.unpack_from("<IIQQQQ", d, phoff + 56 * i)
        if t == 1:
            loads.append((va, off, fsz))
    for i in range(shnum):
        sh = struct.unpack_from("<IIQQQQIIQQ", d, shoff + 64 * i)
        if sh[1] != 11:  # SHT_DYNSYM
            continue
        for k in range(1, sh[5] // 24):
            _, info, _, shndx, value, size = struct.unpack_from(
                "<IBBHQQ", d, sh[4] + 24 * k)
            if info & 0xf == 2 and shndx and value and size > 16:
                for va, off, fsz in loads:
                    if va <= value < va + fsz:
                        return value - va + off
    sys.exit("no function in " + path)


def symbols(path):
    """{name: file offset} of path's functions (.symtab and .dynsym)."""
    d = open(path, "rb").read()
    phoff, shoff = struct.unpack_from("<QQ", d, 0x20)
    phnum = struct.unpack_from("<H", d, 0x38)[0]
    shnum = struct.unpack_from("<H", d, 0x3c)[0]
    loads = []
    for i in range(phnum):
        t, _, off, va, _, fsz = struct.unpack_from("<IIQQQQ", d, phoff + 56 * i)
        if t == 1:
            loads.append((va, off, fsz))
    shdrs = [struct.unpack_from("<IIQQQQIIQQ", d, shoff + 64 * i)
             for i in range(shnum)]
    found = {}
    for sh in shdrs:
        if sh[1] not in (2, 11):  # SHT_SYMTAB, SHT_DYNSYM
            continue
        strtab = shdrs[sh[6]][4]
        for k in range(1, sh[5] // 24):
            name, info, _, shndx, value, size = struct.unpack_from(
                "<IBBHQQ", d, sh[4] + 24 * k)
            if info & 0xf != 2 or not shndx or not value:
                continue
            end = d.index(b"\0", strtab + name)
            for va, off, fsz in loads:
                if va <= value < va + fsz:
                    found[d[strtab + name:end]] = value - va + off
    return found


def long_names(path, sizes):
    """Stacks of main calling each make<> instantiation of path."""
    syms = symbols(path)
    main = syms[b"main"]
    makes = [syms[[n for n in syms if b"4make" in n and w in n][0]]
             for w in (b"first_instantiation", b"second_instantiation")]
    span = 0x1000000
    recs = [m_exec(1), m_map(1, BASE, BASE + span, 0, path.encode())]
    stacks = []
    evs = []
    for i, (off, size) in enumerate(zip(makes, sizes)):
        if not size:
            continue
        stacks.append(t_stack(i + 1, 1, [BASE + off + 1, BASE + main + 1]))
        evs.append(malloc(1, 1000 + i, 0x5000 + 16 * i, size, i + 1))
    return meta(b"MTKM", recs) + meta(b"MTKT", stacks) + events(evs)


def wrappers(path):
    """The stacks tests/progs/alloc-wrappers.c makes, innermost first."""
    syms = symbols(path)
    span = 0x1000000
    libc = BASE + span  # a C library, mapped after the program
    recs = [m_exec(1), m_map(1, BASE, BASE + span, 0, path.encode()),
            m_map(1, libc, libc + SPAN, 0, b"/nonexistent/libc.so.6")]
    calls = [(100, ["my_xmalloc", "make_string", "parse_a", "main"]),
             (200, ["my_xmalloc", "make_string", "parse_b", "main"]),
             (48, ["my_xmalloc", "make_node", "build_tree", "main"]),
             (300, ["direct_alloc", "main"]),
             (10, ["my_xmalloc", "main"]),
             (5, [None, "copy_text", "main"])]
    stacks = []
    evs = []
    for i, (size, names) in enumerate(calls):
        addrs = [libc + 0x11 if n is None else BASE + syms[n.encode()] + 1
                 for n in names]
        stacks.append(t_stack(i + 1, 1, addrs))
        evs.append(malloc(1, 1000 + i, 0x5000 + 16 * i, size, i + 1))
    return meta(b"MTKM", recs) + meta(b"MTKT", stacks) + events(evs)


def a_mark(pid, ts):
    return struct.pack("<IIQ", pid, 0, ts)


def ev(pid, ts, kind, addr, size=None, old=None):
    e = {"pid": pid, "tid": pid, "timestamp": ts, "addr": addr, "type": kind}
    if old is not None:
        e["old_addr"] = old
    if size is not None:
        e["size"] = size
    return msgpack.packb(e)


def attach(how):
    """pid 1, attached at 500 ns (times from its first event at 1000):
    0x1000 (100 B) allocated and freed; frees of 0x9000 and 0xa000, never
    allocated (before the attach); a realloc of 0xb000, never allocated,
    to 0x2000 (50 B); 0x3000 (200 B). Allocations 3, frees 1, frees
    before the attach 3 (the realloc's one of them), peak 250 B, live at
    end 2 blocks, 250 B. pid 2, not attached: a free of 0xc000, never
    allocated (unmatched), and 0x4000 (10 B)."""
    marks = [a_mark(1, 500)]
    if how == "pids":
        marks = [a_mark(99, 500), a_mark(0xFFFFFFFF, 500)]
    elif how == "late":
        marks = [a_mark(1, (1 << 64) - 1)]
    elif how == "twice":
        marks = [a_mark(1, 500), a_mark(1, 100)]
    mark = meta(b"MTKA", marks)
    if how == "badsum":
        mark = mark[:20] + struct.pack("<I", fnv1a(b"".join(marks)) ^ 1) + \
            mark[24:]
    elif how in ("cut", "count", "short"):
        body, count = b"".join(marks), len(marks)
        if how == "cut":
            body, count = body[:12], 1
        elif how == "count":
            count = 1000
        payload = b"MTKA" + struct.pack("<III", 1, count, fnv1a(body)) + body
        if how == "short":
            payload = payload[:8]
        mark = struct.pack("<II", SKIPPABLE, len(payload)) + payload
    evs = [ev(1, 1000, "Malloc", 0x1000, 100),
           ev(1, 2000, "Free", 0x1000),
           ev(1, 3000, "Free", 0x9000),
           ev(2, 3500, "Free", 0xc000),
           ev(1, 4000, "Free", 0xa000),
           ev(1, 5000, "Realloc", 0x2000, 50, old=0xb000),
           ev(1, 6000, "Malloc", 0x3000, 200),
           ev(2, 7000, "Malloc", 0x4000, 10)]
    return mark + events(evs)


def s_record(mean, seed, flags):
    return struct.pack("<QQII", mean, seed, flags, 0)


def sampled(how):
    """pid 1, sampled with N = 1000 B (an MTKR record; times from 1000
    ns): 0x1000 (1000 B) and 0x2000 (100 B) allocated, 0x1000 freed; a
    realloc of 0x9000, a block not sampled, to 0x3000 (1000 B), which is
    then freed (temporary), and 0x2000 freed; an mmap of 4096 B. A
    1000-byte allocation stands for 1 / (1 - e^-1) allocations and 1582
    B, a 100-byte one for 1 / (1 - e^-0.1) and 1051 B: 13.67 allocations
    (14), 4215 B, a peak of 2633 B, nothing live at the end."""
    rec = [s_record(2000 if how == "n2000" else 1000, 42,
                    0 if how == "noseed" else 1)]
    version, count = 1, 1
    if how == "zero":
        rec = [s_record(0, 42, 1)]
    elif how == "version":
        version = 2
    elif how == "count":
        rec, count = rec * 2, 2
    body = b"".join(rec)
    payload = b"MTKR" + struct.pack("<III", version, count,
                                    fnv1a(body)) + body
    if how == "badsum":
        payload = payload[:12] + struct.pack("<I", fnv1a(body) ^ 1) + body
    elif how == "short":
        payload = payload[:36]
    mark = struct.pack("<II", SKIPPABLE, len(payload)) + payload
    evs = [ev(1, 1000, "Malloc", 0x1000, 1000),
           ev(1, 2000, "Malloc", 0x2000, 100),
           ev(1, 3000, "Free", 0x1000),
           ev(1, 4000, "Realloc", 0x3000, 1000, old=0x9000),
           ev(1, 5000, "Free", 0x3000),
           ev(1, 6000, "Free", 0x2000),
           ev(1, 7000, "Mmap", 0x7f0000000000, 4096)]
    if how == "late":
        return events(evs[:1]) + mark + events(evs[1:])
    if how == "twice":
        body2 = s_record(2000, 7, 1)
        again = b"MTKR" + struct.pack("<III", 1, 1, fnv1a(body2)) + body2
        mark += struct.pack("<II", SKIPPABLE, len(again)) + again
    return mark + events(evs)


def main():
    what, out, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    if what == "fifo":
        data = one_module(args[0].encode())
    elif what == "bigid":
        sid = (1 << 26) - 1
        data = (meta(b"MTKT", [t_stack(sid, 1, [0x1234])]) +
                events([malloc(1, 1000, 0x5000, 100, sid)]))
    elif what == "forks":
        maps, n = int(args[0]), int(args[1])
        recs = [m_exec(1)]
        for i in range(maps):
            start = BASE + i * SPAN
            recs.append(m_map(1, start, start + SPAN, 0x1000 * i,
                              b"/nonexistent/lib%d.so" % i))
        for c in range(n):
            recs.append(m_fork(1000 + c, 1))
        last = BASE + (maps - 1) * SPAN
        stacks = [t_stack(c + 1, 1000 + c, [last + 0x21, BASE + 0x31])
                  for c in range(n)]
        evs = [malloc(1000 + c, 1000 + c, 0x5000, 10 + c % 7, c + 1)
               for c in range(n)]
        data = meta(b"MTKM", recs) + meta(b"MTKT", stacks) + events(evs)
    elif what == "modules":
        n = int(args[0])
        recs = [m_exec(1)]
        stacks = []
        evs = []
        for i in range(n):
            start = BASE + i * SPAN
            recs.append(m_map(1, start, start + SPAN, 0,
                              b"/nonexistent/mod%d.so" % i))
            stacks.append(t_stack(i + 1, 1, [start + 0x41]))
            evs.append(malloc(1, 1000 + i, 0x5000 + 16 * i, 8, i + 1))
        data = meta(b"MTKM", recs) + meta(b"MTKT", stacks) + events(evs)
    elif what == "names":
        d = args[0].encode()
        names = [b"semi;colon.so", b"new\nline.so", b"xml<&\">.so",
                 b"bad\xff\xfeutf8.so", b"cut\xc3.so", b"ok-\xc3\xa9.so"]
        recs = [m_exec(1)]
        stacks = []
        evs = []
        for i, nm in enumerate(names):
            start = BASE + i * SPAN
            recs.append(m_map(1, start, start + SPAN, 0, d + b"/" + nm))
            stacks.append(t_stack(i + 1, 1, [start + 0x11]))
            evs.append(malloc(1, 1000 + i, 0x5000 + 16 * i, 100 + i, i + 1))
        data = meta(b"MTKM", recs) + meta(b"MTKT", stacks) + events(evs)
    elif what == "nosyms":
        with open(args[0], "wb") as f:
            f.write(minimal_elf())
        data = one_module(args[0].encode())
    elif what == "huge":
        # sizes whose sum wraps around 2^64: 2^64 - 1 bytes in pid 1,
        # 2 in pid 2 (the whole is 1 when it wraps)
        evs = [msgpack.packb({"pid": p, "tid": p, "timestamp": 1000 * p,
                              "addr": 0x5000, "type": "Malloc", "size": s})
               for p, s in ((1, (1 << 64) - 1), (2, 2))]
        data = events(evs)
    elif what == "wrap":
        # each sum wraps around 2^64: pid 1's bytes, its size class's,
        # the total's
        def ev(p, ts, kind, addr, size=None):
            e = {"pid": p, "tid": p, "timestamp": ts, "addr": addr,
                 "type": kind}
            if size is not None:
                e["size"] = size
            return msgpack.packb(e)
        data = events([ev(1, 1000, "Malloc", 0x5000, (1 << 64) - 1),
                       ev(1, 2000, "Malloc", 0x6000, 1 << 63),
                       ev(1, 3000, "Malloc", 0x7000, 16),
                       ev(1, 4000, "Free", 0x5000),
                       ev(2, 5000, "Malloc", 0x5000, 1 << 63)])
    elif what == "wrappers":
        data = wrappers(args[0])
    elif what == "attach":
        data = attach(args[0] if args else "")
    elif what == "sampled":
        data = sampled(args[0] if args else "")
    elif what == "long":
        data = long_names(args[0], [int(args[1]), int(args[2])])
    elif what == "pids":
        evs = [msgpack.packb({"pid": p, "tid": p, "timestamp": 1000 * p,
                              "addr": 0x5000, "type": "Malloc", "size": 8})
               for p in range(1, int(args[0]) + 1)]
        data = zstandard.ZstdCompressor(level=19).compress(b"".join(evs))
    elif what in ("spellings", "buildids"):
        n = int(args[1])
        func = first_function(args[0])
        moff = func & ~0xfff
        recs = [m_exec(1)]
        stacks = []
        evs = []
        for i in range(n):
            start = BASE + i * 0x1000000
            if what == "spellings":
                path, bid = b"/" * i + args[0].encode(), b""
            else:
                path, bid = args[0].encode(), struct.pack("<5I", *[i] * 5)
            recs.append(m_map(1, start, start + 0x1000000, moff, path, bid))
            stacks.append(t_stack(i + 1, 1, [start + func - moff + 1]))
            evs.append(malloc(1, 1000 + i, 0x5000 + 16 * i, 8, i + 1))
        data = meta(b"MTKM", recs) + meta(b"MTKT", stacks) + events(evs)
    else:
        sys.exit("unknown scenario " + what)
    with open(out, "wb") as f:
        f.write(data)


if __name__ == "__main__":
    main()
