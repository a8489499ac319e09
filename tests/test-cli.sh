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
# in one frame are golden.mt, whatever form they come in.
for input in events.jsonl golden.mt golden.mt.3frames; do
	for workers in 1 2; do
		expect_exit 0 "replay $input ($workers workers)" -- "$MT" \
			--source "replay:$D/$input" --workers "$workers" \
			--sink "file:$T/out.mt"
		if is_golden_plus_summary "$T/out.mt"; then
			ok "replay $input is golden.mt byte for byte"
		else
			fail "replay $input differs from golden.mt"
		fi
	done
done

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
