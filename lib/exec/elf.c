// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * ELF parsing and validation.  Every number read from the file is checked
 * before it is used as an offset, a size or an address: the file may be
 * hostile.  Parsing checks the structure; xip_elf_validate_load() checks
 * what the loader needs on this host.
 */
#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "exec/xip_elf.h"
#include "util/xip_debug.h"
#include "util/xip_error.h"
#include "util/xip_util.h"

#define ELF_MAX_DYNAMIC (1U << 20)	/* bytes of PT_DYNAMIC scanned */

static int elf_err(const char *name, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int elf_err(const char *name, const char *fmt, ...)
{
	char reason[XIP_ERRMSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	return xip_error(-ENOEXEC, "%s: %s", name, reason);
}

uint16_t xip_elf_host_machine(void)
{
#if defined(__x86_64__)
	return EM_X86_64;
#elif defined(__aarch64__)
	return EM_AARCH64;
#else
#error "unsupported architecture"
#endif
}

const char *xip_elf_machine_name(uint16_t machine)
{
	static XIP_TLS char buf[32];

	switch (machine) {
	case EM_X86_64:
		return "x86-64";
	case EM_386:
		return "i386";
	case EM_AARCH64:
		return "aarch64";
	case EM_ARM:
		return "arm";
	case EM_RISCV:
		return "riscv";
	case EM_PPC64:
		return "ppc64";
	case EM_S390:
		return "s390";
	default:
		snprintf(buf, sizeof(buf), "machine %u", machine);
		return buf;
	}
}

bool xip_elf_load_congruent(const struct xip_elf_load *load, uint64_t page)
{
	return page && (load->offset % page) == (load->vaddr % page);
}

void xip_elf_free(struct xip_elf *elf)
{
	if (!elf)
		return;
	free(elf->phdr);
	free(elf->load);
	free(elf->interp);
	memset(elf, 0, sizeof(*elf));
}

/* Read exactly @len bytes at @off (already checked against the size). */
static int elf_read(xip_elf_read_fn read, void *ctx, const char *name,
		    uint64_t off, void *buf, size_t len)
{
	ssize_t n = read(ctx, off, buf, len);

	if (n < 0)
		return (int)n;
	if ((size_t)n != len)
		return elf_err(name, "truncated: short read at offset %" PRIu64,
			       off);
	return 0;
}

/* Is [off, off + len) inside a file of @size bytes? */
static bool in_file(uint64_t off, uint64_t len, uint64_t size)
{
	return off <= size && len <= size - off;
}

static int check_ident(const Elf64_Ehdr *eh, uint64_t size, const char *name)
{
	if (size < SELFMAG || memcmp(eh->e_ident, ELFMAG, SELFMAG))
		return elf_err(name, "not an ELF file");
	if (eh->e_ident[EI_CLASS] == ELFCLASS32)
		return elf_err(name, "32-bit ELF files are not supported");
	if (eh->e_ident[EI_CLASS] != ELFCLASS64)
		return elf_err(name, "invalid ELF class %u",
			       eh->e_ident[EI_CLASS]);
	if (size < sizeof(Elf64_Ehdr))
		return elf_err(name, "truncated: %" PRIu64
			       " bytes, shorter than the ELF header", size);
	if (eh->e_ident[EI_DATA] == ELFDATA2MSB)
		return elf_err(name, "big-endian ELF files are not supported");
	if (eh->e_ident[EI_DATA] != ELFDATA2LSB)
		return elf_err(name, "invalid ELF data encoding %u",
			       eh->e_ident[EI_DATA]);
	if (eh->e_ident[EI_VERSION] != EV_CURRENT ||
	    eh->e_version != EV_CURRENT)
		return elf_err(name, "invalid ELF version %u",
			       eh->e_version);
	return 0;
}

static int check_header(const Elf64_Ehdr *eh, uint64_t size, const char *name)
{
	switch (eh->e_type) {
	case ET_EXEC:
	case ET_DYN:
		break;
	case ET_REL:
		return elf_err(name, "a relocatable object, not an executable");
	case ET_CORE:
		return elf_err(name, "a core dump, not an executable");
	default:
		return elf_err(name, "invalid ELF type %u", eh->e_type);
	}
	if (eh->e_phentsize != sizeof(Elf64_Phdr))
		return elf_err(name, "invalid program header size %u",
			       eh->e_phentsize);
	if (eh->e_phnum == 0)
		return elf_err(name, "no program headers");
	if (eh->e_phnum == PN_XNUM || eh->e_phnum > XIP_ELF_MAX_PHNUM)
		return elf_err(name, "too many program headers (%u, at most %u)",
			       eh->e_phnum, XIP_ELF_MAX_PHNUM);
	if (!in_file(eh->e_phoff, (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr),
		     size))
		return elf_err(name, "truncated: program headers at 0x%" PRIx64
			       " beyond the end of the file (%" PRIu64
			       " bytes)", eh->e_phoff, size);
	return 0;
}

static int add_load(struct xip_elf *elf, const Elf64_Phdr *ph,
		    unsigned int index, const char *name)
{
	struct xip_elf_load *l;

	if (ph->p_filesz > ph->p_memsz)
		return elf_err(name, "segment %u: file size 0x%" PRIx64
			       " exceeds memory size 0x%" PRIx64, index,
			       ph->p_filesz, ph->p_memsz);
	if (!in_file(ph->p_offset, ph->p_filesz, elf->file_size))
		return elf_err(name, "truncated: segment %u (offset 0x%" PRIx64
			       ", 0x%" PRIx64 " bytes) beyond the end of the"
			       " file (%" PRIu64 " bytes)", index, ph->p_offset,
			       ph->p_filesz, elf->file_size);
	if (ph->p_vaddr > UINT64_MAX - ph->p_memsz)
		return elf_err(name, "segment %u: address 0x%" PRIx64
			       " + size 0x%" PRIx64 " wraps around", index,
			       ph->p_vaddr, ph->p_memsz);
	if (ph->p_memsz == 0)
		return 0;	/* maps nothing, like the kernel */
	l = &elf->load[elf->nload++];
	l->index = index;
	l->flags = ph->p_flags & (PF_R | PF_W | PF_X);
	l->offset = ph->p_offset;
	l->vaddr = ph->p_vaddr;
	l->filesz = ph->p_filesz;
	l->memsz = ph->p_memsz;
	l->align = ph->p_align;
	return 0;
}

static int read_interp(struct xip_elf *elf, const Elf64_Phdr *ph,
		       xip_elf_read_fn read, void *ctx, const char *name)
{
	char *path;
	int ret;

	if (elf->interp)
		return elf_err(name, "more than one PT_INTERP");
	if (ph->p_filesz < 2 || ph->p_filesz > PATH_MAX)
		return elf_err(name, "invalid interpreter name length %" PRIu64,
			       ph->p_filesz);
	if (!in_file(ph->p_offset, ph->p_filesz, elf->file_size))
		return elf_err(name, "truncated: interpreter name beyond the"
			       " end of the file");
	path = malloc(ph->p_filesz);
	if (!path)
		return xip_error(-ENOMEM, "%s: out of memory", name);
	ret = elf_read(read, ctx, name, ph->p_offset, path, ph->p_filesz);
	if (!ret && (path[ph->p_filesz - 1] != '\0' ||
		     strlen(path) != ph->p_filesz - 1))
		ret = elf_err(name, "interpreter name is not a NUL-terminated"
			      " string");
	if (ret) {
		free(path);
		return ret;
	}
	elf->interp = path;
	return 0;
}

/* Look for DT_TEXTREL or DF_TEXTREL; a damaged table is left to ld.so. */
static void scan_dynamic(struct xip_elf *elf, const Elf64_Phdr *ph,
			 xip_elf_read_fn read, void *ctx)
{
	uint64_t len = ph->p_filesz;
	Elf64_Dyn *dyn;
	size_t n;

	elf->has_dynamic = true;
	if (len > ELF_MAX_DYNAMIC)
		len = ELF_MAX_DYNAMIC;
	if (!in_file(ph->p_offset, len, elf->file_size))
		return;
	n = len / sizeof(*dyn);
	dyn = malloc(n * sizeof(*dyn) + 1);
	if (!dyn)
		return;
	if (n && read(ctx, ph->p_offset, dyn, n * sizeof(*dyn)) ==
		 (ssize_t)(n * sizeof(*dyn))) {
		for (size_t i = 0; i < n && dyn[i].d_tag != DT_NULL; i++) {
			if (dyn[i].d_tag == DT_TEXTREL ||
			    (dyn[i].d_tag == DT_FLAGS &&
			     (dyn[i].d_un.d_val & DF_TEXTREL)))
				elf->textrel = true;
		}
	}
	free(dyn);
	xip_error_clear();
}

#define ELF_PT_GNU_PROPERTY	0x6474e553
#define ELF_NT_GNU_PROPERTY	5		/* NT_GNU_PROPERTY_TYPE_0 */
#define ELF_AARCH64_FEATURE_1	0xc0000000U	/* ..._AARCH64_FEATURE_1_AND */
#define ELF_MAX_PROPERTY	1024		/* the kernel's NOTE_DATA_SZ */

/*
 * The kernel's parse_elf_properties() for aarch64: the
 * GNU_PROPERTY_AARCH64_FEATURE_1_AND word of the "GNU" property note
 * (BTI, PAC).  A damaged note is ignored: the program then runs unguarded.
 */
static void scan_property(struct xip_elf *elf, const Elf64_Phdr *ph,
			  xip_elf_read_fn read, void *ctx)
{
	uint32_t buf[ELF_MAX_PROPERTY / 4];
	uint64_t len = ph->p_filesz, o;

	if (elf->machine != EM_AARCH64 || len < 16 ||
	    len > ELF_MAX_PROPERTY || !in_file(ph->p_offset, len,
					       elf->file_size) ||
	    read(ctx, ph->p_offset, buf, len) != (ssize_t)len) {
		xip_error_clear();
		return;
	}
	/* Elf64_Nhdr: namesz 4, descsz, type; "GNU\0"; the properties */
	if (buf[0] != 4 || buf[2] != ELF_NT_GNU_PROPERTY ||
	    memcmp(&buf[3], "GNU", 4) || buf[1] > len - 16)
		return;
	for (o = 16; o + 8 <= 16 + (uint64_t)buf[1];) {
		uint32_t type = buf[o / 4], size = buf[o / 4 + 1];

		if (size > 16 + (uint64_t)buf[1] - o - 8)
			return;
		if (type == ELF_AARCH64_FEATURE_1 && size == 4)
			elf->aarch64_features = buf[o / 4 + 2];
		o += 8 + (((uint64_t)size + 7) & ~7ULL);
	}
}

static int parse_phdrs(struct xip_elf *elf, xip_elf_read_fn read, void *ctx,
		       const char *name)
{
	const Elf64_Phdr *tab = elf->phdr;
	int ret = 0;

	elf->load = calloc(elf->phnum, sizeof(*elf->load));
	if (!elf->load)
		return xip_error(-ENOMEM, "%s: out of memory", name);
	for (unsigned int i = 0; i < elf->phnum && !ret; i++) {
		const Elf64_Phdr *ph = &tab[i];

		switch (ph->p_type) {
		case PT_LOAD:
			ret = add_load(elf, ph, i, name);
			/* the kernel's AT_PHDR: the PT_LOAD holding e_phoff */
			if (!ret && !elf->has_phdr_addr &&
			    ph->p_offset <= elf->phoff &&
			    elf->phoff - ph->p_offset < ph->p_filesz) {
				elf->has_phdr_addr = true;
				elf->phdr_addr = elf->phoff - ph->p_offset +
						 ph->p_vaddr;
			}
			break;
		case PT_INTERP:
			ret = read_interp(elf, ph, read, ctx, name);
			break;
		case PT_GNU_STACK:
			elf->has_gnu_stack = true;
			elf->exec_stack = ph->p_flags & PF_X;
			break;
		case PT_DYNAMIC:
			scan_dynamic(elf, ph, read, ctx);
			break;
		case ELF_PT_GNU_PROPERTY:
			scan_property(elf, ph, read, ctx);
			break;
		default:
			break;
		}
	}
	if (!ret && elf->nload == 0)
		ret = elf_err(name, "no loadable segments");
	return ret;
}

int xip_elf_parse(xip_elf_read_fn read, void *ctx, uint64_t file_size,
		  const char *name, struct xip_elf *elf)
{
	Elf64_Ehdr eh;
	size_t tab;
	int ret;

	memset(elf, 0, sizeof(*elf));
	memset(&eh, 0, sizeof(eh));
	elf->file_size = file_size;
	ret = elf_read(read, ctx, name, 0, &eh,
		       file_size < sizeof(eh) ? (size_t)file_size : sizeof(eh));
	if (!ret)
		ret = check_ident(&eh, file_size, name);
	if (!ret)
		ret = check_header(&eh, file_size, name);
	if (ret)
		return ret;
	elf->type = eh.e_type;
	elf->machine = eh.e_machine;
	elf->entry = eh.e_entry;
	elf->phoff = eh.e_phoff;
	elf->phnum = eh.e_phnum;
	tab = (size_t)eh.e_phnum * sizeof(Elf64_Phdr);
	elf->phdr = malloc(tab);
	if (!elf->phdr)
		ret = xip_error(-ENOMEM, "%s: out of memory", name);
	if (!ret)
		ret = elf_read(read, ctx, name, eh.e_phoff, elf->phdr, tab);
	if (!ret)
		ret = parse_phdrs(elf, read, ctx, name);
	if (ret)
		xip_elf_free(elf);
	return ret;
}

struct buf_ctx {
	const uint8_t *buf;
	size_t len;
};

static ssize_t buf_read(void *ctx, uint64_t off, void *dst, size_t len)
{
	const struct buf_ctx *b = ctx;

	if (off >= b->len)
		return 0;
	if (len > b->len - off)
		len = b->len - off;
	memcpy(dst, b->buf + off, len);
	return (ssize_t)len;
}

int xip_elf_parse_buf(const void *buf, size_t len, const char *name,
		      struct xip_elf *elf)
{
	struct buf_ctx b = { buf, len };

	return xip_elf_parse(buf_read, &b, len, name, elf);
}

struct fd_ctx {
	int fd;
	const char *name;
};

static ssize_t fd_read(void *ctx, uint64_t off, void *dst, size_t len)
{
	const struct fd_ctx *f = ctx;
	ssize_t n = xip_pread_full(f->fd, dst, len, off);

	if (n < 0)
		return xip_error((int)n, "%s: %s", f->name, strerror((int)-n));
	return n;
}

int xip_elf_parse_fd(int fd, const char *name, struct xip_elf *elf)
{
	struct fd_ctx f = { fd, name };
	struct stat st;

	memset(elf, 0, sizeof(*elf));
	if (fstat(fd, &st) < 0)
		return xip_error(-errno, "%s: %s", name, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return xip_error(-EACCES, "%s: not a regular file", name);
	return xip_elf_parse(fd_read, &f, (uint64_t)st.st_size, name, elf);
}

static int validate_segment(const struct xip_elf_load *l, uint64_t page,
			    const char *name)
{
	if (!xip_elf_load_congruent(l, page))
		return elf_err(name, "segment %u: file offset 0x%" PRIx64
			       " and address 0x%" PRIx64 " differ modulo the"
			       " page size %" PRIu64, l->index, l->offset,
			       l->vaddr, page);
	if ((l->flags & PF_W) && (l->flags & PF_X))
		return elf_err(name, "segment %u is both writable and"
			       " executable (refused)", l->index);
	if (l->vaddr + l->memsz > XIP_ELF_USER_TOP)
		return elf_err(name, "segment %u: address 0x%" PRIx64
			       " + size 0x%" PRIx64 " beyond the user address"
			       " space", l->index, l->vaddr, l->memsz);
	return 0;
}

static uint64_t load_alignment(const struct xip_elf *elf, uint64_t page)
{
	uint64_t align = page;

	for (size_t i = 0; i < elf->nload; i++) {
		uint64_t a = elf->load[i].align;

		/* like the kernel, p_align that is not a power of 2 is
		 * ignored */
		if (a > align && !(a & (a - 1)))
			align = a;
	}
	return align > XIP_ELF_MAX_ALIGN ? XIP_ELF_MAX_ALIGN : align;
}

static bool entry_executable(const struct xip_elf *elf)
{
	for (size_t i = 0; i < elf->nload; i++) {
		const struct xip_elf_load *l = &elf->load[i];

		if ((l->flags & PF_X) && elf->entry >= l->vaddr &&
		    elf->entry - l->vaddr < l->memsz)
			return true;
	}
	return false;
}

int xip_elf_validate_load(struct xip_elf *elf, const char *name,
			  unsigned int page_size)
{
	uint64_t page = page_size ? page_size : (uint64_t)xip_host_page_size();
	const struct xip_elf_load *l, *prev = NULL;
	int ret;

	if (elf->machine != xip_elf_host_machine())
		return elf_err(name, "ELF file for %s, this host runs %s",
			       xip_elf_machine_name(elf->machine),
			       xip_elf_machine_name(xip_elf_host_machine()));
	for (size_t i = 0; i < elf->nload; i++, prev = l) {
		l = &elf->load[i];
		ret = validate_segment(l, page, name);
		if (ret)
			return ret;
		if (prev && l->vaddr < prev->vaddr + prev->memsz)
			return elf_err(name, "segment %u (0x%" PRIx64 ") %s"
				       " segment %u (0x%" PRIx64 "-0x%" PRIx64
				       ")", l->index, l->vaddr,
				       l->vaddr < prev->vaddr ?
				       "comes before" : "overlaps",
				       prev->index, prev->vaddr,
				       prev->vaddr + prev->memsz);
	}
	l = &elf->load[elf->nload - 1];
	elf->lo = elf->load[0].vaddr & ~(page - 1);
	/* below XIP_ELF_USER_TOP, so rounding up cannot wrap */
	elf->hi = (l->vaddr + l->memsz + page - 1) & ~(page - 1);
	if (elf->hi - elf->lo > XIP_ELF_MAX_SPAN)
		return elf_err(name, "segments span 0x%" PRIx64 " bytes (at"
			       " most 0x%llx)", elf->hi - elf->lo,
			       XIP_ELF_MAX_SPAN);
	if (elf->type == ET_EXEC && elf->lo < XIP_ELF_MIN_ADDR)
		return elf_err(name, "fixed address 0x%" PRIx64 " below the"
			       " lowest mappable address 0x%llx", elf->lo,
			       XIP_ELF_MIN_ADDR);
	if (!entry_executable(elf))
		return elf_err(name, "entry point 0x%" PRIx64 " is not inside"
			       " an executable segment", elf->entry);
	elf->max_align = load_alignment(elf, page);
	return 0;
}
