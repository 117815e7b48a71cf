/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Small helpers every part of the library uses (util.c): read and write
 * loops that survive EINTR and short transfers, rounding, growing an
 * array, the library's interrupt flag (util.c) and sizes (error.c).  Only
 * the C library: the libc-only front end links it too.
 */
#ifndef XIP_UTIL_H
#define XIP_UTIL_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

/* A 64-bit value for printf's %llu (uint64_t is unsigned long on LP64). */
#define U64(x) ((unsigned long long)(x))

/* the longest path the library keeps (records, markers, reports) */
#define XIP_PATH_MAX 4096

/*
 * @n divided by @d, rounded up; @n rounded up or down to a multiple of @d.
 * Any @d > 0, not only powers of two; div_round_up() does not overflow
 * where @n + @d would.
 */
static inline uint64_t div_round_up(uint64_t n, uint64_t d)
{
	return n / d + (n % d != 0);
}

/* -1, 0 or 1 as @a is below, equal to or above @b: for qsort(3) and
 * bsearch(3) comparisons. */
static inline int xip_cmp_u64(uint64_t a, uint64_t b)
{
	return a < b ? -1 : a > b;
}

static inline uint64_t round_up(uint64_t n, uint64_t d)
{
	return div_round_up(n, d) * d;
}

static inline uint64_t round_down(uint64_t n, uint64_t d)
{
	return n / d * d;
}

/*
 * write(2)/pwrite(2) all of @len bytes, retrying after EINTR and short
 * writes: 0, or -errno (-EIO when the kernel wrote nothing).
 */
int xip_write_all(int fd, const void *buf, size_t len);
int xip_pwrite_all(int fd, const void *buf, size_t len, uint64_t off);

/*
 * read(2)/pread(2) until @len bytes or the end of the file, retrying
 * after EINTR and short reads: the number of bytes read (less than @len
 * only at the end of the file), or -errno.  A read interrupted by a
 * signal once the library's interrupt flag is set (xip_set_interrupt)
 * returns -EINTR: a read blocked on a pipe or a terminal ends there.
 */
ssize_t xip_read_full(int fd, void *buf, size_t len);
ssize_t xip_pread_full(int fd, void *buf, size_t len, uint64_t off);

/*
 * Close the descriptors @a and @b (either may be -1): in one system call,
 * close_range(2), when they are neighbours, as a directory and a file
 * opened in it one after the other are; two close(2)s otherwise, or
 * where the kernel has no close_range (before 5.9).
 */
void xip_close_two(int a, int b);

/*
 * Exactly @len bytes of @fd at @off: 0, or an error recorded (xip_error)
 * about @name: -errno, or -EIO when the file ends before (it shrank while
 * being read).
 */
int xip_pread_exact(int fd, void *buf, size_t len, uint64_t off,
		    const char *name);

/*
 * Map the first @len bytes of @fd shared (MAP_SHARED) with @prot into
 * *@map: 0, or -errno with the error "@name: cannot map: reason".
 */
int xip_map_shared(int fd, size_t len, int prot, const char *name,
		   void **map);

/*
 * Room for at least @need elements of @elsize bytes in the array *@arr of
 * *@cap elements: when it is smaller, realloc(3) it to twice its capacity,
 * or to @need when that is more (an empty array gets exactly @need, so
 * that the many one-element arrays of mkfs's nodes stay small).  0, or
 * -ENOMEM (out of memory, or @need elements of @elsize bytes do not fit a
 * size_t) leaving *@arr and *@cap as they were.  Appending one element:
 * xip_grow(&a, &cap, n + 1, sizeof(*a)).  A caller that keeps no capacity
 * passes a copy of its count (the array holds at least that many); every
 * call then reallocates.
 */
int xip_grow(void **arr, size_t *cap, size_t need, size_t elsize);

/* FNV-1a, 64 bits, of the string @s (hash tables, names derived from it). */
uint64_t xip_fnv1a64(const char *s);

/*
 * @a then @b (NULL: nothing) into @buf of @len bytes, terminated: 0, or
 * -ENAMETOOLONG (@buf then holds what fit) when they do not fit.  What
 * snprintf(buf, len, "%s%s", a, b) does, without printf's machinery on
 * a path every `xiptool exec` takes.
 */
int xip_str_join(char *buf, size_t len, const char *a, const char *b);

/*
 * Writers stop at the next safe point, between two committed steps, once
 * *@flag is non-zero (set from a SIGINT/SIGTERM handler): the file
 * operation returns -EINTR and the image can be closed clean.  NULL
 * turns it off.
 */
void xip_set_interrupt(volatile sig_atomic_t *flag);
bool xip_interrupted(void);
/*
 * A descriptor that becomes readable when the flag is set (the read end
 * of a pipe the handler writes to), for the work that waits in poll(2):
 * the NBD client.  -1 (the default) when there is none.
 */
void xip_set_interrupt_fd(int fd);
int xip_interrupt_fd(void);

/*
 * An output file (outfile.c), created as mkfs creates an image: the new
 * contents are written to @fd, a new private file in the destination's
 * directory, and xip_outfile_commit() links or renames it into place once
 * it is on disk, so that a failure or a kill leaves the old file or the
 * new one.  A symbolic link at the destination is refused (-ELOOP), so is
 * another user's file in a sticky directory others may write (-EPERM), a
 * file the caller may not write, and anything but a regular file or a
 * character device (written in place: /dev/null; refused too with
 * XIP_OUTFILE_REGULAR in @flags).  @mode is the final
 * mode (the replaced file's, else 0666 less the umask) and @keep_owner
 * gives a replaced file's owner to the new one; both may be changed
 * before the commit.  xip_outfile_abort() drops the new file; both
 * release everything.
 */
struct xip_outfile {
	int fd;
	mode_t mode;
	bool keep_owner;
	/* private */
	int dirfd;
	bool replace, inplace;
	char *path, *base, *tmpname;
	struct stat old;
};

#define XIP_OUTFILE_REGULAR	0x1	/* a regular file only, no device */

int xip_outfile_open(struct xip_outfile *of, const char *path,
		     unsigned int flags);
int xip_outfile_commit(struct xip_outfile *of);
/*
 * The file that @of replaces, opened for reading (O_NOFOLLOW) and
 * checked to be the one probed: a descriptor, -ENOENT when @of makes a
 * new file, -ESTALE when the name now holds another file.
 */
int xip_outfile_open_old(const struct xip_outfile *of);
void xip_outfile_abort(struct xip_outfile *of);

/* ".BASE.XXXXXXXX", a random name for a temporary file beside BASE. */
int xip_temp_name(const char *base, char *buf, size_t len);
/* Give the unnamed (O_TMPFILE) file @fd the name @name in @dirfd. */
int xip_link_unnamed(int fd, int dirfd, const char *name);
/* Sticky and writable by others: /tmp, /var/tmp, /dev/shm. */
bool xip_shared_dir(int dirfd);

/*
 * Parse "123", "4K", "2M", "1G", "1T" (binary units; "KiB", "KB" alike)
 * into bytes.  Decimal only: "010" is ten; a sign, a space, "0x" or any
 * other character is -EINVAL, a value beyond 64 bits -ERANGE.
 */
int xip_parse_size(const char *text, uint64_t *bytes);
long xip_host_page_size(void);

/*
 * One line of a mount table in the format of /proc/self/mountinfo
 * (proc(5)), its fields decoded: the kernel writes a space, tab, newline
 * or backslash in a path as \ooo (octal), which is turned back into the
 * byte.  The strings live until the callback returns.
 */
struct xip_mount {
	unsigned int major, minor;	/* st_dev of the mounted file system */
	const char *root;		/* the directory of it that is mounted */
	const char *point;		/* where it is mounted */
	const char *type;		/* "ext2", "hugetlbfs", ... */
	const char *source;		/* "/dev/loop0", "none", ... */
};

/*
 * Call @fn for each mount of the table @table (NULL: /proc/self/mountinfo)
 * in order, until it returns non-zero: that value; 0 at the end of the
 * table; -errno when the table cannot be opened or read (-ENOMEM out of
 * memory).  Lines not in the format are skipped.  Records an error only
 * when libmount, which reads the table, cannot be loaded (-ENOSYS).
 */
int xip_mounts_each(const char *table,
		    int (*fn)(const struct xip_mount *m, void *arg),
		    void *arg);

/*
 * Where the file system on device @dev is mounted, into @buf (@len bytes):
 * its first mount in @table (NULL: /proc/self/mountinfo), or with @whole
 * the first that mounts its root directory.  1 when found; 0 when it is
 * not mounted (@buf is then ""); -errno as xip_mounts_each, which
 * records the same errors.
 */
int xip_mount_point(const char *table, dev_t dev, bool whole, char *buf,
		    size_t len);

/*
 * Call @fn for each process in /proc but this one, until it returns
 * non-zero: that value; 0 at the end; -errno when /proc cannot be opened.
 * Records no error.
 */
int xip_pids_each(int (*fn)(pid_t pid, void *arg), void *arg);

/* The value of the hex digit @c (either case), or -1. */
static inline int xip_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}
/*
 * Parse hex digits (an even number, no prefix) into @out of @max bytes:
 * the length, or -EINVAL.
 */
int xip_hex_decode(const char *hex, uint8_t *out, size_t max);
/* @len bytes as lower-case hex into @buf (2 * @len + 1 bytes). */
void xip_hex_encode(const uint8_t *in, size_t len, char *buf);
/* The same in upper case (the exec marker's %XX escapes). */
void xip_hex_encode_upper(const uint8_t *in, size_t len, char *buf);

/* ------------------------------------------------------------------ */
/* The policy file (policy.c, xiptool.conf(5))                        */
/* ------------------------------------------------------------------ */

/* What root's attach admits, what root's exec runs programs from. */
enum xip_policy_level {
	XIP_POLICY_ANY = 0,	/* anything: no rule */
	XIP_POLICY_VERIFIED,	/* a verified segment, still sealed */
	XIP_POLICY_SIGNED,	/* verified, and its signer checked */
};

#define XIP_POLICY_FILE "/etc/xiptool/xiptool.conf"
#define XIP_POLICY_PATH_MAX 4096

struct xip_policy_rule {
	enum xip_policy_level level;
	unsigned int line;	/* its line in the file; 0: not given */
};

struct xip_policy {
	char path[XIP_POLICY_PATH_MAX];	/* the file read; "": none */
	struct xip_policy_rule attach, exec;
};

/*
 * Parse the text of a policy file (@len bytes, @p->path naming it in the
 * messages) into @p: lines "key = value", '#' starting a comment, blank
 * lines.  -EINVAL with "PATH line N: reason" for an unknown key or value,
 * a key given twice, a line that is no "key = value".
 */
int xip_policy_parse(struct xip_policy *p, const char *text, size_t len);
/*
 * Read the policy file: $XIPTOOL_CONF when set and not empty (then it
 * must exist), else XIP_POLICY_FILE (none there: no rule, 0).  Refused
 * (-EPERM) when it, or a symbolic link on the way to it, belongs to
 * neither root nor the caller, or when group or others may write it.
 */
int xip_policy_load(struct xip_policy *p);
/* "any", "verified", "signed". */
const char *xip_policy_level_name(enum xip_policy_level level);
/*
 * The effective user ID: in the libc-only front end, the one execve(2)
 * gave (getauxval(AT_EUID), no system call on exec's path; it changes
 * no IDs), else geteuid(2).
 */
uid_t xip_euid(void);
/*
 * Would the kernel execute the file open on @fd, as the caller asks of
 * what it runs when it runs with SECBIT_EXEC_RESTRICT_FILE (Linux 6.14)?
 * 0 when the caller does not run with that bit, or when
 * execveat(@fd, "", ..., AT_EMPTY_PATH | AT_EXECVE_CHECK) says yes (a
 * noexec mount, no execute permission or an LSM say no; the file's
 * format is not judged); else its -errno.  Records no error.
 */
int xip_exec_restrict_check(int fd);

#endif
