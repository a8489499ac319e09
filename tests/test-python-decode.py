#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Decode a file written by tests/test-encoder-write with the independent
Python readers (zstandard + msgpack) and compare every field and the key
order with the deterministic sequence of tests/test-encoder-util.c."""
import sys

import msgpack
import zstandard

UINT64_MAX = (1 << 64) - 1
KINDS = ["Malloc", "Free", "Realloc", "Calloc", "AlignedAlloc", "Mmap",
         "Munmap", "Brk"]


def expected_event(k):
    """Must match te_deterministic_event() in test-encoder-util.c."""
    kind = k % 8
    pid = 1000 + k % 3
    if k % 97 == 5:
        pid = -(k % 70000) - 1
    tid = pid + k % 5
    addr = 0x7f0000000000 + k * 4096
    if k % 50 == 3:
        addr = UINT64_MAX
    ev = [("pid", pid), ("tid", tid), ("timestamp", 1700000000000 + k * 1234),
          ("addr", addr), ("type", KINDS[kind])]
    if kind == 2 and k % 2 == 0:
        ev.append(("old_addr", addr - 64))
    if kind != 1:
        ev.append(("size", (k * 37) % 100000))
    if k % 7 == 0:
        ev.append(("stack", k * 3))
    return ev


def main():
    path, n = sys.argv[1], int(sys.argv[2])
    with open(path, "rb") as f:
        reader = zstandard.ZstdDecompressor().stream_reader(
            f, read_across_frames=True)
        unpacker = msgpack.Unpacker(reader, raw=False,
                                    object_pairs_hook=list)
        count = 0
        for record in unpacker:
            want = expected_event(count)
            if record != want:
                print("event %d differs:\n  got  %r\n  want %r"
                      % (count, record, want))
                return 1
            count += 1
    if count != n:
        print("decoded %d events, expected %d" % (count, n))
        return 1
    print("python decoded %d events, all fields equal" % count)
    return 0


if __name__ == "__main__":
    sys.exit(main())
