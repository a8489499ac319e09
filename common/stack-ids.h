/* SPDX-License-Identifier: MIT */
/*
 * common/stack-ids.h - the ids of the stacks of a recording ("MTKT"
 * records, mt_event.stack_id): from 1 up to MT_STACK_ID_MAX, beyond which
 * `memtrack report` takes a recording for damaged. Under --source auto
 * two sources write stacks into one file, for one process even (uprobes
 * until its hello, the interposer after): the interposer's ids stay below
 * MT_STACK_ID_UPROBES, the eBPF source's start there.
 */
#ifndef MT_COMMON_STACK_IDS_H
#define MT_COMMON_STACK_IDS_H

#define MT_STACK_ID_MAX ((1u << 26) - 1)
#define MT_STACK_ID_UPROBES (1u << 25)

/*
 * And each source tells the mappings its stacks are named through
 * ("MTKM", and the pid of each "MTKT" record) in order with its own
 * stacks, not with the other's: the interposer's in the shared ring,
 * BPF's at the exec gate and its stops. Interleaved in one table per
 * process, an exec told by one could come between the other's mappings
 * and the stacks they name (the two are read at different moments).
 * Under auto the uprobes' records name the process as pid |
 * MT_STACK_PID_UPROBES: a table of its own, which only their stacks use
 * (no pid is that large). Events carry the plain pid; a stack is found
 * by its id.
 */
#define MT_STACK_PID_UPROBES (1u << 31)

#endif /* MT_COMMON_STACK_IDS_H */
