#!/bin/sh
# The interposer under a path with a space or a colon, which LD_PRELOAD
# cannot hold (ld.so splits it there): the recording is the same as from
# the build tree, event for event; the link memtrack makes for ld.so is
# gone at exit; when no link can be made, memtrack says so and exits 1.
# (Issue 27, item 10: it recorded nothing and exited 0.) No root needed
# but for the last case, skipped without.
set -u

: "${MT_BUILDDIR:?}" "${MT_SRCDIR:?}"
. "$MT_SRCDIR/tests/lib.sh"
PROG="$MT_BUILDDIR/tests/progs/alloc-basic"
LIBS="$MT_BUILDDIR/plugins/.libs"
INTERPOSER="$MT_BUILDDIR/plugins/preload/.libs/libmemtrack-preload.so"
# memtrack's links go here: it must be empty after each run
mkdir "$T/tmp"
unset MEMTRACK_PRELOAD_LIB

# record NAME [VAR=VALUE...]: memtrack on $PROG with that environment;
# the events' types and sizes, in order, in $T/NAME.events (addresses
# differ from run to run)
record() {
	name=$1
	shift
	env TMPDIR="$T/tmp" "$@" timeout -k 1 30 "$MT" -vv \
		--source preload:syscalls=libc --sink "file:$T/$name.mt" \
		-- "$PROG" >/dev/null 2>"$T/$name.err"
	echo $? >"$T/$name.rc"
	"$MT" dump "$T/$name.mt" 2>/dev/null |
		sed 's/.*\("type":"[A-Za-z]*"\)/\1/; s/"old_addr":[0-9]*,//' \
		>"$T/$name.events"
}

# same NAME: exit 0, the events of the normal run, no link left behind
same() {
	if [ "$(cat "$T/$1.rc")" -eq 0 ] &&
		cmp -s "$T/normal.events" "$T/$1.events"; then
		ok "$1: the same $(wc -l <"$T/$1.events") events"
	else
		fail "$1: exit $(cat "$T/$1.rc"), $(wc -l <"$T/$1.events") events, want 0 and $(wc -l <"$T/normal.events")"
		grep -v 'debug' "$T/$1.err"
	fi
	if grep -q "ld.so" "$T/$1.err"; then
		fail "$1: ld.so complained"
		grep "ld.so" "$T/$1.err"
	fi
	if [ -z "$(ls -A "$T/tmp")" ]; then
		ok "$1: nothing left in TMPDIR"
	else
		fail "$1: left in TMPDIR: $(ls -A "$T/tmp")"
		rm -rf "$T/tmp"/*
	fi
}

record normal
n=$(wc -l <"$T/normal.events")
[ "$(cat "$T/normal.rc")" -eq 0 ] && [ "$n" -gt 10 ] &&
	ok "normal: $n events" || fail "normal: exit $(cat "$T/normal.rc"), $n events"

# A build tree under "My Projects": the plugins and the interposer where
# the source looks for it, next to them.
SP="$T/My Projects/plugins"
mkdir -p "$SP/.libs" "$SP/preload/.libs"
cp "$LIBS"/*.so "$SP/.libs/"
cp "$INTERPOSER" "$SP/preload/.libs/"
record space MEMTRACK_PLUGIN_PATH="$SP/.libs"
same space
grep -q "My Projects/plugins/preload/.libs/libmemtrack-preload.so has a space" \
	"$T/space.err" && ok "space: the copy was the one preloaded" ||
	fail "space: the copy was not used"

# A colon (MEMTRACK_PRELOAD_LIB: one path, not a list).
mkdir "$T/a:b"
cp "$INTERPOSER" "$T/a:b/"
record colon MEMTRACK_PRELOAD_LIB="$T/a:b/libmemtrack-preload.so"
same colon
grep -q "a:b/libmemtrack-preload.so has a space" "$T/colon.err" &&
	ok "colon: the copy was the one preloaded" ||
	fail "colon: the copy was not used"

# $TMPDIR has a space too: the link goes to /tmp.
mkdir "$T/x y"
record tmpdir MEMTRACK_PRELOAD_LIB="$T/a:b/libmemtrack-preload.so" \
	TMPDIR="$T/x y"
same tmpdir
link=$(sed -n 's/.*names it through \(\/tmp\/memtrack-[^/]*\)\/.*/\1/p' \
	"$T/tmpdir.err")
[ -n "$link" ] && ok "tmpdir: the link was under /tmp" ||
	fail "tmpdir: no link under /tmp"
[ -n "$link" ] && [ ! -e "$link" ] && ok "tmpdir: $link is gone" ||
	fail "tmpdir: $link is left"

# Nowhere to put a link (/tmp read-only, in a mount namespace of its
# own): one line naming the path, exit 1.
if [ "$(id -u)" -eq 0 ] && unshare -m true 2>/dev/null; then
	unshare -m sh -c 'mount --bind /tmp /tmp &&
		mount -o remount,bind,ro /tmp &&
		env -u TMPDIR MEMTRACK_PRELOAD_LIB="$1" timeout -k 1 30 "$2" \
			--source preload:syscalls=libc --sink file:/dev/null \
			-- "$3" >/dev/null' sh "$T/a:b/libmemtrack-preload.so" \
		"$MT" "$PROG" 2>"$T/err"
	rc=$?
	[ "$rc" -eq 1 ] && ok "no room for a link: exit 1" ||
		fail "no room for a link: exit $rc"
	stderr_is "no room for a link: says why" \
		"a:b/libmemtrack-preload.so: LD_PRELOAD cannot name this path"
else
	echo "skipped: no room for a link (needs root and unshare -m)"
fi

finish
