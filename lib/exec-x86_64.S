/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The last instructions of the loader on x86-64: the state the kernel
 * leaves at the entry point of a new program (System V ABI, "Process
 * Initialization"): %rsp at argc, %rdx = 0 (no function for atexit), the
 * other general registers zero, DF clear, x87 and SSE control words at
 * their defaults, the vector registers zero, no thread pointer.
 *
 *	void xip_exec_jump(uint64_t entry, uint64_t sp);
 */
#ifdef __x86_64__

	.section .rodata
	.balign 4
.Lmxcsr:
	.long	0x1f80

	.text
	.globl	xip_exec_jump
	.hidden	xip_exec_jump
	.type	xip_exec_jump, @function
xip_exec_jump:
	mov	%rsi, %rsp
	mov	%rdi, -8(%rsp)		/* the entry, in the red zone */

	mov	$158, %eax		/* arch_prctl(ARCH_SET_FS, 0) */
	mov	$0x1002, %edi
	xor	%esi, %esi
	syscall

	fninit
	ldmxcsr	.Lmxcsr(%rip)
	pxor	%xmm0, %xmm0
	pxor	%xmm1, %xmm1
	pxor	%xmm2, %xmm2
	pxor	%xmm3, %xmm3
	pxor	%xmm4, %xmm4
	pxor	%xmm5, %xmm5
	pxor	%xmm6, %xmm6
	pxor	%xmm7, %xmm7
	pxor	%xmm8, %xmm8
	pxor	%xmm9, %xmm9
	pxor	%xmm10, %xmm10
	pxor	%xmm11, %xmm11
	pxor	%xmm12, %xmm12
	pxor	%xmm13, %xmm13
	pxor	%xmm14, %xmm14
	pxor	%xmm15, %xmm15

	cld
	xor	%eax, %eax
	xor	%ebx, %ebx
	xor	%ecx, %ecx
	xor	%edx, %edx
	xor	%esi, %esi
	xor	%edi, %edi
	xor	%ebp, %ebp
	xor	%r8d, %r8d
	xor	%r9d, %r9d
	xor	%r10d, %r10d
	xor	%r11d, %r11d
	xor	%r12d, %r12d
	xor	%r13d, %r13d
	xor	%r14d, %r14d
	xor	%r15d, %r15d
	jmp	*-8(%rsp)
	.size	xip_exec_jump, .-xip_exec_jump

#endif

	.section .note.GNU-stack, "", @progbits
