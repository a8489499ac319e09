#!/bin/sh
# wait-watchdogs.sh [SECONDS] - wait until no memtrack watchdog or
# detacher is alive.
#
# memtrack's watchdog (the eBPF source's) and detacher (the preload
# source's) close the run's uprobes and tracepoints after memtrack has
# exited, one at a time: each close waits for RCU grace periods while
# holding the kernel's trace event lock, ~100 ms each here, 1-4 s in all.
# Until they are done the next run's attaches wait on that lock, and with
# --source ebpf scope=system every malloc on the machine traps (~16 us for
# a malloc and free pair here instead of 0.02 us). A benchmark that follows
# a run waits for them, so that it measures a quiet machine. Gives up after
# SECONDS (30), with a warning.
limit=${1:-30}
i=0
# /proc/PID/stat is "PID (COMM) STATE ...": a zombie (Z) has closed its
# probes already
while grep -qs '(memtrack-\(wdog\|detach\)) [^Z]' /proc/[0-9]*/stat; do
	i=$((i + 1))
	if [ "$i" -gt $((limit * 10)) ]; then
		echo "wait-watchdogs: a memtrack watchdog or detacher still runs after" \
			"$limit s" >&2
		exit 0
	fi
	sleep 0.1
done
exit 0
