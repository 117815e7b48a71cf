// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Fuzz target "exec": the exec loader up to, not including, the mmap and
 * the jump.
 *
 *  - An input that starts with the ELF magic is a program: parsed,
 *    validated, planned (xip_exec_plan_load) over data runs cut from the
 *    input's last bytes, with holes between them; then an initial stack
 *    is built (xip_exec_build_stack) from strings of the input into a
 *    buffer fenced by a guard page and canaries.
 *  - Any other input is an image: xip_exec_prepare() on the programs of
 *    the seed tree (lookup, permission, ELF parse through the engine,
 *    interpreter, runs), then the same plan on their runs.
 *
 * Oracles beyond the sanitizers: every planned mapping lies inside the
 * reserved span and page aligned, every file mapping inside the source;
 * the stack lies inside its buffer, 16-byte aligned, argc on top.
 */
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>

#include "fuzz.h"
#include "exec/xip_elf.h"
#include "exec/exec_int.h"

#define PAGE 4096ULL
#define MAX_STRINGS 64
#define STACK_TAIL 512

static void fail(const char *what, uint64_t a, uint64_t b)
{
	fprintf(stderr, "fuzz: %s (0x%llx, 0x%llx)\n", what,
		(unsigned long long)a, (unsigned long long)b);
	abort();
}

static void check_plan(const struct xip_load_plan *p, uint64_t page,
		       uint64_t src_pages)
{
	if (p->lo >= p->hi || (p->lo | p->hi) & (page - 1))
		fail("plan span", p->lo, p->hi);
	for (size_t i = 0; i < p->nops; i++) {
		const struct xip_map_op *op = &p->ops[i];

		if (!op->len || op->addr < p->lo || op->addr > p->hi ||
		    op->len > p->hi - op->addr)
			fail("mapping outside the span", op->addr, op->len);
		if (op->kind == XIP_MAP_ZERO)
			continue;
		if ((op->addr | op->len) & (page - 1))
			fail("mapping not page aligned", op->addr, op->len);
		if (op->kind == XIP_MAP_FILE &&
		    (op->off & (page - 1) || op->off / page > src_pages ||
		     op->len / page > src_pages - op->off / page))
			fail("file mapping outside the source", op->off,
			     op->len);
	}
}

static void plan(const struct xip_elf *elf, const struct xip_run *runs,
		 size_t nruns, uint64_t page, uint64_t src_pages)
{
	struct xip_load_plan p;

	if (xip_exec_plan_load(elf, runs, nruns, page, src_pages, "fuzz",
			       &p))
		return;
	check_plan(&p, page, src_pages);
	xip_load_plan_free(&p);
}

/* Runs over the file's pages cut by the tail bytes: holes between them. */
static void plan_elf(struct xip_elf *elf, const uint8_t *t, size_t tn)
{
	static const unsigned int pages[] = { 4096, 16384, 65536 };
	uint64_t fpages, lblk = 0;
	struct xip_run runs[8];
	size_t n = 0;

	for (size_t k = 0; k < sizeof(pages) / sizeof(*pages); k++) {
		uint64_t page = pages[k];

		if (xip_elf_validate_load(elf, "fuzz", (unsigned int)page))
			continue;
		fpages = (elf->file_size + page - 1) / page;
		n = 0;
		lblk = 0;
		for (size_t i = 0; i < 8 && i < tn && lblk < fpages; i++) {
			uint64_t len = 1 + t[i] % 8, gap = t[i] >> 6;

			runs[n++] = (struct xip_run){ lblk, 3 + lblk * 2, len };
			lblk += len + gap;
		}
		plan(elf, runs, n, page, 3 + 2 * fpages + 16);
		/* the whole file in one run, as for a host interpreter */
		runs[0] = (struct xip_run){ 0, 0, fpages ? fpages : 1 };
		plan(elf, runs, 1, page, fpages ? fpages : 1);
	}
}

/* Strings of @d: the pieces between NUL bytes. */
static size_t split(char *d, size_t n, const char **v, size_t max)
{
	size_t k = 0, i = 0;

	while (i < n && k < max) {
		v[k++] = d + i;
		i += strnlen(d + i, n - i) + 1;
	}
	v[k] = NULL;
	return k;
}

static void build_stack(const uint8_t *data, size_t size)
{
	const char *argv[MAX_STRINGS + 1], *envp[MAX_STRINGS + 1];
	struct xip_auxv auxv[6] = {
		{ AT_PAGESZ, PAGE }, { AT_PHDR, 0x400040 }, { AT_RANDOM, 0 },
		{ AT_EXECFN, 0 }, { AT_PLATFORM, 0 }, { AT_ENTRY, 0x401000 },
	};
	struct xip_stack_in in = { 0 };
	struct xip_stack_out out;
	char strings[STACK_TAIL + 1];
	size_t n = size < STACK_TAIL ? size : STACK_TAIL, stack, slack, rsize;
	uint64_t addr;
	uint8_t *base, *mem;

	memcpy(strings, data + size - n, n);
	strings[n] = '\0';
	split(strings, n / 2, argv, MAX_STRINGS);
	split(strings + n / 2, n - n / 2, envp, MAX_STRINGS);
	stack = 16 + (n ? data[size - 1] : 0) * 24 + (n > 1 ? data[size - 2] : 0);
	rsize = (stack + PAGE - 1) & ~(PAGE - 1);
	slack = rsize - stack;
	base = mmap(NULL, rsize + PAGE, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (base == MAP_FAILED)
		return;
	/* a guard page right above the buffer, canaries below it */
	mprotect(base + rsize, PAGE, PROT_NONE);
	memset(base, 0xa5, rsize);
	mem = base + slack;
	addr = 0x7ffffff00000ULL - stack;
	in.argv = argv;
	in.envp = envp;
	in.execfn = argv[0] ? argv[0] : "/fuzz";
	in.platform = n > 2 && data[size - 3] & 1 ? "x86_64" : NULL;
	memcpy(in.random, data, size < 16 ? size : 16);
	in.pad = n > 3 ? data[size - 4] * 17u : 0;
	in.auxv = auxv;
	in.nauxv = 6;
	if (!xip_exec_build_stack(mem, addr, stack, &in, &out)) {
		if (out.sp & 15 || out.sp < addr || out.sp >= addr + stack)
			fail("stack pointer", out.sp, addr);
		if (out.arg_start < out.sp || out.arg_end > addr + stack ||
		    out.env_start < out.sp || out.env_end > addr + stack ||
		    out.auxv < out.sp || out.auxv_bytes > addr + stack - out.auxv)
			fail("stack contents outside the stack", out.sp,
			     out.auxv);
		if (*(uint64_t *)(mem + (out.sp - addr)) !=
		    split(strings, n / 2, argv, MAX_STRINGS))
			fail("argc", out.sp, 0);
	}
	for (size_t i = 0; i < slack; i++)
		if (base[i] != 0xa5)
			fail("write below the stack buffer", i, slack);
	munmap(base, rsize + PAGE);
}

static void fuzz_program(const uint8_t *data, size_t size)
{
	struct xip_elf elf;

	if (!xip_elf_parse_buf(data, size, "fuzz", &elf)) {
		plan_elf(&elf, data + size - (size < 8 ? size : 8),
			 size < 8 ? size : 8);
		xip_elf_free(&elf);
	}
	build_stack(data, size);
}

/* The planning exec does on a program of the image (xip_exec_run's). */
static void plan_in_image(struct xip_image *img, const char *path)
{
	uint64_t bs = img->block_size, src = img->seg->size / bs;
	struct xip_run *runs;
	struct xip_elf elf;
	ext2_ino_t ino;
	size_t nruns;
	uint8_t *buf;
	ssize_t n;

	if (xip_lookup(img, path, 0, &ino))
		return;
	buf = malloc(FUZZ_MAX_READ);
	n = buf ? xip_file_read(img, ino, 0, buf, FUZZ_MAX_READ) : -1;
	if (n > 0 && !xip_elf_parse_buf(buf, (size_t)n, path, &elf)) {
		if (!xip_elf_validate_load(&elf, path, (unsigned int)bs) &&
		    !xip_file_runs(img, ino, &runs, &nruns)) {
			plan(&elf, runs, nruns, bs, src);
			free(runs);
		}
		xip_elf_free(&elf);
	}
	free(buf);
}

static void fuzz_image_programs(const uint8_t *data, size_t size)
{
	static const char *const paths[] = {
		"/bin/prog", "/bin/tiny-static", "/bin/tiny-static-pie",
		"/bin/hello-pie", "/hello.txt", "/dir/script.sh", "/bin",
		"/prog", "/tiny-static", "/hello-pie",
	};
	struct xip_image *img;

	if (fuzz_open_image(data, size, 0, &img))
		return;
	for (size_t i = 0; i < sizeof(paths) / sizeof(*paths); i++) {
		struct xip_exec_opts opts = { paths[i], XIP_INTERP_IMAGE };
		struct xip_exec *ex;

		if (!xip_exec_prepare(img, &opts, &ex)) {
			xip_exec_info(ex);
			xip_exec_free(ex);
		}
		plan_in_image(img, paths[i]);
	}
	xip_image_close(img);
}

FUZZ_TARGET(exec)
{
	if (size >= SELFMAG && !memcmp(data, ELFMAG, SELFMAG))
		fuzz_program(data, size);
	else
		fuzz_image_programs(data, size);
	return 0;
}
