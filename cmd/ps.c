// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * xiptool ps: the processes that map attached segments, what they run,
 * how (xiptool exec, a kernel mount of the loop device, a mapping of the
 * segment file, a QEMU guest's pmem) and how many of
 * their pages are the segment's own (shared) or copied.  A tree: each
 * segment with its totals, its processes below it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libsmartcols.h>

#include "cmd.h"

static const char ps_usage[] = "[--json] [--noheadings] [NAME...]";

/* VERIFIED and SIGNER: in --json only (the table stays as it was) */
enum { COL_SEGMENT, COL_PID, COL_COMMAND, COL_PROGRAM, COL_VIA, COL_SHARED,
       COL_COPIED, COL_VERIFIED, COL_SIGNER, NCOLS };
#define NCOLS_TEXT	COL_VERIFIED

static const struct {
	const char *name;
	double width;
	int flags;
	int json;
} ps_cols[NCOLS] = {
	{ "SEGMENT", 0.1, SCOLS_FL_TREE, SCOLS_JSON_STRING },
	{ "PID", 6, SCOLS_FL_RIGHT, SCOLS_JSON_NUMBER },
	{ "COMMAND", 0.1, 0, SCOLS_JSON_STRING },
	{ "PROGRAM", 0.3, 0, SCOLS_JSON_STRING },
	{ "VIA", 0.1, 0, SCOLS_JSON_STRING },
	{ "SHARED", 7, SCOLS_FL_RIGHT, SCOLS_JSON_NUMBER },
	{ "COPIED", 7, SCOLS_FL_RIGHT, SCOLS_JSON_NUMBER },
	{ "VERIFIED", 1, 0, SCOLS_JSON_BOOLEAN },
	{ "SIGNER", 0.2, 0, SCOLS_JSON_STRING },
};

/* Whether the segment is verified and who signed it, on line @ln. */
static void set_trust(struct libscols_line *ln, const struct xip_ps_seg *sg)
{
	scols_line_set_data(ln, COL_VERIFIED, sg->verified ? "true" : "false");
	if (sg->signer[0])
		scols_line_set_data(ln, COL_SIGNER, cmd_json_safe(sg->signer));
}

static void set_u64(struct libscols_line *ln, int col, uint64_t v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	scols_line_set_data(ln, col, buf);
}

static const char *const via_names[] = {
	[XIP_PS_EXEC] = "exec",
	[XIP_PS_MOUNT] = "mount",
	[XIP_PS_MMAP] = "mmap",
	[XIP_PS_PMEM] = "pmem",
	[XIP_PS_FILL] = "fill",
};

/* The PROGRAM column: a path in the image; "-" when the process runs
 * none (mmap, pmem); "?" (null in JSON) when it cannot be told. */
static const char *program_text(const struct xip_ps_proc *p, bool json)
{
	if (p->program)
		return json ? cmd_json_safe(p->program) : cmd_esc(p->program);
	if (p->how == XIP_PS_MMAP || p->how == XIP_PS_PMEM ||
	    p->how == XIP_PS_FILL)
		return json ? NULL : "-";
	return json ? NULL : "?";
}

static const char *text(const char *s, bool json)
{
	return json ? cmd_json_safe(s) : cmd_esc(s);
}

static int ps_print(const struct xip_ps_report *r, bool json, bool noheadings)
{
	struct libscols_table *tb = scols_new_table();
	int rc = EXIT_OK;

	if (!tb)
		return msg_lib_error(-ENOMEM);
	scols_table_enable_json(tb, json);
	scols_table_enable_noheadings(tb, noheadings);
	scols_table_set_name(tb, "segments");
	for (int i = 0; i < (json ? NCOLS : NCOLS_TEXT); i++) {
		struct libscols_column *cl = scols_table_new_column(
			tb, ps_cols[i].name, ps_cols[i].width, ps_cols[i].flags);

		if (!cl) {
			scols_unref_table(tb);
			return msg_lib_error(-ENOMEM);
		}
		scols_column_set_json_type(cl, ps_cols[i].json);
	}
	for (size_t s = 0; s < r->nsegs; s++) {
		const struct xip_ps_seg *sg = &r->segs[s];
		struct libscols_line *top = scols_table_new_line(tb, NULL);
		char via[XIP_PATH_MAX + 80];

		if (!top)
			break;
		scols_line_set_data(top, COL_SEGMENT, text(sg->name, json));
		if (sg->loop[0])
			snprintf(via, sizeof(via), "%s%s%s", sg->loop,
				 sg->mount[0] ? " on " : "", sg->mount);
		else
			snprintf(via, sizeof(via), "-");
		scols_line_set_data(top, COL_VIA, text(via, json));
		set_u64(top, COL_SHARED, sg->shared);
		set_u64(top, COL_COPIED, sg->copied);
		if (json)
			set_trust(top, sg);
		for (size_t i = 0; i < r->n; i++) {
			const struct xip_ps_proc *p = &r->procs[i];
			struct libscols_line *ln;

			if (p->seg != s)
				continue;
			ln = scols_table_new_line(tb, top);
			if (!ln)
				break;
			scols_line_set_data(ln, COL_SEGMENT,
					    text(sg->name, json));
			set_u64(ln, COL_PID, (uint64_t)p->pid);
			scols_line_set_data(ln, COL_COMMAND, text(p->comm, json));
			scols_line_set_data(ln, COL_PROGRAM,
					    program_text(p, json));
			scols_line_set_data(ln, COL_VIA, via_names[p->how]);
			set_u64(ln, COL_SHARED, p->shared);
			set_u64(ln, COL_COPIED, p->copied);
			if (json)
				set_trust(ln, sg);
		}
	}
	if (scols_print_table(tb))
		rc = msg_lib_error(-EIO);
	scols_unref_table(tb);
	return rc;
}

int cmd_ps(int argc, const char **argv)
{
	struct xip_ps_report r;
	struct cmd_args args = { 0 };
	int json = 0, noheadings = 0, rc = EXIT_OK, ret;
	const struct poptOption options[] = {
		CMD_OPT_JSON(&json, "the segments and their processes"),
		{ "noheadings", '\0', POPT_ARG_NONE, &noheadings, 0,
		  "do not print the heading line", NULL },
		POPT_TABLEEND
	};

	cmd_parse(argc, argv, options, ps_usage, 0, -1, &args);
	ret = xip_ps(args.argv, (size_t)args.argc, &r);
	if (ret) {
		rc = msg_lib_error(ret);
		goto out;
	}
	rc = ps_print(&r, json, noheadings);
	xip_ps_report_free(&r);
out:
	cmd_args_free(&args);
	return rc;
}
