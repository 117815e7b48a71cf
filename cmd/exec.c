// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * xiptool exec: run an ELF program mapped straight from an image.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>

#include "cmd.h"

extern char **environ;

bool cmd_exec_fresh;
unsigned int cmd_exec_std_opened;

#ifdef XIP_FRONT_ALLOC
#define FRONT_OWN_MEMORY front_alloc_own_only
#else
#define FRONT_OWN_MEMORY NULL
#endif

static const char exec_usage[] = "[OPTION...] IMAGE PATH [ARG...]";

/*
 * 127 when the program, its interpreter or the image is not there, else
 * 126.
 */
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

	/*
	 * like env(1): what keeps the program from starting is 126 or 127,
	 * never a status the program itself could return (the image too:
	 * 127 when it is not there, 126 when it cannot be read)
	 */
	ret = xip_image_open_read(spec, 0, &img);
	if (ret)
		return exec_exit(ret);
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
 * The options, parsed here with getopt_long(3) rather than popt so that
 * the front end links nothing but libc (glibc's or musl's); the messages,
 * --help and --usage are those of the other commands (popt's), byte for
 * byte.  Options end at the first argument (IMAGE) or at "--" ("+").
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

enum exec_opt { OPT_INTERP_FROM = 256, OPT_USAGE, OPT_HELP_LONG };

static const struct option exec_opts[] = {
	{ "argv0", required_argument, NULL, 'a' },
	{ "env", required_argument, NULL, 'e' },
	{ "clear-env", no_argument, NULL, 'i' },
	{ "interp-from", required_argument, NULL, OPT_INTERP_FROM },
	{ "help", no_argument, NULL, OPT_HELP_LONG },
	{ "usage", no_argument, NULL, OPT_USAGE },
	{ NULL, 0, NULL, 0 },
};

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

/*
 * The long option "--NAME[=VALUE]" names exactly (popt takes no
 * abbreviations, getopt_long does): its entry, or NULL.
 */
static const struct option *long_exact(const char *given)
{
	const char *name = given + 2, *eq = strchr(name, '=');
	size_t len = eq ? (size_t)(eq - name) : strlen(name);

	for (const struct option *o = exec_opts; o->name; o++)
		if (len && strlen(o->name) == len &&
		    !strncmp(o->name, name, len))
			return o;
	return NULL;
}

/* Why getopt_long refused the word @given ('?' or ':' in @c). */
static int refused(int c, const char *given)
{
	const struct option *o = NULL;
	bool is_long = given[0] == '-' && given[1] == '-';

	if (is_long) {
		o = long_exact(given);
		if (!o)		/* an abbreviation is no name */
			return opt_error(given, "unknown option");
	}
	if (c == ':')
		return opt_error(given, "missing argument");
	if (o && o->has_arg == no_argument && strchr(given, '='))
		return opt_error(given, "option does not take an argument");
	return opt_error(given, "unknown option");
}

static int parse_exec_args(int argc, const char **argv, struct exec_args *a)
{
	char *const *args = (char *const *)argv;
	int c, idx;

	a->sets = calloc((size_t)argc + 1, sizeof(*a->sets));
	if (!a->sets) {
		msg_error("out of memory");
		return EXIT_CANNOT_EXEC;
	}
	opterr = 0;
	optind = 0;		/* a fresh start, in glibc and musl alike */
	for (;;) {
		/* the word the next option is read from */
		const char *word = argv[optind ? optind : 1];

		optopt = 0;
		idx = -1;
		c = getopt_long(argc, args, "+:a:e:i?", exec_opts, &idx);
		if (c == -1)
			break;
		/* '?' is both -? and getopt's "unknown": optopt tells */
		if (c == ':' || (c == '?' && (optopt || word[1] == '-')))
			return refused(c, word);
		if (idx >= 0 && long_exact(word) != &exec_opts[idx])
			return opt_error(word, "unknown option");
		switch (c) {
		case 'a':
			a->argv0 = optarg;
			break;
		case 'e':
			a->sets[a->nsets++] = optarg;
			break;
		case 'i':
			a->clear_env = true;
			break;
		case OPT_INTERP_FROM:
			a->interp_from = optarg;
			break;
		case '?':
		case OPT_HELP_LONG:
			fputs(exec_help, stdout);
			exit(EXIT_OK);
		case OPT_USAGE:
			fputs(exec_usage_text, stdout);
			exit(EXIT_OK);
		}
	}
	a->first = optind;
	if (argc - optind < 2)
		return cmd_usage_error("missing argument (usage: xiptool %s %s)",
				       cmd_name, exec_usage);
	return EXIT_OK;
}

int cmd_exec(int argc, const char **argv)
{
	struct xip_exec_opts opts = { .fresh = cmd_exec_fresh,
				      .std_opened = cmd_exec_std_opened,
				      .own_memory_only = FRONT_OWN_MEMORY };
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
		rc = EXIT_CANNOT_EXEC;
		goto out;
	}
	memcpy(pargv, &argv[a.first + 1], (size_t)n * sizeof(*pargv));
	opts.path = argv[a.first + 1];
	if (a.argv0)
		pargv[0] = a.argv0;
	env = make_env(a.sets, a.clear_env);
	if (!env) {
		msg_error("out of memory");
		rc = EXIT_CANNOT_EXEC;
		goto out;
	}
	rc = run(argv[a.first], &opts, pargv, env);
out:
	free(env);
	free(pargv);
	free(a.sets);
	return rc;
}
