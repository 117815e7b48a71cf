// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The loader's first step, all of its I/O before anything changes: find
 * the program (and its interpreter) in the image or on the host, check
 * execute permission and noexec mounts as execve(2) does, parse and
 * validate the ELF file, and take the runs of blocks its pages are
 * mapped from.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "exec/xip_elf.h"
#include "exec/xip_exec.h"
#include "exec/exec_int.h"
#include "util/xip_debug.h"
#include "util/xip_error.h"
#include "util/xip_ext2.h"
#include "util/xip_util.h"
#include "segment/xip_segment.h"
#include "reader/xip_image.h"
#include "reader/xip_reader.h"

/* ---- prepare: find and check the program ---------------------------- */

struct image_ctx {
	struct xip_image *img;
	ext2_ino_t ino;
	struct xip_map m;	/* the reader's map of the file */
	bool open;
	struct xip_exec_cached *log;	/* the reads, for an entry (or NULL) */
	bool log_failed;		/* too large to keep */
};

/* Read the file through the reader's block map, straight from the segment. */
static ssize_t image_read(void *ctx, uint64_t off, void *buf, size_t want)
{
	struct image_ctx *c = ctx;
	uint64_t bs = c->img->block_size, size, n, count;
	size_t len = want;
	uint8_t *out = buf;
	size_t done = 0;
	blk64_t pblk;
	void *p;
	int ret;

	if (!c->open) {
		ret = xip_map_open(c->img, c->ino, &c->m);
		if (ret)
			return ret;
		c->open = true;
	}
	size = EXT2_I_SIZE(&c->m.inode);
	if (off >= size)
		len = 0;
	else if (len > size - off)
		len = (size_t)(size - off);
	while (done < len) {
		uint64_t pos = off + done, in = pos % bs;

		n = bs - in < len - done ? bs - in : len - done;
		ret = xip_map_block(&c->m, pos / bs, &pblk, &count);
		if (!ret && pblk)
			ret = xip_engine_block_ptr(c->img, c->ino, pblk, &p);
		if (ret)
			return done ? (ssize_t)done : ret;
		if (pblk)
			memcpy(out + done, (uint8_t *)p + in, n);
		else
			memset(out + done, 0, n);
		done += n;
	}
	if (c->log && !c->log_failed &&
	    xip_exec_cached_log(c->log, off, want, buf, done))
		c->log_failed = true;
	return (ssize_t)done;
}

/* The reads of an entry, again (xip_exec_cached_replay). */
static ssize_t entry_read(void *ctx, uint64_t off, void *buf, size_t len)
{
	return xip_exec_cached_replay(ctx, off, buf, len);
}

static bool in_groups(gid_t gid)
{
	gid_t groups[256];
	int n;

	if (gid == getegid())
		return true;
	n = getgroups(256, groups);
	for (int i = 0; i < n; i++)
		if (groups[i] == gid)
			return true;
	return false;
}

/* The kernel's execute permission check on the image's inode. */
static int may_exec(unsigned int mode, uid_t owner, gid_t group,
		    const char *name, bool fresh)
{
	unsigned int bit = 0001;
	/* a fresh process still has the credentials its execve gave it */
	uid_t uid = fresh ? (uid_t)getauxval(AT_EUID) : geteuid();

	if (LINUX_S_ISDIR(mode))
		return xip_error(-EACCES, "%s: is a directory", name);
	if (!LINUX_S_ISREG(mode))
		return xip_error(-EACCES, "%s: not a regular file", name);
	if (uid == 0)
		bit = (mode & 0111) ? (mode & 0111) : 0100;
	else if (uid == owner)
		bit = 0100;
	else if (in_groups(group))
		bit = 0010;
	if (!(mode & bit))
		return xip_error(-EACCES, "%s: permission denied (no execute"
				 " bit for us, mode %04o)", name, mode & 07777);
	return 0;
}

static char *image_abs_path(const char *path)
{
	char *p;

	if (path[0] == '/')
		return strdup(path);
	if (asprintf(&p, "/%s", path) < 0)
		return NULL;
	return p;
}

static void set_setid(unsigned int mode, bool *setid)
{
	if (setid)
		*setid = (mode & LINUX_S_ISUID) ||
			 ((mode & LINUX_S_ISGID) && (mode & 0010));
}

/*
 * @path (@abs) read from the image's file system, opened now if it was
 * not; @log, when not NULL, takes what an entry keeps (false: nothing to
 * keep).
 */
static int from_image(struct xip_exec *ex, struct exec_file *f,
		      const char *path, const char *abs,
		      struct xip_exec_cached *log, bool *keep, bool *setid)
{
	struct xip_image *img = ex->img;
	struct ext2_inode_large in;
	struct image_ctx c = { .img = img, .log = log };
	int ret = xip_image_open_fs(img);

	*keep = false;
	if (ret)
		return ret;
	ex->block_size = img->block_size;
	ret = xip_lookup(img, abs, 0, &c.ino);
	if (ret == -ENOENT || ret == -ENOTDIR)
		return xip_error(ret, "%s: not found in %s", path,
				 img->seg->name ? img->seg->name :
				 img->seg->path);
	if (!ret)
		ret = xip_read_inode(img, c.ino, &in);
	if (!ret)
		ret = may_exec(in.i_mode, inode_uid(in), inode_gid(in), path,
			       ex->fresh);
	if (ret)
		return ret;
	set_setid(in.i_mode, setid);
	ret = xip_elf_parse(image_read, &c, EXT2_I_SIZE(&in), path, &f->elf);
	if (c.open)
		xip_map_close(&c.m);
	if (!ret)
		ret = xip_elf_validate_load(&f->elf, path, img->block_size);
	if (!ret)
		ret = xip_file_runs(img, c.ino, &f->runs, &f->nruns);
	if (ret || !log || c.log_failed)
		return ret;
	log->runs = malloc((f->nruns + 1) * sizeof(*log->runs));
	if (log->runs) {
		if (f->nruns)
			memcpy(log->runs, f->runs,
			       f->nruns * sizeof(*log->runs));
		log->nruns = f->nruns;
		log->ino = c.ino;
		log->size = EXT2_I_SIZE(&in);
		log->mode = in.i_mode;
		log->uid = inode_uid(in);
		log->gid = inode_gid(in);
		log->block_size = img->block_size;
		*keep = true;
	}
	return 0;
}

/*
 * @path from the segment's entry @e: checked as the image's file would be
 * (execute permission for us, the ELF headers parsed and validated
 * again); -ESTALE when the entry does not serve (read from the image).
 */
static int from_entry(struct xip_exec *ex, struct exec_file *f,
		      const char *path, struct xip_exec_cached *e,
		      bool *setid)
{
	uint64_t blocks = ex->img->seg->size / e->block_size;
	int ret;

	for (size_t i = 0; i < e->nruns; i++)
		if (e->runs[i].pblk > blocks ||
		    e->runs[i].len > blocks - e->runs[i].pblk)
			return -ESTALE;
	ret = may_exec(e->mode, e->uid, e->gid, path, ex->fresh);
	if (ret)
		return ret;
	set_setid(e->mode, setid);
	ret = xip_elf_parse(entry_read, e, e->size, path, &f->elf);
	if (!ret)
		ret = xip_elf_validate_load(&f->elf, path, e->block_size);
	if (ret)
		return ret;
	f->runs = malloc((e->nruns + 1) * sizeof(*f->runs));
	if (!f->runs)
		return xip_error(-ENOMEM, "out of memory");
	if (e->nruns)
		memcpy(f->runs, e->runs, e->nruns * sizeof(*f->runs));
	f->nruns = e->nruns;
	ex->block_size = e->block_size;
	return 0;
}

/*
 * A lazy segment: the program is mapped only once every block its PT_LOADs
 * map (whole pages, from the file's runs) has landed and been checked;
 * the rest of the file (symbols, debug sections) is not waited for.
 */
static int wait_loads(struct xip_seg *seg, const struct exec_file *f,
		      unsigned int bs)
{
	int ret = 0;

	for (size_t k = 0; !ret && bs && k < f->elf.nload; k++) {
		const struct xip_elf_load *l = &f->elf.load[k];
		uint64_t first = l->offset / bs;
		uint64_t end = (l->offset + l->filesz + bs - 1) / bs;

		for (size_t i = 0; !ret && l->filesz && i < f->nruns; i++) {
			const struct xip_run *r = &f->runs[i];
			uint64_t lo = first > r->lblk ? first : r->lblk;
			uint64_t hi = r->lblk + r->len < end ? r->lblk + r->len :
							       end;

			if (lo < hi)
				ret = xip_seg_fill_wait(seg,
							(r->pblk + lo - r->lblk) * bs,
							(hi - lo) * bs);
		}
	}
	return ret;
}

/*
 * Open @path inside the image: from the segment's entry for it when it
 * has one (exec_cache.c), else from the image, keeping an entry for the
 * next start where the segment takes one.  @setid reports ignored
 * set-id bits.
 */
static int open_in_image(struct xip_exec *ex, struct exec_file *f,
			 const char *path, bool *setid)
{
	struct xip_seg *seg = ex->img->seg;
	bool cache = xip_exec_cache_usable(seg, ex->fresh), keep;
	struct xip_exec_cached e;
	char *abs = image_abs_path(path);
	int ret = -ENODATA;

	f->fd = -1;
	f->name = abs ? strdup(path) : NULL;
	if (!f->name) {
		free(abs);
		return xip_error(-ENOMEM, "out of memory");
	}
	if (cache && !xip_exec_cache_get(seg, abs, &e)) {
		ret = from_entry(ex, f, path, &e, setid);
		xip_exec_cached_free(&e);
		if (ret == -ESTALE) {
			XIP_DBG(EXEC, "%s: the entry does not serve: read from"
				" the image", path);
			xip_elf_free(&f->elf);
			memset(&f->elf, 0, sizeof(f->elf));
			xip_error_clear();
			ret = -ENODATA;
		}
	}
	if (ret == -ENODATA) {
		memset(&e, 0, sizeof(e));
		ret = from_image(ex, f, path, abs, cache ? &e : NULL, &keep,
				 setid);
		if (!ret && keep)
			xip_exec_cache_put(seg, abs, &e);
		xip_exec_cached_free(&e);
	}
	free(abs);
	if (!ret && seg->fill)
		ret = wait_loads(seg, f, ex->block_size);
	f->fd = seg->fd;
	f->seg = seg;
	f->src_pages = ex->block_size ? seg->size / ex->block_size : 0;
	return ret;
}

#define XIP_ST_VALID	0x0020	/* statfs f_flags: the kernel filled them */

/* @seg: the segment @fd belongs to, whose statfs is known, or NULL */
static bool on_noexec(int fd, const struct xip_seg *seg)
{
	struct statvfs sv;

	if (seg && seg->fs_known && (seg->fs_flags & XIP_ST_VALID))
		return seg->fs_flags & ST_NOEXEC;
	return fstatvfs(fd, &sv) == 0 && (sv.f_flag & ST_NOEXEC);
}

static int check_noexec(int fd, const struct xip_seg *seg, const char *what)
{
	if (on_noexec(fd, seg))
		return xip_error(-EACCES, "%s: on a noexec mount: its pages"
				 " cannot be mapped executable (move it or"
				 " remount with exec)", what);
	return 0;
}

static int not_regular(const char *path)
{
	return xip_error(-EACCES, "interpreter %s: not a regular file on the"
			 " host", path);
}

static int open_on_host(struct xip_exec *ex, struct exec_file *f,
			const char *path)
{
	struct stat st;
	int ret;

	f->name = strdup(path);
	if (!f->name)
		return xip_error(-ENOMEM, "out of memory");
	/*
	 * Whatever PT_INTERP names is opened: a FIFO would block the open and
	 * a terminal become ours.  Refuse what is no regular file before
	 * opening it, and check again what was opened.  Symbolic links are
	 * followed, as execve follows them (/lib64/ld-linux-x86-64.so.2 is
	 * one).
	 */
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
		return not_regular(path);
	f->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (f->fd < 0)
		return xip_error(-errno, "interpreter %s: %s on the host",
				 path, strerror(errno));
	f->own_fd = true;
	if (fstat(f->fd, &st) < 0)
		return xip_error(-errno, "%s: %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return not_regular(path);
	if (!(st.st_mode & 0111))
		return xip_error(-EACCES, "interpreter %s: not an executable"
				 " file", path);
	ret = check_noexec(f->fd, NULL, path);
	if (!ret)
		ret = xip_elf_parse_fd(f->fd, path, &f->elf);
	if (!ret)
		ret = xip_elf_validate_load(&f->elf, path, 0);
	if (ret)
		return ret;
	f->src_pages = div_round_up((uint64_t)st.st_size, ex->page);
	f->runs = calloc(1, sizeof(*f->runs));
	if (!f->runs)
		return xip_error(-ENOMEM, "out of memory");
	*f->runs = (struct xip_run){ 0, 0, f->src_pages };
	f->nruns = 1;
	return 0;
}

static int prepare_interp(struct xip_exec *ex, enum xip_interp_from from)
{
	const char *path = ex->prog.elf.interp;
	int ret = -ENOENT;

	ex->has_interp = true;
	ex->info.interp = path;
	if (from != XIP_INTERP_HOST) {
		ret = open_in_image(ex, &ex->interp, path, NULL);
		if (!ret || from == XIP_INTERP_IMAGE ||
		    (ret != -ENOENT && ret != -ENOTDIR)) {
			ex->info.interp_from_image = true;
			if (ret == -ENOENT || ret == -ENOTDIR)
				xip_error(ret, "interpreter %s: not found in"
					  " the image", path);
			return ret;
		}
		free(ex->interp.name);
		free(ex->interp.runs);
		xip_elf_free(&ex->interp.elf);
		memset(&ex->interp, 0, sizeof(ex->interp));
	}
	return open_on_host(ex, &ex->interp, path);
}

static int prepare_image(struct xip_exec *ex)
{
	struct xip_seg *seg = ex->img->seg;
	const char *what = seg->name ? seg->name : seg->path;
	char why[256];

	if (xip_seg_xip_capable(seg, ex->block_size, 0, why, sizeof(why)) != 1)
		return xip_error(-EOPNOTSUPP, "%s: not XIP-capable: %s", what,
				 why);
	if (seg->kind == XIP_SEG_DAX)
		return xip_error(-EOPNOTSUPP, "%s: device-DAX memory cannot be"
				 " mapped privately; exec needs a file or block"
				 " device segment", what);
	return check_noexec(seg->fd, seg, what);
}

int xip_exec_prepare(struct xip_image *img, const struct xip_exec_opts *opts,
		     struct xip_exec **exp)
{
	struct xip_exec *ex = calloc(1, sizeof(*ex));
	const char *base;
	int ret;

	*exp = NULL;
	if (!ex)
		return xip_error(-ENOMEM, "out of memory");
	ex->img = img;
	ex->fresh = opts->fresh;
	ex->std_opened = opts->std_opened;
	ex->own_memory_only = opts->own_memory_only;
	ex->own_stack = opts->fresh && opts->own_stack;
	if (opts->fresh) {
		ex->initial_argv = opts->initial_argv;
		ex->initial_envp = opts->initial_envp;
	}
	ex->page = (uint64_t)xip_host_page_size();
	ex->prog.fd = ex->interp.fd = -1;
	ex->execfn = strdup(opts->path);
	base = strrchr(opts->path, '/');
	/* cut to what comm holds, as execve(2) cuts it */
	xip_str_join(ex->comm, sizeof(ex->comm), base ? base + 1 : opts->path,
		     NULL);
	ret = ex->execfn ? 0 : xip_error(-ENOMEM, "out of memory");
	if (!ret)
		ret = open_in_image(ex, &ex->prog, opts->path,
				    &ex->info.setid_ignored);
	if (!ret)
		ret = prepare_image(ex);
	ex->info.type = ex->prog.elf.type;
	if (!ret && ex->prog.elf.interp)
		ret = prepare_interp(ex, opts->interp_from);
	if (ret) {
		xip_exec_free(ex);
		return ret;
	}
	XIP_DBG(EXEC, "%s: ELF type %u, %zu run(s) of blocks%s%s",
		ex->prog.name, ex->prog.elf.type, ex->prog.nruns,
		ex->has_interp ? ", interpreter " : "",
		ex->has_interp ? ex->interp.name : "");
	*exp = ex;
	return 0;
}

const struct xip_exec_info *xip_exec_info(const struct xip_exec *ex)
{
	return &ex->info;
}

static void exec_file_free(struct exec_file *f)
{
	if (f->own_fd && f->fd >= 0)
		close(f->fd);
	free(f->name);
	free(f->runs);
	xip_elf_free(&f->elf);
	xip_load_plan_free(&f->plan);
}

void xip_exec_free(struct xip_exec *ex)
{
	if (!ex)
		return;
	exec_file_free(&ex->prog);
	exec_file_free(&ex->interp);
	free(ex->execfn);
	free(ex->ranges);
	free(ex->stack_image);
	free(ex);
}
