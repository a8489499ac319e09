#!/bin/sh
# Runs one test (the rest of the command line) under the suite's lock.
# The BPF tests attach uprobes to the C library for every process on the
# machine, so while one runs every malloc anywhere costs a trap (~7 us):
# tests running beside it crawl, and its own timings suffer. They run
# alone; the other tests share the lock and run side by side.
lock=/tmp/memtrack-tests.lock
mode=-s
for arg in "$@"; do
	case "$arg" in
	*/test-ebpf | */test-pressure | */test-stacks | */test-lifecycle.sh | \
	*/test-stress.sh | */test-vma-busy.sh | */test-untracked.sh | \
	*/test-scope-race.sh | \
	*/test-ebpf-holds.sh | */test-attach.sh | */test-attach-busy.sh | \
	*/test-sources-agree | */test-preload-syscalls | */test-unwind | \
	*/test-startup-signals.sh | */test-group-signals.sh | \
	*/test-preload-harm.sh | */test-container.sh)
		mode=-x
		;;
	esac
done
# Told to skip them (MEMTRACK_NO_BPF, a package build), the BPF tests
# only exit 77 and nothing here traces: no lock at all, so that a build
# never waits on a lock file some other run on the machine holds.
if [ -n "${MEMTRACK_NO_BPF:-}" ]; then
	exec "$@"
fi
if ! command -v flock >/dev/null 2>&1; then
	exec "$@"
fi
exec flock "$mode" "$lock" "$@"
