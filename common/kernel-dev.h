/* SPDX-License-Identifier: MIT */
/*
 * common/kernel-dev.h - a device number as the kernel encodes it inside
 * (MKDEV(): major << 20 | minor), which is what BPF reads from
 * i_sb->s_dev. stat() and /proc/PID/maps give major and minor apart; user
 * space that matches files with BPF turns them into this.
 */
#ifndef MT_COMMON_KERNEL_DEV_H
#define MT_COMMON_KERNEL_DEV_H

#include <stdint.h>

static inline uint64_t mt_kernel_dev(unsigned int major, unsigned int minor)
{
	return (uint64_t)major << 20 | minor;
}

#endif /* MT_COMMON_KERNEL_DEV_H */
