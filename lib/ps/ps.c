// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * ps: the processes that map attached segments, and how much of what they
 * map is still the segment's own pages.
 *
 * A process run by `xiptool exec` maps the segment file itself (MAP_PRIVATE
 * at the blocks' offsets): its mappings carry the segment file's device
 * and inode.  A process run from a kernel mount of the segment's loop
 * device maps files of that mount: their device is the loop device.
 * /proc/PID/pagemap, where permitted, tells page by page whether a page of
 * the mapping is the file's own (shared with the segment) or an anonymous
 * copy; otherwise /proc/PID/smaps gives, per mapping, the resident pages
 * (Rss) and those copied on write (Anonymous): the rest are shared.
 * The program of an exec'd process is the file of the image whose block
 * holds its code start (/proc/PID/stat startcode, set by the loader); that
 * of a mounted one is /proc/PID/exe below the mount point.
 *
 * Any other process may map the segment file too: an nbdkit serving it, a
 * QEMU whose memory backend (memory-backend-file) it is, a program of its
 * own.  Only a process whose code start lies in its mappings of the
 * segment file was started by `xiptool exec` (the loader set it there);
 * the others are "mmap", or "pmem" for the shared mapping of a QEMU
 * memory backend: a guest's pmem device, whose pages the guest reaches
 * through QEMU's page tables and which therefore count as shared.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "ps/xip_ps.h"
#include "ps/ps_int.h"
#include "util/xip_error.h"
#include "util/xip_ext2.h"
#include "util/xip_util.h"
#include "registry/xip_registry.h"
#include "reader/xip_image.h"
#include "reader/xip_reader.h"
#include "engine/xip_engine.h"
#include "exec/xip_exec.h"

int xip_ps_parse_map(const char *line, struct xip_ps_map *m)
{
	unsigned long long start, end, off, ino;
	unsigned int ma, mi;
	char perms[8];
	int n = 0;

	memset(m, 0, sizeof(*m));
	if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end,
		   perms, &off, &ma, &mi, &ino, &n) != 7 || !n || end < start)
		return -EINVAL;
	m->start = start;
	m->end = end;
	m->offset = off;
	m->dev = makedev(ma, mi);
	m->ino = ino;
	m->exec = strlen(perms) >= 3 && perms[2] == 'x';
	m->shared = strlen(perms) >= 4 && perms[3] == 's';
	snprintf(m->path, sizeof(m->path), "%s", line + n);
	m->path[strcspn(m->path, "\n")] = '\0';
	return 0;
}

/* "Rss:  12 kB": 1 with *kb set when @line is field @key. */
static int smaps_field(const char *line, const char *key, uint64_t *kb)
{
	size_t n = strlen(key);

	if (strncmp(line, key, n) || line[n] != ':')
		return 0;
	*kb = strtoull(line + n + 1, NULL, 10);
	return 1;
}

/* What ps looks for: one attached segment. */
struct pseg {
	const struct xip_seg_entry *e;
	bool have_file, have_loop;
	dev_t dev;			/* the segment file */
	ino_t ino;
	dev_t loop;			/* its loop device */
	char mnt[XIP_PATH_MAX];		/* where that is mounted, or "" */
};

static int ps_add(struct xip_ps_report *r, pid_t pid, size_t seg,
		  enum xip_ps_how how, struct xip_ps_proc **pp)
{
	struct xip_ps_proc *p;

	for (size_t i = 0; i < r->n; i++)
		if (r->procs[i].pid == pid && r->procs[i].seg == seg &&
		    r->procs[i].how == how) {
			*pp = &r->procs[i];
			return 0;
		}
	if (xip_grow((void **)&r->procs, &r->cap, r->n + 1, sizeof(*p)))
		return -ENOMEM;
	p = &r->procs[r->n++];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	p->seg = seg;
	p->how = how;
	*pp = p;
	return 0;
}

/* Field 26 of /proc/PID/stat: the start of the program's code. */
static uint64_t start_code(pid_t pid)
{
	char path[64], buf[1024], *p;
	uint64_t v = 0;
	ssize_t len;
	int fd, n = 2;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return 0;
	buf[len] = '\0';
	p = strrchr(buf, ')');
	while (p && (p = strchr(p + 1, ' ')))
		if (++n == 26) {
			v = strtoull(p + 1, NULL, 10);
			break;
		}
	return v;
}

static void read_comm(pid_t pid, char *buf, size_t len)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	buf[0] = '\0';
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, len - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
}

#define PM_PRESENT	(1ULL << 63)
#define PM_SWAPPED	(1ULL << 62)
#define PM_FILE		(1ULL << 61)	/* a file page (or shared anon) */

/*
 * Count the pages of [m->start, m->end) from /proc/PID/pagemap (@pm):
 * present file pages are the segment's own, present or swapped anonymous
 * ones are copies.  0 when read, < 0 when pagemap cannot be read (then
 * smaps' counts are used).
 */
static int pagemap_count(int pm, const struct xip_ps_map *m,
			 unsigned int page, uint64_t *shared, uint64_t *copied)
{
	uint64_t e[512], first = m->start / page, n = (m->end - m->start) / page;

	*shared = *copied = 0;
	if (pm < 0)
		return -EACCES;
	for (uint64_t i = 0; i < n;) {
		uint64_t want = n - i < 512 ? n - i : 512;
		ssize_t got = pread(pm, e, want * sizeof(e[0]),
				    (off_t)((first + i) * sizeof(e[0])));

		if (got <= 0 || got % (ssize_t)sizeof(e[0]))
			return -EIO;
		for (ssize_t k = 0; k < got / (ssize_t)sizeof(e[0]); k++) {
			if ((e[k] & PM_PRESENT) && (e[k] & PM_FILE))
				(*shared)++;
			else if (e[k] & (PM_PRESENT | PM_SWAPPED))
				(*copied)++;
		}
		i += (uint64_t)got / sizeof(e[0]);
	}
	return 0;
}

/* A mapping of @p counted: its pages, and where its program is. */
static void count_map(struct xip_ps_proc *p, const struct xip_ps_map *m,
		      uint64_t rss_kb, uint64_t anon_kb, uint64_t code,
		      unsigned int page, int pm)
{
	uint64_t kpp = page / 1024, sh, cp;

	p->mappings++;
	if (m->shared)
		p->shared_map = true;
	else if (m->exec)
		p->exec_map = true;
	if (pagemap_count(pm, m, page, &sh, &cp) == 0) {
		p->shared += sh;
		p->copied += cp;
	} else {
		p->shared += (rss_kb > anon_kb ? rss_kb - anon_kb : 0) / kpp;
		p->copied += anon_kb / kpp;
	}
	if (code >= m->start && code < m->end) {
		p->have_code = true;
		p->code_off = m->offset + (code - m->start);
	}
	if (!p->first_path[0])
		snprintf(p->first_path, sizeof(p->first_path), "%s", m->path);
}

static int scan_pid(struct xip_ps_report *r, const struct pseg *segs,
		    size_t nsegs, pid_t pid, unsigned int page)
{
	char path[64], *line = NULL;
	struct xip_ps_map m, cur;
	struct xip_ps_proc *p = NULL;
	uint64_t rss = 0, anon = 0, kb, code = 0;
	size_t cap = 0;
	FILE *f;
	int ret = 0, pm;

	snprintf(path, sizeof(path), "/proc/%d/smaps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;	/* gone, or not ours to read */
	/* exact per-page counts where permitted (root, or our own) */
	snprintf(path, sizeof(path), "/proc/%d/pagemap", (int)pid);
	pm = open(path, O_RDONLY | O_CLOEXEC);
	for (;;) {
		bool eof = getline(&line, &cap, f) <= 0;

		if (!eof && xip_ps_parse_map(line, &m)) {
			/* a field of the mapping being read */
			if (p && smaps_field(line, "Rss", &kb))
				rss = kb;
			else if (p && smaps_field(line, "Anonymous", &kb))
				anon = kb;
			continue;
		}
		/* the previous mapping is complete */
		if (p)
			count_map(p, &cur, rss, anon, code, page, pm);
		p = NULL;
		if (eof)
			break;
		for (size_t s = 0; s < nsegs; s++) {
			enum xip_ps_how how;

			/* exec, mmap or pmem: decided once all is read */
			if (segs[s].have_file && m.dev == segs[s].dev &&
			    m.ino == segs[s].ino)
				how = XIP_PS_MMAP;
			else if (segs[s].have_loop && m.dev == segs[s].loop &&
				 m.ino)
				how = XIP_PS_MOUNT;
			else
				continue;
			if (!code)
				code = start_code(pid);
			ret = ps_add(r, pid, s, how, &p);
			if (ret)
				goto out;
			cur = m;
			rss = anon = 0;
			break;
		}
	}
out:
	free(line);
	fclose(f);
	if (pm >= 0)
		close(pm);
	return ret;
}

/* The program of a mounted process: /proc/PID/exe below the mount. */
static void mount_program(struct xip_ps_proc *p, const struct pseg *s)
{
	char link[64], exe[XIP_PATH_MAX];
	struct stat st;
	const char *rel = NULL;
	size_t n = strlen(s->mnt);
	ssize_t len;

	snprintf(link, sizeof(link), "/proc/%d/exe", (int)p->pid);
	len = readlink(link, exe, sizeof(exe) - 1);
	if (len > 0 && stat(link, &st) == 0 && st.st_dev == s->loop) {
		exe[len] = '\0';
	} else {
		snprintf(exe, sizeof(exe), "%s", p->first_path);
	}
	if (n && !strncmp(exe, s->mnt, n) && (exe[n] == '/' || !exe[n]))
		rel = exe[n] ? exe + n : "/";
	if (n == 1 && exe[0] == '/')
		rel = exe;
	p->program = strdup(rel ? rel : exe);
}

/*
 * Is @pid a QEMU with a memory backend file?  Its command line names
 * "memory-backend-file" (-object), or its program is a qemu-system-*
 * (a backend added over QMP).
 */
static bool qemu_backend(pid_t pid)
{
	char path[64], buf[8192], exe[XIP_PATH_MAX], *base;
	ssize_t len;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		len = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (len > 0) {
			buf[len] = '\0';
			for (ssize_t i = 0; i < len; i += (ssize_t)strlen(buf + i) + 1)
				if (strstr(buf + i, "memory-backend-file"))
					return true;
		}
	}
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	len = readlink(path, exe, sizeof(exe) - 1);
	if (len <= 0)
		return false;
	exe[len] = '\0';
	base = strrchr(exe, '/');
	return !strncmp(base ? base + 1 : exe, "qemu-system-", 12);
}

/*
 * A process mapping the segment file: run by `xiptool exec` when its code
 * start lies in one of those mappings (or, where the loader could not set
 * the start of code, PR_SET_MM_MAP being absent, when it maps the file
 * privately and executable, as the loader does), a QEMU memory backend
 * when it maps the file shared, any other program otherwise.
 */
static enum xip_ps_how file_how(const struct xip_ps_proc *p)
{
	if (p->have_code || p->exec_map)
		return XIP_PS_EXEC;
	if (p->shared_map && qemu_backend(p->pid))
		return XIP_PS_PMEM;
	return XIP_PS_MMAP;
}

struct find_ctx {
	struct xip_image *img;
	struct xip_ps_report *r;
	size_t seg;
	unsigned int bs;
};

/* Name the exec'd programs of segment @seg whose code lies in @ino. */
static int find_fn(void *arg, const char *path, ext2_ino_t ino)
{
	struct find_ctx *c = arg;
	struct xip_run *runs;
	size_t n;

	if (xip_file_runs(c->img, ino, &runs, &n))
		return 0;
	for (size_t i = 0; i < c->r->n; i++) {
		struct xip_ps_proc *p = &c->r->procs[i];
		uint64_t blk = p->code_off / c->bs;

		if (p->seg != c->seg || p->how != XIP_PS_EXEC ||
		    !p->have_code || p->program)
			continue;
		for (size_t k = 0; k < n; k++)
			if (blk >= runs[k].pblk && blk - runs[k].pblk < runs[k].len) {
				p->program = strdup(path);
				break;
			}
	}
	free(runs);
	return 0;
}

static void exec_programs(struct xip_ps_report *r, size_t seg,
			  const struct xip_seg_entry *e)
{
	struct find_ctx c = { .r = r, .seg = seg };
	char spec[XIP_SEG_NAME_MAX + 2];
	bool want = false;

	for (size_t i = 0; i < r->n; i++)
		if (r->procs[i].seg == seg && r->procs[i].how == XIP_PS_EXEC &&
		    r->procs[i].have_code)
			want = true;
	if (!want)
		return;
	snprintf(spec, sizeof(spec), "@%s", e->name);
	if (xip_image_open(spec, XIP_IMG_NOLOCK, &c.img))
		return;		/* not an ext2 image: no names */
	c.bs = c.img->block_size;
	xip_walk_files(c.img, find_fn, &c);
	xip_image_close(c.img);
}

static bool wanted(const struct xip_seg_entry *e, const char *const *names,
		   size_t n)
{
	if (!n)
		return true;
	for (size_t i = 0; i < n; i++) {
		const char *s = names[i][0] == '@' ? names[i] + 1 : names[i];

		if (!strcmp(s, e->name) || (e->loop[0] && !strcmp(s, e->loop)))
			return true;
	}
	return false;
}

struct scan_ctx {
	struct xip_ps_report *r;
	const struct pseg *segs;
	size_t nsegs;
	unsigned int page;
	int ret;
};

/* scan_pid for xip_pids_each: its error kept, the walk stopped by 1. */
static int scan_one(pid_t pid, void *arg)
{
	struct scan_ctx *c = arg;

	c->ret = scan_pid(c->r, c->segs, c->nsegs, pid, c->page);
	return c->ret ? 1 : 0;
}

int xip_ps(const char *const *names, size_t nnames, struct xip_ps_report *r)
{
	unsigned int page = (unsigned int)xip_host_page_size();
	struct xip_seg_entry *all = NULL;
	struct pseg *segs = NULL;
	size_t nall = 0, nsegs = 0;
	struct scan_ctx c;
	int ret;

	memset(r, 0, sizeof(*r));
	ret = xip_registry_list(&all, &nall);
	if (ret)
		return ret;
	for (size_t i = 0; i < nnames; i++) {
		bool found = false;

		for (size_t k = 0; k < nall && !found; k++)
			found = wanted(&all[k], names + i, 1);
		if (!found) {
			free(all);
			return xip_error(-ENOENT, "%s: no such segment",
					 names[i]);
		}
	}
	segs = calloc(nall ? nall : 1, sizeof(*segs));
	r->segs = calloc(nall ? nall : 1, sizeof(*r->segs));
	if (!segs || !r->segs) {
		ret = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < nall; i++) {
		struct pseg *s = &segs[nsegs];
		struct stat st;

		if (!wanted(&all[i], names, nnames))
			continue;
		s->e = &all[i];
		if (all[i].path[0] && stat(all[i].path, &st) == 0) {
			s->have_file = true;
			s->dev = st.st_dev;
			s->ino = st.st_ino;
		}
		if (all[i].loop[0] && stat(all[i].loop, &st) == 0 &&
		    S_ISBLK(st.st_mode)) {
			s->have_loop = true;
			s->loop = st.st_rdev;
			xip_mount_point(NULL, s->loop, true, s->mnt,
					sizeof(s->mnt));
		}
		snprintf(r->segs[nsegs].name, sizeof(r->segs[nsegs].name),
			 "%s", all[i].name);
		snprintf(r->segs[nsegs].loop, sizeof(r->segs[nsegs].loop),
			 "%s", all[i].loop);
		snprintf(r->segs[nsegs].mount, sizeof(r->segs[nsegs].mount),
			 "%s", s->mnt);
		r->segs[nsegs].verified = all[i].verified;
		snprintf(r->segs[nsegs].signer, sizeof(r->segs[nsegs].signer),
			 "%s", all[i].signer);
		nsegs++;
	}
	r->nsegs = nsegs;
	c = (struct scan_ctx){ r, segs, nsegs, page, 0 };
	ret = xip_pids_each(scan_one, &c);
	if (ret < 0) {
		ret = xip_error(ret, "/proc: %s", strerror(-ret));
		goto out;
	}
	ret = c.ret;
	/* a lazy segment's filler writes into it without mapping it */
	for (size_t s = 0; !ret && s < nsegs; s++) {
		struct xip_ps_proc *p;
		uint64_t filled;
		pid_t filler;

		xip_registry_fill_status(segs[s].e, &filled, &filler);
		if (filler > 0)
			ret = ps_add(r, filler, s, XIP_PS_FILL, &p);
	}
	for (size_t i = 0; !ret && i < r->n; i++) {
		struct xip_ps_proc *p = &r->procs[i];

		read_comm(p->pid, p->comm, sizeof(p->comm));
		if (p->how == XIP_PS_MMAP)
			p->how = file_how(p);
		if (p->how == XIP_PS_MOUNT)
			mount_program(p, &segs[p->seg]);
		r->segs[p->seg].procs++;
		r->segs[p->seg].shared += p->shared;
		r->segs[p->seg].copied += p->copied;
	}
	for (size_t s = 0; !ret && s < nsegs; s++)
		exec_programs(r, s, segs[s].e);
out:
	free(segs);
	free(all);
	if (ret)
		xip_ps_report_free(r);
	return ret;
}

void xip_ps_report_free(struct xip_ps_report *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->procs[i].program);
	free(r->procs);
	free(r->segs);
	memset(r, 0, sizeof(*r));
}
