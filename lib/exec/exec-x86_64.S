/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The last instructions of the loader on x86-64: the state the kernel
 * leaves at the entry point of a new program (System V ABI, "Process
 * Initialization"): %rsp at argc, %rdx = 0 (no function for atexit), the
 * other general registers zero, DF clear, x87 and SSE control words at
 * their defaults, the vector registers zero, no thread pointer.
 *
 * Before that it unmaps the loader's own executable (see below).
 */
#ifdef __x86_64__

/*
 * void xip_exec_jump(uint64_t entry, uint64_t sp,
 *		      const struct xip_unmap *unmap, size_t n);
 *
 * Position-independent from xip_exec_jump to xip_exec_jump_end, on a page
 * of its own in the executable, which the loader leaves mapped while it
 * unmaps the n ranges {addr, len} at @unmap (the rest of its own
 * executable and memory).  Only system calls and register work follow;
 * the constant below sits on the same page.
 *
 * Its section sorts first in the linker's .text (.text.unlikely.*), so
 * that in a front end linked with -z noseparate-code it follows the ELF
 * headers' page, which stays with it: the rest of the file is one range
 * (exec.c, self_ranges_cb).
 */
	.section .text.unlikely.xip_exec_jump, "ax", @progbits
	.balign	4096			/* starts a page */
	.globl	xip_exec_jump
	.hidden	xip_exec_jump
	.globl	xip_exec_jump_end
	.hidden	xip_exec_jump_end
	.type	xip_exec_jump, @function
xip_exec_jump:
	mov	%rsi, %rsp
	mov	%rdi, -8(%rsp)		/* the entry, in the red zone */
	mov	%rdx, %r12
	mov	%rcx, %r13
1:	test	%r13, %r13
	jz	2f
	mov	$11, %eax		/* munmap(addr, len) */
	mov	(%r12), %rdi
	mov	8(%r12), %rsi
	syscall
	add	$16, %r12
	dec	%r13
	jmp	1b
2:
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

	.balign 4
.Lmxcsr:
	.long	0x1f80
xip_exec_jump_end:
	.size	xip_exec_jump, .-xip_exec_jump
	.balign	4096, 0xcc		/* the rest of the page: int3 */

#endif

	.section .note.GNU-stack, "", @progbits
