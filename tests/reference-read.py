#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Read a memtrack file the way the reference reader (the CodSpeed
runner's: serde + rmp_serde over a zstd stream) does, and print its
events as JSON lines, one per event, with the fields 'memtrack dump'
prints (tests/fixtures/codspeed-format/README.md):

- every zstd frame is decoded, one stream; skippable frames (memtrack's
  metadata: MTKR, MTKS, stacks) are skipped, as libzstd's streaming
  decoder does;
- a map's keys the event type does not have (stack) are ignored;
- the first record it cannot decode (not a map, a key missing, a type it
  does not know, a value out of its field's type: i32 pid and tid, u64
  the others) ends the reading: what was read before it stands.

usage: reference-read.py FILE
Needs the msgpack and zstandard modules (Debian's python3-msgpack and
python3-zstandard).
"""
import json
import sys

import msgpack
import zstandard

COMMON = ("pid", "tid", "timestamp", "addr")
# each type's own keys, in the reference's order; Realloc's old_addr is
# an Option: absent when unknown
OWN = {
    "Malloc": ("size",),
    "Free": (),
    "Realloc": ("old_addr", "size"),
    "Calloc": ("size",),
    "AlignedAlloc": ("size",),
    "Mmap": ("size",),
    "Munmap": ("size",),
    "Brk": ("size",),
}
OPTIONAL = {"old_addr"}


def event(rec):
    """The event rec decodes to, or None where the reference stops."""
    if not isinstance(rec, dict) or rec.get("type") not in OWN:
        return None
    ev = {}
    for key in COMMON + ("type",) + OWN[rec["type"]]:
        if key in rec:
            ev[key] = rec[key]
        elif key not in OPTIONAL:
            return None
    # the struct's types: serde refuses a value out of their range
    for key, value in ev.items():
        lo, hi = (-(1 << 31), (1 << 31) - 1) if key in ("pid", "tid") else \
            (0, (1 << 64) - 1)
        if key != "type" and (type(value) is not int or
                              not lo <= value <= hi):
            return None
    return ev


def main():
    with open(sys.argv[1], "rb") as f:
        reader = zstandard.ZstdDecompressor().stream_reader(
            f, read_across_frames=True)
        for rec in msgpack.Unpacker(reader, raw=False):
            ev = event(rec)
            if ev is None:
                break
            print(json.dumps(ev))
    return 0


if __name__ == "__main__":
    sys.exit(main())
