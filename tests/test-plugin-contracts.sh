#!/bin/sh
# plugin.h's contract for a failed create()/open(): the host reports the
# plugin's error, exits 1, and calls neither destroy() nor close() (the
# fixtures abort if it does), whatever the plugin left in *state.
set -u

: "${MT_BUILDDIR:?}" "${MT_TESTDATA:?}" "${MT_SRCDIR:?}"
. "$MT_SRCDIR/tests/lib.sh"
export MEMTRACK_PLUGIN_PATH="$MT_BUILDDIR/tests/fixtures/.libs:$MEMTRACK_PLUGIN_PATH"
G="$MT_TESTDATA/golden.mt"

expect_exit 1 "source create fails" -- "$MT" --source fail-create \
	--sink "file:$T/a.mt"
stderr_is "source: the plugin's message alone" "fail-create.*refused on purpose"
expect_exit 1 "encoder create fails" -- "$MT" --source "replay:$G" \
	--encoder fail-create --sink "file:$T/b.mt"
stderr_is "encoder: the plugin's message alone" "fail-create.*refused on purpose"
expect_exit 1 "sink open fails" -- "$MT" --source "replay:$G" \
	--sink fail-open
stderr_is "sink: the plugin's message alone" "fail-open.*refused on purpose"

finish
