/*
 * A program whose indirect branch lands on no BTI landing pad: killed by
 * SIGILL when its text is guarded (PROT_BTI on a CPU with BTI), exit 0
 * otherwise.  Linked once with -z force-bti, once without.
 */
	.text
	.globl	_start
_start:
	hint	#34		/* bti c */
	adr	x0, 1f
	br	x0		/* no landing pad at 1f: a BTI fault when guarded */
1:	mov	x0, #0
	mov	x8, #93		/* exit(0) */
	svc	#0
	.section .note.GNU-stack, "", %progbits
