/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The command layer: option parsing, messages and output.  Exit codes and
 * message formats are defined here and nowhere else.
 */
#ifndef XIPTOOL_CMD_H
#define XIPTOOL_CMD_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#ifndef XIP_LIBC_ONLY
#include <popt.h>
#endif

#include "xip.h"

/* Exit codes, the same for every subcommand. */
enum {
	EXIT_OK = 0,		/* success */
	EXIT_PROBLEMS = 1,	/* the check ran and found problems */
	EXIT_USAGE = 2,		/* usage error */
	EXIT_RUNTIME = 3,	/* I/O, corrupt or unsupported input, permission */
	EXIT_CANNOT_EXEC = 126,	/* exec: found but cannot be executed */
	EXIT_NOT_FOUND = 127,	/* exec: not found */
};

#define XIP_COMMAND(ident, name, summary) \
	int cmd_##ident(int argc, const char **argv);
#include "commands.h"
#undef XIP_COMMAND

/* Global options. */
extern int opt_verbose;
extern int opt_quiet;
extern bool cmd_exec_fresh;	/* exec: xip_exec_opts.fresh (the front end) */
extern unsigned int cmd_exec_std_opened;	/* xip_exec_opts.std_opened */
extern bool cmd_exec_own_stack;	/* xip_exec_opts.own_stack */
/*
 * exec: the front end executed under another name (@argv[0]) by a program
 * `xiptool exec` started, whose marker @value (XIPTOOL_EXEC) says what
 * it runs: run that program again with @argv.  Returns only on failure.
 */
int cmd_exec_again(const char *value, const char **argv);

/* The musl front end's allocator (front_alloc.c): no block of it lies
 * outside the front end's bss (xip_exec_opts.own_memory_only). */
bool front_alloc_own_only(void);

/*
 * The command being run, for messages: "xiptool <cmd>: <object>: <reason>".
 */
extern const char *cmd_name;

void msg_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void msg_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void msg_verbose(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print the library's error record (which names the object) and return
 * the exit code for @err. */
int msg_lib_error(int err);
/*
 * Print the library's error record about file @path: as is when its
 * object (xip_errobj) is @path itself or the command's input or output,
 * else prefixed with @path ("/bin/sh: inode 12: ...").
 */
int msg_path_error(const char *path, int err);
#ifndef XIP_LIBC_ONLY
/*
 * msg_path_error for a @path of image @img (@spec, as given) that did not
 * resolve (-ENOENT, -ENOTDIR, the record saying no more than strerror): "PATH: not found in SPEC",
 * "PATH: directory DIR not found in SPEC" when a directory above it is
 * missing, "PATH: DIR is not a directory in SPEC"; anything else as
 * msg_path_error.
 */
int msg_image_path_error(struct xip_image *img, const char *spec,
			 const char *path, int err);
#endif
/* Exit code for a negative errno from the library. */
int exit_code_for(int err);

/*
 * @s as it may be printed: a name from an image is anybody's bytes.
 * Backslash doubled; \a \b \t \n \v \f \r; any other control byte,
 * byte that is not valid UTF-8, C1 control, line separator or
 * bidirectional override as \xHH per byte.  Printable UTF-8 is kept.  The
 * result stays valid until the fourth next call.  Messages (msg_*) are
 * escaped as a whole: give them names unescaped.
 */
const char *cmd_esc(const char *s);
/*
 * @s for a JSON string through libsmartcols or cmd_json, which escape
 * control characters but pass other bytes as they are: bytes not valid
 * UTF-8, C1 controls, line separators and bidirectional overrides become
 * \xHH text (JSON has no escape for a byte).  NULL stays NULL; the result
 * shares cmd_esc's buffers.
 */
const char *cmd_json_safe(const char *s);

/*
 * At start: descriptors 0, 1 and 2 open, on /dev/null (close-on-exec)
 * when they were closed, so that no file we open takes their number and
 * receives what is meant for stdout or stderr.  Exits with EXIT_RUNTIME
 * when that cannot be done.  Returns the set of those it opened (bit N
 * for descriptor N).
 */
unsigned int cmd_std_fds(void);
/*
 * An atexit handler (popt's --help calls exit): flush stdout and stderr; a
 * failed write to stdout is a runtime failure ("write error: REASON",
 * _exit(EXIT_RUNTIME)) except EPIPE, as util-linux's close_stdout.
 */
void cmd_close_stdout(void);

#ifndef XIP_LIBC_ONLY
/*
 * Option parsing for a subcommand, as git's parse_options(): @options
 * (NULL: none) with --help and --usage added, the leftover arguments in
 * @args, which must number between @min_args and @max_args (-1: no
 * limit).  Exits after the help (0) and on a usage error (EXIT_USAGE):
 * call it before anything needs cleaning up.
 */
struct cmd_args {
	poptContext pc;
	const char **argv;	/* leftover arguments (NULL-terminated) */
	int argc;
	const char **argv0;	/* private: argv with the program name */
	char prog[64];
};
void cmd_parse(int argc, const char **argv, const struct poptOption *options,
	       const char *usage, int min_args, int max_args,
	       struct cmd_args *args);
void cmd_args_free(struct cmd_args *args);

/* --json (-J) of the commands with structured output: "print @what as JSON" */
#define CMD_OPT_JSON(var, what)                                          \
	{ "json", 'J', POPT_ARG_NONE, (var), 0, "print " what " as JSON", \
	  NULL }

/* --page-size (-p) of the checks: "@check for pages of N bytes", parsed by
 * cmd_parse_page_size() */
#define CMD_OPT_PAGE_SIZE(var, check)                                    \
	{ "page-size", 'p', POPT_ARG_STRING, (var), 0,                   \
	  check " for pages of N bytes (default: the host's)", "N" }

/* Progress lines on a TTY, at most ten a second. */
struct cmd_progress {
	struct timespec last;
	bool shown;	/* a line was printed: end it before other output */
};
/* A line is due: @final, or 100 ms since the last one (marks it shown). */
bool cmd_progress_due(struct cmd_progress *p, bool final);
/*
 * A lazy segment still filling: wait for the whole fill (its deadline: no
 * progress for that long), the bytes landed shown on a TTY.  0, or the
 * library's negative errno (its record holds the reason).
 */
int cmd_wait_filled(struct xip_seg *seg);
#endif
/* A usage error: one line, then "Try ..."; returns EXIT_USAGE. */
int cmd_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Parse a size argument (K/M/G/T suffixes); usage error on failure. */
int cmd_parse_size(const char *what, const char *text, uint64_t *bytes);
/* The same for an offset: "invalid offset" on failure. */
int cmd_parse_offset(const char *what, const char *text, uint64_t *bytes);
/*
 * Parse a count (no suffix): decimal digits only, at most @max; usage
 * error on a sign, "0x", any other character or a larger value.  For
 * options taken as strings: popt's own numeric arguments read "010" as
 * octal and "0x10" as hex.
 */
int cmd_parse_count(const char *what, const char *text, uint64_t max,
		    uint64_t *count);
/* Parse --page-size: a power of two from 1K to 64K; usage error otherwise. */
int cmd_parse_page_size(const char *text, unsigned int *page_size);
#ifndef XIP_LIBC_ONLY
/*
 * --creds, --authfile, --tls-verify and --timeout (NULL: not taken) of a
 * command that reaches a registry (mkfs --oci docker://, push, attach
 * docker://): checked (usage errors) and set in @r.
 */
int cmd_registry_opts(const char *creds, const char *authfile,
		      const char *tls_verify, const char *timeout,
		      struct xip_oci_client_opts *r);
/*
 * The root hash of --root-hash HEX or --root-hash-file FILE (hex digits,
 * as mkfs and veritysetup write it; one trailing newline taken), at most
 * @max bytes into @out, its length in @len (0 when neither is given).
 * Both given, or bad hex on the command line: a usage error; a file that
 * cannot be read or holds no hash: a runtime error naming it.
 */
int cmd_root_hash(const char *hex, const char *file, uint8_t *out,
		  size_t max, size_t *len);
#endif

/*
 * Key/value output ("Block size:  4096", or one JSON object through
 * libsmartcols).
 */
struct kv;
struct kv *kv_new(const char *json_name);
/* A JSON table @name of @n columns (name and SCOLS_JSON_* type); NULL. */
struct cmd_json_col {
	const char *name;
	int type;
};
struct libscols_table;
struct libscols_table *cmd_json_table(const char *name,
				      const struct cmd_json_col *cols,
				      size_t n);

/*
 * A JSON document written as it goes, laid out as libsmartcols lays out
 * its tables (three spaces a level, "},{" between an array's objects),
 * for output that is more than one table: an object of members, arrays
 * of objects among them.  Strings pass cmd_json_safe(), then JSON's
 * escapes.  cmd_json_end() says whether stdout took it all (-EIO if not).
 */
#define CMD_JSON_DEPTH 8
struct cmd_json {
	int depth;
	unsigned int count[CMD_JSON_DEPTH];
};
void cmd_json_begin(struct cmd_json *j);
int cmd_json_end(struct cmd_json *j);
void cmd_json_str(struct cmd_json *j, const char *key, const char *val);
/* @val as a number, or null when !@present */
void cmd_json_u64(struct cmd_json *j, const char *key, uint64_t val,
		  bool present);
void cmd_json_bool(struct cmd_json *j, const char *key, bool val);
void cmd_json_array_begin(struct cmd_json *j, const char *key);
void cmd_json_array_end(struct cmd_json *j);
void cmd_json_object_begin(struct cmd_json *j);
void cmd_json_object_end(struct cmd_json *j);

void kv_str(struct kv *kv, const char *label, const char *key, const char *val);
void kv_u64(struct kv *kv, const char *label, const char *key, uint64_t val);
void kv_bool(struct kv *kv, const char *label, const char *key, bool val);
int kv_print(struct kv *kv, bool json);
void kv_free(struct kv *kv);

/*
 * Commands that change an image (cmd/stopsig.c): SIGINT, SIGTERM and
 * SIGHUP stop the library at its next commit; cmd_stop_status() is
 * 128 + the signal once one came, @rc otherwise.
 */
extern volatile sig_atomic_t cmd_stop_signal;
void cmd_catch_stop_signals(void);
/*
 * @handler (or SIG_DFL) for each of @sigs, without SA_RESTART; a signal
 * the parent ignores stays ignored (nohup, background jobs).
 */
void cmd_catch_signals(const int *sigs, size_t n, void (*handler)(int));
int cmd_stop_status(int rc);

#endif
