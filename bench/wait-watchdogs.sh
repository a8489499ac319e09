#!/bin/sh
# wait-watchdogs.sh [SECONDS] - wait until no memtrack watchdog is alive.
#
# memtrack's watchdog closes the eBPF source's uprobes after memtrack has
# exited, one at a time (each waits for an RCU grace period); until it is
# done every malloc on the machine traps into them (~16 us for a malloc and
# free pair here instead of 0.02 us). A benchmark that follows one using
# memtrack waits for it, so that it measures a quiet machine. Gives up
# after SECONDS (30), with a warning.
limit=${1:-30}
i=0
# /proc/PID/stat is "PID (COMM) STATE ...": a zombie (Z) has closed its
# probes already
while grep -qs '(memtrack-wdog) [^Z]' /proc/[0-9]*/stat; do
	i=$((i + 1))
	if [ "$i" -gt $((limit * 10)) ]; then
		echo "wait-watchdogs: a memtrack watchdog still runs after" \
			"$limit s" >&2
		exit 0
	fi
	sleep 0.1
done
exit 0
