/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The last instructions of the loader on aarch64: the state the arm64
 * kernel's start_thread() leaves at the entry point of a new program:
 * sp at argc (16-byte aligned), every general register zero (x0 = 0: no
 * function for atexit), the SIMD&FP registers, FPCR and FPSR zero, no
 * thread pointer (TPIDR_EL0 = 0), fresh pointer authentication keys.
 * One register cannot be cleared by a jump from user space: x17 holds the
 * entry point (BR x17 is a call-type branch, which a BTI c landing pad
 * at a guarded entry point accepts).
 *
 * Before that it unmaps the loader's own executable (see exec-x86_64.S).
 */
#ifdef __aarch64__

/*
 * void xip_exec_jump(uint64_t entry, uint64_t sp,
 *		      const struct xip_unmap *unmap, size_t n);
 *
 * Position-independent from xip_exec_jump to xip_exec_jump_end, on a page
 * of its own in the executable whatever the page size (4, 16 or 64 KiB),
 * which the loader leaves mapped while it unmaps the ranges at @unmap
 * (its section sorts first in the linker's .text: see exec-x86_64.S).
 */
	.section .text.unlikely.xip_exec_jump, "ax", %progbits
	.balign	65536
	.globl	xip_exec_jump
	.hidden	xip_exec_jump
	.globl	xip_exec_jump_end
	.hidden	xip_exec_jump_end
	.type	xip_exec_jump, %function
xip_exec_jump:
	hint	#34			/* bti c */
	mov	sp, x1
	mov	x17, x0			/* the entry */
	mov	x19, x2
	mov	x20, x3
1:	cbz	x20, 2f
	ldp	x0, x1, [x19], #16
	mov	x8, #215		/* munmap(addr, len) */
	svc	#0
	sub	x20, x20, #1
	b	1b
2:
	mov	x0, #54			/* prctl(PR_PAC_RESET_KEYS, 0, 0, 0, 0) */
	mov	x1, xzr			/* (-EINVAL without PAC: ignored) */
	mov	x2, xzr
	mov	x3, xzr
	mov	x4, xzr
	mov	x8, #167
	svc	#0

	msr	tpidr_el0, xzr
	msr	fpcr, xzr
	msr	fpsr, xzr
	movi	v0.2d, #0
	movi	v1.2d, #0
	movi	v2.2d, #0
	movi	v3.2d, #0
	movi	v4.2d, #0
	movi	v5.2d, #0
	movi	v6.2d, #0
	movi	v7.2d, #0
	movi	v8.2d, #0
	movi	v9.2d, #0
	movi	v10.2d, #0
	movi	v11.2d, #0
	movi	v12.2d, #0
	movi	v13.2d, #0
	movi	v14.2d, #0
	movi	v15.2d, #0
	movi	v16.2d, #0
	movi	v17.2d, #0
	movi	v18.2d, #0
	movi	v19.2d, #0
	movi	v20.2d, #0
	movi	v21.2d, #0
	movi	v22.2d, #0
	movi	v23.2d, #0
	movi	v24.2d, #0
	movi	v25.2d, #0
	movi	v26.2d, #0
	movi	v27.2d, #0
	movi	v28.2d, #0
	movi	v29.2d, #0
	movi	v30.2d, #0
	movi	v31.2d, #0

	mov	x0, xzr
	mov	x1, xzr
	mov	x2, xzr
	mov	x3, xzr
	mov	x4, xzr
	mov	x5, xzr
	mov	x6, xzr
	mov	x7, xzr
	mov	x8, xzr
	mov	x9, xzr
	mov	x10, xzr
	mov	x11, xzr
	mov	x12, xzr
	mov	x13, xzr
	mov	x14, xzr
	mov	x15, xzr
	mov	x16, xzr
	mov	x18, xzr
	mov	x19, xzr
	mov	x20, xzr
	mov	x21, xzr
	mov	x22, xzr
	mov	x23, xzr
	mov	x24, xzr
	mov	x25, xzr
	mov	x26, xzr
	mov	x27, xzr
	mov	x28, xzr
	mov	x29, xzr
	mov	x30, xzr
	br	x17
xip_exec_jump_end:
	.size	xip_exec_jump, .-xip_exec_jump
	.balign	65536, 0		/* the rest of the page: udf #0 */

#endif

	.section .note.GNU-stack, "", %progbits
