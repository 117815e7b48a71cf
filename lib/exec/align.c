// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * align-check: is an ELF file in an image ready to be run in place?
 *
 * The ELF structure comes from elf.c's parser; this file looks at what
 * running it from the segment would take: each PT_LOAD congruent to its
 * address modulo the page size and aligned to at least a page, the image
 * blocks behind it contiguous (one mmap per run), which pages stay shared
 * with the segment and which get copied (writable data and relro, text
 * relocations, a last page the loader must zero), W+X segments and an
 * executable stack, and with 2 MiB pages whether each large segment could
 * be mapped huge.  Block runs come from the engine (xip_file_runs), whose
 * block numbers are validated.
 */
#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "exec/xip_elf.h"
#include "exec/xip_exec.h"
#include "exec/exec_int.h"
#include "util/xip_error.h"
#include "util/xip_ext2.h"
#include "util/xip_util.h"
#include "reader/xip_image.h"
#include "reader/xip_reader.h"
#include "engine/xip_engine.h"

#define HUGE_SIZE (2ULL << 20)

static void add_reason(struct xip_align_file *f, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void add_reason(struct xip_align_file *f, const char *fmt, ...)
{
	char *text, *joined;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&text, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	f->ready = false;
	f->nreasons++;
	if (!f->reasons) {
		f->reasons = text;
		return;
	}
	if (asprintf(&joined, "%s; %s", f->reasons, text) >= 0) {
		free(f->reasons);
		f->reasons = joined;
	}
	free(text);
}

static const char *seg_perm(uint32_t flags, char buf[4])
{
	buf[0] = (flags & PF_R) ? 'r' : '-';
	buf[1] = (flags & PF_W) ? 'w' : '-';
	buf[2] = (flags & PF_X) ? 'x' : '-';
	buf[3] = '\0';
	return buf;
}

struct align_ctx {
	struct xip_image *img;
	ext2_ino_t ino;
	const struct xip_align_opts *o;
	uint64_t page;
	struct xip_run *runs;
	size_t nruns;
	struct xip_elf elf;
	struct xip_align_file *f;
};

static ssize_t img_read(void *arg, uint64_t off, void *buf, size_t len)
{
	struct align_ctx *a = arg;

	return xip_file_read(a->img, a->ino, off, buf, len);
}

/* The run holding file block @lblk, or NULL (a hole). */
static const struct xip_run *run_at(const struct align_ctx *a, uint64_t lblk)
{
	size_t lo = 0, hi = a->nruns;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct xip_run *r = &a->runs[mid];

		if (lblk < r->lblk)
			hi = mid;
		else if (lblk >= r->lblk + r->len)
			lo = mid + 1;
		else
			return r;
	}
	return NULL;
}

/*
 * The runs behind file blocks [b0, b1]: how many (one mmap each) and the
 * first hole, if any (UINT64_MAX when none).
 */
static uint64_t count_runs(const struct align_ctx *a, uint64_t b0,
			   uint64_t b1, uint64_t *hole)
{
	uint64_t n = 0, next = b0;

	*hole = UINT64_MAX;
	while (next <= b1) {
		const struct xip_run *r = run_at(a, next);

		if (!r) {
			if (*hole == UINT64_MAX)
				*hole = next;
			/* skip to the next run */
			for (size_t i = 0; i < a->nruns; i++)
				if (a->runs[i].lblk > next) {
					next = a->runs[i].lblk;
					break;
				}
			if (next <= b1 && !run_at(a, next))
				break;
			continue;
		}
		n++;
		next = r->lblk + r->len;
	}
	return n;
}

static void check_huge(struct align_ctx *a, const struct xip_elf_load *l,
		       struct xip_align_seg *s, uint64_t max_align)
{
	uint64_t bs = a->img->block_size, addr, end;
	char *why = s->huge_why;
	size_t wl = sizeof(s->huge_why);

	s->huge_checked = true;
	if (l->flags & PF_W) {
		snprintf(why, wl, "writable: its pages are copied");
		return;
	}
	if (l->filesz < HUGE_SIZE) {
		snprintf(why, wl, "only 0x%" PRIx64 " bytes come from the file",
			 l->filesz);
		return;
	}
	if ((l->vaddr - l->offset) % HUGE_SIZE) {
		snprintf(why, wl,
			 "file offset 0x%" PRIx64 " and address 0x%" PRIx64 " differ modulo 2 MiB",
			 l->offset, l->vaddr);
		return;
	}
	if (a->elf.type == ET_DYN && max_align < HUGE_SIZE) {
		snprintf(why, wl,
			 "p_align 0x%" PRIx64 ": a position-independent file is loaded at an address aligned to less than 2 MiB",
			 max_align);
		return;
	}
	addr = (l->vaddr + HUGE_SIZE - 1) & ~(HUGE_SIZE - 1);
	end = l->vaddr + l->filesz;
	if (addr < l->vaddr || addr + HUGE_SIZE > end) {
		snprintf(why, wl, "no whole 2 MiB-aligned 2 MiB range in the file bytes");
		return;
	}
	for (; addr + HUGE_SIZE <= end && addr + HUGE_SIZE > addr;
	     addr += HUGE_SIZE) {
		uint64_t off = l->offset + (addr - l->vaddr);
		uint64_t lblk = off / bs, need = HUGE_SIZE / bs;
		const struct xip_run *r = run_at(a, lblk);
		uint64_t pblk;

		if (!r) {
			if (!why[0])
				snprintf(why, wl,
					 "file offset 0x%" PRIx64 " is a hole", off);
			continue;
		}
		pblk = r->pblk + (lblk - r->lblk);
		if ((pblk * bs) % HUGE_SIZE) {
			if (!why[0])
				snprintf(why, wl,
					 "block %llu behind file offset 0x%" PRIx64 " is not 2 MiB-aligned in the image",
					 (unsigned long long)pblk, off);
			continue;
		}
		if (r->lblk + r->len - lblk < need) {
			if (!why[0])
				snprintf(why, wl,
					 "the run of blocks behind file offset 0x%" PRIx64 " is shorter than 2 MiB",
					 off);
			continue;
		}
		s->huge_pages++;
	}
}

static void check_segment(struct align_ctx *a, const struct xip_elf_load *l,
			  struct xip_align_seg *s, uint64_t max_align)
{
	struct xip_align_file *f = a->f;
	uint64_t page = a->page, bs = a->img->block_size;
	uint64_t b0, b1, hole;
	char perm[4];

	s->index = l->index;
	s->flags = l->flags;
	s->offset = l->offset;
	s->vaddr = l->vaddr;
	s->filesz = l->filesz;
	s->memsz = l->memsz;
	s->align = l->align;
	seg_perm(l->flags, perm);
	if (!xip_elf_load_congruent(l, page))
		add_reason(f, "segment %u (%s): p_offset 0x%" PRIx64 " not congruent to p_vaddr 0x%" PRIx64 " modulo the page size %" PRIu64,
			   l->index, perm, l->offset, l->vaddr, page);
	if (l->align < page)
		add_reason(f, "segment %u (%s): p_align 0x%" PRIx64 " smaller than the page size %" PRIu64,
			   l->index, perm, l->align, page);
	if ((l->flags & PF_W) && (l->flags & PF_X))
		add_reason(f, "segment %u (%s): writable and executable",
			   l->index, perm);
	if (l->filesz) {
		uint64_t p0 = l->offset / page;
		uint64_t p1 = (l->offset + l->filesz - 1) / page;

		s->pages = p1 - p0 + 1;
		if (l->flags & PF_W) {
			s->copied = s->pages;
		} else if (a->elf.textrel) {
			s->copied = s->pages;
		} else {
			s->shared = s->pages;
			if (l->memsz > l->filesz &&
			    (l->offset + l->filesz) % page) {
				/* the loader zeroes the rest of the page */
				s->shared--;
				s->copied++;
			}
		}
		b0 = l->offset / bs;
		b1 = (l->offset + l->filesz - 1) / bs;
		s->runs = count_runs(a, b0, b1, &hole);
		if (hole != UINT64_MAX)
			add_reason(f, "segment %u (%s): file block %" PRIu64 " behind it is a hole",
				   l->index, perm, hole);
		else if (s->runs > 1)
			add_reason(f, "segment %u (%s): its blocks are not contiguous (%" PRIu64 " runs: %" PRIu64 " mmaps instead of 1)",
				   l->index, perm, s->runs, s->runs);
		f->mmaps += s->runs ? s->runs : 1;
	} else {
		f->mmaps++;	/* anonymous (bss only) */
	}
	f->shared += s->shared;
	f->copied += s->copied;
	if (a->o->huge && l->memsz >= HUGE_SIZE) {
		check_huge(a, l, s, max_align);
		f->huge_pages += s->huge_pages;
		if (!s->huge_pages)
			add_reason(f, "segment %u (%s): no 2 MiB mapping: %s",
				   l->index, perm, s->huge_why);
	}
}

static int read_magic(struct xip_image *img, ext2_ino_t ino, bool *elf)
{
	char magic[SELFMAG];
	ssize_t n = xip_file_read(img, ino, 0, magic, sizeof(magic));

	if (n < 0)
		return (int)n;
	*elf = n == SELFMAG && !memcmp(magic, ELFMAG, SELFMAG);
	return 0;
}

/* An ELF file that is no program: a relocatable object or a core dump. */
static bool elf_not_program(struct xip_image *img, ext2_ino_t ino)
{
	unsigned char h[EI_NIDENT + 2];
	unsigned int type;

	if (xip_file_read(img, ino, 0, h, sizeof(h)) != (ssize_t)sizeof(h))
		return false;
	type = h[EI_DATA] == ELFDATA2MSB ? (h[EI_NIDENT] << 8) | h[EI_NIDENT + 1] :
					   h[EI_NIDENT] | (h[EI_NIDENT + 1] << 8);
	return type == ET_REL || type == ET_CORE;
}

/* The reason of a parse failure without the "NAME: " prefix. */
static const char *parse_reason(const char *path)
{
	const char *m = xip_errmsg();
	size_t n = strlen(path);

	if (!strncmp(m, path, n) && !strncmp(m + n, ": ", 2))
		return m + n + 2;
	return m;
}

/* The page sizes the machine's kernels use: x86-64 4K; arm64 4K, 16K, 64K. */
static bool machine_page_ok(uint16_t machine, uint64_t page)
{
	if (machine == EM_AARCH64)
		return page == 4096 || page == 16384 || page == 65536;
	if (machine == EM_X86_64)
		return page == 4096;
	return true;
}

/*
 * The page size a file is judged with: --page-size; else, for an arm64
 * program, the image's block size when an arm64 kernel can have pages of
 * that size (an image built with mkfs --page-size 16K is for 16K
 * kernels); else the host's.
 */
static uint64_t judge_page(const struct xip_align_opts *o,
			   const struct xip_image *img, uint16_t machine)
{
	if (o->page_size)
		return o->page_size;
	if (machine == EM_AARCH64 && machine_page_ok(machine, img->block_size))
		return img->block_size;
	return (uint64_t)xip_host_page_size();
}

int xip_align_check(struct xip_image *img, ext2_ino_t ino, const char *path,
		    const struct xip_align_opts *o, struct xip_align_file *f)
{
	struct align_ctx a = { .img = img, .ino = ino, .o = o, .f = f };
	struct ext2_inode_large in;
	uint64_t max_align = 0, size;
	int ret;

	memset(f, 0, sizeof(*f));
	f->ino = ino;
	f->path = strdup(path);
	if (!f->path)
		return xip_error(-ENOMEM, "out of memory");
	ret = xip_read_inode(img, ino, &in);
	if (ret)
		return ret;
	if (!S_ISREG(in.i_mode))
		return xip_error(-EINVAL, "%s: not a regular file", path);
	ret = read_magic(img, ino, &f->elf);
	if (ret || !f->elf)
		return ret;
	f->ready = true;
	size = in.i_size | ((uint64_t)in.i_size_high << 32);
	ret = xip_elf_parse(img_read, &a, size, path, &a.elf);
	if (ret == -ENOEXEC && elf_not_program(img, ino))
		f->not_program = true;
	if (ret == -ENOEXEC) {
		add_reason(f, "%s", parse_reason(path));
		xip_error_clear();
		return 0;
	}
	if (ret)
		return ret;
	f->type = a.elf.type;
	f->machine = a.elf.machine;
	f->textrel = a.elf.textrel;
	f->exec_stack = a.elf.exec_stack;
	a.page = judge_page(o, img, a.elf.machine);
	if (a.elf.machine != EM_X86_64 && a.elf.machine != EM_AARCH64)
		add_reason(f, "machine %s: only x86-64 and aarch64 programs run in place",
			   xip_elf_machine_name(a.elf.machine));
	else if (!machine_page_ok(a.elf.machine, a.page))
		add_reason(f, "%s kernels have no %" PRIu64 "-byte pages",
			   xip_elf_machine_name(a.elf.machine), a.page);
	if (img->block_size != a.page)
		add_reason(f, "the image's block size %u differs from the page size %" PRIu64,
			   img->block_size, a.page);
	if (a.elf.textrel)
		add_reason(f, "text relocations (DT_TEXTREL): the pages they patch are copied");
	if (a.elf.exec_stack)
		add_reason(f, "executable stack (PT_GNU_STACK)");
	ret = xip_file_runs(img, ino, &a.runs, &a.nruns);
	if (ret)
		goto out;
	f->segs = calloc(a.elf.nload, sizeof(*f->segs));
	if (!f->segs) {
		ret = xip_error(-ENOMEM, "out of memory");
		goto out;
	}
	f->nsegs = a.elf.nload;
	for (size_t i = 0; i < a.elf.nload; i++)
		if (a.elf.load[i].align > max_align)
			max_align = a.elf.load[i].align;
	for (size_t i = 0; i < a.elf.nload; i++)
		check_segment(&a, &a.elf.load[i], &f->segs[i], max_align);
out:
	free(a.runs);
	xip_elf_free(&a.elf);
	return ret;
}

void xip_align_file_free(struct xip_align_file *f)
{
	free(f->path);
	free(f->reasons);
	free(f->segs);
	memset(f, 0, sizeof(*f));
}

/* ---- every regular file of an image ---------------------------------- */

struct walk_dir {
	ext2_ino_t ino;
	bool dir;
	char *path;
};

static int walk_push(struct walk_dir **stack, size_t *n, size_t *cap,
		     ext2_ino_t ino, bool dir, char *path)
{
	if (!path)
		return xip_error(-ENOMEM, "out of memory");
	if (xip_grow((void **)stack, cap, *n + 1, sizeof(**stack))) {
		free(path);
		return xip_error(-ENOMEM, "out of memory");
	}
	(*stack)[*n].ino = ino;
	(*stack)[*n].dir = dir;
	(*stack)[(*n)++].path = path;
	return 0;
}

/* The type of a directory entry, from the inode when the entry has none. */
static unsigned int entry_type(struct xip_image *img,
			       const struct xip_dirent *e)
{
	struct ext2_inode_large in;

	if (e->type != EXT2_FT_UNKNOWN)
		return e->type;
	if (xip_read_inode(img, e->ino, &in))
		return EXT2_FT_UNKNOWN;
	if (S_ISDIR(in.i_mode))
		return EXT2_FT_DIR;
	if (S_ISREG(in.i_mode))
		return EXT2_FT_REG_FILE;
	return EXT2_FT_UNKNOWN;
}

int xip_walk_files(struct xip_image *img, xip_walk_fn fn, void *arg)
{
	uint32_t ninodes = img->fs->super->s_inodes_count;
	uint8_t *seen = calloc(ninodes / 8 + 1, 1);
	struct walk_dir *stack = NULL;
	size_t n = 0, cap = 0;
	int ret;

	if (!seen)
		return xip_error(-ENOMEM, "out of memory");
	seen[EXT2_ROOT_INO / 8] |= 1u << (EXT2_ROOT_INO % 8);
	ret = walk_push(&stack, &n, &cap, EXT2_ROOT_INO, true, strdup(""));
	while (!ret && n) {
		struct walk_dir d = stack[--n];
		struct xip_dirent *ents = NULL;
		size_t ne = 0;

		if (!d.dir) {
			ret = fn(arg, d.path, d.ino);
			free(d.path);
			continue;
		}
		ret = xip_dir_list(img, d.ino, &ents, &ne);
		/* pushed in reverse: they come out in on-disk order */
		for (size_t i = ne; !ret && i-- > 0;) {
			const struct xip_dirent *e = &ents[i];
			unsigned int type;
			char *p;

			if (!strcmp(e->name, ".") || !strcmp(e->name, "..") ||
			    e->ino == 0 || e->ino > ninodes ||
			    (seen[e->ino / 8] & (1u << (e->ino % 8))))
				continue;
			type = entry_type(img, e);
			if (type != EXT2_FT_DIR && type != EXT2_FT_REG_FILE)
				continue;
			seen[e->ino / 8] |= (uint8_t)(1u << (e->ino % 8));
			if (asprintf(&p, "%s/%s", d.path, e->name) < 0)
				p = NULL;
			ret = walk_push(&stack, &n, &cap, e->ino,
					type == EXT2_FT_DIR, p);
		}
		free(ents);
		free(d.path);
	}
	while (n)
		free(stack[--n].path);
	free(stack);
	free(seen);
	return ret;
}
