// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * xiptool exec: run an ELF program mapped straight from an image.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"

extern char **environ;

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

	ret = xip_image_open(spec, 0, &img);
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

int cmd_exec(int argc, const char **argv)
{
	char *argv0 = NULL, *interp_from = NULL;
	struct xip_exec_opts opts = { 0 };
	const char **sets = NULL, **env = NULL, **pargv;
	struct cmd_args args;
	int clear_env = 0, rc;
	const struct poptOption options[] = {
		{ "argv0", 'a', POPT_ARG_STRING, &argv0, 0,
		  "pass NAME as argv[0] (busybox applets)", "NAME" },
		{ "env", 'e', POPT_ARG_ARGV, &sets, 0,
		  "set NAME to VALUE in the program's environment (repeatable)",
		  "NAME=VALUE" },
		{ "clear-env", 'i', POPT_ARG_NONE, &clear_env, 0,
		  "start from an empty environment", NULL },
		{ "interp-from", '\0', POPT_ARG_STRING, &interp_from, 0,
		  "take the ELF interpreter from the image or the host"
		  " (default auto: the image when it holds it)",
		  "image|host|auto" },
		CMD_HELP_OPTIONS,
		POPT_TABLEEND
	};

	rc = cmd_parse_posix(argc, argv, options, exec_usage, 2, -1, &args);
	if (rc)
		return rc;
	rc = parse_interp_from(interp_from, &opts.interp_from);
	if (!rc)
		rc = check_env_args(sets);
	if (rc)
		goto out;
	opts.path = args.argv[1];
	pargv = &args.argv[1];
	if (argv0)
		pargv[0] = argv0;
	env = make_env(sets, clear_env);
	if (!env) {
		msg_error("out of memory");
		rc = EXIT_RUNTIME;
		goto out;
	}
	rc = run(args.argv[0], &opts, pargv, env);
out:
	free(env);
	free(argv0);
	free(interp_from);
	free(sets);
	cmd_args_free(&args);
	return rc;
}
