#!/bin/sh
# The files memtrack writes (--sink file:PATH, --stats=FILE) are never
# written through a name someone else made (issue 27): memtrack runs as
# root and its default output name is predictable, so in a world-writable
# directory another user could plant a symlink, a FIFO or a hard link
# there first. Refused with the file and why (exit 1, as other errors of
# opening them), nothing written; a regular file is still overwritten.
# The replay source: no root, no BPF.
set -u

: "${MT_BUILDDIR:?}" "${MT_TESTDATA:?}" "${MT_SRCDIR:?}"
. "$MT_SRCDIR/tests/lib.sh"
G="$MT_TESTDATA/golden.mt"

# untouched NAME FILE: FILE still holds what "victim" wrote
untouched() {
	if [ "$(cat "$2" 2>/dev/null)" = "victim" ]; then ok "$1"; else
		fail "$1: $2 was changed"; fi
}

# same_as_new NAME FILE: FILE holds the events a new file gets, and
# nothing after them (the run summary's times, and so its length, differ
# from run to run: not compared byte for byte)
same_as_new() {
	if [ "$(wc -c <"$2")" -lt 100000 ] &&
		"$MT" dump "$2" >"$T/dump" && cmp -s "$T/dump" "$T/new.json"; then
		ok "$1"
	else
		fail "$1: $2 differs from a new file"
	fi
}

# the reference: a file memtrack created
expect_exit 0 "a new file" -- "$MT" --source "replay:$G" --sink "file:$T/new.mt"
"$MT" dump "$T/new.mt" >"$T/new.json"
[ "$(wc -l <"$T/new.json")" -eq 126 ] && ok "a new file: 126 events" ||
	fail "a new file: $(wc -l <"$T/new.json") events, want 126"

# an existing regular file, longer than the output: cut, then written
head -c 100000 /dev/zero >"$T/old.mt"
expect_exit 0 "an existing file" -- "$MT" --source "replay:$G" --sink "file:$T/old.mt"
same_as_new "an existing file: overwritten whole" "$T/old.mt"
expect_exit 0 "stdout" -- "$MT" --source "replay:$G" --sink file:-
same_as_new "file:- still writes stdout" "$T/out"
expect_exit 0 "/dev/null" -- "$MT" --source "replay:$G" --sink file:/dev/null

# a symlink to a file, and one to a file that does not exist yet
echo victim >"$T/victim"
ln -s "$T/victim" "$T/link.mt"
expect_exit 1 "sink through a symlink" -- "$MT" --source "replay:$G" \
	--sink "file:$T/link.mt"
stderr_is "sink through a symlink: message" "$T/link.mt: a symbolic link"
untouched "sink through a symlink: target untouched" "$T/victim"
ln -s "$T/created" "$T/dangling.mt"
expect_exit 1 "sink through a dangling symlink" -- "$MT" --source "replay:$G" \
	--sink "file:$T/dangling.mt"
[ ! -e "$T/created" ] && ok "dangling symlink: no file created" ||
	fail "dangling symlink: its target was created"
expect_exit 1 "--stats through a symlink" -- "$MT" --source "replay:$G" \
	--stats="$T/link.mt" --sink "file:$T/s.mt"
stderr_is "--stats through a symlink: message" "\-\-stats=$T/link.mt: a symbolic link"
untouched "--stats through a symlink: target untouched" "$T/victim"

# a FIFO nobody reads: refused at once, not waited on
mkfifo "$T/fifo"
expect_exit 1 "sink on a FIFO" -- timeout -s KILL 10 "$MT" --source "replay:$G" \
	--sink "file:$T/fifo"
stderr_is "sink on a FIFO: message" "$T/fifo: a FIFO"
expect_exit 1 "--stats on a FIFO" -- timeout -s KILL 10 "$MT" --source "replay:$G" \
	--stats="$T/fifo" --sink "file:$T/s.mt"
stderr_is "--stats on a FIFO: message" "\-\-stats=$T/fifo: a FIFO"
# one with a reader: opened without waiting, then refused all the same
sleep 10 <>"$T/fifo" &
reader=$!
expect_exit 1 "sink on a FIFO with a reader" -- timeout -s KILL 10 "$MT" \
	--source "replay:$G" --sink "file:$T/fifo"
stderr_is "sink on a FIFO with a reader: message" "$T/fifo: a FIFO"
kill "$reader" 2>/dev/null
wait "$reader" 2>/dev/null

# a directory
mkdir "$T/dir.mt"
expect_exit 1 "sink on a directory" -- "$MT" --source "replay:$G" \
	--sink "file:$T/dir.mt"
stderr_is "sink on a directory: message" "$T/dir.mt: a directory"
expect_exit 1 "--stats on a directory" -- "$MT" --source "replay:$G" \
	--stats="$T/dir.mt" --sink "file:$T/s.mt"
stderr_is "--stats on a directory: message" "\-\-stats=$T/dir.mt: a directory"

# a hard link: the other name of a file elsewhere, left whole
ln "$T/victim" "$T/hard.mt"
expect_exit 1 "sink on a hard link" -- "$MT" --source "replay:$G" \
	--sink "file:$T/hard.mt"
stderr_is "sink on a hard link: message" "$T/hard.mt: has other names"
untouched "sink on a hard link: file untouched" "$T/victim"

# --stats into a regular file still works, an existing one is cut
head -c 100000 /dev/zero >"$T/stats.jsonl"
expect_exit 0 "--stats into an existing file" -- "$MT" --source "replay:$G" \
	--stats="$T/stats.jsonl" --sink "file:$T/s.mt"
if [ -s "$T/stats.jsonl" ] && head -c 1 "$T/stats.jsonl" | grep -q '{' &&
	[ "$(tr -d '\000' <"$T/stats.jsonl" | wc -c)" -eq "$(wc -c <"$T/stats.jsonl")" ]; then
	ok "--stats: JSON lines, the old bytes gone"
else
	fail "--stats: not JSON lines"; head -c 200 "$T/stats.jsonl" | od -c | head -3
fi

finish
