// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Messages, exit codes and option parsing shared by all subcommands (and
 * by the front end, so nothing here may need libsmartcols: see table.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"

int opt_verbose;
int opt_quiet;
const char *cmd_name;

static void vmsg(const char *kind, const char *fmt, va_list ap)
{
	fflush(stdout);
	fprintf(stderr, "xiptool%s%s: %s", cmd_name ? " " : "",
		cmd_name ? cmd_name : "", kind);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void msg_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("", fmt, ap);
	va_end(ap);
}

void msg_warn(const char *fmt, ...)
{
	va_list ap;

	if (opt_quiet)
		return;
	va_start(ap, fmt);
	vmsg("warning: ", fmt, ap);
	va_end(ap);
}

void msg_verbose(const char *fmt, ...)
{
	va_list ap;

	if (!opt_verbose)
		return;
	va_start(ap, fmt);
	vmsg("", fmt, ap);
	va_end(ap);
}

int exit_code_for(int err)
{
	(void)err;
	return EXIT_RUNTIME;
}

int msg_lib_error(int err)
{
	const char *m = xip_errmsg();

	if (m && *m)
		msg_error("%s", m);
	else
		msg_error("%s", strerror(-err));
	return exit_code_for(err);
}

int msg_path_error(const char *path, int err)
{
	const char *m = xip_errmsg();
	size_t n = strlen(path);

	if (!m || !*m)
		msg_error("%s: %s", path, strerror(-err));
	else if (!strncmp(m, path, n) && m[n] == ':')
		msg_error("%s", m);
	else
		msg_error("%s: %s", path, m);
	return exit_code_for(err);
}

int cmd_usage_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("", fmt, ap);
	va_end(ap);
	fprintf(stderr, "Try 'xiptool %s%s--help' for more information.\n",
		cmd_name ? cmd_name : "", cmd_name ? " " : "");
	return EXIT_USAGE;
}

int cmd_parse_size(const char *what, const char *text, uint64_t *bytes)
{
	if (xip_parse_size(text, bytes))
		return cmd_usage_error("%s: %s", what, xip_errmsg());
	return EXIT_OK;
}

int cmd_parse_page_size(const char *text, unsigned int *page_size)
{
	uint64_t ps;
	int rc = cmd_parse_size("--page-size", text, &ps);

	if (rc)
		return rc;
	if (ps < 1024 || ps > 65536 || (ps & (ps - 1)))
		return cmd_usage_error("--page-size: %s: not a power of two between 1K and 64K",
				       text);
	*page_size = (unsigned int)ps;
	return EXIT_OK;
}

static int parse_args(int argc, const char **argv,
		      const struct poptOption *options, const char *usage,
		      int min_args, int max_args, struct cmd_args *args,
		      unsigned int popt_flags)
{
	int rc, n = 0;

	memset(args, 0, sizeof(*args));
	snprintf(args->prog, sizeof(args->prog), "xiptool %s", cmd_name);
	/* popt names the program in --help after argv[0] */
	args->argv0 = calloc((size_t)argc + 1, sizeof(*argv));
	if (!args->argv0)
		return EXIT_RUNTIME;
	memcpy(args->argv0, argv, (size_t)argc * sizeof(*argv));
	args->argv0[0] = args->prog;
	args->pc = poptGetContext(args->prog, argc, args->argv0, options,
				  popt_flags);
	poptSetOtherOptionHelp(args->pc, usage);
	while ((rc = poptGetNextOpt(args->pc)) > 0)
		;
	if (rc < -1) {
		rc = cmd_usage_error("%s: %s",
				     poptBadOption(args->pc, POPT_BADOPTION_NOALIAS),
				     poptStrerror(rc));
		cmd_args_free(args);
		return rc;
	}
	args->argv = poptGetArgs(args->pc);
	while (args->argv && args->argv[n])
		n++;
	args->argc = n;
	if (n < min_args || (max_args >= 0 && n > max_args)) {
		rc = cmd_usage_error("%s (usage: xiptool %s %s)",
				     n < min_args ? "missing argument" :
				     "too many arguments", cmd_name, usage);
		cmd_args_free(args);
		return rc;
	}
	return EXIT_OK;
}

int cmd_parse(int argc, const char **argv, const struct poptOption *options,
	      const char *usage, int min_args, int max_args,
	      struct cmd_args *args)
{
	return parse_args(argc, argv, options, usage, min_args, max_args, args,
			  0);
}

int cmd_parse_posix(int argc, const char **argv,
		    const struct poptOption *options, const char *usage,
		    int min_args, int max_args, struct cmd_args *args)
{
	return parse_args(argc, argv, options, usage, min_args, max_args, args,
			  POPT_CONTEXT_POSIXMEHARDER);
}

void cmd_args_free(struct cmd_args *args)
{
	if (args->pc)
		poptFreeContext(args->pc);
	free(args->argv0);
	args->argv0 = NULL;
	args->pc = NULL;
	args->argv = NULL;
}
