#!/bin/sh
# ABI 1.1 from C++: the public headers compile as C++11 and C++17 without a
# warning, and the C++ example encoder (examples/encoder-csv), built the way
# a plugin author builds it, loads and encodes a recording: one CSV line per
# event, the same events 'memtrack dump' prints. 'make installcheck' builds
# it again against the installed headers and pkg-config file.
set -u

: "${MT_BUILDDIR:?}" "${MT_TESTDATA:?}" "${MT_SRCDIR:?}"
. "$MT_SRCDIR/tests/lib.sh"
CXX=${CXX:-c++}
CC=${CC:-cc}
I="$MT_SRCDIR/include"

if ! command -v "${CXX%% *}" >/dev/null 2>&1; then
	echo "SKIP: no C++ compiler ($CXX)"
	exit 77
fi

printf '#include <memtrack/plugin.h>\n' >"$T/inc.cc"
for std in c++11 c++17; do
	check "headers compile as $std" -- $CXX -std=$std -Wall -Wextra \
		-pedantic -Werror -I"$I" -c "$T/inc.cc" -o "$T/inc.o"
done
printf '#include <memtrack/plugin.h>\n' >"$T/inc.c"
check "headers compile as c11" -- $CC -std=c11 -Wall -Wextra -pedantic \
	-Werror -I"$I" -c "$T/inc.c" -o "$T/inc.o"

check "C++ example builds" -- $CXX -std=c++17 -Wall -Wextra -pedantic \
	-Werror -I"$I" -shared -fPIC -fvisibility=hidden \
	-o "$T/encoder-csv.so" "$MT_SRCDIR/examples/encoder-csv/encoder.cc"
# Only the entry point is exported, with C linkage.
nm -D --defined-only "$T/encoder-csv.so" | awk '{ print $3 }' \
	| grep -v '^_' >"$T/syms"
[ "$(cat "$T/syms")" = memtrack_plugin_v1 ] && ok "exports memtrack_plugin_v1 alone" \
	|| { fail "exported symbols"; cat "$T/syms"; }

MEMTRACK_PLUGIN_PATH="$T" expect_exit 0 "plugins lists it" -- "$MT" plugins
# built against these headers: their ABI version
abi=$(sed -n 's/^#define MT_ABI_MAJOR \([0-9]*\).*/\1/p' "$MT_SRCDIR/include/memtrack/plugin.h").$(sed -n 's/^#define MT_ABI_MINOR \([0-9]*\).*/\1/p' "$MT_SRCDIR/include/memtrack/plugin.h")
grep -q "^encoder  csv  .* $abi .*encoder-csv\.so$" "$T/out" \
	&& ok "listed as encoder csv, ABI $abi" || { fail "plugins line ($abi)"; cat "$T/out"; }

MEMTRACK_PLUGIN_PATH="$T" expect_exit 0 "encodes" -- "$MT" --encoder csv \
	--source "replay:$MT_TESTDATA/golden.mt" --sink "file:$T/out.csv"
# What it should say, from dump's JSON lines (keys in a fixed order).
"$MT" dump "$MT_TESTDATA/golden.mt" | sed -E \
	-e 's/^\{"pid":(-?[0-9]+),"tid":(-?[0-9]+),"timestamp":([0-9]+),"addr":([0-9]+),"type":"([A-Za-z]+)"(,"old_addr":[0-9]+)?(,"size":([0-9]+))?\}$/\1,\2,\3,\4,\5,\8/' \
	-e 's/,$/,0/' >"$T/want.csv"
[ "$(wc -l <"$T/want.csv")" -eq 126 ] && ok "126 events in golden.mt" \
	|| fail "golden.mt has $(wc -l <"$T/want.csv") events"
if cmp -s "$T/want.csv" "$T/out.csv"; then
	ok "CSV is the recording, line for line"
else
	fail "CSV differs from dump"; diff "$T/want.csv" "$T/out.csv" | head
fi

# A recording with metadata frames (skippable frames: stack tables, the
# summary every recording ends with) through an encoder without metadata:
# the events are written, the frames are not, one warning says so.
REC="$MT_TESTDATA/extended-keys-and-skippable-frames.mt"
MEMTRACK_PLUGIN_PATH="$T" expect_exit 0 "metadata it cannot store" -- \
	"$MT" --encoder csv --source "replay:$REC" --sink "file:$T/meta.csv"
stderr_is "metadata: one warning" "the encoder cannot store metadata"
[ "$(wc -l <"$T/meta.csv")" -eq "$("$MT" dump "$REC" | wc -l)" ] \
	&& ok "metadata: every event written" || fail "metadata: events"

MEMTRACK_PLUGIN_PATH="$T" expect_exit 1 "refuses options" -- "$MT" \
	--encoder csv:x=1 --source "replay:$MT_TESTDATA/golden.mt" \
	--sink "file:$T/x.csv"
grep -q "csv.*takes no options: 'x=1'" "$T/err" && ok "refusal names the option" \
	|| { fail "refusal message"; cat "$T/err"; }

finish
