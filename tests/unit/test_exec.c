/* Unit tests of the loader's planning (lib/exec/exec_plan.c): what is mapped where,
 * and the initial stack, without mapping anything; and of the marker exec puts
 * into a program's environment (lib/exec/exec_marker.c). */
#include <elf.h>
#include <inttypes.h>
#include <sys/auxv.h>
#include <pthread.h>
#include <sys/mman.h>

#include "unit.h"
#include "exec/xip_elf.h"
#include "exec/exec_int.h"
#include "util/xip_util.h"

#define PAGE 4096ULL

static struct xip_elf_load two_loads[2];

/* A validated ELF of two PT_LOADs: text (2.5 pages of file) at 0x400000
 * and data (0x300 bytes of file, 0x5000 in memory) at 0x403100. */
static void make_elf(struct xip_elf *elf, uint16_t type)
{
	memset(elf, 0, sizeof(*elf));
	two_loads[0] = (struct xip_elf_load){ 2, PF_R | PF_X, 0, 0x400000,
					      0x2800, 0x2800, PAGE };
	two_loads[1] = (struct xip_elf_load){ 3, PF_R | PF_W, 0x3100, 0x403100,
					      0x300, 0x5000, PAGE };
	elf->type = type;
	elf->machine = xip_elf_host_machine();
	elf->entry = 0x401000;
	elf->phnum = 5;
	elf->has_phdr_addr = true;
	elf->phdr_addr = 0x400040;
	elf->load = two_loads;
	elf->nload = 2;
	elf->lo = 0x400000;
	elf->hi = 0x409000;
	elf->max_align = PAGE;
}

static void expect_op(const struct xip_map_op *op, enum xip_map_kind kind,
		      uint64_t addr, uint64_t len, uint64_t off, int prot)
{
	if (op->kind != kind || op->addr != addr || op->len != len ||
	    op->off != off || op->prot != prot)
		fail_msg("op {%d 0x%" PRIx64 " 0x%" PRIx64 " 0x%" PRIx64
			 " %d} != {%d 0x%" PRIx64 " 0x%" PRIx64 " 0x%" PRIx64
			 " %d}", op->kind, op->addr, op->len, op->off,
			 op->prot, kind, addr, len, off, prot);
}

static void test_plan_contiguous(void **state)
{
	struct xip_run run = { 0, 100, 4 };
	struct xip_load_plan p;
	struct xip_elf elf;

	make_elf(&elf, ET_EXEC);
	assert_int_equal(xip_exec_plan_load(&elf, &run, 1, PAGE, 1000, "t",
					    &p), 0);
	assert_true(p.fixed);
	assert_int_equal(p.lo, 0x400000);
	assert_int_equal(p.hi, 0x409000);
	assert_int_equal(p.entry, 0x401000);
	assert_int_equal(p.phdr, 0x400040);
	assert_int_equal(p.nops, 4);
	/* text: file pages 0-2 from blocks 100-102 */
	expect_op(&p.ops[0], XIP_MAP_FILE, 0x400000, 3 * PAGE, 100 * PAGE,
		  PROT_READ | PROT_EXEC);
	/* data: file page 3 (block 103), its tail cleared, then bss */
	expect_op(&p.ops[1], XIP_MAP_FILE, 0x403000, PAGE, 103 * PAGE,
		  PROT_READ | PROT_WRITE);
	expect_op(&p.ops[2], XIP_MAP_ZERO, 0x403400, 0xc00, 0,
		  PROT_READ | PROT_WRITE);
	expect_op(&p.ops[3], XIP_MAP_ANON, 0x404000, 0x5000, 0,
		  PROT_READ | PROT_WRITE);
	assert_int_equal(p.start_code, 0x400000);
	assert_int_equal(p.end_code, 0x402800);
	assert_int_equal(p.start_data, 0x403100);
	assert_int_equal(p.end_data, 0x403400);
	xip_load_plan_free(&p);
	assert_null(p.ops);
}

static void test_plan_runs_and_holes(void **state)
{
	/* page 0 at 50, page 1 a hole, page 2 at 70, page 3 at 90 */
	struct xip_run runs[] = { { 0, 50, 1 }, { 2, 70, 1 }, { 3, 90, 5 } };
	struct xip_load_plan p;
	struct xip_elf elf;

	make_elf(&elf, ET_DYN);
	assert_int_equal(xip_exec_plan_load(&elf, runs, 3, PAGE, 1000, "t",
					    &p), 0);
	assert_false(p.fixed);
	assert_int_equal(p.nops, 6);
	expect_op(&p.ops[0], XIP_MAP_FILE, 0x400000, PAGE, 50 * PAGE,
		  PROT_READ | PROT_EXEC);
	expect_op(&p.ops[1], XIP_MAP_ANON, 0x401000, PAGE, 0,
		  PROT_READ | PROT_EXEC);
	expect_op(&p.ops[2], XIP_MAP_FILE, 0x402000, PAGE, 70 * PAGE,
		  PROT_READ | PROT_EXEC);
	expect_op(&p.ops[3], XIP_MAP_FILE, 0x403000, PAGE, 90 * PAGE,
		  PROT_READ | PROT_WRITE);
	xip_load_plan_free(&p);

	/* the file ends in a hole: zero pages, never past the runs */
	assert_int_equal(xip_exec_plan_load(&elf, runs, 1, PAGE, 1000, "t",
					    &p), 0);
	expect_op(&p.ops[1], XIP_MAP_ANON, 0x401000, 2 * PAGE, 0,
		  PROT_READ | PROT_EXEC);
	expect_op(&p.ops[2], XIP_MAP_ANON, 0x403000, PAGE, 0,
		  PROT_READ | PROT_WRITE);
	xip_load_plan_free(&p);
}

/*
 * The second load's file part cut to @filesz: the plan has @nops
 * operations, the last one the anonymous pages from @addr, @len bytes.
 */
static void expect_bss(uint64_t filesz, size_t nops, uint64_t addr,
		       uint64_t len)
{
	struct xip_run run = { 0, 10, 3 };
	struct xip_load_plan p;
	struct xip_elf elf;

	make_elf(&elf, ET_EXEC);
	two_loads[1].filesz = filesz;
	assert_int_equal(xip_exec_plan_load(&elf, &run, 1, PAGE, 1000, "t",
					    &p), 0);
	assert_int_equal(p.nops, nops);
	expect_op(&p.ops[nops - 1], XIP_MAP_ANON, addr, len, 0,
		  PROT_READ | PROT_WRITE);
	xip_load_plan_free(&p);
}

static void test_plan_bss_only(void **state)
{
	/* all anonymous, from the start of the page */
	expect_bss(0, 2, 0x403000, 0x6000);
	/* filesz ending on a page boundary: nothing to clear */
	expect_bss(0xf00, 3, 0x404000, 0x5000);
}

static void test_plan_bad_runs(void **state)
{
	struct xip_run over[] = { { 0, 998, 4 } };
	struct xip_run order[] = { { 2, 10, 2 }, { 1, 20, 1 } };
	struct xip_run empty[] = { { 0, 10, 0 } };
	struct xip_run wrap[] = { { 0, UINT64_MAX - 1, 4 } };
	struct xip_load_plan p;
	struct xip_elf elf;

	make_elf(&elf, ET_EXEC);
	assert_int_equal(xip_exec_plan_load(&elf, over, 1, PAGE, 1000, "img",
					    &p), -ENOEXEC);
	assert_non_null(strstr(xip_errmsg(), "beyond the end of the image"));
	assert_null(p.ops);
	assert_int_equal(xip_exec_plan_load(&elf, order, 2, PAGE, 1000, "t",
					    &p), -ENOEXEC);
	assert_non_null(strstr(xip_errmsg(), "out of order"));
	assert_int_equal(xip_exec_plan_load(&elf, empty, 1, PAGE, 1000, "t",
					    &p), -ENOEXEC);
	assert_int_equal(xip_exec_plan_load(&elf, wrap, 1, PAGE, 1000, "t",
					    &p), -ENOEXEC);
	/* not validated */
	elf.hi = 0;
	assert_int_equal(xip_exec_plan_load(&elf, over, 1, PAGE, 1000, "t",
					    &p), -EINVAL);
}

/* Plans of real host programs: every PT_LOAD byte is covered, in order,
 * with exactly the segment's permissions and never W+X; false when
 * @path is not there to check. */
static bool check_real(const char *path)
{
	struct xip_elf elf;
	struct xip_load_plan p;
	struct xip_run run;

	if (!unit_parse_host_elf(path, &elf))
		return false;
	assert_int_equal(xip_elf_validate_load(&elf, path, PAGE), 0);
	run = (struct xip_run){ 0, 0, div_round_up(elf.file_size, PAGE) };
	assert_int_equal(xip_exec_plan_load(&elf, &run, 1, PAGE, run.len, path,
					    &p), 0);
	for (size_t i = 0; i < p.nops; i++) {
		const struct xip_map_op *op = &p.ops[i];

		assert_false((op->prot & PROT_WRITE) && (op->prot & PROT_EXEC));
		assert_true(op->addr >= p.lo && op->addr + op->len <= p.hi);
		if (op->kind != XIP_MAP_ZERO)
			assert_int_equal(op->addr % PAGE, 0);
		if (op->kind == XIP_MAP_FILE)
			assert_int_equal(op->off % PAGE, op->addr % PAGE);
	}
	xip_load_plan_free(&p);
	xip_elf_free(&elf);
	return true;
}

static void test_plan_host_programs(void **state)
{
	int checked = 0;

	checked += check_real("/bin/busybox");
	checked += check_real("/usr/bin/true");
	checked += check_real("/lib64/ld-linux-x86-64.so.2");
#ifdef __aarch64__
	checked += check_real("/lib/ld-linux-aarch64.so.1");
	checked += check_real("/usr/local/lib/aarch64-linux-gnu/busybox");
#endif
	if (!checked) {
		print_message("# none of the host's programs is there to check\n");
		skip();
	}
}

static uint64_t word(const uint8_t *mem, uint64_t addr, uint64_t at)
{
	uint64_t v;

	memcpy(&v, mem + (at - addr), 8);
	return v;
}

static const char *str(const uint8_t *mem, uint64_t addr, uint64_t at)
{
	return (const char *)mem + (at - addr);
}

/* Measure @in (its sizes in a buffer of this file), then build it. */
static int measured_build(uint8_t *mem, uint64_t addr, size_t size,
			  struct xip_stack_in *in, struct xip_stack_out *out)
{
	static size_t sizes[64];
	size_t need;
	int ret;

	in->sizes = sizes;
	ret = xip_exec_stack_bytes(in, size, &need);
	return ret ? ret : xip_exec_build_stack(mem, addr, size, in, out);
}

static void test_stack_layout(void **state)
{
	const char *argv[] = { "prog", "", "third arg", NULL };
	const char *envp[] = { "A=1", "LONG=xxxxxxxxxxxxxxxxxxxx", NULL };
	struct xip_auxv auxv[] = {
		{ AT_PAGESZ, 4096 }, { AT_RANDOM, 0 }, { AT_EXECFN, 0 },
		{ AT_PLATFORM, 0 }, { AT_ENTRY, 0x401000 },
	};
	struct xip_stack_in in = { argv, envp, "/bin/prog", "x86_64",
				   { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13,
				     14, 15, 16 }, 0x120, auxv, 5 };
	size_t size = 64 * 1024;
	uint8_t *mem = calloc(1, size);
	uint64_t addr = 0x7ffd00000000ULL, sp, a;
	struct xip_stack_out out;

	/* a stack not measured first is refused */
	assert_int_equal(xip_exec_build_stack(mem, addr, size, &in, &out),
			 -EINVAL);
	assert_int_equal(measured_build(mem, addr, size, &in, &out), 0);
	sp = out.sp;
	assert_int_equal(sp % 16, 0);
	assert_true(sp > addr && sp < addr + size);
	assert_int_equal(word(mem, addr, sp), 3);
	assert_string_equal(str(mem, addr, word(mem, addr, sp + 8)), "prog");
	assert_string_equal(str(mem, addr, word(mem, addr, sp + 16)), "");
	assert_string_equal(str(mem, addr, word(mem, addr, sp + 24)),
			    "third arg");
	assert_int_equal(word(mem, addr, sp + 32), 0);
	assert_string_equal(str(mem, addr, word(mem, addr, sp + 40)), "A=1");
	assert_int_equal(word(mem, addr, sp + 56), 0);
	/* argv strings are contiguous from arg_start, then the environment */
	assert_int_equal(word(mem, addr, sp + 8), out.arg_start);
	assert_int_equal(out.arg_end - out.arg_start, 5 + 1 + 10);
	assert_int_equal(out.env_start, out.arg_end);
	assert_int_equal(out.env_end - out.env_start, 4 + 26);
	/* auxv follows envp's NULL */
	a = sp + 64;
	assert_int_equal(out.auxv, a);
	assert_int_equal(out.auxv_bytes, 6 * 16);
	assert_int_equal(word(mem, addr, a), AT_PAGESZ);
	assert_int_equal(word(mem, addr, a + 16), AT_RANDOM);
	assert_memory_equal(str(mem, addr, word(mem, addr, a + 24)),
			    in.random, 16);
	assert_int_equal(word(mem, addr, a + 32), AT_EXECFN);
	assert_string_equal(str(mem, addr, word(mem, addr, a + 40)),
			    "/bin/prog");
	assert_string_equal(str(mem, addr, word(mem, addr, a + 56)), "x86_64");
	assert_int_equal(word(mem, addr, a + 72), 0x401000);
	assert_int_equal(word(mem, addr, a + 80), AT_NULL);
	/* execfn at the very top, below an 8-byte NULL */
	assert_int_equal(word(mem, addr, a + 40) + 10 + 8, addr + size);
	free(mem);
}

/*
 * Strings that follow each other in memory (as execve leaves them) are
 * copied as blocks, others one by one: every string arrives whole either
 * way, in order, and the regions hold exactly their bytes.
 */
static void test_stack_strings_in_blocks(void **state)
{
	static const char block[] = "A=1\0BB=22\0CCC=333\0";
	const char *apart = "APART=x";
	const char *argv[] = { block + 4, block + 4, "z", NULL };
	const char *envp[] = { block, block + 4, apart, block + 10, block + 4,
			       block + 5, NULL };
	static const char *const want[] = { "A=1", "BB=22", "APART=x",
					    "CCC=333", "BB=22", "B=22" };
	struct xip_stack_in in = { argv, envp, "/p", NULL, { 0 }, 0, NULL, 0 };
	size_t size = 16 * 1024, off = 0;
	uint8_t *mem = calloc(1, size);
	uint64_t addr = 0x7ffd00000000ULL, sp;
	struct xip_stack_out out;

	(void)state;
	assert_int_equal(measured_build(mem, addr, size, &in, &out), 0);
	sp = out.sp;
	assert_int_equal(word(mem, addr, sp), 3);
	assert_string_equal(str(mem, addr, word(mem, addr, sp + 8)), "BB=22");
	assert_string_equal(str(mem, addr, word(mem, addr, sp + 16)), "BB=22");
	assert_string_equal(str(mem, addr, word(mem, addr, sp + 24)), "z");
	assert_int_equal(out.arg_end - out.arg_start, 14);
	assert_memory_equal(str(mem, addr, out.arg_start), "BB=22\0BB=22\0z",
			    14);
	for (size_t i = 0; i < 6; i++) {
		uint64_t p = word(mem, addr, sp + 40 + 8 * i);

		assert_int_equal(p, out.env_start + off);
		assert_string_equal(str(mem, addr, p), want[i]);
		off += strlen(want[i]) + 1;
	}
	assert_int_equal(word(mem, addr, sp + 40 + 8 * 6), 0);
	assert_int_equal(out.env_end - out.env_start, off);

	/* what the measure kept */
	assert_int_equal(xip_exec_str_count(argv), 3);
	assert_int_equal(xip_exec_str_count(envp), 6);
	assert_true(in.sized);
	assert_int_equal(in.argc, 3);
	assert_int_equal(in.envc, 6);
	assert_int_equal(in.sizes[3], 4);	/* "A=1" */
	assert_int_equal(in.sizes[8], 5);	/* "B=22" */
	free(mem);
}

/*
 * The strings execve(2) copied, sized by their neighbours' addresses
 * (xip_stack_in.kstr): the same stack, byte for byte, as when each one is
 * measured, with the arguments' tail, an environment entry replaced by
 * another string (whose old bytes are not copied), one added and an
 * argument given out of order; and a kernel string that runs up to its
 * neighbour is copied whole, its bytes past its first NUL too.
 */
static void test_stack_kernel_strings(void **state)
{
	static const char block[] = "xiptool\0exec\0@s\0/bin/p\0arg\0"
				    "A=1\0SECRET=2\0C=3\0/usr/bin/xiptool";
	const char *k[] = { block, block + 8, block + 13, block + 16,
			    block + 23, block + 27, block + 31, block + 40 };
	const char *end = block + 44;
	const char *argv[] = { k[3], k[4], k[1], NULL };
	const char *envp[] = { k[5], "SECRET=x", k[7], "MARK=1", NULL };
	struct xip_stack_in in = { argv, envp, "/bin/p", NULL, { 0 }, 0, NULL,
				   0 };
	size_t size = 8192, need, sizes[7];
	uint8_t *a = calloc(1, size), *b = calloc(1, size);
	uint64_t addr = 0x7ffd00000000ULL;
	struct xip_stack_out oa, ob;

	(void)state;
	assert_int_equal(measured_build(a, addr, size, &in, &oa), 0);
	in.sizes = sizes;
	in.kstr = k;
	in.nkstr = 8;
	in.kstr_end = end;
	assert_int_equal(xip_exec_stack_bytes(&in, size, &need), 0);
	assert_int_equal(sizes[0], 7);	/* "/bin/p" up to "arg" */
	assert_int_equal(sizes[2], 5);	/* "exec", found after the others */
	assert_int_equal(sizes[5], 4);	/* "C=3" up to the file name */
	assert_int_equal(xip_exec_build_stack(b, addr, size, &in, &ob), 0);
	assert_memory_equal(&oa, &ob, sizeof(oa));
	assert_memory_equal(a, b, size);
	assert_null(memmem(b, size, "SECRET=2", 8));
	/* a string with a NUL inside its span: all of its bytes go */
	{
		static const char odd[] = "P=1\0junk\0Q=2\0/x";
		const char *kk[] = { odd, odd + 9 };
		const char *env2[] = { kk[0], kk[1], NULL };
		const char *arg2[] = { NULL };
		struct xip_stack_in i2 = { arg2, env2, "/x", NULL, { 0 }, 0,
					   NULL, 0 };

		i2.sizes = sizes;
		i2.kstr = kk;
		i2.nkstr = 2;
		i2.kstr_end = odd + 13;
		assert_int_equal(xip_exec_stack_bytes(&i2, size, &need), 0);
		assert_int_equal(sizes[0], 9);
		memset(b, 0, size);
		assert_int_equal(xip_exec_build_stack(b, addr, size, &i2, &ob),
				 0);
		assert_int_equal(ob.env_end - ob.env_start, 13);
		assert_memory_equal(b + (ob.env_start - addr), odd, 13);
	}
	free(a);
	free(b);
}

/*
 * The loader's raw copy: every length at every alignment of source and
 * destination, short and long (a string instruction from 64 bytes on
 * x86_64), copying or clearing exactly its bytes and no others.
 */
static void test_raw_copy(void **state)
{
	static uint8_t src[512], dst[600], want[600];

	(void)state;
	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 7 + 1);
	for (size_t len = 0; len <= 300; len += len < 80 ? 1 : 37)
		for (size_t da = 0; da < 8; da++)
			for (size_t sa = 0; sa < 8; sa += 3)
				for (int clear = 0; clear < 2; clear++) {
					memset(dst, 0xa5, sizeof(dst));
					memcpy(want, dst, sizeof(want));
					if (clear)
						memset(want + 16 + da, 0, len);
					else
						memcpy(want + 16 + da, src + sa,
						       len);
					xip_exec_raw_copy(
						(uint64_t)(uintptr_t)(dst + 16 +
								      da),
						clear ? NULL : src + sa, len);
					assert_memory_equal(dst, want,
							    sizeof(dst));
				}
}

static void test_stack_limits(void **state)
{
	static char big[70000];
	const char *argv[] = { big, NULL };
	const char *none[] = { NULL };
	struct xip_stack_in in = { argv, none, "/x", NULL, { 0 }, 0, NULL, 0 };
	struct xip_stack_out out;
	uint8_t *mem = calloc(1, 65536);

	memset(big, 'a', sizeof(big) - 1);
	assert_int_equal(measured_build(mem, 0x10000, 65536, &in, &out),
			 -E2BIG);
	/* empty argv and environment, no platform: AT_PLATFORM dropped */
	in.argv = none;
	assert_int_equal(measured_build(mem, 0x10000, 65536, &in, &out), 0);
	assert_int_equal(word(mem, 0x10000, out.sp), 0);
	assert_int_equal(out.auxv_bytes, 16);
	/* too small for anything */
	assert_int_equal(measured_build(mem, 0x10000, 64, &in, &out), -E2BIG);
	free(mem);
}

static void *wait_for_end(void *arg)
{
	char c;

	return read(*(int *)arg, &c, 1) < 0 ? NULL : arg;
}

/*
 * A process with a second thread cannot be replaced: xip_exec_run refuses
 * with EBUSY before it maps anything (the program, a host binary in a
 * mke2fs -d image, is not started).
 */
static void test_run_refuses_threads(void **state)
{
	const char *dir = unit_path("threads-tree");
	const char *img = unit_path("threads.img");
	struct xip_exec_opts opts = { .path = "/true" };
	const char *argv[] = { "true", NULL }, *env[] = { NULL };
	char cmd[1024];
	struct xip_image *image;
	struct xip_exec *ex;
	pthread_t t;
	int pipefd[2];

	/* qemu-user's own threads hide the guest's: nothing to count */
	if (unit_emulated()) {
		print_message("# under qemu-user: the check is not made\n");
		skip();
	}
	snprintf(cmd, sizeof(cmd),
		 "rm -rf '%s' && mkdir '%s' && cp /usr/bin/true '%s/true'",
		 dir, dir, dir);
	assert_int_equal(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "mke2fs -q -F -t ext2 -b 4096 -d '%s' '%s'"
		 " 8M >/dev/null 2>&1", dir, img);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(xip_image_open(img, 0, &image), 0);
	assert_int_equal(xip_exec_prepare(image, &opts, &ex), 0);
	assert_int_equal(pipe(pipefd), 0);
	assert_int_equal(pthread_create(&t, NULL, wait_for_end, &pipefd[0]), 0);
	assert_int_equal(xip_exec_run(ex, argv, env), -EBUSY);
	assert_non_null(strstr(xip_errmsg(), "other threads"));
	assert_int_equal(close(pipefd[1]), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	close(pipefd[0]);
	xip_exec_free(ex);
	xip_image_close(image);
}

/* ---- the marker (exec_marker.c) ------------------------------------- */

/* Format the marker of @image, @path and @from; return its value. */
static char *marker_of(const char *image, const char *path,
		       enum xip_interp_from from)
{
	char *out = NULL;

	assert_int_equal(xip_exec_marker_format(image, -1, path, from, &out), 0);
	assert_non_null(out);
	assert_memory_equal(out, XIP_EXEC_MARKER "=", 13);
	return out;
}

static void expect_refused(const char *value, const char *why)
{
	struct xip_exec_marker m;

	assert_int_equal(xip_exec_marker_parse(value, &m), -EINVAL);
	if (!strstr(xip_errmsg(), why))
		fail_msg("'%.60s': '%s' lacks '%s'", value ? value : "(null)",
			 xip_errmsg(), why);
	assert_non_null(strstr(xip_errmsg(), XIP_EXEC_MARKER));
}

/* ---- what a segment keeps of a program (exec_cache.c) -------------- */

static void cached_sample(struct xip_exec_cached *c)
{
	static const char hdr[] = "\177ELF-header", ph[] = "phdrs";

	memset(c, 0, sizeof(*c));
	c->ino = 13;
	c->size = 1982256;
	c->mode = 0100755;
	c->uid = 0;
	c->gid = 50;
	c->block_size = 4096;
	c->runs = calloc(2, sizeof(*c->runs));
	assert_non_null(c->runs);
	c->runs[0] = (struct xip_run){ 0, 6, 100 };
	c->runs[1] = (struct xip_run){ 102, 200, 382 };
	c->nruns = 2;
	assert_int_equal(xip_exec_cached_log(c, 0, 64, hdr, sizeof(hdr)), 0);
	assert_int_equal(xip_exec_cached_log(c, 64, 560, ph, sizeof(ph)), 0);
	/* a read past the end of the file: nothing */
	assert_int_equal(xip_exec_cached_log(c, 1982256, 16, NULL, 0), 0);
}

static void test_cache_round_trip(void **state)
{
	struct xip_exec_cached a, b;
	uint8_t *buf;
	size_t len;
	char got[64];

	cached_sample(&a);
	assert_int_equal(xip_exec_cache_encode("/bin/busybox", &a, &buf, &len),
			 0);
	assert_int_equal(xip_exec_cache_decode(buf, len, "/bin/busybox", &b), 0);
	assert_int_equal(b.ino, 13);
	assert_int_equal(b.size, 1982256);
	assert_int_equal(b.mode, 0100755);
	assert_int_equal(b.gid, 50);
	assert_int_equal(b.block_size, 4096);
	assert_int_equal(b.nruns, 2);
	assert_int_equal(b.runs[1].lblk, 102);
	assert_int_equal(b.runs[1].pblk, 200);
	assert_int_equal(b.runs[1].len, 382);
	/* the reads come back in their order, each what it gave */
	assert_int_equal(xip_exec_cached_replay(&b, 0, got, 64), 12);
	assert_memory_equal(got, "\177ELF-header", 12);
	assert_int_equal(xip_exec_cached_replay(&b, 64, got, 560), 6);
	assert_string_equal(got, "phdrs");
	assert_int_equal(xip_exec_cached_replay(&b, 1982256, got, 16), 0);
	/* one more, or another one, is not this entry's */
	assert_int_equal(xip_exec_cached_replay(&b, 0, got, 64), -ESTALE);
	xip_exec_cached_free(&b);
	assert_int_equal(xip_exec_cache_decode(buf, len, "/bin/busybox", &b), 0);
	assert_int_equal(xip_exec_cached_replay(&b, 0, got, 63), -ESTALE);
	xip_exec_cached_free(&b);
	assert_int_equal(xip_exec_cache_decode(buf, len, "/bin/busybox", &b), 0);
	assert_int_equal(xip_exec_cached_replay(&b, 1, got, 64), -ESTALE);
	xip_exec_cached_free(&b);
	/* another path's entry (a hash shared by two paths) is no entry */
	assert_int_equal(xip_exec_cache_decode(buf, len, "/bin/busyboy", &b),
			 -EINVAL);
	assert_int_equal(xip_exec_cache_decode(buf, len, "/bin/busybox2", &b),
			 -EINVAL);
	free(buf);
	xip_exec_cached_free(&a);
}

/* Damage one field of a good entry at @off (@size bytes of @val). */
static int decode_poked(const uint8_t *good, size_t len, size_t off,
			const void *val, size_t size)
{
	uint8_t *p = malloc(len);
	struct xip_exec_cached c;
	int ret;

	assert_non_null(p);
	memcpy(p, good, len);
	memcpy(p + off, val, size);
	ret = xip_exec_cache_decode(p, len, "/p", &c);
	if (!ret)
		xip_exec_cached_free(&c);
	free(p);
	return ret;
}

static void test_cache_damaged(void **state)
{
	struct xip_exec_cached a, c;
	uint8_t *buf;
	size_t len, runs, reads;
	uint32_t big = 0xffffffffu, one = 1, zero = 0;
	uint64_t u64;

	cached_sample(&a);
	assert_int_equal(xip_exec_cache_encode("/p", &a, &buf, &len), 0);
	/* 56 bytes of head, the path, 2 runs of 24, 3 reads of 16 */
	runs = 56 + 2;
	reads = runs + 2 * 24;
	assert_int_equal(len, reads + 3 * 16 + 12 + 6);
	assert_int_equal(xip_exec_cache_decode(buf, len, "/p", &c), 0);
	xip_exec_cached_free(&c);
	/* cut short, or longer */
	for (size_t n = 0; n < len; n += 7)
		assert_int_equal(xip_exec_cache_decode(buf, n, "/p", &c),
				 -EINVAL);
	assert_int_equal(xip_exec_cache_decode(buf, len + 1, "/p", &c),
			 -EINVAL);
	/* the magic, the counts, the block size */
	assert_int_equal(decode_poked(buf, len, 0, "XIPEXEC2", 8), -EINVAL);
	assert_int_equal(decode_poked(buf, len, 40, &big, 4), -EINVAL);
	assert_int_equal(decode_poked(buf, len, 44, &big, 4), -EINVAL);
	assert_int_equal(decode_poked(buf, len, 48, &one, 4), -EINVAL);
	assert_int_equal(decode_poked(buf, len, 52, &one, 4), -EINVAL);
	assert_int_equal(decode_poked(buf, len, 36, &zero, 4), -EINVAL);
	/* a run of no block, a run that wraps, runs out of order */
	u64 = 0;
	assert_int_equal(decode_poked(buf, len, runs + 16, &u64, 8), -EINVAL);
	u64 = UINT64_MAX - 10;
	assert_int_equal(decode_poked(buf, len, runs + 8, &u64, 8), -EINVAL);
	assert_int_equal(decode_poked(buf, len, runs, &u64, 8), -EINVAL);
	u64 = 99;
	assert_int_equal(decode_poked(buf, len, runs + 24, &u64, 8), -EINVAL);
	/* a read that gave more than was asked, or more than there is */
	assert_int_equal(decode_poked(buf, len, reads + 8, &one, 4), -EINVAL);
	assert_int_equal(decode_poked(buf, len, reads + 12, &big, 4), -EINVAL);
	/* what a log holds is bounded: an entry is one attribute */
	assert_int_equal(xip_exec_cached_log(&a, 0, 65536, buf, 65536),
			 -EFBIG);
	free(buf);
	xip_exec_cached_free(&a);
}

static void test_marker_round_trip(void **state)
{
	struct xip_exec_marker m;
	char *v, *img = unit_path("a:b%c img"), cwd[4096], *rel;

	(void)state;
	v = marker_of("@rootfs", "/bin/busybox", XIP_INTERP_AUTO);
	assert_string_equal(v, "XIPTOOL_EXEC=1:auto:@rootfs:/bin/busybox");
	assert_int_equal(xip_exec_marker_parse(v + 13, &m), 0);
	assert_string_equal(m.image, "@rootfs");
	assert_string_equal(m.path, "/bin/busybox");
	assert_int_equal(m.interp_from, XIP_INTERP_AUTO);
	free(v);
	/* a path relative to the image's root is made absolute */
	v = marker_of("@r", "bin/sh", XIP_INTERP_HOST);
	assert_string_equal(v, "XIPTOOL_EXEC=1:host:@r:/bin/sh");
	free(v);
	/* ':', '%' and control characters are escaped, and come back */
	unit_fill_file(img, 1, 0);
	v = marker_of(img, "/x:y%z\n\x7f\xc3\xa9 w", XIP_INTERP_IMAGE);
	assert_non_null(strstr(v, ":/x%3Ay%25z%0A%7F\xc3\xa9 w"));
	assert_non_null(strstr(v, "/a%3Ab%25c img:"));
	assert_int_equal(xip_exec_marker_parse(v + 13, &m), 0);
	assert_string_equal(m.image, img);
	assert_string_equal(m.path, "/x:y%z\n\x7f\xc3\xa9 w");
	assert_int_equal(m.interp_from, XIP_INTERP_IMAGE);
	free(v);
	/* an image given relative to the current directory: made absolute */
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(unit_tmpdir()), 0);
	rel = strrchr(img, '/') + 1;
	v = marker_of(rel, "/p", XIP_INTERP_AUTO);
	assert_int_equal(chdir(cwd), 0);
	assert_int_equal(xip_exec_marker_parse(v + 13, &m), 0);
	assert_string_equal(m.image, img);
	free(v);
}

/* The image open on a descriptor: named as the kernel names that file. */
static void test_marker_of_descriptor(void **state)
{
	struct xip_exec_marker m;
	char *img = unit_path("fd img"), *v = NULL, linked[600];
	int fd;

	(void)state;
	unit_fill_file(img, 1, 0);
	/* reached through a symbolic link: its target's name, one readlink
	 * of /proc/self/fd/N, whatever the path given said */
	assert_int_equal(symlink(unit_tmpdir(), unit_path("dirlink")), 0);
	snprintf(linked, sizeof(linked), "%s/fd img", unit_path("dirlink"));
	fd = open(linked, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(xip_exec_marker_format("no such name", fd, "/p",
						XIP_INTERP_AUTO, &v), 0);
	assert_int_equal(xip_exec_marker_parse(v + 13, &m), 0);
	assert_string_equal(m.image, img);
	free(v);
	/* removed since: realpath(3) of the path given, which is gone */
	assert_int_equal(unlink(img), 0);
	v = (char *)1;
	assert_int_equal(xip_exec_marker_format(linked, fd, "/p",
						XIP_INTERP_AUTO, &v), -ENOENT);
	assert_null(v);
	close(fd);
}

static void test_marker_format_refuses(void **state)
{
	char *v = (char *)1, *longpath = malloc(XIP_PATH_MAX + 1);

	(void)state;
	assert_int_equal(xip_exec_marker_format(unit_path("none"), -1, "/p",
						XIP_INTERP_AUTO, &v),
			 -ENOENT);
	assert_null(v);
	assert_int_equal(xip_exec_marker_format("@bad name", -1, "/p",
						XIP_INTERP_AUTO, &v),
			 -EINVAL);
	assert_non_null(longpath);
	memset(longpath, 'a', XIP_PATH_MAX);
	longpath[XIP_PATH_MAX] = '\0';
	assert_int_equal(xip_exec_marker_format("@r", -1, longpath,
						XIP_INTERP_AUTO, &v),
			 -ENAMETOOLONG);
	assert_int_equal(xip_exec_marker_format("@r", -1, "/p", 7, &v), -EINVAL);
	free(longpath);
}

static void test_marker_parse_refuses(void **state)
{
	char *big = malloc(XIP_EXEC_MARKER_MAX + 2);
	char *path = malloc(XIP_PATH_MAX + 32);
	struct xip_exec_marker m;

	(void)state;
	expect_refused(NULL, "empty");
	expect_refused("", "empty");
	expect_refused("garbage", "VERSION:INTERP:IMAGE:PATH");
	expect_refused("1:auto:@r", "VERSION:INTERP:IMAGE:PATH");
	expect_refused("1:auto:@r:/p:x", "more than four fields");
	expect_refused("2:auto:@r:/p", "unknown version");
	expect_refused("11:auto:@r:/p", "unknown version");
	expect_refused("1:Auto:@r:/p", "expected auto, host or image");
	expect_refused("1::@r:/p", "expected auto, host or image");
	expect_refused("1:auto::/p", "no image");
	expect_refused("1:auto:img:/p", "neither @NAME nor an absolute path");
	expect_refused("1:auto:./img:/p", "neither @NAME nor an absolute");
	expect_refused("1:auto:@:/p", "empty segment name");
	expect_refused("1:auto:@a/b:/p", "invalid segment name");
	expect_refused("1:auto:@.x:/p", "must not start with '.'");
	expect_refused("1:auto:@r:bin/sh", "not an absolute path");
	expect_refused("1:auto:@r:", "not an absolute path");
	/* one spelling only: lower-case hex, escaped plain bytes, NUL,
	 * raw control characters, a cut escape */
	expect_refused("1:auto:/i%3a:/p", "not an escape");
	expect_refused("1:auto:/i%41:/p", "written as itself");
	expect_refused("1:auto:/i%00:/p", "written as itself");
	expect_refused("1:auto:/i\n:/p", "control character 0x0a");
	expect_refused("1:auto:/i:/p%2", "not an escape");
	expect_refused("1:auto:/i%:/p", "not an escape");
	/* too long: the whole value, or a path */
	assert_non_null(big);
	memset(big, 'a', XIP_EXEC_MARKER_MAX + 1);
	memcpy(big, "1:auto:@r:/", 11);
	big[XIP_EXEC_MARKER_MAX + 1] = '\0';
	expect_refused(big, XIP_EXEC_MARKER ": longer than 24592 bytes");
	assert_non_null(path);
	memset(path, 'a', XIP_PATH_MAX + 20);
	memcpy(path, "1:auto:@r:/", 11);
	path[XIP_PATH_MAX + 20] = '\0';
	expect_refused(path, "program: longer than 4095 bytes");
	/* the last byte that fits, and one more: a path of XIP_PATH_MAX - 1
	 * bytes comes back whole, one of XIP_PATH_MAX is refused (its NUL
	 * would be written past the field) */
	memset(path, 'a', XIP_PATH_MAX + 20);
	memcpy(path, "1:auto:@r:/", 11);
	path[10 + XIP_PATH_MAX - 1] = '\0';
	assert_int_equal(xip_exec_marker_parse(path, &m), 0);
	assert_int_equal(strlen(m.path), XIP_PATH_MAX - 1);
	path[10 + XIP_PATH_MAX - 1] = 'a';
	path[10 + XIP_PATH_MAX] = '\0';
	expect_refused(path, "program: longer than 4095 bytes");
	free(big);
	free(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plan_contiguous),
		cmocka_unit_test(test_plan_runs_and_holes),
		cmocka_unit_test(test_plan_bss_only),
		cmocka_unit_test(test_plan_bad_runs),
		cmocka_unit_test(test_plan_host_programs),
		cmocka_unit_test(test_stack_layout),
		cmocka_unit_test(test_stack_strings_in_blocks),
		cmocka_unit_test(test_stack_kernel_strings),
		cmocka_unit_test(test_raw_copy),
		cmocka_unit_test(test_stack_limits),
		cmocka_unit_test(test_run_refuses_threads),
		cmocka_unit_test(test_cache_round_trip),
		cmocka_unit_test(test_cache_damaged),
		cmocka_unit_test(test_marker_round_trip),
		cmocka_unit_test(test_marker_of_descriptor),
		cmocka_unit_test(test_marker_format_refuses),
		cmocka_unit_test(test_marker_parse_refuses),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
