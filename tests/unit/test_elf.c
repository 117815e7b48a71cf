/* Unit tests of lib/exec/elf.c: parsing and validation of good and hostile
 * ELF headers, and of real host executables. */
#include <elf.h>
#include <fcntl.h>
#include <limits.h>

#include "unit.h"
#include "exec/xip_elf.h"

#define PAGE 4096

/* A small, well-formed image: header, program headers, an interpreter
 * name, a dynamic table; text at 0x400000, data+bss after it. */
struct fake {
	uint8_t b[3 * PAGE];
	size_t len;
};

static Elf64_Ehdr *eh(struct fake *f)
{
	return (Elf64_Ehdr *)f->b;
}

static Elf64_Phdr *ph(struct fake *f, int i)
{
	return (Elf64_Phdr *)(f->b + sizeof(Elf64_Ehdr)) + i;
}

enum { P_PHDR, P_INTERP, P_TEXT, P_DATA, P_DYN, P_STACK, NPH };

static void fake_init(struct fake *f, uint16_t type, bool interp)
{
	uint64_t base = type == ET_EXEC ? 0x400000 : 0;
	Elf64_Ehdr *e = eh(f);
	Elf64_Dyn *dyn = (Elf64_Dyn *)(f->b + 0x300);

	memset(f, 0, sizeof(*f));
	f->len = sizeof(f->b);
	memcpy(e->e_ident, ELFMAG, SELFMAG);
	e->e_ident[EI_CLASS] = ELFCLASS64;
	e->e_ident[EI_DATA] = ELFDATA2LSB;
	e->e_ident[EI_VERSION] = EV_CURRENT;
	e->e_type = type;
	e->e_machine = xip_elf_host_machine();
	e->e_version = EV_CURRENT;
	e->e_entry = base + PAGE + 0x10;
	e->e_phoff = sizeof(Elf64_Ehdr);
	e->e_ehsize = sizeof(Elf64_Ehdr);
	e->e_phentsize = sizeof(Elf64_Phdr);
	e->e_phnum = NPH;
	*ph(f, P_PHDR) = (Elf64_Phdr){ PT_PHDR, PF_R, 64, base + 64, base + 64,
				       NPH * sizeof(Elf64_Phdr),
				       NPH * sizeof(Elf64_Phdr), 8 };
	strcpy((char *)f->b + 0x200, "/lib/ld-test.so");
	*ph(f, P_INTERP) = (Elf64_Phdr){ interp ? PT_INTERP : PT_NULL, PF_R,
					 0x200, base + 0x200, base + 0x200,
					 16, 16, 1 };
	/* text covers the headers too, like ld's default layout */
	*ph(f, P_TEXT) = (Elf64_Phdr){ PT_LOAD, PF_R | PF_X, 0, base, base,
				       2 * PAGE, 2 * PAGE, PAGE };
	*ph(f, P_DATA) = (Elf64_Phdr){ PT_LOAD, PF_R | PF_W, 2 * PAGE + 0x100,
				       base + 3 * PAGE + 0x100,
				       base + 3 * PAGE + 0x100, 0x200,
				       0x5000, PAGE };
	dyn[0] = (Elf64_Dyn){ DT_TEXTREL, { 0 } };
	dyn[1] = (Elf64_Dyn){ DT_NULL, { 0 } };
	*ph(f, P_DYN) = (Elf64_Phdr){ PT_DYNAMIC, PF_R, 0x300, base + 0x300,
				      base + 0x300, 32, 32, 8 };
	*ph(f, P_STACK) = (Elf64_Phdr){ PT_GNU_STACK, PF_R | PF_W, 0, 0, 0,
					0, 0, 16 };
}

static int parse(struct fake *f, struct xip_elf *elf)
{
	return xip_elf_parse_buf(f->b, f->len, "t", elf);
}

/* Parse and validate; the result code of the first failing step. */
static int load(struct fake *f)
{
	struct xip_elf elf;
	int ret = parse(f, &elf);

	if (ret)
		return ret;
	ret = xip_elf_validate_load(&elf, "t", PAGE);
	xip_elf_free(&elf);
	return ret;
}

static void expect_error(struct fake *f, const char *needle)
{
	int ret = load(f);

	if (ret != -ENOEXEC || !strstr(xip_errmsg(), needle))
		fail_msg("expected -ENOEXEC with '%s', got %d '%s'", needle,
			 ret, xip_errmsg());
	assert_true(!strncmp(xip_errmsg(), "t: ", 3));
}

static void test_good_exec(void **state)
{
	struct xip_elf elf;
	struct fake f;

	fake_init(&f, ET_EXEC, false);
	assert_int_equal(parse(&f, &elf), 0);
	assert_int_equal(elf.type, ET_EXEC);
	assert_int_equal(elf.nload, 2);
	assert_int_equal(elf.load[0].index, P_TEXT);
	assert_int_equal(elf.load[1].flags, PF_R | PF_W);
	assert_null(elf.interp);
	assert_true(elf.has_gnu_stack);
	assert_false(elf.exec_stack);
	assert_true(elf.has_dynamic);
	assert_true(elf.textrel);
	assert_true(elf.has_phdr_addr);
	assert_int_equal(elf.phdr_addr, 0x400040);
	assert_int_equal(xip_elf_validate_load(&elf, "t", PAGE), 0);
	assert_int_equal(elf.lo, 0x400000);
	assert_int_equal(elf.hi, 0x400000 + 3 * PAGE + 0x100 + 0x5000 + 0xf00);
	assert_int_equal(elf.max_align, PAGE);
	xip_elf_free(&elf);
	assert_null(elf.phdr);
}

static void test_good_dyn_interp(void **state)
{
	struct xip_elf elf;
	struct fake f;

	fake_init(&f, ET_DYN, true);
	ph(&f, P_STACK)->p_flags |= PF_X;
	ph(&f, P_TEXT)->p_align = 0x200000;
	ph(&f, P_DATA)->p_align = 3 * PAGE;	/* not a power of 2: ignored */
	assert_int_equal(parse(&f, &elf), 0);
	assert_string_equal(elf.interp, "/lib/ld-test.so");
	assert_true(elf.exec_stack);
	assert_int_equal(elf.phdr_addr, 64);
	assert_int_equal(xip_elf_validate_load(&elf, "t", PAGE), 0);
	assert_int_equal(elf.lo, 0);
	assert_int_equal(elf.max_align, 0x200000);
	xip_elf_free(&elf);

	/* absurd alignment is capped */
	ph(&f, P_TEXT)->p_align = 1ULL << 62;
	assert_int_equal(parse(&f, &elf), 0);
	assert_int_equal(xip_elf_validate_load(&elf, "t", PAGE), 0);
	assert_int_equal(elf.max_align, XIP_ELF_MAX_ALIGN);
	xip_elf_free(&elf);
}

static void test_zero_size_segments(void **state)
{
	struct xip_elf elf;
	struct fake f;

	/* p_memsz == 0 maps nothing; p_filesz == 0 is all bss */
	fake_init(&f, ET_EXEC, false);
	*ph(&f, P_PHDR) = (Elf64_Phdr){ PT_LOAD, PF_R, 0, 0x300000, 0x300000,
					0, 0, PAGE };
	ph(&f, P_DATA)->p_filesz = 0;
	assert_int_equal(parse(&f, &elf), 0);
	assert_int_equal(elf.nload, 2);
	assert_int_equal(elf.load[1].filesz, 0);
	assert_int_equal(xip_elf_validate_load(&elf, "t", PAGE), 0);
	xip_elf_free(&elf);
}

static void test_not_elf(void **state)
{
	struct fake f;

	fake_init(&f, ET_EXEC, false);
	memcpy(f.b, "#!/bin/sh\n", 10);
	expect_error(&f, "not an ELF file");
	f.len = 0;
	expect_error(&f, "not an ELF file");
	fake_init(&f, ET_EXEC, false);
	f.len = 3;
	expect_error(&f, "not an ELF file");
	f.len = 20;
	expect_error(&f, "truncated");
}

static void test_bad_ident(void **state)
{
	struct fake f;

	fake_init(&f, ET_EXEC, false);
	f.b[EI_CLASS] = ELFCLASS32;
	expect_error(&f, "32-bit");
	f.b[EI_CLASS] = 7;
	expect_error(&f, "invalid ELF class");
	fake_init(&f, ET_EXEC, false);
	f.b[EI_DATA] = ELFDATA2MSB;
	expect_error(&f, "big-endian");
	f.b[EI_DATA] = 0;
	expect_error(&f, "data encoding");
	fake_init(&f, ET_EXEC, false);
	eh(&f)->e_version = 2;
	expect_error(&f, "version");
}

static void test_bad_type(void **state)
{
	struct fake f;

	fake_init(&f, ET_REL, false);
	expect_error(&f, "relocatable");
	fake_init(&f, ET_CORE, false);
	expect_error(&f, "core dump");
	fake_init(&f, 0x1234, false);
	expect_error(&f, "invalid ELF type");
}

static void test_bad_phdr_table(void **state)
{
	struct fake f;

	fake_init(&f, ET_EXEC, false);
	eh(&f)->e_phentsize = 32;
	expect_error(&f, "program header size");
	fake_init(&f, ET_EXEC, false);
	eh(&f)->e_phnum = 0;
	expect_error(&f, "no program headers");
	eh(&f)->e_phnum = PN_XNUM;
	expect_error(&f, "too many program headers");
	eh(&f)->e_phnum = XIP_ELF_MAX_PHNUM + 1;
	expect_error(&f, "too many program headers");
	fake_init(&f, ET_EXEC, false);
	eh(&f)->e_phoff = f.len - 100;
	expect_error(&f, "program headers at");
	eh(&f)->e_phoff = UINT64_MAX - 10;
	expect_error(&f, "program headers at");
	/* a file cut inside the table */
	fake_init(&f, ET_EXEC, false);
	f.len = 100;
	expect_error(&f, "truncated");
}

static void test_bad_load(void **state)
{
	struct fake f;

	fake_init(&f, ET_EXEC, false);
	ph(&f, P_DATA)->p_filesz = 0x6000;
	expect_error(&f, "exceeds memory size");
	fake_init(&f, ET_EXEC, false);
	ph(&f, P_DATA)->p_offset = f.len - 0x100;
	expect_error(&f, "beyond the end of the file");
	ph(&f, P_DATA)->p_offset = UINT64_MAX - 0x100;
	expect_error(&f, "beyond the end of the file");
	fake_init(&f, ET_EXEC, false);
	ph(&f, P_DATA)->p_vaddr = UINT64_MAX - 0x1000;
	expect_error(&f, "wraps around");
	fake_init(&f, ET_EXEC, false);
	ph(&f, P_TEXT)->p_type = PT_NOTE;
	ph(&f, P_DATA)->p_type = PT_NOTE;
	expect_error(&f, "no loadable segments");
	/* the truncated file: data bytes cut off */
	fake_init(&f, ET_EXEC, false);
	f.len = 2 * PAGE + 0x200;
	expect_error(&f, "truncated: segment 3");
}

static void test_bad_interp(void **state)
{
	struct fake f;

	fake_init(&f, ET_DYN, true);
	f.b[0x200 + 15] = 'x';
	expect_error(&f, "NUL-terminated");
	fake_init(&f, ET_DYN, true);
	f.b[0x200 + 3] = '\0';
	expect_error(&f, "NUL-terminated");
	fake_init(&f, ET_DYN, true);
	ph(&f, P_INTERP)->p_filesz = 1;
	expect_error(&f, "interpreter name length");
	ph(&f, P_INTERP)->p_filesz = PATH_MAX + 1;
	expect_error(&f, "interpreter name length");
	fake_init(&f, ET_DYN, true);
	ph(&f, P_INTERP)->p_offset = f.len - 4;
	expect_error(&f, "interpreter name beyond");
	fake_init(&f, ET_DYN, true);
	*ph(&f, P_PHDR) = *ph(&f, P_INTERP);
	expect_error(&f, "more than one PT_INTERP");
}

static void test_validate(void **state)
{
	struct fake f;

	fake_init(&f, ET_EXEC, false);
	eh(&f)->e_machine = EM_S390;
	expect_error(&f, "ELF file for s390");
	fake_init(&f, ET_EXEC, false);
	ph(&f, P_DATA)->p_vaddr += 8;
	expect_error(&f, "differ modulo the page size");
	fake_init(&f, ET_EXEC, false);
	ph(&f, P_DATA)->p_flags = PF_R | PF_W | PF_X;
	expect_error(&f, "both writable and executable");
	fake_init(&f, ET_EXEC, false);
	ph(&f, P_DATA)->p_vaddr = 0x400000 + PAGE + 0x100;
	ph(&f, P_DATA)->p_offset = PAGE + 0x100;
	expect_error(&f, "overlaps");
	ph(&f, P_DATA)->p_vaddr = 0x100100;
	expect_error(&f, "comes before");
	fake_init(&f, ET_EXEC, false);
	ph(&f, P_DATA)->p_memsz = XIP_ELF_MAX_SPAN;
	expect_error(&f, "segments span");
	fake_init(&f, ET_EXEC, false);
	ph(&f, P_DATA)->p_vaddr = XIP_ELF_USER_TOP - 0x1000 + 0x100;
	expect_error(&f, "beyond the user address space");
	fake_init(&f, ET_EXEC, false);
	ph(&f, P_TEXT)->p_vaddr = 0;
	ph(&f, P_DATA)->p_vaddr = 3 * PAGE + 0x100;
	eh(&f)->e_entry = 0x10;
	expect_error(&f, "below the lowest mappable address");
	fake_init(&f, ET_EXEC, false);
	eh(&f)->e_entry = 0x403100;	/* in data */
	expect_error(&f, "entry point");
	eh(&f)->e_entry = 0;
	expect_error(&f, "entry point");
}

/* Random corruption of a good header never crashes the parser and always
 * ends in success or an error record naming the file. */
static void test_mutations(void **state)
{
	struct xip_elf elf;
	struct fake f;
	unsigned int seed = 12345;

	for (int i = 0; i < 20000; i++) {
		int n = 1 + rand_r(&seed) % 8;

		fake_init(&f, (i & 1) ? ET_DYN : ET_EXEC, i & 2);
		for (int k = 0; k < n; k++) {
			size_t at = rand_r(&seed) % (sizeof(Elf64_Ehdr) +
						     NPH * sizeof(Elf64_Phdr));

			f.b[at] = (uint8_t)rand_r(&seed);
		}
		if (i % 7 == 0)
			f.len = rand_r(&seed) % f.len;
		if (parse(&f, &elf) == 0) {
			if (xip_elf_validate_load(&elf, "t", PAGE))
				assert_true(!strncmp(xip_errmsg(), "t: ", 3));
			xip_elf_free(&elf);
		} else {
			assert_true(!strncmp(xip_errmsg(), "t: ", 3));
		}
	}
}

/* Check the host's @path: false when it is not there to check. */
static bool check_host_file(const char *path, bool want_interp)
{
	struct xip_elf elf;

	if (!unit_parse_host_elf(path, &elf))
		return false;
	assert_int_equal(elf.machine, xip_elf_host_machine());
	assert_int_equal(xip_elf_validate_load(&elf, path, 0), 0);
	assert_true(elf.has_phdr_addr);
	assert_true(elf.hi > elf.lo);
	if (want_interp)
		assert_non_null(elf.interp);
	else
		assert_null(elf.interp);
	xip_elf_free(&elf);
	return true;
}

static void test_host_files(void **state)
{
	int checked = 0;

	checked += check_host_file("/usr/bin/true", true);
	checked += check_host_file("/usr/bin/env", true);
	checked += check_host_file("/bin/busybox", false);
	checked += check_host_file("/lib64/ld-linux-x86-64.so.2", false);
#ifdef __aarch64__
	/* arm64 multiarch: ld.so, libc (with PT_INTERP), busybox-static */
	checked += check_host_file("/lib/ld-linux-aarch64.so.1", false);
	checked += check_host_file("/lib/aarch64-linux-gnu/libc.so.6", true);
	checked += check_host_file("/usr/local/lib/aarch64-linux-gnu/busybox",
				   false);
#endif
	if (!checked) {
		print_message("# none of the host's programs is there to check\n");
		skip();
	}
}

/* A "GNU" property note at 0x400 with the given properties (type, value). */
static void put_property(struct fake *f, const uint32_t *props, size_t n,
			 uint32_t namesz)
{
	uint32_t *w = (uint32_t *)(f->b + 0x400);
	uint32_t desc = (uint32_t)(n * 16);

	w[0] = namesz;
	w[1] = desc;
	w[2] = 5;			/* NT_GNU_PROPERTY_TYPE_0 */
	memcpy(&w[3], "GNU", 4);
	for (size_t i = 0; i < n; i++) {
		w[4 + 4 * i] = props[2 * i];
		w[5 + 4 * i] = 4;
		w[6 + 4 * i] = props[2 * i + 1];
		w[7 + 4 * i] = 0;	/* padding to 8 bytes */
	}
	*ph(f, P_STACK) = (Elf64_Phdr){ 0x6474e553 /* PT_GNU_PROPERTY */, PF_R,
					0x400, 0x400, 0x400, 16 + desc,
					16 + desc, 8 };
}

/* The kernel's parse_elf_properties(): BTI and PAC of an arm64 file. */
static void test_aarch64_property(void **state)
{
	const uint32_t x86[] = { 0xc0000002, 3 };	/* x86 feature_1_and */
	const uint32_t both[] = { 0xc0000002, 3, 0xc0000000, 3 };
	struct xip_elf elf;
	struct fake f;

	fake_init(&f, ET_EXEC, false);
	eh(&f)->e_machine = EM_AARCH64;
	put_property(&f, both, 2, 4);
	assert_int_equal(parse(&f, &elf), 0);
	assert_int_equal(elf.aarch64_features,
			 XIP_ELF_AARCH64_BTI | XIP_ELF_AARCH64_PAC);
	xip_elf_free(&elf);
	/* another property only: nothing */
	put_property(&f, x86, 1, 4);
	assert_int_equal(parse(&f, &elf), 0);
	assert_int_equal(elf.aarch64_features, 0);
	xip_elf_free(&elf);
	/* a damaged note (name size) is ignored, not fatal */
	put_property(&f, both, 2, 5);
	assert_int_equal(parse(&f, &elf), 0);
	assert_int_equal(elf.aarch64_features, 0);
	xip_elf_free(&elf);
	/* a property running past the note: ignored */
	put_property(&f, both, 2, 4);
	((uint32_t *)(f.b + 0x400))[9] = 64;
	assert_int_equal(parse(&f, &elf), 0);
	assert_int_equal(elf.aarch64_features, 0);
	xip_elf_free(&elf);
	/* the note of an x86-64 file is not read for arm64 bits */
	put_property(&f, both, 2, 4);
	eh(&f)->e_machine = EM_X86_64;
	assert_int_equal(parse(&f, &elf), 0);
	assert_int_equal(elf.aarch64_features, 0);
	xip_elf_free(&elf);
}

static void test_parse_fd_errors(void **state)
{
	struct xip_elf elf;
	const char *p = unit_path("script");
	int fd;

	unit_fill_file(p, 100, '#');
	fd = open(p, O_RDONLY);
	assert_int_equal(xip_elf_parse_fd(fd, p, &elf), -ENOEXEC);
	assert_non_null(strstr(xip_errmsg(), "not an ELF file"));
	close(fd);
	fd = open(unit_tmpdir(), O_RDONLY);
	assert_int_equal(xip_elf_parse_fd(fd, "dir", &elf), -EACCES);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good_exec),
		cmocka_unit_test(test_good_dyn_interp),
		cmocka_unit_test(test_zero_size_segments),
		cmocka_unit_test(test_not_elf),
		cmocka_unit_test(test_bad_ident),
		cmocka_unit_test(test_bad_type),
		cmocka_unit_test(test_bad_phdr_table),
		cmocka_unit_test(test_bad_load),
		cmocka_unit_test(test_bad_interp),
		cmocka_unit_test(test_validate),
		cmocka_unit_test(test_mutations),
		cmocka_unit_test(test_host_files),
		cmocka_unit_test(test_parse_fd_errors),
		cmocka_unit_test(test_aarch64_property),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
