#!/bin/sh
# The command line end to end, with the replay source: usage errors, the
# reference format byte for byte, dump, a full disk, damaged input.
set -u

: "${MT_BUILDDIR:?}" "${MT_TESTDATA:?}" "${MT_SRCDIR:?}"
. "$MT_SRCDIR/tests/lib.sh"
D="$MT_TESTDATA"

expect_exit 2 "unknown option" -- "$MT" --bogus -- true
stderr_is "unknown option message" "unknown option '--bogus'"
expect_exit 2 "no command" -- "$MT"
stderr_is "no command message" "give a command after '--'"
expect_exit 2 "bad --workers" -- "$MT" --workers 0 -- true
stderr_is "bad --workers message" "\-\-workers '0'"
expect_exit 2 "bad --batch" -- "$MT" --batch 12x -- true
expect_exit 2 "replay with a command" -- "$MT" --source "replay:$D/golden.mt" -- true
stderr_is "replay with a command message" "runs no command"
expect_exit 0 "--help" -- "$MT" --help
grep -q "memtrack dump FILE" "$T/out" && ok "help text" || fail "help text"
expect_exit 0 "--version" -- "$MT" --version
grep -q "plugin ABI 1\." "$T/out" && ok "version text" || fail "version text"

# Source options: a usage error stops (exit 2, one line), whatever the
# source; options a source does not take are named, not glued to its args.
G="$D/golden.mt"
expect_exit 2 "--ring-size with a comma" -- "$MT" --ring-size 1,x -- true
stderr_is "--ring-size with a comma message" "\-\-ring-size '1,x': want one value"
expect_exit 2 "empty --high-watermark" -- "$MT" --high-watermark "" -- true
stderr_is "empty --high-watermark message" "\-\-high-watermark '': want one value"
expect_exit 2 "--ring-size with replay" -- "$MT" --source "replay:$G" \
	--ring-size 4096 --sink "file:$T/x.mt"
stderr_is "--ring-size with replay message" \
	"\-\-ring-size does not apply to source 'replay'"
expect_exit 2 "--stacks with replay" -- "$MT" --source "replay:$G" --stacks \
	--sink "file:$T/x.mt"
stderr_is "--stacks with replay message" "\-\-stacks does not apply to source 'replay'"
set --
for i in $(seq 40); do set -- "$@" --ring-size 1048576; done
expect_exit 2 "forty --ring-size with replay" -- "$MT" --source "replay:$G" "$@" \
	--sink "file:$T/x.mt"
stderr_is "forty --ring-size: one line" "\-\-ring-size does not apply"
# the last one wins, however many: preload runs with its ring of 64k
expect_exit 0 "forty --ring-size with preload" -- "$MT" --source preload \
	"$@" --ring-size 64k --stats --sink "file:$T/x.mt" -- true
grep -q "ring 65536 bytes" "$T/err" && ok "the last --ring-size wins" \
	|| { fail "the last --ring-size wins"; cat "$T/err"; }
set --
expect_exit 2 "--source without a value" -- "$MT" --source
stderr_is "--source without a value message" "option '\-\-source' needs a value"
if [ -e "$MT_BUILDDIR/plugins/.libs/source-ebpf.so" ]; then
	expect_exit 1 "low watermark above high" -- "$MT" --source ebpf \
		--low-watermark 0.8 --high-watermark 0.5 -- true
	stderr_is "low above high names both" \
		"low-watermark=0.8 (13421772 bytes) must be below high-watermark=0.5 (8388608 bytes)"
	# auto's eBPF half: fractions of its 4 MiB ring
	if [ "$(id -u)" -eq 0 ]; then
		expect_exit 1 "low watermark above high, auto" -- "$MT" \
			--source auto --low-watermark 0.8 --high-watermark 0.5 \
			-- true
		stderr_is "low above high, auto's ring" \
			"low-watermark=0.8 (3355443 bytes) must be below high-watermark=0.5 (2097152 bytes)"
	fi
fi
for sub in dump report plugins; do
	expect_exit 0 "$sub --help" -- "$MT" "$sub" --help
	grep -q "^Usage: memtrack $sub" "$T/out" && [ ! -s "$T/err" ] \
		&& ok "$sub --help prints its usage" || { fail "$sub --help"; cat "$T/out" "$T/err"; }
done
expect_exit 2 "dump with an unknown option" -- "$MT" dump --bogus
stderr_is "dump unknown option message" "dump: unknown option '\-\-bogus'"
cp "$G" "$T/-g.mt"
expect_exit 0 "dump -- FILE" -- sh -c "cd \"$T\" && \"$MT\" dump -- -g.mt"
[ "$(wc -l <"$T/out")" -eq 126 ] && ok "dump -- FILE reads it" || fail "dump -- FILE"
# A source of ABI 1.0 declares no options: it gets them as args, as before.
FIX="$MT_BUILDDIR/tests/fixtures/.libs"
expect_exit 1 "options handed to an ABI 1.0 source" -- env \
	MEMTRACK_PLUGIN_PATH="$FIX:$MEMTRACK_PLUGIN_PATH" "$MT" --source abi10 \
	--ring-size 4096 --stacks --sink "file:$T/x.mt"
stderr_is "ABI 1.0 source got them" "abi10: no args taken, got 'ring-size=4096,stacks'"

expect_exit 1 "missing plugin" -- "$MT" --source nosuch -- true
stderr_is "missing plugin message" "no source plugin 'nosuch'"
expect_exit 1 "missing replay file" -- "$MT" --source "replay:$T/none.mt"
stderr_is "missing replay file message" "$T/none.mt: No such file or directory"
expect_exit 1 "bad encoder option" -- "$MT" --source "replay:$D/golden.mt" \
	--encoder msgpack-zstd:bogus=1 --sink "file:$T/x.mt"
grep -q "bogus" "$T/err" && ok "bad encoder option named" || fail "bad encoder option named"

# golden.mt, then one skippable frame (magic 0x184D2A50) holding the run's
# summary ("MTKS" + JSON), which the reference reader skips.
golden_size=$(wc -c <"$D/golden.mt")
is_golden_plus_summary() {
	head -c "$golden_size" "$1" | cmp -s - "$D/golden.mt" || return 1
	magic=$(tail -c +$((golden_size + 1)) "$1" | head -c 4 | od -An -tx1 | tr -d ' ')
	tag=$(tail -c +$((golden_size + 9)) "$1" | head -c 4)
	[ "$magic" = "502a4d18" ] && [ "$tag" = "MTKS" ]
}

# The reference format, byte for byte: the 126 reference events re-encoded
# in one frame at zstd level 1, the level golden.mt was written at, are
# golden.mt, whatever form they come in.
for input in events.jsonl golden.mt golden.mt.3frames; do
	for workers in 1 2; do
		expect_exit 0 "replay $input ($workers workers)" -- "$MT" \
			--source "replay:$D/$input" --workers "$workers" \
			--encoder msgpack-zstd:level=1 --sink "file:$T/out.mt"
		if is_golden_plus_summary "$T/out.mt"; then
			ok "replay $input is golden.mt byte for byte"
		else
			fail "replay $input differs from golden.mt"
		fi
	done
done

# At the default level, the reference writer's -5, the file is not
# golden.mt's bytes but holds its msgpack bytes exactly: the zstd command
# decodes every frame and skips the summary's skippable one.
# before_summary FILE: FILE's bytes up to its summary frame (whose "MTKS"
# tag follows the frame's 8-byte header), which holds timings of the run
before_summary() {
	at=$(LC_ALL=C grep -obUa MTKS "$1" | tail -n 1 | cut -d: -f1)
	[ -n "$at" ] && head -c "$((at - 8))" "$1"
}
expect_exit 0 "replay at the default level" -- "$MT" \
	--source "replay:$D/events.jsonl" --sink "file:$T/default.mt"
expect_exit 0 "replay at level -5" -- "$MT" --source "replay:$D/events.jsonl" \
	--encoder msgpack-zstd:level=-5 --sink "file:$T/minus5.mt"
before_summary "$T/minus5.mt" >"$T/minus5.events"
if before_summary "$T/default.mt" | cmp -s - "$T/minus5.events" &&
	[ -s "$T/minus5.events" ]; then
	ok "the default level is -5"
else
	fail "the default level's file differs from level -5's"
fi
is_golden_plus_summary "$T/default.mt" && fail "the default level is still 1"
if command -v zstd >/dev/null; then
	zstd -dcq "$D/golden.mt" >"$T/golden.msgpack"
	if zstd -dcq "$T/default.mt" >"$T/default.msgpack" &&
		cmp -s "$T/default.msgpack" "$T/golden.msgpack"; then
		ok "the default level's file holds the reference msgpack bytes"
	else
		fail "the default level's file decodes to other msgpack bytes"
	fi
else
	echo "SKIP: no zstd command: the default level's msgpack bytes"
fi

# Small batches: several frames, still every event in order.
expect_exit 0 "replay in batches of 10" -- "$MT" --source "replay:$D/golden.mt" \
	--batch 10 --workers 2 --sink "file:$T/b10.mt"
"$MT" dump "$T/b10.mt" >"$T/b10.json"
"$MT" dump "$D/golden.mt" >"$T/golden.json"
cmp -s "$T/b10.json" "$T/golden.json" && ok "13 frames decode to the same events" \
	|| fail "batched output differs"

# dump prints exactly the reference fields, in the reference key order.
sed 's/,"msgpack_hex":"[0-9a-f]*"//' "$D/events.jsonl" >"$T/expected.json"
expect_exit 0 "dump golden.mt" -- "$MT" dump "$D/golden.mt"
cmp -s "$T/out" "$T/expected.json" && ok "dump matches events.jsonl" \
	|| { fail "dump differs from events.jsonl"; diff "$T/out" "$T/expected.json" | head; }
expect_exit 0 "dump from stdin" -- sh -c "\"$MT\" dump - < \"$D/golden.mt.3frames\""
cmp -s "$T/out" "$T/expected.json" && ok "dump - matches" || fail "dump - differs"
expect_exit 0 "dump extended keys" -- "$MT" dump "$D/extended-keys-and-skippable-frames.mt"
[ "$(grep -c '"stack":' "$T/out")" -eq 2 ] && [ "$(wc -l <"$T/out")" -eq 3 ] \
	&& ok "extended keys: 3 events, 2 stacks" || fail "extended keys"

# A full disk: the sink's error, with the path, once, and exit 1.
expect_exit 1 "sink on /dev/full" -- "$MT" --source "replay:$D/golden.mt" \
	--sink file:/dev/full
stderr_is "/dev/full message" "/dev/full: No space left on device"
expect_exit 1 "sink in a missing directory" -- "$MT" --source "replay:$D/golden.mt" \
	--sink "file:$T/no/such/dir.mt"
stderr_is "missing directory message" "$T/no/such/dir.mt: No such file or directory"

# Damaged input: a clear error with an offset, events before it kept.
head -c 500 "$D/golden.mt.3frames" >"$T/cut.mt"
expect_exit 1 "dump of a truncated file" -- "$MT" dump "$T/cut.mt"
grep -q "byte" "$T/err" && ok "truncation names an offset" \
	|| { fail "truncation message"; cat "$T/err"; }
n=$(wc -l <"$T/out")
[ "$n" -gt 0 ] && [ "$n" -lt 126 ] && ok "first frame's events kept ($n)" \
	|| fail "events before the cut: $n"
# cut inside the last skippable frame's header: its 3 events are complete
head -c 157 "$D/extended-keys-and-skippable-frames.mt" >"$T/cut-skip.mt"
expect_exit 1 "dump cut in a skippable frame header" -- "$MT" dump "$T/cut-skip.mt"
[ "$(wc -l <"$T/out")" -eq 3 ] && ok "cut in a skippable frame header: 3 events" ||
	{ fail "cut in a skippable frame header: $(wc -l <"$T/out") events, want 3"; }
stderr_is "cut in a skippable frame header: says so" "truncated at byte 157"
printf 'this is not zstd' >"$T/junk.mt"
expect_exit 1 "dump of junk" -- "$MT" dump "$T/junk.mt"
grep -q "byte 0" "$T/err" && ok "junk names offset 0" || { fail "junk message"; cat "$T/err"; }
printf '{"pid":1,"tid":1,"timestamp":1,"addr":1,"type":"Bogus"}\n' >"$T/bad.jsonl"
expect_exit 1 "replay of an unknown type" -- "$MT" --source "replay:$T/bad.jsonl" \
	--sink "file:$T/bad.mt"
stderr_is "unknown type message" "bad.jsonl:1: unknown type \"Bogus\""

# The sink never truncates the file the source reads (issue 15): refused
# before anything is written, whatever the path's spelling, and exit 2.
cp "$D/golden.mt" "$T/same.mt"
ln "$T/same.mt" "$T/same-link.mt"
for sink in "$T/same.mt" "$T/./same.mt" "$T/same-link.mt"; do
	expect_exit 2 "replay into its own input ($sink)" -- "$MT" \
		--source "replay:$T/same.mt" --sink "file:$sink"
	stderr_is "own input: message" "file:$sink: memtrack reads this file"
done
expect_exit 2 "replay of stdin into the file it is" -- sh -c \
	"\"$MT\" --source replay:- --sink \"file:$T/same.mt\" <\"$T/same.mt\""
cmp -s "$T/same.mt" "$D/golden.mt" && ok "own input left whole" ||
	fail "own input was changed"
expect_exit 0 "replay into another file still works" -- "$MT" \
	--source "replay:$T/same.mt" --sink "file:$T/other.mt"

# JSON lines are read as JSON: what does not fit is refused with the line
# and the key, and a refused line writes nothing.
good='{"pid":7,"tid":7,"timestamp":1,"addr":4096,"type":"Malloc","size":100}'
json_refused() { # NAME LINE MESSAGE
	printf '%s\n\n%s\n' "$good" "$2" >"$T/j.jsonl"
	expect_exit 1 "json: $1" -- "$MT" --source "replay:$T/j.jsonl" \
		--sink "file:$T/j.mt"
	stderr_is "json: $1: message" "j.jsonl:3: $3"
}
json_refused "pid above 32 bits" \
	'{"pid":4294967297,"tid":7,"timestamp":2,"addr":1,"type":"Free"}' \
	'key "pid": 4294967297 is out of range (-2147483648 to 2147483647)'
json_refused "negative size" \
	'{"pid":7,"tid":7,"timestamp":2,"addr":1,"type":"Malloc","size":-5}' \
	'key "size": -5 is negative'
json_refused "pid as a string" \
	'{"pid":"7","tid":7,"timestamp":2,"addr":1,"type":"Free"}' \
	'key "pid": want an integer, got a string'
json_refused "fractional size" \
	'{"pid":7,"tid":7,"timestamp":2,"addr":1,"type":"Malloc","size":8.5}' \
	'key "size": want an integer, got 8.5'
json_refused "trailing garbage" \
	'{"pid":7,"tid":7,"timestamp":2,"addr":1,"type":"Free"} x' \
	'not JSON: text after the object at column 56'
json_refused "key given twice" \
	'{"pid":7,"pid":8,"tid":7,"timestamp":2,"addr":1,"type":"Free"}' \
	'key "pid" given twice'
json_refused "missing key" \
	'{"pid":7,"timestamp":2,"addr":1,"type":"Free"}' 'no "tid"'
json_refused "unterminated string" \
	'{"pid":7,"tid":7,"timestamp":2,"addr":1,"type":"Free' \
	'not JSON: unterminated string at column 53'
json_refused "unknown type" \
	'{"pid":7,"tid":7,"timestamp":2,"addr":1,"type":"Bogus"}' \
	'unknown type "Bogus"'
# nothing of the refused line reaches the file (it was a zero-filled Malloc)
"$MT" dump "$T/j.mt" >"$T/j.json" 2>&1
[ ! -s "$T/j.mt" ] || { [ "$(wc -l <"$T/j.json")" -le 1 ] && ! grep -q '"addr":0' "$T/j.json"; } \
	&& ok "json: a refused line writes nothing" \
	|| { fail "json: a refused line writes nothing"; cat "$T/j.json"; }
# valid JSON with escapes, unknown keys of any shape, the full 64-bit range
printf '%s\n' \
	'{"pid":7,"note":"a \"quoted\" w\u00f6rd \ud83d\ude00","tid":7,"timestamp":18446744073709551615,"addr":4096,"type":"Mal\u006coc","size":18446744073709551615,"x":[1,{"y":null},-2.5e3,true]}' \
	'  {"pid":-1,"tid":2147483647,"timestamp":3,"addr":4096,"type":"Realloc","old_addr":0,"size":9}  ' \
	>"$T/ok.jsonl"
expect_exit 0 "json: escapes and extension keys" -- "$MT" --source "replay:$T/ok.jsonl" \
	--sink "file:$T/ok.mt"
"$MT" dump "$T/ok.mt" >"$T/ok.json"
printf '%s\n' \
	'{"pid":7,"tid":7,"timestamp":18446744073709551615,"addr":4096,"type":"Malloc","size":18446744073709551615}' \
	'{"pid":-1,"tid":2147483647,"timestamp":3,"addr":4096,"type":"Realloc","old_addr":0,"size":9}' \
	>"$T/ok.want"
cmp -s "$T/ok.json" "$T/ok.want" && ok "json: read as written" \
	|| { fail "json: read as written"; diff "$T/ok.json" "$T/ok.want"; }

# An empty file is not a recording: one line naming it, exit 1, everywhere.
: >"$T/empty.mt"
expect_exit 1 "dump of an empty file" -- "$MT" dump "$T/empty.mt"
stderr_is "dump of an empty file message" "$T/empty.mt: empty file, not a recording"
expect_exit 1 "report of an empty file" -- "$MT" report "$T/empty.mt"
stderr_is "report of an empty file message" "$T/empty.mt: empty file, not a recording"
expect_exit 1 "diff with an empty file" -- "$MT" report --diff "$G" "$T/empty.mt"
stderr_is "diff with an empty file message" "$T/empty.mt: empty file, not a recording"
expect_exit 1 "replay of an empty file" -- "$MT" --source "replay:$T/empty.mt" \
	--sink "file:$T/x.mt"
stderr_is "replay of an empty file message" "$T/empty.mt: empty file, not a recording"
expect_exit 1 "dump of empty stdin" -- sh -c "\"$MT\" dump - </dev/null"
stderr_is "dump of empty stdin message" "empty file, not a recording"

# Output that cannot be written is said, with the reason.
expect_exit 1 "report to /dev/full" -- sh -c "\"$MT\" report \"$G\" >/dev/full"
stderr_is "report to /dev/full message" "writing to standard output: No space left on device"
expect_exit 1 "report --diff to /dev/full" -- sh -c \
	"\"$MT\" report --diff \"$G\" \"$G\" >/dev/full"
stderr_is "report --diff to /dev/full message" "No space left on device"

# A plugin that fails without saying why is named by the host, with the call.
silent() { # WHAT CALL -- memtrack args...
	s_what=$1 s_call=$2
	shift 3
	expect_exit 1 "silent $s_what" -- env \
		MEMTRACK_PLUGIN_PATH="$FIX:$MEMTRACK_PLUGIN_PATH" "$MT" "$@"
	stderr_is "silent $s_what is named" \
		"$s_call() failed without saying why: Input/output error"
}
silent "source create" "source plugin 'silent': create" -- \
	--source silent:create --sink "file:$T/s.mt"
silent "source start" "source plugin 'silent': start" -- \
	--source silent:start --sink "file:$T/s.mt"
silent "source read" "source plugin 'silent': read" -- \
	--source silent:read --sink "file:$T/s.mt"
silent "encoder create" "encoder plugin 'silent': create" -- \
	--source silent --encoder silent:create --sink "file:$T/s.mt"
silent "encoder encode" "encoder plugin 'silent': encode" -- \
	--source silent --encoder silent:encode --sink "file:$T/s.mt"
silent "sink open" "sink plugin 'silent': open" -- \
	--source "replay:$G" --sink silent:create
silent "sink write" "sink plugin 'silent': write" -- \
	--source "replay:$G" --sink silent:write
silent "sink close" "sink plugin 'silent': close" -- \
	--source "replay:$G" --sink silent:close
expect_exit 0 "silent plugins that do not fail" -- env \
	MEMTRACK_PLUGIN_PATH="$FIX:$MEMTRACK_PLUGIN_PATH" "$MT" --source silent \
	--encoder silent --sink silent

# report: figures of a small known trace.
cat >"$T/known.jsonl" <<'JSON'
{"pid":7,"tid":7,"timestamp":1,"addr":4096,"type":"Malloc","size":100}
{"pid":7,"tid":7,"timestamp":2,"addr":8192,"type":"Malloc","size":50}
{"pid":7,"tid":8,"timestamp":3,"addr":4096,"type":"Free"}
{"pid":7,"tid":8,"timestamp":4,"addr":12288,"type":"Realloc","old_addr":8192,"size":80}
{"pid":7,"tid":7,"timestamp":5,"addr":999,"type":"Free"}
{"pid":7,"tid":7,"timestamp":6,"addr":65536,"type":"Mmap","size":1048576}
JSON
"$MT" --source "replay:$T/known.jsonl" --sink "file:$T/known.mt" \
	&& "$MT" report "$T/known.mt" >"$T/report" 2>&1
for line in "allocations *3$" "frees *2$" "unmatched frees *1$" \
	"bytes allocated *230 B$" "bytes freed *150 B$" "peak live heap *150 B$" \
	"live at end *1 blocks, 80 B$" "peak mmap'd *1048576 B (1.0 MiB)$" \
	"Malloc=2 Free=2 Realloc=1 Mmap=1$"; do
	[ "$(grep -c -- "$line" "$T/report")" -eq 2 ] && ok "report: $line" \
		|| { fail "report: $line"; cat "$T/report"; }
done

# plugins: the three built ones, and the bad fixtures each on their line.
MEMTRACK_PLUGIN_PATH="$MEMTRACK_PLUGIN_PATH:$MT_BUILDDIR/tests/fixtures/.libs" \
	"$MT" plugins >"$T/plugins" 2>&1
for p in "encoder  msgpack-zstd" "sink     file" "source   replay"; do
	grep -q "^$p " "$T/plugins" && ok "plugins lists $p" || fail "plugins lacks $p"
done
grep -q "encoder-bad-major.so: plugin built for ABI 2.0" "$T/plugins" \
	&& ok "plugins explains the bad fixture" || { fail "bad fixture line"; cat "$T/plugins"; }

# A truncated plugin file (issue 15) is one line naming it, never a crash
# (dlopen would map past its end: SIGBUS), and the listing exits 1.
mkdir "$T/cutplug"
head -c 1000 "$MT_BUILDDIR/plugins/.libs/sink-file.so" >"$T/cutplug/sink-cut.so"
expect_exit 1 "plugins with a truncated file: exit 1" -- \
	env MEMTRACK_PLUGIN_PATH="$T/cutplug:$MEMTRACK_PLUGIN_PATH" "$MT" plugins
has "$T/out" "plugins with a truncated file" \
	"^    $T/cutplug/sink-cut.so: truncated ELF file: segment [0-9]+ .* ends past its 1000 bytes$" \
	"^source +replay "
stderr_is "plugins with a truncated file: says so" "1 file in the plugin path is not a valid plugin"
expect_exit 1 "a truncated plugin named on the command line" -- \
	env MEMTRACK_PLUGIN_PATH="$T/cutplug:$MEMTRACK_PLUGIN_PATH" "$MT" \
	--source "replay:$D/golden.mt" --sink "cut:$T/cut-out.mt"
stderr_is "truncated plugin: one line" "$T/cutplug/sink-cut.so: truncated ELF file"
expect_exit 0 "plugins, all valid: exit 0" -- "$MT" plugins

finish
