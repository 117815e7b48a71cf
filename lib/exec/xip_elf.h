/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ELF parsing and validation (elf.c): align-check's analysis, the
 * loader, and mkfs's look at the programs it lays out.  Part of the public
 * API (lib/xip.h includes it).
 */
#ifndef XIP_ELF_H
#define XIP_ELF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ------------------------------------------------------------------ */
/* ELF parsing and validation (elf.c)                                  */
/* ------------------------------------------------------------------ */

/*
 * Two steps, so that tools can report on files they would not run:
 *
 *   xip_elf_parse*()         structure: identification, class, type, the
 *                            program header table inside the file, every
 *                            PT_LOAD's file bytes inside the file,
 *                            p_filesz <= p_memsz, no wrapping address,
 *                            PT_INTERP a NUL-terminated path.  Any
 *                            machine is accepted.
 *   xip_elf_validate_load()  loadability on this host: machine, p_offset
 *                            congruent to p_vaddr modulo the page size,
 *                            PT_LOADs ascending and disjoint, a sane span
 *                            inside the user address space, no segment
 *                            both writable and executable, the entry
 *                            point inside an executable segment.
 *
 * Only 64-bit little-endian ELF files are supported.  Every failure is
 * -ENOEXEC (or -ENOMEM, or the read callback's error) with a message
 * "NAME: reason" in the error record.
 */
#define XIP_ELF_MAX_PHNUM	1024	/* program headers (kernel: 64 KiB) */
#define XIP_ELF_MAX_SPAN	(1ULL << 36)	/* bytes from first to last PT_LOAD */
#define XIP_ELF_MAX_ALIGN	(1ULL << 30)	/* larger p_align is capped */
#if defined(__aarch64__)
#define XIP_ELF_USER_TOP	(1ULL << 48)	/* aarch64 48-bit TASK_SIZE */
#else
#define XIP_ELF_USER_TOP	((1ULL << 47) - 4096) /* x86-64 TASK_SIZE */
#endif
#define XIP_ELF_MIN_ADDR	65536ULL	/* default vm.mmap_min_addr */

/* A PT_LOAD program header with a non-zero p_memsz, in file order. */
struct xip_elf_load {
	unsigned int index;	/* index in the program header table */
	uint32_t flags;		/* PF_R | PF_W | PF_X */
	uint64_t offset;	/* p_offset */
	uint64_t vaddr;		/* p_vaddr */
	uint64_t filesz;	/* p_filesz */
	uint64_t memsz;		/* p_memsz */
	uint64_t align;		/* p_align */
};

struct xip_elf {
	uint64_t file_size;
	uint16_t type;		/* ET_EXEC or ET_DYN */
	uint16_t machine;	/* EM_X86_64, EM_AARCH64, ... */
	uint64_t entry;		/* e_entry */
	uint64_t phoff;		/* e_phoff */
	uint16_t phnum;		/* e_phnum */
	void *phdr;		/* the table, phnum Elf64_Phdr (malloc'ed) */
	struct xip_elf_load *load;	/* the PT_LOADs (malloc'ed) */
	size_t nload;
	char *interp;		/* PT_INTERP path, NULL without one */
	bool has_gnu_stack;	/* PT_GNU_STACK present */
	bool exec_stack;	/* PT_GNU_STACK asks for PF_X */
	uint32_t aarch64_features; /* GNU_PROPERTY_AARCH64_FEATURE_1_AND */
	bool has_dynamic;	/* PT_DYNAMIC present */
	bool textrel;		/* DT_TEXTREL or DF_TEXTREL seen */
	bool has_phdr_addr;	/* a PT_LOAD holds the program headers */
	uint64_t phdr_addr;	/* their address (AT_PHDR before the bias) */
	/* set by xip_elf_validate_load() */
	uint64_t lo, hi;	/* page-aligned span of the PT_LOADs */
	uint64_t max_align;	/* base alignment for ET_DYN (>= page) */
};

/* Read up to @len bytes at @off; returns the count (short at EOF) or a
 * negative errno with the error record set. */
typedef ssize_t (*xip_elf_read_fn)(void *ctx, uint64_t off, void *buf,
				   size_t len);

/* Parse the ELF file of @file_size bytes that @read reads.  @name names
 * the file in messages.  On failure @elf holds nothing to free. */
int xip_elf_parse(xip_elf_read_fn read, void *ctx, uint64_t file_size,
		  const char *name, struct xip_elf *elf);
/* Same, on bytes in memory (the whole file).  Test-only (unit, fuzz). */
int xip_elf_parse_buf(const void *buf, size_t len, const char *name,
		      struct xip_elf *elf);
/* Same, on an open file (read with pread, the size from fstat). */
int xip_elf_parse_fd(int fd, const char *name, struct xip_elf *elf);
void xip_elf_free(struct xip_elf *elf);

/* PT_GNU_PROPERTY: GNU_PROPERTY_AARCH64_FEATURE_1_AND bits (aarch64_features) */
#define XIP_ELF_AARCH64_BTI	(1U << 0)	/* built for BTI */
#define XIP_ELF_AARCH64_PAC	(1U << 1)	/* built for PAC */

/* The machine this library was built for (EM_X86_64, EM_AARCH64). */
uint16_t xip_elf_host_machine(void);
/* "x86-64", "aarch64", ... or "machine 1234" (static buffer per value). */
const char *xip_elf_machine_name(uint16_t machine);
/* Is this PT_LOAD's file offset congruent to its address modulo @page? */
bool xip_elf_load_congruent(const struct xip_elf_load *load, uint64_t page);

/*
 * Check that @elf can be loaded on this host with pages of @page_size
 * bytes (0: the host's) and fill in lo, hi and max_align.
 */
int xip_elf_validate_load(struct xip_elf *elf, const char *name,
			  unsigned int page_size);

#endif
