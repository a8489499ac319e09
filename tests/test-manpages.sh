#!/bin/sh
# The man pages and --help cannot drift: for the command and each
# subcommand, the options its --help lists (the "  -" lines) are exactly
# the .TP entries starting with '-' of its man page, argument names
# included. The pages render without a groff warning, and the plugin
# page's example builds and encodes.
set -u

: "${MT_BUILDDIR:?}" "${MT_TESTDATA:?}" "${MT_SRCDIR:?}"
. "$MT_SRCDIR/tests/lib.sh"
M="$MT_SRCDIR/man"
CC=${CC:-cc}

# help_options FILE: "--name ARG" per option line of a --help text
help_options() {
	sed -n 's/^  \(-[^ ].*\)$/\1/p' "$1" | sed 's/   *.*$//' | sort
}

# man_options PAGE: the heading after each .TP that is an option, as it
# renders: the font macro's arguments joined, font escapes dropped
man_options() {
	awk '
	/^\.TP/ { tp = 1; next }
	tp {
		tp = 0
		line = $0
		if (line !~ /^\.(B|I|R)(I|B|R)? /) { next }
		sub(/^\.[BIR]+ /, "", line)
		out = ""
		while (length(line) > 0) {
			if (substr(line, 1, 1) == "\"") {
				line = substr(line, 2)
				i = index(line, "\"")
				if (i == 0) { i = length(line) + 1 }
				out = out substr(line, 1, i - 1)
				line = substr(line, i + 1)
			} else if (substr(line, 1, 1) == " ") {
				line = substr(line, 2)
			} else {
				i = index(line, " ")
				if (i == 0) { i = length(line) + 1 }
				out = out substr(line, 1, i - 1)
				line = substr(line, i + 1)
			}
		}
		gsub(/\\f[BIRP]/, "", out)
		gsub(/\\-/, "-", out)
		gsub(/\\&/, "", out)
		if (out ~ /^-/) { print out }
	}' "$1" | sort
}

compare() {
	name=$1 page=$2
	shift 2
	if ! "$MT" "$@" --help >"$T/help" 2>&1; then
		fail "$name: '$*' --help failed"; cat "$T/help"; return
	fi
	help_options "$T/help" >"$T/h.opts"
	man_options "$page" >"$T/m.opts"
	if [ ! -s "$T/h.opts" ]; then
		fail "$name: no option found in --help"
	elif cmp -s "$T/h.opts" "$T/m.opts"; then
		ok "$name: man page and --help list the same $(wc -l <"$T/h.opts") options"
	else
		fail "$name: man page and --help differ (- help, + man):"
		diff -u "$T/h.opts" "$T/m.opts" | sed -n '3,$p'
	fi
}

compare memtrack "$M/memtrack.1"
compare "memtrack report" "$M/memtrack-report.1" report
compare "memtrack dump" "$M/memtrack-dump.1" dump
compare "memtrack plugins" "$M/memtrack-plugins.1" plugins

# The comparison sees a difference: one option more in a page.
sed 's/^\.BI \\-\\-chunk " N"$/.BI \\-\\-chunks " N"/' "$M/memtrack.1" >"$T/bad.1"
man_options "$T/bad.1" | grep -qx -- "--chunks N" && \
	! man_options "$T/bad.1" | grep -qx -- "--chunk N" \
	&& ok "a renamed option is seen" || fail "renamed option not seen"

# Rendering: no groff warning (man-db's check; skipped without it).
if command -v man >/dev/null 2>&1 && command -v groff >/dev/null 2>&1; then
	for page in "$M"/*.[17]; do
		MANWIDTH=80 man --warnings -l "$page" >"$T/render" 2>"$T/warn"
		if [ -s "$T/warn" ] || [ ! -s "$T/render" ]; then
			fail "$(basename "$page") renders with warnings"; cat "$T/warn"
		else
			ok "$(basename "$page") renders without warnings"
		fi
	done
else
	echo "man or groff missing: rendering not checked"
fi

# memtrack-plugin(7)'s example is a plugin that works.
sed -n '/^\.SH EXAMPLE/,/^\.SH/p' "$M/memtrack-plugin.7" \
	| sed -n '/^\.nf/,/^\.fi/p' | sed '1d;/^\.fi/,$d' \
	| sed -e 's/\\-/-/g' -e "s/\\\\(aq/'/g" -e 's/\\e/\\/g' >"$T/encoder.c"
check "the example in memtrack-plugin(7) builds" -- $CC -std=c11 -Wall \
	-Werror -I"$MT_SRCDIR/include" -shared -fPIC -fvisibility=hidden \
	-o "$T/encoder-jsonl.so" "$T/encoder.c"
MEMTRACK_PLUGIN_PATH="$T" expect_exit 0 "the example encodes" -- "$MT" \
	--encoder jsonl --source "replay:$MT_TESTDATA/golden.mt" \
	--sink "file:$T/out.jsonl"
[ "$(wc -l <"$T/out.jsonl" 2>/dev/null)" = 126 ] \
	&& [ "$(head -n 1 "$T/out.jsonl")" = '{"pid":0,"type":"Malloc","size":0}' ] \
	&& ok "the example's output: 126 lines" \
	|| { fail "the example's output"; head -3 "$T/out.jsonl"; }

finish
