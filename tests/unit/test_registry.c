/* Unit tests of lib/registry/registry.c, attach.c, save.c and detach.c: names,
 * state files, stale entries, @NAME resolution, attach/save/detach without
 * a loop device. */
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <zlib.h>

#include "unit.h"
#include "registry/registry_int.h"
#include "segment/segment_int.h"

static int use_rundir(void **state)
{
	static int k;
	char *dir = unit_path("run");
	char cmd[600];

	snprintf(dir + strlen(dir), 16, "%d", k++);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
	setenv("XIPTOOL_RUNDIR", dir, 1);
	setenv("XIPTOOL_SHMDIR", unit_tmpdir(), 1);
	return 0;
}

static void entry_fill(struct xip_seg_entry *e, const char *name,
		       const char *path)
{
	struct stat st;

	memset(e, 0, sizeof(*e));
	snprintf(e->name, sizeof(e->name), "%s", name);
	snprintf(e->path, sizeof(e->path), "%s", path);
	e->type = XIP_SEGTYPE_SW;
	e->size = 12345;
	e->created = 1700000000;
	e->owner = 1000;
	if (lstat(path, &st) == 0) {	/* the identity checked at every use */
		e->seg_dev = (uint64_t)st.st_dev;
		e->seg_ino = (uint64_t)st.st_ino;
		e->seg_uid = st.st_uid;
	}
}

static void test_names(void **state)
{
	char buf[80], long_name[80];

	assert_int_equal(xip_registry_name_check("rootfs"), 0);
	assert_int_equal(xip_registry_name_check("a.b_c-D9"), 0);
	assert_int_equal(xip_registry_name_check(""), -EINVAL);
	assert_int_equal(xip_registry_name_check(NULL), -EINVAL);
	assert_int_equal(xip_registry_name_check(".x"), -EINVAL);
	assert_string_equal(xip_errmsg(), "segment name must not start with '.'");
	assert_int_equal(xip_registry_name_check("a/b"), -EINVAL);
	assert_int_equal(xip_registry_name_check("a b"), -EINVAL);
	assert_int_equal(xip_registry_name_check("caf\xc3\xa9"), -EINVAL);
	memset(long_name, 'x', 64);
	long_name[64] = '\0';
	assert_int_equal(xip_registry_name_check(long_name), 0);
	long_name[64] = 'x';
	long_name[65] = '\0';
	assert_int_equal(xip_registry_name_check(long_name), -EINVAL);

	assert_int_equal(xip_registry_default_name("/a/b/rootfs.img.gz", buf,
						   sizeof(buf)), 0);
	assert_string_equal(buf, "rootfs");
	assert_int_equal(xip_registry_default_name("my image.v2.ext2", buf,
						   sizeof(buf)), 0);
	assert_string_equal(buf, "my_image.v2");
	assert_int_equal(xip_registry_default_name("/x/..hidden", buf,
						   sizeof(buf)), 0);
	assert_string_equal(buf, "hidden");
	assert_int_equal(xip_registry_default_name(long_name, buf, sizeof(buf)),
			 0);
	assert_int_equal(strlen(buf), 64);
	assert_int_equal(xip_registry_default_name("/x/...", buf, sizeof(buf)),
			 -EINVAL);
}

static void test_format_parse(void **state)
{
	struct xip_seg_entry a, b;
	char text[32768];
	int n;

	entry_fill(&a, "seg", "/dev/shm/xiptool-seg");
	snprintf(a.image, sizeof(a.image), "/odd\\dir/with\nnewline=x.img");
	snprintf(a.label, sizeof(a.label), "lab el");
	snprintf(a.loop, sizeof(a.loop), "/dev/loop7");
	a.offset = 1ULL << 40;
	a.compressed = true;
	n = xip_registry_format(&a, text, sizeof(text));
	assert_true(n > 0);
	assert_int_equal(strlen(text), n);
	assert_null(strstr(text, "with\nnewline"));
	assert_int_equal(xip_registry_parse(text, &b), 0);
	assert_string_equal(b.image, a.image);
	assert_string_equal(b.label, "lab el");
	assert_string_equal(b.loop, "/dev/loop7");
	assert_int_equal(b.offset, 1ULL << 40);
	assert_int_equal(b.type, XIP_SEGTYPE_SW);
	assert_int_equal(b.size, 12345);
	assert_int_equal(b.created, 1700000000);
	assert_int_equal(b.owner, 1000);
	assert_true(b.compressed);
	assert_false(b.verified);
	assert_false(b.populate);
	/* every numeric field, each at its own width */
	a.verified = true;
	a.populate = true;
	a.sizelimit = (1ULL << 33) + 7;
	a.seg_dev = (1ULL << 40) + 3;
	a.seg_ino = (1ULL << 36) + 5;
	a.seg_uid = 70000;
	a.image_mode = 0100640;
	a.image_uid = 0x7ffffff0;
	a.image_gid = 65537;
	a.attaching = true;
	a.pid = 0x12345;
	assert_true(xip_registry_format(&a, text, sizeof(text)) > 0);
	assert_int_equal(xip_registry_parse(text, &b), 0);
	assert_true(b.verified);
	assert_true(b.populate);
	assert_true(b.compressed);
	assert_int_equal(b.sizelimit, (1ULL << 33) + 7);
	assert_int_equal(b.seg_dev, (1ULL << 40) + 3);
	assert_int_equal(b.seg_ino, (1ULL << 36) + 5);
	assert_int_equal(b.seg_uid, 70000);
	assert_int_equal(b.image_mode, 0100640);
	assert_int_equal(b.image_uid, 0x7ffffff0);
	assert_int_equal(b.image_gid, 65537);
	assert_true(b.attaching);
	assert_int_equal(b.pid, 0x12345);
	assert_int_equal(b.offset, 1ULL << 40);
	assert_int_equal(b.created, 1700000000);
	/*
	 * a brief read: what opening the segment reads, into a zeroed entry,
	 * the rest left 0; only the bytes up to the path's end written
	 */
	{
		struct xip_seg_entry *c = malloc(sizeof(*c));
		size_t end = offsetof(struct xip_seg_entry, path) +
			     strlen(a.path) + 1;

		memset(c, 0, sizeof(*c));
		assert_int_equal(xip_registry_parse_brief(text, c), 0);
		assert_string_equal(c->name, "seg");
		assert_string_equal(c->path, a.path);
		assert_string_equal(c->loop, "/dev/loop7");
		assert_int_equal(c->type, XIP_SEGTYPE_SW);
		assert_int_equal(c->size, 12345);
		assert_true(c->populate);
		assert_true(c->attaching);
		assert_int_equal(c->pid, 0x12345);
		assert_int_equal(c->owner, 1000);
		assert_int_equal(c->seg_dev, (1ULL << 40) + 3);
		assert_int_equal(c->seg_ino, (1ULL << 36) + 5);
		assert_int_equal(c->seg_uid, 70000);
		for (size_t i = end; i < sizeof(*c); i++)
			if (((const unsigned char *)c)[i])
				fail_msg("byte %zu past the path written", i);
		/* a damaged record is refused as by the full read */
		memset(c, 0, sizeof(*c));
		assert_int_equal(xip_registry_parse_brief("name=x\ntype=zz\n"
							  "path=/p\n", c),
				 -EINVAL);
		free(c);
	}
	a.attaching = false;
	a.image_mode = 0;
	a.verified = false;
	a.populate = false;
	/* too small a buffer */
	assert_int_equal(xip_registry_format(&a, text, 40), -ENAMETOOLONG);
	/* damaged records */
	assert_int_equal(xip_registry_parse("garbage\n", &b), -EINVAL);
	assert_int_equal(xip_registry_parse("name=x\ntype=zz\npath=/p\n", &b),
			 -EINVAL);
	assert_int_equal(xip_registry_parse(
				 "name=x\ntype=sr\npath=/p\nsize=-1\n",
				 &b), -EINVAL);
	/* numbers: digits only, no wrap past 64 bits, modes up to 0177777 */
	assert_int_equal(xip_registry_parse(
				 "name=x\ntype=sr\npath=/p\nsize=18446744073709551615\n",
				 &b), 0);
	assert_true(b.size == UINT64_MAX);
	assert_int_equal(xip_registry_parse(
				 "name=x\ntype=sr\npath=/p\nsize=18446744073709551616\n",
				 &b), -EINVAL);
	assert_int_equal(xip_registry_parse(
				 "name=x\ntype=sr\npath=/p\nsize=12a\n",
				 &b), -EINVAL);
	assert_int_equal(xip_registry_parse(
				 "name=x\ntype=sr\npath=/p\nsize=\n",
				 &b), -EINVAL);
	assert_int_equal(xip_registry_parse(
				 "name=x\ntype=sr\npath=/p\nimagemode=177777\n",
				 &b), 0);
	assert_int_equal(b.image_mode, 0177777);
	assert_int_equal(xip_registry_parse(
				 "name=x\ntype=sr\npath=/p\nimagemode=200000\n",
				 &b), -EINVAL);
	assert_int_equal(xip_registry_parse(
				 "name=x\ntype=sr\npath=/p\nimagemode=1008\n",
				 &b), -EINVAL);
	/* an escaped value and a plain one of the longest a field holds */
	assert_int_equal(xip_registry_parse(
				 "name=x\ntype=sr\npath=/p\\q\\nr\nlabel=l\n",
				 &b), 0);
	assert_string_equal(b.path, "/pq\nr");
	assert_string_equal(b.label, "l");
	{
		char rec[256];

		/* loop holds 63 bytes and its end */
		snprintf(rec, sizeof(rec), "name=x\ntype=sr\npath=/p\nloop=%063d\n", 7);
		assert_int_equal(xip_registry_parse(rec, &b), 0);
		assert_int_equal(strlen(b.loop), 63);
		snprintf(rec, sizeof(rec), "name=x\ntype=sr\npath=/p\nloop=%064d\n", 7);
		assert_int_equal(xip_registry_parse(rec, &b), -ENAMETOOLONG);
	}
	assert_int_equal(xip_registry_parse("name=.x\ntype=sr\npath=/p\n", &b),
			 -EINVAL);
	assert_int_equal(xip_registry_parse("name=x\ntype=sr\n", &b), -EINVAL);
	/* unknown keys are ignored: newer versions may add some */
	assert_int_equal(xip_registry_parse(
				 "name=x\ntype=er\npath=/p\nfuture=1",
				 &b), 0);
	assert_int_equal(b.type, XIP_SEGTYPE_ER);
}

/* The image's owner, group and mode: kept in octal, absent without one. */
/*
 * A brief read stops once it has read the fields opening reads, which
 * records have first: what follows is not read (a full read still finds
 * it damaged); a record of the former order, those fields last, is read
 * through.
 */
static void test_brief_stops(void **state)
{
	static const char *rest = "image=/i.img\ngarbage\n";
	static const char *old =
		"name=old\ntype=sr\nsize=7\npath=/p\nimage=/i\n"
		"populate=1\nloop=\nowner=0\ndev=5\nino=6\nfileuid=0\n"
		"state=attached\n";
	struct xip_seg_entry *e = calloc(1, sizeof(*e));
	char text[4096];
	int n;

	(void)state;
	assert_non_null(e);
	entry_fill(e, "brief", "/seg/path");
	e->seg_dev = 9;
	e->seg_ino = 10;
	n = xip_registry_format(e, text, sizeof(text));
	assert_true(n > 0);
	/* the brief fields first: path's line ends them */
	assert_non_null(strstr(text, "path=/seg/path\nimage="));
	*strstr(text, "\nimage=") = '\0';
	strcat(text, "\n");
	strcat(text, rest);
	assert_int_equal(xip_registry_parse(text, e), -EINVAL);
	memset(e, 0, sizeof(*e));
	assert_int_equal(xip_registry_parse_brief(text, e), 0);
	assert_string_equal(e->path, "/seg/path");
	assert_int_equal(e->seg_ino, 10);
	assert_string_equal(e->image, "");
	/* the former order: read to its end */
	memset(e, 0, sizeof(*e));
	assert_int_equal(xip_registry_parse_brief(old, e), 0);
	assert_string_equal(e->name, "old");
	assert_int_equal(e->seg_dev, 5);
	assert_int_equal(e->seg_ino, 6);
	assert_true(e->populate);
	assert_false(e->attaching);
	assert_string_equal(e->image, "");	/* read past, not kept */
	free(e);
}

static void test_image_identity(void **state)
{
	struct xip_seg_entry a, b;
	char text[32768];

	entry_fill(&a, "seg", "/dev/shm/xiptool-seg.0123456789abcdef");
	assert_true(xip_registry_format(&a, text, sizeof(text)) > 0);
	assert_null(strstr(text, "imagemode="));
	a.image_uid = 65534;
	a.image_gid = 100;
	a.image_mode = S_IFREG | 0640;
	assert_true(xip_registry_format(&a, text, sizeof(text)) > 0);
	assert_non_null(strstr(text, "\nimagemode=100640\n"));
	assert_int_equal(xip_registry_parse(text, &b), 0);
	assert_int_equal(b.image_uid, 65534);
	assert_int_equal(b.image_gid, 100);
	assert_int_equal(b.image_mode, S_IFREG | 0640);
	/* a record of an older version: no image mode, nothing assumed */
	assert_int_equal(xip_registry_parse("name=x\ntype=sr\npath=/p\n",
					    &b), 0);
	assert_int_equal(b.image_mode, 0);
	/* octal digits only, nothing past a file mode */
	assert_int_equal(xip_registry_parse(
				 "name=x\ntype=sr\npath=/p\nimagemode=0689\n",
				 &b), -EINVAL);
	assert_int_equal(xip_registry_parse(
				 "name=x\ntype=sr\npath=/p\nimagemode=-1\n",
				 &b), -EINVAL);
	assert_int_equal(xip_registry_parse(
				 "name=x\ntype=sr\npath=/p\nimagemode=1000000\n",
				 &b), -EINVAL);
}

static void test_add_get_list_remove(void **state)
{
	struct xip_seg_entry e, got, *all;
	const char *p1 = unit_path("segfile1"), *p2 = unit_path("segfile2");
	enum xip_entry_state st;
	size_t n;

	unit_fill_file(p1, 4096, 0);
	unit_fill_file(p2, 4096, 0);
	assert_int_equal(xip_registry_list(&all, &n), 0);
	assert_int_equal(n, 0);
	free(all);
	entry_fill(&e, "zeta", p1);
	assert_int_equal(xip_registry_store(&e, XIP_REG_CREATE), 0);
	assert_int_equal(xip_registry_store(&e, XIP_REG_CREATE), -EEXIST);
	assert_string_equal(xip_errmsg(),
			    "zeta: a segment of that name is already attached");
	entry_fill(&e, "alpha", p2);
	e.type = XIP_SEGTYPE_SR;
	assert_int_equal(xip_registry_store(&e, XIP_REG_CREATE), 0);
	assert_int_equal(xip_registry_get("alpha", &got), 0);
	assert_string_equal(got.path, p2);
	assert_int_equal(xip_registry_list(&all, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(all[0].name, "alpha");	/* sorted */
	assert_string_equal(all[1].name, "zeta");
	free(all);
	/* update */
	e.size = 99;
	assert_int_equal(xip_registry_store(&e, 0), 0);
	assert_int_equal(xip_registry_get("alpha", &got), 0);
	assert_int_equal(got.size, 99);
	/* @NAME resolution and the read-only type refusing writes */
	{
		struct xip_seg *seg;

		assert_int_equal(xip_spec_open("@alpha", XIP_SEG_WRITE, &seg),
				 -EROFS);
		assert_null(seg);
		assert_string_equal(xip_errmsg(),
				    "@alpha: segment is read-only (type sr)");
		assert_int_equal(xip_spec_open("@alpha", 0, &seg), 0);
		assert_string_equal(seg->name, "alpha");
		assert_string_equal(seg->path, p2);
		assert_int_equal(seg->type, XIP_SEGTYPE_SR);
		xip_seg_close(seg);
		assert_int_equal(xip_spec_open("@zeta", XIP_SEG_WRITE, &seg),
				 0);
		assert_true(seg->writable);
		xip_seg_close(seg);
	}
	{
		struct xip_seg *seg;

		assert_int_equal(xip_spec_open("@nope", 0, &seg), -ENOENT);
		assert_null(seg);
		assert_string_equal(xip_errmsg(),
				    "@nope: no attached segment of that name");
		assert_int_equal(xip_spec_open("@../x", 0, &seg), -ENOENT);
	}
	/* a stale entry: the segment file is gone; an open for reading,
	 * which judges the record by its open alone, removes the record */
	unlink(p1);
	assert_int_equal(xip_registry_open("zeta", O_RDONLY, &got), -ENOENT);
	assert_string_equal(xip_errmsg(),
			    "@zeta: no attached segment of that name");
	assert_int_equal(xip_registry_read("zeta", &got, &st, false), -ENOENT);
	assert_int_equal(xip_registry_list(&all, &n), 0);
	assert_int_equal(n, 1);
	free(all);
	assert_int_equal(xip_registry_get("zeta", &got), -ENOENT);
	/* remove */
	assert_int_equal(xip_registry_remove("alpha"), 0);
	assert_int_equal(xip_registry_get("alpha", &got), -ENOENT);
	assert_int_equal(xip_registry_remove("alpha"), -ENOENT);
	unlink(p2);
}

/*
 * A record longer than the first read (4 KiB) is read whole; what is
 * not a regular file in the run directory is refused, without waiting.
 */
static void test_long_record(void **state)
{
	struct xip_seg_entry *e = calloc(1, sizeof(*e));
	struct xip_seg_entry *got = calloc(1, sizeof(*got));
	const char *p = unit_path("segfile-long");
	enum xip_entry_state st;
	char dir[XIP_PATH_MAX], path[2 * XIP_PATH_MAX];
	size_t n = 0;

	assert_non_null(e);
	assert_non_null(got);
	unit_fill_file(p, 4096, 0);
	entry_fill(e, "long", p);
	e->image[n++] = '/';
	while (n + 2 < 4000) {
		e->image[n++] = 'd';
		e->image[n++] = '/';
	}
	memcpy(e->image + n, "img", 4);
	assert_int_equal(xip_registry_store(e, XIP_REG_CREATE), 0);
	assert_int_equal(xip_registry_dir(dir, sizeof(dir)), 0);
	snprintf(path, sizeof(path), "%s/long", dir);
	{
		struct stat sb;

		assert_int_equal(stat(path, &sb), 0);
		assert_true(sb.st_size > 4096);	/* past the first read */
	}
	assert_int_equal(xip_registry_get("long", got), 0);
	assert_string_equal(got->image, e->image);
	assert_string_equal(got->path, p);
	assert_int_equal(got->size, e->size);
	assert_int_equal(xip_registry_remove("long"), 0);

	/* a directory and a FIFO where records are */
	snprintf(path, sizeof(path), "%s/adir", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(xip_registry_read("adir", got, &st, false), -EUCLEAN);
	assert_non_null(strstr(xip_errmsg(), "adir: damaged state file"));
	rmdir(path);
	snprintf(path, sizeof(path), "%s/afifo", dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(xip_registry_read("afifo", got, &st, false), -EUCLEAN);
	assert_non_null(strstr(xip_errmsg(), "afifo: damaged state file"));
	unlink(path);
	unlink(p);
	free(e);
	free(got);
}

/*
 * A run directory whose name is longer than the stack buffer a record's
 * read starts with: records are stored, got and opened as @NAME all the
 * same, and a damaged one is named with the whole directory.
 */
static void test_long_rundir(void **state)
{
	struct xip_seg_entry *e = calloc(1, sizeof(*e));
	const char *p = unit_path("segfile-longdir");
	char dir[XIP_PATH_MAX], path[XIP_PATH_MAX + 16];
	struct xip_seg *seg;
	size_t n;

	(void)state;
	assert_non_null(e);
	n = (size_t)snprintf(dir, sizeof(dir), "%s", unit_path("longrun"));
	assert_int_equal(mkdir(dir, 0700), 0);
	for (int level = 0; level < 3; level++) {
		dir[n++] = '/';
		for (int i = 0; i < 120; i++)
			dir[n++] = (char)('a' + level);
		dir[n] = '\0';
		assert_int_equal(mkdir(dir, 0700), 0);
	}
	assert_true(strlen(dir) > 360);
	setenv("XIPTOOL_RUNDIR", dir, 1);
	unit_fill_file(p, 4096, 0);
	entry_fill(e, "far", p);
	e->type = XIP_SEGTYPE_SR;
	assert_int_equal(xip_registry_store(e, XIP_REG_CREATE), 0);
	memset(e, 0, sizeof(*e));
	assert_int_equal(xip_registry_get("far", e), 0);
	assert_string_equal(e->path, p);
	assert_int_equal(xip_spec_open("@far", 0, &seg), 0);
	xip_seg_close(seg);
	snprintf(path, sizeof(path), "%s/adir", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(xip_spec_open("@adir", 0, &seg), -EUCLEAN);
	assert_non_null(strstr(xip_errmsg(), path));
	rmdir(path);
	assert_int_equal(xip_registry_remove("far"), 0);
	unlink(p);
	free(e);
}

static void test_rundir_checks(void **state)
{
	char buf[4096];
	const char *d = unit_path("openrun");

	mkdir(d, 0777);
	chmod(d, 0777);
	setenv("XIPTOOL_RUNDIR", d, 1);
	assert_int_equal(xip_registry_dir(buf, sizeof(buf)), -EPERM);
	chmod(d, 0700);
	assert_int_equal(xip_registry_dir(buf, sizeof(buf)), 0);
	assert_string_equal(buf, d);
	unit_fill_file(unit_path("notadir"), 1, 0);
	setenv("XIPTOOL_RUNDIR", unit_path("notadir"), 1);
	assert_int_equal(xip_registry_dir(buf, sizeof(buf)), -ENOTDIR);
}


static void test_identity_parse(void **state)
{
	struct xip_seg_entry a, b;
	char text[32768];

	entry_fill(&a, "id", "/dev/shm/xiptool-id");
	a.seg_dev = 2049;
	a.seg_ino = 1ULL << 40;
	a.seg_uid = 65534;
	a.attaching = true;
	a.pid = 4242;
	assert_true(xip_registry_format(&a, text, sizeof(text)) > 0);
	assert_non_null(strstr(text, "\nstate=attaching\n"));
	assert_int_equal(xip_registry_parse(text, &b), 0);
	assert_int_equal(b.seg_dev, 2049);
	assert_int_equal(b.seg_ino, 1ULL << 40);
	assert_int_equal(b.seg_uid, 65534);
	assert_true(b.attaching);
	assert_int_equal(b.pid, 4242);
	a.attaching = false;
	assert_true(xip_registry_format(&a, text, sizeof(text)) > 0);
	assert_null(strstr(text, "pid="));
	assert_int_equal(xip_registry_parse(text, &b), 0);
	assert_false(b.attaching);
	assert_int_equal(xip_registry_parse(
				 "name=x\ntype=sr\npath=/p\nstate=odd\n",
				 &b), -EINVAL);
}

/*
 * Numbers past what a signed 64-bit integer holds (an overlayfs inode
 * number with its high bits set) are written as they are and read back;
 * a number past what its field holds is refused, not cut short.
 */
static void test_numbers_whole(void **state)
{
	struct xip_seg_entry a, b;
	char text[32768];

	entry_fill(&a, "big", "/dev/shm/xiptool-big");
	a.seg_ino = (1ULL << 63) | 5;
	a.seg_dev = UINT64_MAX;
	a.size = UINT64_MAX - 4095;
	a.offset = 1ULL << 63;
	a.sizelimit = UINT64_MAX;
	a.owner = UINT32_MAX - 1;
	assert_true(xip_registry_format(&a, text, sizeof(text)) > 0);
	assert_non_null(strstr(text, "\nino=9223372036854775813\n"));
	assert_int_equal(xip_registry_parse(text, &b), 0);
	assert_true(b.seg_ino == a.seg_ino);
	assert_true(b.seg_dev == UINT64_MAX);
	assert_true(b.size == a.size);
	assert_true(b.offset == a.offset);
	assert_true(b.sizelimit == UINT64_MAX);
	assert_true(b.owner == UINT32_MAX - 1);
	/* 32-bit ids: up to 2^32 - 1 */
	assert_int_equal(xip_registry_parse(
				 "name=x\ntype=sr\npath=/p\nowner=4294967295\n",
				 &b), 0);
	assert_true(b.owner == UINT32_MAX);
	assert_int_equal(xip_registry_parse(
				 "name=x\ntype=sr\npath=/p\nowner=4294967296\n",
				 &b), -EINVAL);
	assert_int_equal(xip_registry_parse(
				 "name=x\ntype=sr\npath=/p\nimagegid=4294967296\n",
				 &b), -EINVAL);
	/* signed fields: a pid up to 2^31 - 1, a time up to 2^63 - 1 */
	assert_int_equal(xip_registry_parse(
				 "name=x\ntype=sr\npath=/p\npid=2147483647\n",
				 &b), 0);
	assert_int_equal(b.pid, INT32_MAX);
	assert_int_equal(xip_registry_parse(
				 "name=x\ntype=sr\npath=/p\npid=2147483648\n",
				 &b), -EINVAL);
	assert_int_equal(xip_registry_parse(
				 "name=x\ntype=sr\npath=/p\ncreated=9223372036854775807\n",
				 &b), 0);
	assert_true(b.created == INT64_MAX);
	assert_int_equal(xip_registry_parse(
				 "name=x\ntype=sr\npath=/p\ncreated=9223372036854775808\n",
				 &b), -EINVAL);
	/* a flag: set by any number but 0 */
	assert_int_equal(xip_registry_parse(
				 "name=x\ntype=sr\npath=/p\nverified=18446744073709551615\n",
				 &b), 0);
	assert_true(b.verified);
}

static void test_identity_checked(void **state)
{
	const char *p = unit_path("idseg"), *victim = unit_path("victim");
	struct xip_seg_entry e, got, *all;
	enum xip_entry_state st;
	struct xip_seg *seg;
	size_t n;
	int fd;

	unit_fill_file(p, 8192, 0);
	unit_fill_file(victim, 8192, 0x55);
	entry_fill(&e, "idseg", p);
	assert_int_equal(xip_registry_store(&e, XIP_REG_CREATE), 0);
	fd = xip_registry_open("idseg", O_RDONLY, &got);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(xip_registry_read("idseg", &got, &st, false), 0);
	assert_int_equal(st, XIP_ENTRY_LIVE);
	/* the file replaced by a symlink to another (the old inode kept, so
	 * that no new file gets its number) */
	assert_int_equal(link(p, unit_path("idold")), 0);
	unlink(p);
	assert_int_equal(symlink(victim, p), 0);
	assert_int_equal(xip_registry_read("idseg", &got, &st, false), 0);
	assert_int_equal(st, XIP_ENTRY_FOREIGN);
	assert_int_equal(xip_registry_open("idseg", O_RDWR, &got), -ESTALE);
	assert_non_null(strstr(xip_errmsg(),
			       "is not the segment that was attached (device/inode changed): refusing"));
	assert_int_equal(xip_spec_open("@idseg", XIP_SEG_WRITE, &seg),
			 -ESTALE);
	assert_int_equal(xip_spec_open("@idseg", 0, &seg), -ESTALE);
	/* by a copy: same owner, another inode (made while the old one
	 * exists, so that the file system cannot hand out its number) */
	unit_fill_file(unit_path("idcopy"), 8192, 0);
	assert_int_equal(rename(unit_path("idcopy"), p), 0);
	assert_int_equal(xip_registry_open("idseg", O_RDONLY, &got), -ESTALE);
	/* list removes the record, never the file that is not ours */
	assert_int_equal(xip_registry_list(&all, &n), 0);
	assert_int_equal(n, 0);
	free(all);
	assert_int_equal(xip_registry_read("idseg", &got, &st, false), -ENOENT);
	assert_int_equal(access(p, F_OK), 0);
	unlink(p);
	unlink(unit_path("idold"));
	unlink(victim);
	/* a record without an identity (older format) is never trusted */
	unit_fill_file(p, 8192, 0);
	entry_fill(&e, "noid", p);
	e.seg_ino = 0;
	assert_int_equal(xip_registry_store(&e, XIP_REG_CREATE), 0);
	assert_int_equal(xip_registry_open("noid", O_RDONLY, &got), -ESTALE);
	unlink(p);
}

static void test_attaching_and_abandoned(void **state)
{
	const char *p = unit_path("claimed");
	struct xip_seg_entry e, got, *all;
	enum xip_entry_state st;
	size_t n;
	int holder;

	unit_fill_file(p, 4096, 0);
	entry_fill(&e, "claimed", p);
	e.attaching = true;
	e.pid = 1;
	assert_int_equal(xip_registry_store(&e, XIP_REG_CREATE), 0);
	/* the attach runs: it holds the segment's lock (its lock file) */
	holder = xip_registry_hold_open(&e, false);
	assert_true(holder >= 0);
	assert_int_equal(flock(holder, LOCK_EX), 0);
	assert_int_equal(xip_registry_lock(), 0);
	assert_int_equal(xip_registry_read("claimed", &got, &st, true), 0);
	assert_int_equal(st, XIP_ENTRY_ATTACHING);
	xip_registry_unlock();
	assert_int_equal(xip_registry_get("claimed", &got), -EBUSY);
	/* an open for reading judges the record first too */
	assert_int_equal(xip_registry_open("claimed", O_RDONLY, &got), -EBUSY);
	assert_int_equal(xip_registry_list(&all, &n), 0);
	assert_int_equal(n, 0);		/* not live, not removed either */
	free(all);
	assert_int_equal(xip_registry_read("claimed", &got, &st, false), 0);
	assert_int_equal(xip_detach("claimed", NULL, 0), -EBUSY);
	/* the attach died: its claim and its file are cleaned */
	close(holder);
	assert_int_equal(xip_registry_lock(), 0);
	assert_int_equal(xip_registry_read("claimed", &got, &st, true), 0);
	assert_int_equal(st, XIP_ENTRY_ABANDONED);
	xip_registry_unlock();
	assert_int_equal(xip_registry_list(&all, &n), 0);
	assert_int_equal(n, 0);
	free(all);
	assert_int_equal(xip_registry_read("claimed", &got, &st, false),
			 -ENOENT);
	assert_int_equal(access(p, F_OK), -1);
}

static void test_lock_nests(void **state)
{
	struct xip_seg_entry e, got;
	const char *p = unit_path("nest");

	unit_fill_file(p, 4096, 0);
	entry_fill(&e, "nest", p);
	assert_int_equal(xip_registry_lock(), 0);
	assert_int_equal(xip_registry_lock(), 0);
	/* the store and remove take it again: no deadlock */
	assert_int_equal(xip_registry_store(&e, XIP_REG_CREATE), 0);
	xip_registry_unlock();
	assert_int_equal(xip_registry_remove("nest"), 0);
	xip_registry_unlock();
	assert_int_equal(xip_registry_get("nest", &got), -ENOENT);
	unlink(p);
}

static void test_rundir_symlink(void **state)
{
	char buf[4096];
	const char *real = unit_path("realrun"), *link = unit_path("linkrun");

	mkdir(real, 0700);
	assert_int_equal(symlink(real, link), 0);
	setenv("XIPTOOL_RUNDIR", link, 1);
	assert_int_equal(xip_registry_dir(buf, sizeof(buf)), -ELOOP);
	assert_non_null(strstr(xip_errmsg(),
			       "run directory is a symbolic link: refusing"));
	assert_int_equal(xip_registry_lock(), -ELOOP);
}

static void make_gzip(const char *src, const char *dst)
{
	char data[65536];
	gzFile out = gzopen(dst, "wb");
	FILE *in = fopen(src, "rb");
	size_t n;

	assert_non_null(out);
	assert_non_null(in);
	while ((n = fread(data, 1, sizeof(data), in)) > 0)
		assert_int_equal(gzwrite(out, data, (unsigned int)n), (int)n);
	fclose(in);
	assert_int_equal(gzclose(out), Z_OK);
}

static void assert_same_file(const char *a, const char *b)
{
	char cmd[8300];

	snprintf(cmd, sizeof(cmd), "cmp -s '%s' '%s'", a, b);
	assert_int_equal(system(cmd), 0);
}

static void test_attach_save_detach(void **state)
{
	struct xip_attach_opts o = { 0 };
	struct xip_seg_entry e, got;
	const char *img = unit_path("a.img"), *gz = unit_path("b.img.gz");
	char saved[600];
	struct stat st;

	unit_mke2fs(img, "4M", 4096, NULL);
	o.image = img;
	assert_int_equal(xip_attach(&o, &e), 0);
	assert_string_equal(e.name, "a");
	assert_int_equal(e.type, XIP_SEGTYPE_SR);
	assert_string_equal(e.label, "unitlabel");
	assert_int_equal(strlen(e.uuid), 36);
	assert_int_equal(stat(e.path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0444);
	assert_same_file(e.path, img);
	assert_int_equal(xip_registry_get("a", &got), 0);
	assert_int_equal(got.size, 4 << 20);
	/* a duplicate is refused before any work */
	assert_int_equal(xip_attach(&o, &e), -EEXIST);
	/* gzip */
	make_gzip(img, gz);
	chmod(gz, 0600);	/* the segment keeps its image's mode */
	o.image = gz;
	o.type = XIP_SEGTYPE_SW;
	assert_int_equal(xip_attach(&o, &e), 0);
	assert_string_equal(e.name, "b");
	assert_true(e.compressed);
	assert_int_equal(e.size, 4 << 20);
	assert_same_file(e.path, img);
	assert_int_equal(stat(e.path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	/* save, then detach */
	snprintf(saved, sizeof(saved), "%s", unit_path("saved.img"));
	assert_int_equal(xip_save("b", saved), 0);
	assert_same_file(saved, img);
	assert_int_equal(xip_detach("b", NULL, 0), 0);
	assert_int_equal(stat(e.path, &st), -1);
	assert_int_equal(xip_registry_get("b", &got), -ENOENT);
	/* a shared holder (a running program) makes detach refuse */
	assert_int_equal(xip_registry_get("a", &got), 0);
	{
		int fd = xip_registry_hold_open(&got, false);
		char why[256];

		assert_true(fd >= 0);
		assert_int_equal(flock(fd, LOCK_SH), 0);
		assert_int_equal(xip_registry_busy(&got, why, sizeof(why)), 1);
		assert_int_equal(xip_detach("a", NULL, 0), -EBUSY);
		assert_non_null(strstr(xip_errmsg(), "held by process"));
		close(fd);
		assert_int_equal(xip_registry_busy(&got, why, sizeof(why)), 0);
	}
	assert_int_equal(xip_detach("@a", NULL, 0), 0);
	/* a sparse source (any bytes, not only ext2): holes copy as zeros */
	{
		const char *sp = unit_path("sparse.bin");
		int fd;

		unit_fill_file(sp, 4096, 0x11);
		assert_int_equal(truncate(sp, 3 << 20), 0);
		unit_poke(sp, (3 << 20) - 5, "tail!", 5);
		fd = open(sp, O_RDWR);
		assert_true(fd >= 0);
		assert_int_equal(pwrite(fd, "mid", 3, 1 << 20), 3);
		close(fd);
		memset(&o, 0, sizeof(o));
		o.image = sp;
		o.size = 4 << 20;
		o.type = XIP_SEGTYPE_SW;
		/* not an ext2 image: refused unless raw, nothing left */
		assert_int_equal(xip_attach(&o, &e), -EMEDIUMTYPE);
		assert_non_null(strstr(xip_errmsg(), "not an ext2 file system (no ext2 superblock)"));
		assert_int_equal(xip_registry_get("sparse.bin", &got), -ENOENT);
		o.raw = true;
		o.type = XIP_SEGTYPE_SW;
		assert_int_equal(xip_attach(&o, &e), 0);
		assert_string_equal(e.name, "sparse.bin");
		assert_int_equal(e.size, 4 << 20);
		assert_string_equal(e.label, "");
		assert_int_equal(stat(e.path, &st), 0);
		assert_int_equal(st.st_size, 4 << 20);
		assert_int_equal(truncate(sp, 4 << 20), 0);
		assert_same_file(e.path, sp);
		assert_int_equal(xip_detach("sparse.bin", NULL, 0), 0);
	}
	/* sn: zero-filled, needs a size */
	memset(&o, 0, sizeof(o));
	o.type = XIP_SEGTYPE_SN;
	o.name = "empty";
	assert_int_equal(xip_attach(&o, &e), -EINVAL);
	o.size = 8192;
	assert_int_equal(xip_attach(&o, &e), 0);
	assert_int_equal(e.size, 8192);
	assert_int_equal(xip_detach("empty", NULL, 0), 0);
}

/*
 * What a request cannot ask for together: refused before anything is
 * made, in the library's words (no option names), with the reason.
 */
static void test_attach_exclusive(void **state)
{
	static const uint8_t root[32];
	struct xip_attach_opts o;
	struct xip_seg_entry e;
	struct xip_seg_entry got;

	(void)state;
	memset(&o, 0, sizeof(o));
	o.image = "nbd+unix:///?socket=/nonexistent.sock";
	o.name = "lz";
	o.lazy = true;
	o.trust = "/nonexistent";
	assert_int_equal(xip_attach(&o, &e), -EINVAL);
	assert_int_equal(xip_errreason(), XIP_R_EXCLUSIVE_OPTS);
	assert_string_equal(xip_errmsg(), "a lazy segment is checked against"
			    " a given root hash, not a signed one");
	o.trust = NULL;
	o.type = XIP_SEGTYPE_SW;
	assert_int_equal(xip_attach(&o, &e), -EINVAL);
	assert_int_equal(xip_errreason(), XIP_R_EXCLUSIVE_OPTS);
	assert_string_equal(xip_errmsg(), "type sw is writable: only sr and"
			    " er segments are filled lazily");
	o.type = XIP_SEGTYPE_SR;
	o.hugepages = true;
	assert_int_equal(xip_attach(&o, &e), -EINVAL);
	assert_int_equal(xip_errreason(), XIP_R_EXCLUSIVE_OPTS);
	o.hugepages = false;
	o.loop = true;
	assert_int_equal(xip_attach(&o, &e), -EINVAL);
	assert_string_equal(xip_errmsg(), "a loop device needs the whole"
			    " image: not lazily");
	o.loop = false;
	o.image = "/nonexistent.img";
	assert_int_equal(xip_attach(&o, &e), -EINVAL);
	assert_string_equal(xip_errmsg(), "/nonexistent.img: only an NBD"
			    " export is attached lazily");
	/* a verified segment cannot be sealed on hugetlbfs */
	memset(&o, 0, sizeof(o));
	o.image = "/nonexistent.img";
	o.name = "lz";
	o.root_hash = root;
	o.root_hash_len = sizeof(root);
	o.hugepages = true;
	assert_int_equal(xip_attach(&o, &e), -EINVAL);
	assert_int_equal(xip_errreason(), XIP_R_EXCLUSIVE_OPTS);
	assert_null(strstr(xip_errmsg(), "--"));
	o.hugepages = false;
	o.raw = true;
	assert_int_equal(xip_attach(&o, &e), -EINVAL);
	assert_int_equal(xip_errreason(), XIP_R_EXCLUSIVE_OPTS);
	assert_null(strstr(xip_errmsg(), "--"));
	assert_int_equal(xip_registry_get("lz", &got), -ENOENT);
}

static void test_attach_limits(void **state)
{
	struct xip_attach_opts o = { 0 };
	struct xip_seg_entry e, got;
	const char *img = unit_path("lim.img"), *gz = unit_path("lim.img.gz");
	struct stat st;

	unit_mke2fs(img, "4M", 4096, NULL);
	make_gzip(img, gz);
	o.image = gz;
	o.name = "lim";
	/* --size: stop at the limit, leave nothing */
	o.size = 1 << 20;
	assert_int_equal(xip_attach(&o, &e), -EFBIG);
	assert_non_null(strstr(xip_errmsg(),
			       "decompresses to more than --size (1048576 bytes)"));
	assert_int_equal(xip_registry_get("lim", &got), -ENOENT);
	assert_int_equal(stat(e.path, &st), -1);
	/* exactly the size: fine */
	o.size = 4 << 20;
	assert_int_equal(xip_attach(&o, &e), 0);
	assert_int_equal(e.size, 4 << 20);
	assert_int_equal(xip_detach("lim", NULL, 0), 0);
	/* a plain image larger than --size */
	o.image = img;
	o.size = 1 << 20;
	assert_int_equal(xip_attach(&o, &e), -EINVAL);
	assert_int_equal(xip_registry_get("lim", &got), -ENOENT);
}

/*
 * A lock taken by a process that then forked and exited (nbdkit opens its
 * image, then forks into the background): /proc/locks still names the
 * process that took it; the holder named is the child that has the locked
 * file open.
 */
static void test_holder_after_fork(void **state)
{
	int ready[2], hold[2], fd, st;
	char path[700], why[256], want[128];
	pid_t a, b = 0;

	snprintf(path, sizeof(path), "%s/locked", unit_tmpdir());
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(pipe(ready), 0);
	assert_int_equal(pipe(hold), 0);
	a = fork();
	assert_true(a >= 0);
	if (a == 0) {
		int lfd = open(path, O_RDONLY);
		char c;

		if (lfd < 0 || flock(lfd, LOCK_SH) < 0)
			_exit(1);
		b = fork();
		if (b < 0)
			_exit(1);
		if (b == 0) {
			/* the locked file stays open until the test ends */
			close(hold[1]);
			b = getpid();
			if (write(ready[1], &b, sizeof(b)) != sizeof(b))
				_exit(1);
			while (read(hold[0], &c, 1) > 0)
				;
			_exit(0);
		}
		_exit(0);
	}
	close(ready[1]);
	close(hold[0]);
	assert_int_equal(waitpid(a, &st, 0), a);
	assert_int_equal(st, 0);
	assert_int_equal(read(ready[0], &b, sizeof(b)), sizeof(b));
	assert_true(b > 0 && b != a);
	assert_int_equal(flock(fd, LOCK_EX | LOCK_NB), -1);
	xip_registry_holder(fd, why, sizeof(why));
	snprintf(want, sizeof(want),
		 "the segment is held by process %d (test_registry)", (int)b);
	assert_string_equal(why, want);
	close(hold[1]);		/* b sees the end and exits */
	kill(b, SIGKILL);
	close(ready[0]);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_format_parse),
		cmocka_unit_test(test_brief_stops),
		cmocka_unit_test(test_image_identity),
		cmocka_unit_test(test_numbers_whole),
		cmocka_unit_test_setup(test_add_get_list_remove, use_rundir),
		cmocka_unit_test_setup(test_long_record, use_rundir),
		cmocka_unit_test_setup(test_long_rundir, use_rundir),
		cmocka_unit_test_setup(test_rundir_checks, use_rundir),
		cmocka_unit_test_setup(test_attach_save_detach, use_rundir),
		cmocka_unit_test(test_identity_parse),
		cmocka_unit_test_setup(test_identity_checked, use_rundir),
		cmocka_unit_test_setup(test_attaching_and_abandoned, use_rundir),
		cmocka_unit_test_setup(test_lock_nests, use_rundir),
		cmocka_unit_test_setup(test_rundir_symlink, use_rundir),
		cmocka_unit_test_setup(test_attach_limits, use_rundir),
		cmocka_unit_test_setup(test_attach_exclusive, use_rundir),
		cmocka_unit_test(test_holder_after_fork),
	};

	return cmocka_run_group_tests_name("registry", tests, NULL, NULL);
}
