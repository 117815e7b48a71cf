/* Unit tests of lib/exec/align.c: XIP readiness of synthetic ELF files. */
#include "unit.h"
#include "exec/xip_elf.h"

#include <elf.h>

#define PAGE 4096

struct seg {
	uint32_t type, flags;
	uint64_t offset, vaddr, filesz, memsz, align;
};

/* Write an ELF64 executable of @size bytes with the given headers. */
static void write_elf(const char *path, const struct seg *segs, int n,
		      size_t size, int elfclass)
{
	uint8_t *buf = calloc(1, size);
	Elf64_Ehdr *eh = (Elf64_Ehdr *)buf;
	Elf64_Phdr *ph = (Elf64_Phdr *)(buf + sizeof(*eh));
	FILE *f;

	assert_non_null(buf);
	memset(buf, 0x90, size);	/* no zero blocks: mke2fs -d makes holes */
	memset(buf, 0, sizeof(*eh) + (size_t)n * sizeof(*ph));
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = (uint8_t)elfclass;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_EXEC;
	eh->e_machine = xip_elf_host_machine();
	eh->e_version = EV_CURRENT;
	eh->e_entry = 0x400100;
	eh->e_phoff = sizeof(*eh);
	eh->e_ehsize = sizeof(*eh);
	eh->e_phentsize = sizeof(*ph);
	eh->e_phnum = (uint16_t)n;
	for (int i = 0; i < n; i++) {
		ph[i].p_type = segs[i].type;
		ph[i].p_flags = segs[i].flags;
		ph[i].p_offset = segs[i].offset;
		ph[i].p_vaddr = ph[i].p_paddr = segs[i].vaddr;
		ph[i].p_filesz = segs[i].filesz;
		ph[i].p_memsz = segs[i].memsz;
		ph[i].p_align = segs[i].align;
		if (segs[i].type == PT_DYNAMIC) {
			Elf64_Dyn *d = (Elf64_Dyn *)(buf + segs[i].offset);

			d[0].d_tag = DT_TEXTREL;
			d[1].d_tag = DT_NULL;
		}
	}
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, size, f), size);
	assert_int_equal(fclose(f), 0);
	free(buf);
}

static const struct seg text = { PT_LOAD, PF_R | PF_X, 0, 0x400000, 0x1800,
				 0x1800, PAGE };
static const struct seg data = { PT_LOAD, PF_R | PF_W, 0x2000, 0x402000,
				 0x100, 0x3000, PAGE };

static struct xip_image *img;

static void build(const char *tree)
{
	char cmd[2048];
	const char *p = unit_path("align.img");

	if (img)
		xip_image_close(img);
	snprintf(cmd, sizeof(cmd),
		 "mke2fs -q -F -t ext2 -b 4096 -N 128 -d '%s' '%s' 16M >/dev/null 2>&1",
		 tree, p);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(xip_image_open(p, 0, &img), 0);
}

static char tree[512];

static const char *in_tree(const char *name)
{
	static char buf[1024];

	snprintf(buf, sizeof(buf), "%s/%s", tree, name);
	return buf;
}

static int setup_tree(void **state)
{
	struct seg s[3];
	char good[1024];

	snprintf(tree, sizeof(tree), "%s", unit_path("tree"));
	mkdir(tree, 0755);
	mkdir(in_tree("sub"), 0755);
	s[0] = text;
	s[1] = data;
	write_elf(in_tree("good"), s, 2, 0x2100, ELFCLASS64);
	s[1].offset = 0x2010;	/* not congruent to 0x402000 */
	write_elf(in_tree("skewed"), s, 2, 0x2110, ELFCLASS64);
	s[1] = data;
	s[0].align = 0x10;
	write_elf(in_tree("smallalign"), s, 2, 0x2100, ELFCLASS64);
	s[0] = text;
	s[0].flags = PF_R | PF_W | PF_X;
	write_elf(in_tree("wx"), s, 2, 0x2100, ELFCLASS64);
	s[0] = text;
	s[2] = (struct seg){ PT_GNU_STACK, PF_R | PF_W | PF_X, 0, 0, 0, 0, 16 };
	write_elf(in_tree("execstack"), s, 3, 0x2100, ELFCLASS64);
	s[2] = (struct seg){ PT_DYNAMIC, PF_R, 0x2000, 0x402000, 32, 32, 8 };
	write_elf(in_tree("textrel"), s, 3, 0x2100, ELFCLASS64);
	s[0] = text;
	s[0].memsz = 0x2000;	/* bss after text: its last page is zeroed */
	s[1] = data;
	write_elf(in_tree("robss"), s, 2, 0x2100, ELFCLASS64);
	s[0] = text;
	s[0].filesz = s[0].memsz = 0xf000;	/* 15 pages: crosses block 12 */
	s[1] = data;
	s[1].offset = 0xf000;
	s[1].vaddr = 0x40f000;
	write_elf(in_tree("split"), s, 2, 0xf100, ELFCLASS64);
	write_elf(in_tree("class32"), s, 2, 0x2100, ELFCLASS32);
	s[0] = text;
	s[1] = data;
	s[1].filesz = 0x800;
	write_elf(in_tree("truncated"), s, 2, 0x2100, ELFCLASS64);
	unit_fill_file(in_tree("notelf"), 5000, 'x');
	write_elf(in_tree("sub/good2"), (struct seg[]){ text, data }, 2, 0x2100,
		  ELFCLASS64);
	snprintf(good, sizeof(good), "%s", in_tree("good"));
	assert_int_equal(link(good, in_tree("sub/hardlink")), 0);
	build(tree);
	return 0;
}

static int teardown_tree(void **state)
{
	xip_image_close(img);
	img = NULL;
	return 0;
}

static void check(const char *path, struct xip_align_file *f,
		  unsigned int page)
{
	struct xip_align_opts o = { .page_size = page };
	ext2_ino_t ino;

	assert_int_equal(xip_lookup(img, path, 0, &ino), 0);
	assert_int_equal(xip_align_check(img, ino, path, &o, f), 0);
	if (f->reasons)
		fprintf(stderr, "# %s: %s\n", path, f->reasons);
}

static void expect_reason(const char *path, const char *want)
{
	struct xip_align_file f;

	check(path, &f, 0);
	assert_true(f.elf);
	assert_false(f.ready);
	assert_non_null(f.reasons);
	assert_non_null(strstr(f.reasons, want));
	xip_align_file_free(&f);
}

static void test_ready(void **state)
{
	struct xip_align_file f;

	check("/good", &f, 0);
	assert_true(f.elf);
	assert_true(f.ready);
	assert_null(f.reasons);
	assert_int_equal(f.nsegs, 2);
	assert_int_equal(f.mmaps, 2);
	/* text: 2 pages shared; data: 1 file page, written: copied */
	assert_int_equal(f.shared, 2);
	assert_int_equal(f.copied, 1);
	assert_int_equal(f.segs[0].runs, 1);
	xip_align_file_free(&f);
}

static void test_reasons(void **state)
{
	expect_reason("/skewed", "p_offset 0x2010 not congruent to p_vaddr 0x402000 modulo the page size 4096");
	expect_reason("/smallalign", "segment 0 (r-x): p_align 0x10 smaller than the page size 4096");
	expect_reason("/wx", "segment 0 (rwx): writable and executable");
	expect_reason("/execstack", "executable stack (PT_GNU_STACK)");
	expect_reason("/textrel", "text relocations (DT_TEXTREL)");
	expect_reason("/split", "segment 0 (r-x): its blocks are not contiguous (2 runs: 2 mmaps instead of 1)");
	expect_reason("/class32", "32-bit ELF files are not supported");
	expect_reason("/truncated", "truncated");
}

static void test_copied_pages(void **state)
{
	struct xip_align_file f;

	check("/robss", &f, 0);
	assert_true(f.ready);
	/* the text's second page is partly bss: zeroed, so copied */
	assert_int_equal(f.segs[0].shared, 1);
	assert_int_equal(f.segs[0].copied, 1);
	xip_align_file_free(&f);
	check("/textrel", &f, 0);
	assert_int_equal(f.segs[0].shared, 0);
	assert_int_equal(f.segs[0].copied, 2);
	xip_align_file_free(&f);
}

static void test_not_elf_and_page_size(void **state)
{
	struct xip_align_file f;

	check("/notelf", &f, 0);
	assert_false(f.elf);
	xip_align_file_free(&f);
	check("/good", &f, 16384);
	assert_false(f.ready);
	assert_non_null(strstr(f.reasons, "block size 4096 differs from the page size 16384"));
	xip_align_file_free(&f);
}

static int count_cb(void *arg, const char *path, ext2_ino_t ino)
{
	int *n = arg;

	(*n)++;
	assert_true(path[0] == '/');
	assert_null(strstr(path, "hardlink"));	/* /good comes first */
	return 0;
}

static int stop_cb(void *arg, const char *path, ext2_ino_t ino)
{
	return 42;
}

static void test_walk(void **state)
{
	int n = 0;

	assert_int_equal(xip_walk_files(img, count_cb, &n), 0);
	/* 11 files at the top, sub/good2; sub/hardlink is /good again */
	assert_int_equal(n, 12);
	assert_int_equal(xip_walk_files(img, stop_cb, NULL), 42);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ready),
		cmocka_unit_test(test_reasons),
		cmocka_unit_test(test_copied_pages),
		cmocka_unit_test(test_not_elf_and_page_size),
		cmocka_unit_test(test_walk),
	};

	return cmocka_run_group_tests(tests, setup_tree, teardown_tree);
}
