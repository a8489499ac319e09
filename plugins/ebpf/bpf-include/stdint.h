/* SPDX-License-Identifier: MIT */
/*
 * <stdint.h> for the BPF programs, found first through -I in BPF_CFLAGS
 * only. BPF has no libc: the system's <stdint.h> wants glibc's target
 * headers, and the compiler's own defines int64_t as long where the
 * kernel's is long long. vmlinux.h already has the fixed-width types, so
 * that <memtrack/event.h> (the one definition of the event kinds and the
 * record) compiles on both sides.
 */
#ifndef MT_BPF_STDINT_H
#define MT_BPF_STDINT_H

#include "vmlinux.h"

#endif /* MT_BPF_STDINT_H */
