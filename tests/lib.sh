# Shared by the shell tests: a scratch directory, pass/fail counting and
# the usual assertions. Source it after 'set -u'; end with 'finish'.
: "${MT_BUILDDIR:?}"
MT="$MT_BUILDDIR/memtrack"
PY=/usr/bin/python3
T=$(mktemp -d /tmp/mt-test-XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0
passes=0

ok() { passes=$((passes + 1)); echo "ok: $1"; }
fail() { fails=$((fails + 1)); echo "FAIL: $1"; }

# check NAME -- command...: passes when the command succeeds
check() {
	name=$1
	shift 2
	if "$@" >"$T/check.out" 2>&1; then ok "$name"; else
		fail "$name"; cat "$T/check.out"; fi
}

# expect_exit CODE NAME -- command...: stdout in $T/out, stderr in $T/err
expect_exit() {
	want=$1 name=$2
	shift 3
	"$@" >"$T/out" 2>"$T/err"
	got=$?
	if [ "$got" -eq "$want" ]; then ok "$name"; else
		fail "$name: exit $got, want $want"; cat "$T/err"; fi
}

# stderr_is NAME PATTERN: $T/err is exactly one line, matching PATTERN
stderr_is() {
	if [ "$(wc -l <"$T/err")" -eq 1 ] && grep -q -- "$2" "$T/err"; then
		ok "$1"
	else
		fail "$1: stderr is not one line matching '$2':"; cat "$T/err"
	fi
}

# has FILE NAME LINE...: each LINE (a grep -E pattern) matches in FILE
has() {
	file=$1 name=$2
	shift 2
	for line in "$@"; do
		if grep -E -q -- "$line" "$file"; then ok "$name: $line"; else
			fail "$name: no line matching '$line'"; fi
	done
}

# wait_for FILE TEXT: until FILE holds TEXT (a grep pattern), 20 s at
# most; 1 when it never did
wait_for() {
	i=0
	while ! grep -q "$2" "$1" 2>/dev/null; do
		i=$((i + 1))
		[ $i -lt 400 ] || return 1
		sleep 0.05
	done
}

# require_bpf WHY: skip (77), or fail (99) under MEMTRACK_REQUIRE_BPF=1
require_bpf() {
	if [ "${MEMTRACK_REQUIRE_BPF:-0}" = 1 ]; then
		echo "FAIL: BPF required: $1"
		exit 99
	fi
	echo "SKIP: $1"
	exit 77
}

# require_ebpf: the eBPF source runs here (root, BPF, a first recording),
# or require_bpf says why not
require_ebpf() {
	[ -z "${MEMTRACK_NO_BPF:-}" ] || require_bpf "MEMTRACK_NO_BPF is set"
	[ "$(id -u)" -eq 0 ] || require_bpf "needs root"
	if ! "$MT" -q --source ebpf --sink "file:$T/probe.mt" -- true 2>"$T/probe.err"; then
		require_bpf "the ebpf source cannot run here: $(cat "$T/probe.err")"
	fi
}

# job_nexts NAME FILE N: a shell's output (FILE) holds each of next-1 ..
# next-N on a line of its own, and no "Stopped" job (bash on a terminal
# writes its escapes, bracketed paste's ESC[?2004l, around them)
job_nexts() {
	tr -d '\r' <"$2" | sed 's/\x1b\[[?0-9;]*[A-Za-z]//g' >"$T/nexts"
	got=0
	i=1
	while [ $i -le "$3" ]; do
		grep -qx "next-$i" "$T/nexts" && got=$((got + 1))
		i=$((i + 1))
	done
	if [ "$got" -eq "$3" ] && ! grep -q 'Stopped' "$2"; then
		ok "$1: $3 of $3 commands went on, no job stopped"
	else
		fail "$1: $got of $3 commands went on"
		sed 's/^/  | /' "$2"
	fi
}

finish() {
	echo "$passes passed, $fails failed"
	[ "$fails" -eq 0 ]
}
