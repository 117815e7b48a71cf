// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The policy file (xiptool.conf(5)): what root's attach admits and what
 * root's exec runs programs from.  Read here, judged by the callers.
 * And the kernel's say under SECBIT_EXEC_RESTRICT_FILE (AT_EXECVE_CHECK).
 * Only the C library: the libc-only front end (exec) reads it too.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/xip_error.h"
#include "util/xip_util.h"

/* Larger is no policy file anyone wrote by hand. */
#define POLICY_MAX (64 * 1024)
/* Symbolic links followed to reach it, at most. */
#define POLICY_HOPS 8

uid_t xip_euid(void)
{
#ifdef XIP_LIBC_ONLY
	return (uid_t)getauxval(AT_EUID);
#else
	return geteuid();
#endif
}

#ifndef PR_GET_SECUREBITS
#define PR_GET_SECUREBITS 27
#endif
/* Linux 6.14: <linux/securebits.h>, <linux/fcntl.h> */
#ifndef SECBIT_EXEC_RESTRICT_FILE
#define SECBIT_EXEC_RESTRICT_FILE (1 << 8)
#endif
#ifndef AT_EXECVE_CHECK
#define AT_EXECVE_CHECK 0x10000
#endif

int xip_exec_restrict_check(int fd)
{
	static const char *const none[] = { NULL };
	static const char *const argv0[] = { "", NULL };
	int bits = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);

	if (bits < 0 || !(bits & SECBIT_EXEC_RESTRICT_FILE))
		return 0;
	if (syscall(SYS_execveat, fd, "", argv0, none,
		    AT_EMPTY_PATH | AT_EXECVE_CHECK) == 0)
		return 0;
	return -errno;
}

static const char *const level_names[] = {
	[XIP_POLICY_ANY] = "any",
	[XIP_POLICY_VERIFIED] = "verified",
	[XIP_POLICY_SIGNED] = "signed",
};

const char *xip_policy_level_name(enum xip_policy_level level)
{
	return level <= XIP_POLICY_SIGNED ? level_names[level] : "?";
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

/* [@s, @e) without the blanks at either end. */
static void trim(const char **s, const char **e)
{
	while (*s < *e && is_blank(**s))
		(*s)++;
	while (*e > *s && is_blank((*e)[-1]))
		(*e)--;
}

static bool word_is(const char *s, const char *e, const char *word)
{
	return (size_t)(e - s) == strlen(word) && !memcmp(s, word, e - s);
}

/* One "key = value" line, [@s, @e), comments and blanks cut off. */
static int parse_line(struct xip_policy *p, unsigned int line, const char *s,
		      const char *e)
{
	const char *eq = memchr(s, '=', e - s), *k = s, *ke, *v, *ve = e;
	struct xip_policy_rule *rule;
	int level;

	if (!eq)
		return xip_error(-EINVAL, "%s line %u: expected 'key = value'",
				 p->path, line);
	ke = eq;
	v = eq + 1;
	trim(&k, &ke);
	trim(&v, &ve);
	if (word_is(k, ke, "attach"))
		rule = &p->attach;
	else if (word_is(k, ke, "exec"))
		rule = &p->exec;
	else
		return xip_error(-EINVAL, "%s line %u: unknown key '%.*s' (expected attach or exec)",
				 p->path, line,
				 (int)(ke - k > 64 ? 64 : ke - k), k);
	if (rule->line)
		return xip_error(-EINVAL, "%s line %u: %s given again (first on line %u)",
				 p->path, line, rule == &p->attach ? "attach" :
								     "exec",
				 rule->line);
	for (level = XIP_POLICY_ANY; level <= XIP_POLICY_SIGNED; level++)
		if (word_is(v, ve, level_names[level]))
			break;
	if (level > XIP_POLICY_SIGNED)
		return xip_error(-EINVAL, "%s line %u: %.*s = '%.*s': expected any, verified or signed",
				 p->path, line, (int)(ke - k), k,
				 (int)(ve - v > 64 ? 64 : ve - v), v);
	rule->level = (enum xip_policy_level)level;
	rule->line = line;
	return 0;
}

int xip_policy_parse(struct xip_policy *p, const char *text, size_t len)
{
	const char *s = text, *end = text + len;
	unsigned int line = 0;
	int ret;

	p->attach = (struct xip_policy_rule){ XIP_POLICY_ANY, 0 };
	p->exec = p->attach;
	if (memchr(text, '\0', len))
		return xip_error(-EINVAL, "%s: holds a NUL byte: not a text file",
				 p->path);
	while (s < end) {
		const char *nl = memchr(s, '\n', end - s), *e, *hash;

		e = nl ? nl : end;
		line++;
		hash = memchr(s, '#', e - s);
		if (hash)
			e = hash;
		trim(&s, &e);
		if (s < e) {
			ret = parse_line(p, line, s, e);
			if (ret)
				return ret;
		}
		s = nl ? nl + 1 : end;
	}
	return 0;
}

/* "@dir/@rel": @rel beside the file @cur names, into @buf. */
static int beside(const char *cur, const char *rel, char *buf, size_t len)
{
	const char *slash = strrchr(cur, '/');
	int n;

	if (rel[0] == '/' || !slash)
		n = snprintf(buf, len, "%s", rel);
	else
		n = snprintf(buf, len, "%.*s/%s", (int)(slash - cur), cur, rel);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/*
 * Open @path for reading, following a symbolic link only when it is
 * root's or @uid's (one another user planted is refused, whatever
 * fs.protected_symlinks says): each link is opened itself (O_PATH), its
 * owner read from it and its target read from the same inode.
 */
static int policy_open(const char *path, uid_t uid)
{
	char cur[XIP_POLICY_PATH_MAX], link[XIP_POLICY_PATH_MAX];
	char next[XIP_POLICY_PATH_MAX];
	struct stat st;
	ssize_t n;
	int fd, lfd;

	if (strlen(path) >= sizeof(cur))
		return xip_error(-ENAMETOOLONG, "%.64s...: %s", path,
				 strerror(ENAMETOOLONG));
	strcpy(cur, path);
	for (int hops = 0;; hops++) {
		/* openat, not open: musl's open adds an fcntl for O_CLOEXEC */
		fd = openat(AT_FDCWD, cur, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
			    O_NOCTTY | O_CLOEXEC);
		if (fd >= 0)
			return fd;
		if (errno != ELOOP || hops == POLICY_HOPS)
			return xip_error(-errno, "%s: %s", cur, strerror(errno));
		lfd = openat(AT_FDCWD, cur, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (lfd < 0)
			return xip_error(-errno, "%s: %s", cur, strerror(errno));
		if (fstat(lfd, &st) < 0 || !S_ISLNK(st.st_mode)) {
			close(lfd);
			return xip_error(-EAGAIN, "%s: replaced while it was being opened",
					 cur);
		}
		if (st.st_uid != 0 && st.st_uid != uid) {
			close(lfd);
			return xip_error(-EPERM, "%s: a symbolic link of uid %u's (neither root's nor the caller's): not followed",
					 cur, (unsigned int)st.st_uid);
		}
		n = readlinkat(lfd, "", link, sizeof(link) - 1);
		close(lfd);
		if (n < 0)
			return xip_error(-errno, "%s: %s", cur, strerror(errno));
		link[n] = '\0';
		if (beside(cur, link, next, sizeof(next)))
			return xip_error(-ENAMETOOLONG, "%s: %s", cur,
					 strerror(ENAMETOOLONG));
		strcpy(cur, next);
	}
}

/*
 * Only root or the caller may have written what the policy says: a
 * regular file of theirs that nobody else may write.
 */
static int policy_trusted(const char *path, const struct stat *st, uid_t uid)
{
	if (!S_ISREG(st->st_mode))
		return xip_error(-EINVAL, "%s: not a regular file", path);
	if (st->st_uid != 0 && st->st_uid != uid)
		return xip_error(-EPERM, "%s: owned by uid %u, neither root nor the caller: not trusted",
				 path, (unsigned int)st->st_uid);
	if (st->st_mode & (S_IWGRP | S_IWOTH))
		return xip_error(-EPERM, "%s: writable by %s (mode %04o): not trusted",
				 path, st->st_mode & S_IWOTH ? "others" :
							       "its group",
				 (unsigned int)(st->st_mode & 07777));
	return 0;
}

int xip_policy_load(struct xip_policy *p)
{
	/* not for a set-ID start: the policy would be its caller's to name */
	const char *path = secure_getenv("XIPTOOL_CONF");
	bool named = path && *path;
	uid_t uid = xip_euid();
	struct stat st;
	char *text;
	ssize_t n;
	int fd, ret;

	memset(p, 0, sizeof(*p));
	if (!named)
		path = XIP_POLICY_FILE;
	if (strlen(path) >= sizeof(p->path))
		return xip_error(-ENAMETOOLONG, "%.64s...: %s", path,
				 strerror(ENAMETOOLONG));
	fd = policy_open(path, uid);
	/* no policy file where it is looked for by default: no rule */
	if (fd == -ENOENT && !named) {
		xip_error_clear();
		return 0;
	}
	if (fd < 0)
		return fd;
	strcpy(p->path, path);
	ret = fstat(fd, &st) < 0 ? xip_error(-errno, "%s: %s", path,
					     strerror(errno)) :
				   policy_trusted(path, &st, uid);
	if (!ret && st.st_size > POLICY_MAX)
		ret = xip_error(-EFBIG, "%s: larger than %d KiB: not a policy file",
				path, POLICY_MAX / 1024);
	text = ret ? NULL : malloc(POLICY_MAX + 1);
	if (!ret && !text)
		ret = xip_error(-ENOMEM, "out of memory");
	n = ret ? 0 : xip_read_full(fd, text, POLICY_MAX + 1);
	if (!ret && n < 0)
		ret = xip_error((int)n, "%s: %s", path, strerror((int)-n));
	else if (!ret && n > POLICY_MAX)
		ret = xip_error(-EFBIG, "%s: larger than %d KiB: not a policy file",
				path, POLICY_MAX / 1024);
	close(fd);
	if (!ret)
		ret = xip_policy_parse(p, text, (size_t)n);
	free(text);
	return ret;
}
