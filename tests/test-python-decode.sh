#!/bin/sh
# SPDX-License-Identifier: MIT
# Cross-check with an independent reader: the Python zstandard and msgpack
# modules must decode what our encoder wrote, field by field.
# Exit 77 (skip) when /usr/bin/python3 or either module is missing.
PY=/usr/bin/python3
N=25000

if [ ! -x "$PY" ]; then
	echo "skip: $PY not found"
	exit 77
fi
if ! "$PY" -c 'import msgpack, zstandard' 2>/dev/null; then
	echo "skip: python3 modules msgpack and zstandard are needed"
	exit 77
fi

here=$(dirname "$0")
builddir=${MT_BUILDDIR:-.}
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT

"$builddir/tests/test-encoder-write" "$tmp/out.mt" "$N" || exit 99
exec "$PY" "$here/test-python-decode.py" "$tmp/out.mt" "$N"
