// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The loader's decisions, pure and testable on their own: the plan of a
 * program's mappings (xip_exec_plan_load: each PT_LOAD page mapped from
 * the segment file at the offset of its block, or anonymous, or zeroed,
 * as the kernel's load_elf_binary lays them out) and the image of the
 * initial stack (xip_exec_build_stack: strings, argv, envp, auxv).
 */
#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "exec/xip_elf.h"
#include "exec/exec_int.h"
#include "util/xip_error.h"
#include "util/xip_util.h"
#include "reader/xip_reader.h"

/* ---- planning (pure) ------------------------------------------------ */

static int plan_push(struct xip_load_plan *p, enum xip_map_kind kind,
		     uint64_t addr, uint64_t len, uint64_t off, int prot)
{
	if (!len)
		return 0;
	if (xip_grow((void **)&p->ops, &p->ops_cap, p->nops + 1,
		     sizeof(*p->ops)))
		return xip_error(-ENOMEM, "out of memory");
	p->ops[p->nops++] = (struct xip_map_op){ kind, addr, len, off, prot };
	return 0;
}

static int elf_prot(uint32_t flags)
{
	return ((flags & PF_R) ? PROT_READ : 0) |
	       ((flags & PF_W) ? PROT_WRITE : 0) |
	       ((flags & PF_X) ? PROT_EXEC : 0);
}

static int check_runs(const struct xip_run *runs, size_t nruns,
		      uint64_t src_pages, const char *name)
{
	uint64_t next = 0;

	for (size_t i = 0; i < nruns; i++) {
		const struct xip_run *r = &runs[i];

		if (r->len == 0 || r->lblk < next ||
		    r->lblk > UINT64_MAX - r->len)
			return xip_error(-ENOEXEC,
					 "%s: data run %zu (page %" PRIu64
					 ") out of order", name, i, r->lblk);
		if (r->pblk > src_pages || r->len > src_pages - r->pblk)
			return xip_error(-ENOEXEC,
					 "%s: block %" PRIu64 " beyond the end"
					 " of the image", name,
					 (uint64_t)r->pblk + r->len - 1);
		next = r->lblk + r->len;
	}
	return 0;
}

/* Map file pages [first, first + n) at @addr: runs, zero pages for holes. */
static int plan_file_pages(struct xip_load_plan *p, const struct xip_run *runs,
			   size_t nruns, uint64_t first, uint64_t n,
			   uint64_t addr, int prot, uint64_t page)
{
	uint64_t pg = first, end = first + n;
	size_t i = 0;
	int ret = 0;

	while (i < nruns && runs[i].lblk + runs[i].len <= pg)
		i++;
	while (pg < end && !ret) {
		uint64_t at = addr + (pg - first) * page, stop;

		if (i < nruns && runs[i].lblk <= pg) {
			stop = runs[i].lblk + runs[i].len;
			stop = stop < end ? stop : end;
			ret = plan_push(p, XIP_MAP_FILE, at, (stop - pg) * page,
					(runs[i].pblk + pg - runs[i].lblk) * page,
					prot);
			i++;
		} else {
			stop = i < nruns && runs[i].lblk < end ? runs[i].lblk :
								 end;
			ret = plan_push(p, XIP_MAP_ANON, at, (stop - pg) * page,
					0, prot);
		}
		pg = stop;
	}
	return ret;
}

static int plan_segment(struct xip_load_plan *p, const struct xip_elf_load *l,
			const struct xip_run *runs, size_t nruns,
			uint64_t page)
{
	uint64_t start = l->vaddr & ~(page - 1), zero, bss;
	int prot = elf_prot(l->flags), ret = 0;

	if (l->filesz) {
		uint64_t fstart = l->offset & ~(page - 1);
		uint64_t fend = (l->offset + l->filesz + page - 1) & ~(page - 1);

		ret = plan_file_pages(p, runs, nruns, fstart / page,
				      (fend - fstart) / page, start, prot, page);
	}
	if (ret || l->memsz == l->filesz)
		return ret;
	zero = l->vaddr + l->filesz;
	bss = l->filesz ? (zero + page - 1) & ~(page - 1) : start;
	/* the rest of the last file page belongs to bss: clear it */
	if (l->filesz && zero < bss)
		ret = plan_push(p, XIP_MAP_ZERO, zero, bss - zero, 0, prot);
	if (!ret)
		ret = plan_push(p, XIP_MAP_ANON, bss,
				((l->vaddr + l->memsz + page - 1) & ~(page - 1)) -
					bss, 0, prot);
	return ret;
}

/* The mm fields the kernel sets in load_elf_binary(). */
static void plan_mm_fields(struct xip_load_plan *p, const struct xip_elf *elf)
{
	p->start_code = UINT64_MAX;
	for (size_t i = 0; i < elf->nload; i++) {
		const struct xip_elf_load *l = &elf->load[i];
		uint64_t end = l->vaddr + l->filesz;

		if ((l->flags & PF_X) && l->vaddr < p->start_code)
			p->start_code = l->vaddr;
		if ((l->flags & PF_X) && end > p->end_code)
			p->end_code = end;
		if (l->vaddr > p->start_data)
			p->start_data = l->vaddr;
		if (end > p->end_data)
			p->end_data = end;
	}
	if (p->start_code == UINT64_MAX)
		p->start_code = 0;
}

int xip_exec_plan_load(const struct xip_elf *elf, const struct xip_run *runs,
		       size_t nruns, uint64_t page, uint64_t src_pages,
		       const char *name, struct xip_load_plan *plan)
{
	int ret;

	memset(plan, 0, sizeof(*plan));
	if (!page || (page & (page - 1)) || elf->hi <= elf->lo ||
	    !elf->nload || (elf->lo | elf->hi) & (page - 1))
		return xip_error(-EINVAL, "%s: not validated for loading",
				 name);
	ret = check_runs(runs, nruns, src_pages, name);
	if (ret)
		return ret;
	plan->lo = elf->lo;
	plan->hi = elf->hi;
	plan->align = elf->max_align > page ? elf->max_align : page;
	plan->fixed = elf->type == ET_EXEC;
	plan->entry = elf->entry;
	plan->phdr = elf->has_phdr_addr ? elf->phdr_addr : 0;
	plan->phnum = elf->phnum;
	plan_mm_fields(plan, elf);
	for (size_t i = 0; i < elf->nload && !ret; i++)
		ret = plan_segment(plan, &elf->load[i], runs, nruns, page);
	if (ret)
		xip_load_plan_free(plan);
	return ret;
}

void xip_load_plan_free(struct xip_load_plan *plan)
{
	free(plan->ops);
	memset(plan, 0, sizeof(*plan));
}

/*
 * Stores that the sanitizers do not check: the stack is built below the
 * stack pointer, where stale redzones of returned frames may linger, and
 * the targets of these stores are outside any object the compiler knows.
 */
__attribute__((no_sanitize("address", "undefined"), noinline))
void xip_exec_raw_copy(uint64_t dst, const void *src, size_t len)
{
	volatile uint8_t *d = (volatile uint8_t *)(uintptr_t)dst;
	const uint8_t *s = src;
	size_t i = 0;

#if defined(__x86_64__)
	/*
	 * A string instruction for the long ones (the program's strings, its
	 * stack, a bss page's tail): a few instructions for kilobytes, which
	 * the loop below takes one store a word for
	 */
	if (len >= 64) {
		void *p = (void *)(uintptr_t)dst;

		if (s)
			__asm__ volatile("rep movsb"
					 : "+D"(p), "+S"(s), "+c"(len)
					 :
					 : "memory");
		else
			__asm__ volatile("rep stosb"
					 : "+D"(p), "+c"(len)
					 : "a"(0)
					 : "memory");
		return;
	}
#endif
	/* bytes to an aligned address, then words, then the last bytes */
	for (; i < len && ((dst + i) & 7); i++)
		d[i] = s ? s[i] : 0;
	for (; i + 8 <= len; i += 8) {
		uint64_t w = 0;

		if (s)
			__builtin_memcpy(&w, s + i, 8);
		*(volatile uint64_t *)(uintptr_t)(dst + i) = w;
	}
	for (; i < len; i++)
		d[i] = s ? s[i] : 0;
}

__attribute__((no_sanitize("address", "undefined"), noinline))
static void raw_store(uint64_t dst, uint64_t val)
{
	*(volatile uint64_t *)(uintptr_t)dst = val;
}

size_t xip_exec_str_count(const char *const *v)
{
	size_t n = 0;

	while (v && v[n])
		n++;
	return n;
}

/*
 * The size of string @s: from its neighbour in @in->kstr when it is one
 * of those (looked for from *@at on, where the last one was found: argv
 * and envp take them in order), else measured.
 */
static size_t str_size(const struct xip_stack_in *in, const char *s,
		       size_t *at)
{
	size_t j = *at;

	while (j < in->nkstr && (uintptr_t)in->kstr[j] < (uintptr_t)s)
		j++;
	if (j < in->nkstr && in->kstr[j] == s) {
		*at = j + 1;
		return (size_t)((j + 1 < in->nkstr ? in->kstr[j + 1] :
						     in->kstr_end) - s);
	}
	return strlen(s) + 1;
}

/* Count and measure @v's strings, each size in @sizes. */
static bool str_sizes(const struct xip_stack_in *in, const char *const *v,
		      size_t limit, size_t *count, size_t *bytes,
		      size_t *sizes, size_t *at)
{
	*count = 0;
	*bytes = 0;
	for (; v && v[*count]; (*count)++) {
		/* C strings, of execve's at most 128 KiB each */
		size_t n = str_size(in, v[*count], at);

		if (n > limit || *bytes > limit - n)
			return false;
		*bytes += n;
		sizes[*count] = n;
	}
	return true;
}

/*
 * The strings of @v (@n of them) copied to @mem_at, which is address
 * @addr for the program, and the @n + 1 words of their pointer array
 * (NULL last) written at @ptr_at, their sizes in @sizes: one pass, and
 * strings that follow each other in memory (the kernel's, as execve left
 * them) copied as one block.
 */
static void put_vector(uint64_t mem_at, uint64_t addr, uint64_t ptr_at,
		       const char *const *v, size_t n, const size_t *sizes)
{
	const char *run = NULL;
	uint64_t run_at = mem_at;
	size_t run_len = 0;

	for (size_t i = 0; i < n; i++, ptr_at += 8) {
		size_t len = sizes[i];

		raw_store(ptr_at, addr);
		if (run && v[i] == run + run_len) {
			run_len += len;
		} else {
			if (run)
				xip_exec_raw_copy(run_at, run, run_len);
			run = v[i];
			run_at = mem_at;
			run_len = len;
		}
		mem_at += len;
		addr += len;
	}
	if (run_len)		/* the last block */
		xip_exec_raw_copy(run_at, run, run_len);
	raw_store(ptr_at, 0);
}

static uint64_t auxv_value(const struct xip_auxv *a, uint64_t execfn,
			   uint64_t platform, uint64_t random)
{
	switch (a->type) {
	case AT_EXECFN:
		return execfn;
	case AT_PLATFORM:
		return platform;
	case AT_RANDOM:
		return random;
	default:
		return a->val;
	}
}

int xip_exec_stack_bytes(struct xip_stack_in *in, size_t limit, size_t *size)
{
	size_t argc, envc, alen, elen, flen, plen, words, at = 0;

	in->sized = false;
	if (!in->execfn || in->nauxv > 4096 || !in->sizes)
		return xip_error(-EINVAL, "invalid stack request");
	if (!str_sizes(in, in->argv, limit, &argc, &alen, in->sizes, &at) ||
	    !str_sizes(in, in->envp, limit, &envc, &elen, in->sizes + argc,
		       &at))
		return xip_error(-E2BIG, "argument list too long");
	in->argc = argc;
	in->envc = envc;
	in->alen = alen;
	in->elen = elen;
	in->sized = true;
	flen = strlen(in->execfn) + 1;
	plen = in->platform ? strlen(in->platform) + 1 : 0;
	words = 1 + argc + 1 + envc + 1 + 2 * (in->nauxv + 1);
	/* as xip_exec_build_stack() counts, and its alignment to 16 */
	*size = 8 + flen + elen + alen + (in->pad & 0xfff) + plen + 16 + 48 +
		words * 8 + 16;
	return 0;
}

int xip_exec_build_stack(void *mem, uint64_t addr, size_t size,
			 const struct xip_stack_in *in,
			 struct xip_stack_out *out)
{
	size_t argc, envc, alen, elen, flen, plen, words, need;
	uint64_t top, p, execfn, platform = 0, random, w;
	int64_t delta = (int64_t)((uint64_t)(uintptr_t)mem - addr);

	memset(out, 0, sizeof(*out));
	if (addr > UINT64_MAX - size || !in->execfn || in->nauxv > 4096 ||
	    !in->sized)
		return xip_error(-EINVAL, "invalid stack request");
	argc = in->argc;
	envc = in->envc;
	alen = in->alen;
	elen = in->elen;
	flen = strnlen(in->execfn, size) + 1;
	plen = in->platform ? strnlen(in->platform, size) + 1 : 0;
	words = 1 + argc + 1 + envc + 1 + 2 * (in->nauxv + 1);
	need = 8 + flen + elen + alen + (in->pad & 0xfff) + plen + 16 + 48;
	if (flen > size || plen > size || words > size / 8 ||
	    alen + elen > size || need > size - words * 8)
		return xip_error(-E2BIG, "argument list too long (%zu bytes"
				 " of arguments and environment)",
				 alen + elen);
	top = (addr + size) & ~(uint64_t)15;
	p = top - 8;
	raw_store(p + delta, 0);
	p -= flen;
	execfn = p;
	xip_exec_raw_copy(p + delta, in->execfn, flen - 1);
	xip_exec_raw_copy(p + delta + flen - 1, NULL, 1);
	p -= elen;
	out->env_start = p;
	out->env_end = p + elen;
	p -= alen;
	out->arg_start = p;
	out->arg_end = p + alen;
	out->gap_hi = p;
	p = (p - (in->pad & 0xfff)) & ~(uint64_t)15;
	out->gap_lo = p;
	if (plen) {
		p -= plen;
		platform = p;
		xip_exec_raw_copy(p + delta, in->platform, plen - 1);
		xip_exec_raw_copy(p + delta + plen - 1, NULL, 1);
	}
	p -= 16;
	random = p;
	xip_exec_raw_copy(p + delta, in->random, 16);
	p = (p - words * 8) & ~(uint64_t)15;
	out->sp = p;
	raw_store(p + delta, argc);
	w = p + 8 + delta;
	put_vector(out->arg_start + delta, out->arg_start, w, in->argv, argc,
		   in->sizes);
	w += (argc + 1) * 8;
	put_vector(out->env_start + delta, out->env_start, w, in->envp, envc,
		   in->sizes + argc);
	w += (envc + 1) * 8;
	out->auxv = w - delta;
	for (size_t i = 0; i < in->nauxv; i++) {
		if (in->auxv[i].type == AT_PLATFORM && !plen)
			continue;
		raw_store(w, in->auxv[i].type);
		raw_store(w + 8, auxv_value(&in->auxv[i], execfn, platform,
					    random));
		w += 16;
	}
	raw_store(w, AT_NULL);
	raw_store(w + 8, 0);
	out->auxv_bytes = w + 16 - delta - out->auxv;
	return 0;
}
