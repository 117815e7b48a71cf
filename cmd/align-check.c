// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * xiptool align-check: are the ELF files of an image ready to be run in
 * place?  A verdict per file with its reasons, a summary, or JSON.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libsmartcols.h>

#include "cmd.h"

static const char align_usage[] =
	"[--json] [--page-size N] [--huge] IMAGE [PATH...]";

struct align_run {
	struct xip_image *img;
	const char *spec;	/* the image as given */
	struct xip_align_opts o;
	bool json;
	struct libscols_table *tb;
	uint64_t checked, ready, skipped;
	int rc;
};

static const struct cmd_json_col align_cols[] = {
	{ "path", SCOLS_JSON_STRING },
	{ "inode", SCOLS_JSON_NUMBER },
	{ "ready", SCOLS_JSON_BOOLEAN },
	{ "reasons", SCOLS_JSON_STRING },
	{ "segments", SCOLS_JSON_NUMBER },
	{ "mmaps", SCOLS_JSON_NUMBER },
	{ "shared-pages", SCOLS_JSON_NUMBER },
	{ "copied-pages", SCOLS_JSON_NUMBER },
	{ "huge-pages", SCOLS_JSON_NUMBER },
};

static int json_init(struct align_run *r)
{
	r->tb = cmd_json_table("files", align_cols,
			       sizeof(align_cols) / sizeof(align_cols[0]));
	return r->tb ? 0 : -ENOMEM;
}

static void json_add(struct align_run *r, const struct xip_align_file *f)
{
	struct libscols_line *ln = scols_table_new_line(r->tb, NULL);
	uint64_t nums[] = { f->nsegs, f->mmaps, f->shared, f->copied,
			    f->huge_pages };
	char buf[32];

	if (!ln)
		return;
	scols_line_set_data(ln, 0, cmd_json_safe(f->path));
	snprintf(buf, sizeof(buf), "%" PRIu32, (uint32_t)f->ino);
	scols_line_set_data(ln, 1, buf);
	scols_line_set_data(ln, 2, f->ready ? "1" : "0");
	scols_line_set_data(ln, 3, cmd_json_safe(f->reasons));
	for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
		snprintf(buf, sizeof(buf), "%" PRIu64, nums[i]);
		scols_line_set_data(ln, 4 + i, buf);
	}
}

static void print_segments(const struct xip_align_file *f)
{
	for (size_t i = 0; i < f->nsegs; i++) {
		const struct xip_align_seg *s = &f->segs[i];

		printf("  segment %u %c%c%c offset 0x%" PRIx64 " vaddr 0x%" PRIx64
		       " filesz 0x%" PRIx64 " memsz 0x%" PRIx64 " align 0x%" PRIx64
		       ": %" PRIu64 " mmap%s, %" PRIu64 " pages shared, %" PRIu64 " copied",
		       s->index, (s->flags & 4) ? 'r' : '-',
		       (s->flags & 2) ? 'w' : '-', (s->flags & 1) ? 'x' : '-',
		       s->offset, s->vaddr, s->filesz, s->memsz, s->align,
		       s->runs, s->runs == 1 ? "" : "s", s->shared, s->copied);
		if (s->huge_checked)
			printf(", %" PRIu64 " 2 MiB mapping%s%s%s",
			       s->huge_pages, s->huge_pages == 1 ? "" : "s",
			       s->huge_pages ? "" : ": ",
			       s->huge_pages ? "" : s->huge_why);
		putchar('\n');
	}
}

static void text_add(const struct xip_align_file *f, bool huge)
{
	uint64_t pages = f->shared + f->copied;

	if (f->ready) {
		printf("%s: xip-ready: %zu segment%s, %" PRIu64 " mmap%s, %" PRIu64 " of %" PRIu64 " file pages shared",
		       cmd_esc(f->path), f->nsegs, f->nsegs == 1 ? "" : "s", f->mmaps,
		       f->mmaps == 1 ? "" : "s", f->shared, pages);
		if (huge)
			printf(", %" PRIu64 " 2 MiB mapping%s", f->huge_pages,
			       f->huge_pages == 1 ? "" : "s");
		putchar('\n');
	} else {
		printf("%s: not xip-ready: %s\n", cmd_esc(f->path),
		       cmd_esc(f->reasons));
	}
	if (opt_verbose)
		print_segments(f);
}

/* Check one file; @named: the user named it (non-ELF is an error). */
static int check_file(struct align_run *r, const char *path, ext2_ino_t ino,
		      bool named)
{
	struct xip_align_file f;
	int ret;

	ret = xip_align_check(r->img, ino, path, &r->o, &f);
	if (ret) {
		msg_lib_error(ret);
		r->rc = EXIT_RUNTIME;
	} else if (f.elf && f.not_program && !named) {
		r->skipped++;
		msg_verbose("%s: %s, skipped", path, f.reasons);
	} else if (!f.elf) {
		r->skipped++;
		if (named) {
			msg_error("%s: not an ELF file", path);
			r->rc = EXIT_RUNTIME;
		} else {
			msg_verbose("%s: not an ELF file, skipped", path);
		}
	} else {
		r->checked++;
		if (f.ready)
			r->ready++;
		else if (r->rc == EXIT_OK)
			r->rc = EXIT_PROBLEMS;
		if (r->json)
			json_add(r, &f);
		else
			text_add(&f, r->o.huge);
	}
	xip_align_file_free(&f);
	return 0;
}

static int scan_cb(void *arg, const char *path, ext2_ino_t ino)
{
	return check_file(arg, path, ino, false);
}

static void check_named(struct align_run *r, const char *path)
{
	ext2_ino_t ino;
	int ret;

	ret = xip_lookup(r->img, path, 0, &ino);
	if (ret) {
		msg_image_path_error(r->img, r->spec, path, ret);
		r->rc = EXIT_RUNTIME;
		return;
	}
	check_file(r, path, ino, true);
}

static int align_run(const char *spec, const char **paths, int npaths,
		     struct align_run *r)
{
	int ret;

	r->spec = spec;
	ret = xip_image_open(spec, 0, &r->img);
	if (ret)
		return msg_lib_error(ret);
	if (r->json && json_init(r)) {
		xip_image_close(r->img);
		msg_error("out of memory");
		return EXIT_RUNTIME;
	}
	if (npaths) {
		for (int i = 0; i < npaths; i++)
			check_named(r, paths[i]);
	} else {
		ret = xip_walk_files(r->img, scan_cb, r);
		if (ret) {
			msg_lib_error(ret);
			r->rc = EXIT_RUNTIME;
		}
	}
	if (r->json) {
		if (scols_print_table(r->tb))
			r->rc = EXIT_RUNTIME;
		scols_unref_table(r->tb);
	} else {
		printf("%s: %" PRIu64 " ELF file%s checked: %" PRIu64 " xip-ready, %" PRIu64 " not",
		       cmd_esc(spec), r->checked, r->checked == 1 ? "" : "s", r->ready,
		       r->checked - r->ready);
		if (!npaths)
			printf("; %" PRIu64 " other file%s skipped", r->skipped,
			       r->skipped == 1 ? "" : "s");
		putchar('\n');
	}
	xip_image_close(r->img);
	return r->rc;
}

int cmd_align_check(int argc, const char **argv)
{
	struct align_run r = { .rc = EXIT_OK };
	struct cmd_args args;
	char *page = NULL;
	int json = 0, huge = 0, rc = EXIT_OK;
	const struct poptOption options[] = {
		CMD_OPT_JSON(&json, "the verdicts"),
		CMD_OPT_PAGE_SIZE(&page, "check"),
		{ "huge", 'H', POPT_ARG_NONE, &huge, 0,
		  "also require 2 MiB mappings of segments of 2 MiB or more",
		  NULL },
		POPT_TABLEEND
	};

	cmd_parse(argc, argv, options, align_usage, 1, -1, &args);
	rc = page ? cmd_parse_page_size(page, &r.o.page_size) : EXIT_OK;
	if (rc)
		goto out;
	r.o.huge = huge;
	r.json = json;
	rc = align_run(args.argv[0], args.argv + 1, args.argc - 1, &r);
out:
	cmd_args_free(&args);
	free(page);
	return rc;
}
