// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * xiptool exec: run an ELF program mapped straight from an image.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>

#include "cmd.h"

extern char **environ;

bool cmd_exec_fresh;
unsigned int cmd_exec_std_opened;

static const char exec_usage[] = "[OPTION...] IMAGE PATH [ARG...]";

/* 127 when the program (or its interpreter) is not there, else 126. */
static int exec_exit(int err)
{
	const char *m = xip_errmsg();

	msg_error("%s", m && *m ? m : strerror(-err));
	return err == -ENOENT || err == -ENOTDIR ? EXIT_NOT_FOUND :
						   EXIT_CANNOT_EXEC;
}

static size_t name_len(const char *s)
{
	const char *eq = strchr(s, '=');

	return eq ? (size_t)(eq - s) : strlen(s);
}

/* The environment: the current one (unless cleared) with -e applied. */
static const char **make_env(const char **sets, bool clear)
{
	size_t n = 0, k = 0, nsets = 0;
	const char **env;

	while (!clear && environ[n])
		n++;
	while (sets && sets[nsets])
		nsets++;
	env = calloc(n + nsets + 1, sizeof(*env));
	if (!env)
		return NULL;
	for (size_t i = 0; i < n; i++)
		env[k++] = environ[i];
	for (size_t s = 0; s < nsets; s++) {
		size_t len = name_len(sets[s]), i;

		for (i = 0; i < k; i++)
			if (name_len(env[i]) == len &&
			    !strncmp(env[i], sets[s], len))
				break;
		env[i] = sets[s];
		if (i == k)
			k++;
	}
	return env;
}

static int parse_interp_from(const char *s, enum xip_interp_from *from)
{
	if (!s || !strcmp(s, "auto"))
		*from = XIP_INTERP_AUTO;
	else if (!strcmp(s, "host"))
		*from = XIP_INTERP_HOST;
	else if (!strcmp(s, "image"))
		*from = XIP_INTERP_IMAGE;
	else
		return cmd_usage_error("--interp-from: '%s': expected host,"
				       " image or auto", s);
	return EXIT_OK;
}

static int check_env_args(const char **sets)
{
	for (size_t i = 0; sets && sets[i]; i++)
		if (!strchr(sets[i], '=') || sets[i][0] == '=')
			return cmd_usage_error("--env: '%s': expected"
					       " NAME=VALUE", sets[i]);
	return EXIT_OK;
}

static int run(const char *spec, struct xip_exec_opts *opts,
	       const char **pargv, const char **env)
{
	const struct xip_exec_info *info;
	struct xip_image *img;
	struct xip_exec *ex;
	int ret;

	ret = xip_image_open_read(spec, 0, &img);
	if (ret)
		return msg_lib_error(ret);
	ret = xip_exec_prepare(img, opts, &ex);
	if (ret) {
		xip_image_close(img);
		return exec_exit(ret);
	}
	info = xip_exec_info(ex);
	if (info->setid_ignored)
		msg_warn("%s: set-user-ID/set-group-ID bit ignored (a"
			 " user-space loader cannot change credentials)",
			 opts->path);
	if (info->interp)
		msg_verbose("%s: interpreter %s from the %s", opts->path,
			    info->interp,
			    info->interp_from_image ? "image" : "host");
	fflush(stdout);
	fflush(stderr);
	ret = xip_exec_run(ex, (const char *const *)pargv,
			   (const char *const *)env);
	/* still here: it failed */
	ret = exec_exit(ret);
	xip_exec_free(ex);
	xip_image_close(img);
	return ret;
}

/*
 * The options, parsed here without popt so that the front end links
 * nothing but libc; the messages, --help and --usage are those of the
 * other commands (popt's), byte for byte.  Options end at the first
 * argument (IMAGE) or at "--".
 */
static const char exec_help[] =
	"Usage: xiptool exec [OPTION...] IMAGE PATH [ARG...]\n"
	"  -a, --argv0=NAME                      pass NAME as argv[0] (busybox applets)\n"
	"  -e, --env NAME=VALUE                  set NAME to VALUE in the program's\n"
	"                                        environment (repeatable)\n"
	"  -i, --clear-env                       start from an empty environment\n"
	"      --interp-from=image|host|auto     take the ELF interpreter from the\n"
	"                                        image or the host (default auto: the\n"
	"                                        image when it holds it)\n"
	"\n"
	"Help options:\n"
	"  -?, --help                            Show this help message\n"
	"      --usage                           Display brief usage message\n";

static const char exec_usage_text[] =
	"Usage: xiptool exec [-i?] [-a|--argv0=NAME] [-e|--env=NAME=VALUE]\n"
	"        [-i|--clear-env] [--interp-from=image|host|auto] [-?|--help]\n"
	"        [--usage] [OPTION...] IMAGE PATH [ARG...]\n";

enum exec_opt { OPT_ARGV0, OPT_ENV, OPT_CLEAR_ENV, OPT_INTERP_FROM, OPT_HELP,
		OPT_USAGE };

static const struct {
	const char *name;
	char short_name;
	bool arg;
} exec_opts[] = {
	[OPT_ARGV0] = { "argv0", 'a', true },
	[OPT_ENV] = { "env", 'e', true },
	[OPT_CLEAR_ENV] = { "clear-env", 'i', false },
	[OPT_INTERP_FROM] = { "interp-from", 0, true },
	[OPT_HELP] = { "help", '?', false },
	[OPT_USAGE] = { "usage", 0, false },
};
#define NOPTS (sizeof(exec_opts) / sizeof(exec_opts[0]))

struct exec_args {
	const char *argv0, *interp_from;
	const char **sets;
	size_t nsets;
	bool clear_env;
	int first;		/* index of IMAGE in argv */
};

static int opt_error(const char *given, const char *why)
{
	return cmd_usage_error("%s: %s", given, why);
}

/* Apply option @o with @val; help and usage print and end the process. */
static int apply_opt(struct exec_args *a, enum exec_opt o, const char *val)
{
	switch (o) {
	case OPT_ARGV0:
		a->argv0 = val;
		break;
	case OPT_ENV:
		a->sets[a->nsets++] = val;
		a->sets[a->nsets] = NULL;
		break;
	case OPT_CLEAR_ENV:
		a->clear_env = true;
		break;
	case OPT_INTERP_FROM:
		a->interp_from = val;
		break;
	case OPT_HELP:
		fputs(exec_help, stdout);
		exit(EXIT_OK);
	case OPT_USAGE:
		fputs(exec_usage_text, stdout);
		exit(EXIT_OK);
	}
	return EXIT_OK;
}

static int parse_exec_args(int argc, const char **argv, struct exec_args *a)
{
	int i = 1, rc;

	a->sets = calloc((size_t)argc + 1, sizeof(*a->sets));
	if (!a->sets) {
		msg_error("out of memory");
		return EXIT_RUNTIME;
	}
	for (; i < argc; i++) {
		const char *s = argv[i];
		size_t o;

		if (s[0] != '-' || !s[1])
			break;			/* IMAGE: options end here */
		if (!strcmp(s, "--")) {
			i++;
			break;
		}
		if (s[1] == '-') {
			const char *name = s + 2, *eq = strchr(name, '=');
			size_t len = eq ? (size_t)(eq - name) : strlen(name);

			for (o = 0; o < NOPTS; o++)
				if (strlen(exec_opts[o].name) == len &&
				    !strncmp(exec_opts[o].name, name, len))
					break;
			if (o == NOPTS || !len)
				return opt_error(s, "unknown option");
			if (!exec_opts[o].arg && eq)
				return opt_error(s, "option does not take an argument");
			if (exec_opts[o].arg && !eq) {
				if (i + 1 >= argc)
					return opt_error(s, "missing argument");
				eq = argv[++i] - 1;
			}
			rc = apply_opt(a, (enum exec_opt)o,
				       exec_opts[o].arg ? eq + 1 : NULL);
			if (rc)
				return rc;
			continue;
		}
		/* a bundle of short options: -i?, -ia NAME, -aNAME */
		for (const char *c = s + 1; *c; c++) {
			for (o = 0; o < NOPTS; o++)
				if (exec_opts[o].short_name == *c)
					break;
			if (o == NOPTS)
				return opt_error(s, "unknown option");
			if (!exec_opts[o].arg) {
				apply_opt(a, (enum exec_opt)o, NULL);
				continue;
			}
			if (c[1]) {
				rc = apply_opt(a, (enum exec_opt)o, c + 1);
			} else if (i + 1 < argc) {
				rc = apply_opt(a, (enum exec_opt)o, argv[++i]);
			} else {
				return opt_error(s, "missing argument");
			}
			if (rc)
				return rc;
			break;
		}
	}
	a->first = i;
	if (argc - i < 2)
		return cmd_usage_error("missing argument (usage: xiptool %s %s)",
				       cmd_name, exec_usage);
	return EXIT_OK;
}

int cmd_exec(int argc, const char **argv)
{
	struct xip_exec_opts opts = { .fresh = cmd_exec_fresh,
				      .std_opened = cmd_exec_std_opened };
	struct exec_args a = { 0 };
	const char **env = NULL, **pargv = NULL;
	int rc, n;

	rc = parse_exec_args(argc, argv, &a);
	if (!rc)
		rc = parse_interp_from(a.interp_from, &opts.interp_from);
	if (!rc)
		rc = check_env_args(a.sets);
	if (rc)
		goto out;
	/* the program's arguments: PATH (or --argv0) and the rest */
	n = argc - a.first - 1;
	pargv = calloc((size_t)n + 1, sizeof(*pargv));
	if (!pargv) {
		msg_error("out of memory");
		rc = EXIT_RUNTIME;
		goto out;
	}
	memcpy(pargv, &argv[a.first + 1], (size_t)n * sizeof(*pargv));
	opts.path = argv[a.first + 1];
	if (a.argv0)
		pargv[0] = a.argv0;
	env = make_env(a.sets, a.clear_env);
	if (!env) {
		msg_error("out of memory");
		rc = EXIT_RUNTIME;
		goto out;
	}
	rc = run(argv[a.first], &opts, pargv, env);
out:
	free(env);
	free(pargv);
	free(a.sets);
	return rc;
}
