/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The musl front end's entry point (linked with -e xip_front_entry on
 * x86_64 and aarch64), which goes on to musl's _start with every register
 * _start reads as the kernel left it.
 *
 * Before any of the front end's code runs, it asks the kernel for the
 * writable pages every start writes, in one madvise(MADV_POPULATE_WRITE)
 * instead of a page fault each (about ten: musl relocating the front end
 * and setting up, the small variables, the allocator's first blocks):
 * from the first writable page (the writable segment begins with
 * .init_array) to the page the first XIP_FRONT_ARENA_HOT bytes of the
 * allocator's arena end in, the arena being the last of the bss (a
 * common symbol, placed after every .bss section).  The rest of the arena
 * is left to fault in if a start needs it.  Then the text and read-only data, in a second request
 * (MADV_POPULATE_READ: the page cache's pages mapped, nothing copied):
 * one system call instead of the three or four faults that map them 64
 * KiB at a time as a start runs through them (about 2 us less a start
 * here, within exec's budget of native + 30 system calls).
 *
 * The page size is the kernel's (AT_PAGESZ on aarch64, where it may be
 * 4, 16 or 64 KiB).  A kernel without the request (before 5.14) refuses
 * it and the pages fault in as before; nothing depends on it.
 */
#include "front_mem.h"

#define MADV_POPULATE_READ	22
#define MADV_POPULATE_WRITE	23

#if defined(__x86_64__)
#define SYS_madvise		28

	.section .text.xip_front_entry,"ax",@progbits
	.globl	xip_front_entry
	.hidden	xip_front_entry
	.type	xip_front_entry,@function
xip_front_entry:
	/* %rdx: the kernel's (an exit function from a dynamic loader) */
	mov	%rdx, %r9
	lea	__init_array_start(%rip), %rdi
	and	$-4096, %rdi
	lea	xip_front_arena+XIP_FRONT_ARENA_HOT(%rip), %rsi
	and	$-4096, %rsi	/* not the page the arena's hot bytes end in */
	sub	%rdi, %rsi
	mov	$MADV_POPULATE_WRITE, %edx
	mov	$SYS_madvise, %eax
	syscall
	/* the text and read-only data: from the headers to the first
	 * writable page */
	lea	__ehdr_start(%rip), %rdi
	lea	__init_array_start(%rip), %rsi
	and	$-4096, %rsi
	sub	%rdi, %rsi
	mov	$MADV_POPULATE_READ, %edx
	mov	$SYS_madvise, %eax
	syscall
	mov	%r9, %rdx
	jmp	_start
	.size	xip_front_entry, .-xip_front_entry

/*
 * int xip_front_on_stack(int (*fn)(void *), void *arg, void *top):
 * fn(arg) run on the stack ending at @top (16-byte aligned), back on
 * ours for the return.
 */
	.section .text.xip_front_on_stack,"ax",@progbits
	.globl	xip_front_on_stack
	.hidden	xip_front_on_stack
	.type	xip_front_on_stack,@function
xip_front_on_stack:
	push	%rbp
	mov	%rsp, %rbp
	mov	%rdx, %rsp
	mov	%rdi, %rax
	mov	%rsi, %rdi
	call	*%rax
	mov	%rbp, %rsp
	pop	%rbp
	ret
	.size	xip_front_on_stack, .-xip_front_on_stack

#elif defined(__aarch64__)
#define SYS_madvise		233
#define AT_PAGESZ		6

	.section .text.xip_front_entry,"ax",%progbits
	.globl	xip_front_entry
	.hidden	xip_front_entry
	.type	xip_front_entry,%function
xip_front_entry:
	/* x0: the kernel's (an exit function from a dynamic loader) */
	mov	x9, x0
	/* the page size: auxv, past argc, argv and envp on the stack */
	mov	x10, sp
	ldr	x11, [x10], #8
	add	x10, x10, x11, lsl #3
	add	x10, x10, #8
1:	ldr	x11, [x10], #8
	cbnz	x11, 1b
	mov	x13, #4096
2:	ldp	x11, x12, [x10], #16
	cbz	x11, 3f
	cmp	x11, #AT_PAGESZ
	b.ne	2b
	mov	x13, x12
3:	sub	x13, x13, #1		/* x13: page size - 1 */
	adrp	x0, __init_array_start
	add	x0, x0, :lo12:__init_array_start
	bic	x0, x0, x13		/* the first writable page */
	adrp	x1, xip_front_arena
	add	x1, x1, :lo12:xip_front_arena
	add	x1, x1, #(XIP_FRONT_ARENA_HOT / 4096), lsl #12
	bic	x1, x1, x13		/* not the page they end in */
	sub	x1, x1, x0
	mov	x2, #MADV_POPULATE_WRITE
	mov	x8, #SYS_madvise
	svc	#0
	/* the text and read-only data: from the headers to the first
	 * writable page */
	adrp	x0, __ehdr_start
	add	x0, x0, :lo12:__ehdr_start
	adrp	x1, __init_array_start
	add	x1, x1, :lo12:__init_array_start
	bic	x1, x1, x13
	sub	x1, x1, x0
	mov	x2, #MADV_POPULATE_READ
	mov	x8, #SYS_madvise
	svc	#0
	mov	x0, x9
	b	_start
	.size	xip_front_entry, .-xip_front_entry

/* int xip_front_on_stack(int (*fn)(void *), void *arg, void *top) */
	.section .text.xip_front_on_stack,"ax",%progbits
	.globl	xip_front_on_stack
	.hidden	xip_front_on_stack
	.type	xip_front_on_stack,%function
xip_front_on_stack:
	hint	#34			/* bti c */
	stp	x29, x30, [sp, #-16]!
	mov	x29, sp
	mov	sp, x2
	mov	x3, x0
	mov	x0, x1
	blr	x3
	mov	sp, x29
	ldp	x29, x30, [sp], #16
	ret
	.size	xip_front_on_stack, .-xip_front_on_stack
#endif

	.section .note.GNU-stack,"",%progbits
