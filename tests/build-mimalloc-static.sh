#!/bin/sh
# Debian ships mimalloc only as a shared library. For the test of an
# allocator linked statically into an executable, build libmimalloc.a from
# Debian's own source package (mimalloc's single-file build, src/static.c):
#   tests/build-mimalloc-static.sh DIR   ->   DIR/libmimalloc.a
# Needs root (apt) and Debian's package mirror; prints why when it fails.
set -eu
mkdir -p "$1"
out=$(cd "$1" && pwd) # the build below runs elsewhere
[ -f "$out/libmimalloc.a" ] && exit 0
work=$(mktemp -d /tmp/mt-mimalloc-XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/parts" "$out"
chmod 755 "$work" # apt's download user reads and writes there
# The system's Debian sources, as deb-src, in a private apt state: the
# machine's own configuration is left alone.
sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources \
	>"$work/parts/debian-src.sources"
apt="-o Dir::Etc::sourcelist=/dev/null -o Dir::Etc::sourceparts=$work/parts
	-o Dir::State::Lists=$work/lists"
# shellcheck disable=SC2086
apt-get -qq $apt update >/dev/null
cd "$work"
# shellcheck disable=SC2086
apt-get -qq $apt source --download-only mimalloc >/dev/null 2>&1
tar xf mimalloc_*.orig.tar.*
src=$(ls -d "$work"/mimalloc-*/)
${CC:-cc} -O2 -I"$src/include" -c "$src/src/static.c" -o "$work/mimalloc.o"
ar rcs "$out/libmimalloc.a" "$work/mimalloc.o"
echo "built $out/libmimalloc.a"
