// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * xiptool: global options, the subcommand table and dispatch.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"

struct command {
	const char *name;
	int (*fn)(int argc, const char **argv);
	const char *summary;
};

static const struct command commands[] = {
#define XIP_COMMAND(ident, name, summary) { name, cmd_##ident, summary },
#include "commands.h"
#undef XIP_COMMAND
};

#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static const struct command *find_command(const char *name)
{
	for (size_t i = 0; i < N_COMMANDS; i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

static void print_help(FILE *out)
{
	fputs("Usage: xiptool [OPTION...] COMMAND [ARG...]\n"
	      "Build, check and use execute-in-place (XIP) ext2 images and memory segments.\n"
	      "\n"
	      "Commands:\n", out);
	for (size_t i = 0; i < N_COMMANDS; i++)
		fprintf(out, "  %-13s %s\n", commands[i].name,
			commands[i].summary);
	fprintf(out, "  %-13s %s\n", "help", "show help for xiptool or a command");
	fputs("\n"
	      "Options:\n"
	      "  -v, --verbose     say more about what is done\n"
	      "  -q, --quiet       print errors only\n"
	      "  -V, --version     print the version and exit\n"
	      "  -h, --help        show this help and exit\n"
	      "\n"
	      "An IMAGE is an image file, a block or DAX device, or @NAME for an\n"
	      "attached segment.  'xiptool help COMMAND' shows a command's options.\n"
	      "\n"
	      "Exit status: 0 success, 1 problems found (verify, align-check),\n"
	      "2 usage error, 3 runtime failure.\n", out);
}

static int run_command(const struct command *c, int argc, const char **argv)
{
	cmd_name = c->name;
	return c->fn(argc, argv);
}

static int cmd_help(int argc, const char **argv)
{
	const struct command *c;
	const char *hargv[] = { NULL, "--help", NULL };

	if (argc < 2) {
		print_help(stdout);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "help")) {
		print_help(stdout);
		return EXIT_OK;
	}
	c = find_command(argv[1]);
	if (!c) {
		fprintf(stderr, "xiptool: '%s' is not an xiptool command\n"
			"Try 'xiptool --help' for more information.\n", argv[1]);
		return EXIT_USAGE;
	}
	hargv[0] = c->name;
	return run_command(c, 2, hargv);
}

static int run(int argc, const char **argv)
{
	int help = 0, version = 0, rc, n = 0;
	const struct command *c;
	const char **rest;
	poptContext pc;
	const struct poptOption options[] = {
		{ "verbose", 'v', POPT_ARG_NONE, &opt_verbose, 0, NULL, NULL },
		{ "quiet", 'q', POPT_ARG_NONE, &opt_quiet, 0, NULL, NULL },
		{ "version", 'V', POPT_ARG_NONE, &version, 0, NULL, NULL },
		{ "help", 'h', POPT_ARG_NONE, &help, 0, NULL, NULL },
		POPT_TABLEEND
	};

	pc = poptGetContext("xiptool", argc, argv, options,
			    POPT_CONTEXT_POSIXMEHARDER);
	while ((rc = poptGetNextOpt(pc)) > 0)
		;
	if (rc < -1) {
		fprintf(stderr, "xiptool: %s: %s\n"
			"Try 'xiptool --help' for more information.\n",
			poptBadOption(pc, POPT_BADOPTION_NOALIAS),
			poptStrerror(rc));
		poptFreeContext(pc);
		return EXIT_USAGE;
	}
	if (version) {
		printf("xiptool %s\n", PACKAGE_VERSION);
		poptFreeContext(pc);
		return EXIT_OK;
	}
	rest = poptGetArgs(pc);
	while (rest && rest[n])
		n++;
	if (help || n == 0) {
		print_help(help ? stdout : stderr);
		poptFreeContext(pc);
		return help ? EXIT_OK : EXIT_USAGE;
	}
	if (opt_quiet)
		opt_verbose = 0;
	if (!strcmp(rest[0], "help")) {
		rc = cmd_help(n, rest);
	} else if ((c = find_command(rest[0]))) {
		rc = run_command(c, n, rest);
	} else {
		fprintf(stderr, "xiptool: '%s' is not an xiptool command\n"
			"Try 'xiptool --help' for more information.\n", rest[0]);
		rc = EXIT_USAGE;
	}
	poptFreeContext(pc);
	return rc;
}

int main(int argc, const char **argv)
{
	cmd_std_fds();
	atexit(cmd_close_stdout);
	return run(argc, argv);
}
