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
bool cmd_exec_own_stack;

#ifdef XIP_FRONT_ALLOC
#define FRONT_OWN_MEMORY front_alloc_own_only
#else
#define FRONT_OWN_MEMORY NULL
#endif

static const char exec_usage[] = "[OPTION...] IMAGE PATH [ARG...]";

/* cmd_exec_again: the marker followed and the name we were started as */
static const struct xip_exec_marker *again;
static const char *again_argv0;

/*
 * 127 when the program, its interpreter or the image is not there, else
 * 126.
 */
static int exec_exit(int err)
{
	const char *m = xip_errmsg();

	if (again)
		msg_error("started as '%s' to run %s of %s again: %s",
			  again_argv0, again->path, again->image,
			  m && *m ? m : strerror(-err));
	else
		msg_error("%s", m && *m ? m : strerror(-err));
	return err == -ENOENT || err == -ENOTDIR ? EXIT_NOT_FOUND :
						   EXIT_CANNOT_EXEC;
}

static size_t name_len(const char *s)
{
	const char *eq = strchr(s, '=');

	return eq ? (size_t)(eq - s) : strlen(s);
}

/* Set NAME=VALUE @set in @env (@k entries): the new count. */
static size_t env_set(const char **env, size_t k, const char *set)
{
	size_t len = name_len(set), i;

	for (i = 0; i < k; i++)
		if (!strncmp(env[i], set, len) &&
		    (env[i][len] == '=' || !env[i][len]))
			break;
	env[i] = set;
	return i == k ? k + 1 : k;
}

/*
 * The environment: the current one (unless cleared) with -e applied,
 * then the marker (XIPTOOL_EXEC=...), which no -e overrides.
 */
static const char **make_env(const char **sets, bool clear,
			     const char *marker)
{
	size_t n = 0, k = 0, nsets = 0;
	const char **env;

	while (!clear && environ[n])
		n++;
	while (sets && sets[nsets])
		nsets++;
	env = calloc(n + nsets + 2, sizeof(*env));
	if (!env)
		return NULL;
	for (size_t i = 0; i < n; i++)
		env[k++] = environ[i];
	for (size_t s = 0; s < nsets; s++)
		k = env_set(env, k, sets[s]);
	env_set(env, k, marker);
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

/* What the program's environment is made of (cmd_exec); NULL: ours. */
struct env_args {
	const char **sets;
	bool clear;
};

/*
 * The options of a run from this front end: a fresh front end's @argv
 * and environ are still execve's own.
 */
static struct xip_exec_opts exec_opts_of(const char **argv)
{
	return (struct xip_exec_opts){
		.fresh = cmd_exec_fresh,
		.std_opened = cmd_exec_std_opened,
		.own_memory_only = FRONT_OWN_MEMORY,
		.own_stack = cmd_exec_own_stack,
		.initial_argv = argv,
		.initial_envp = (const char *const *)environ,
	};
}

/*
 * Root's exec runs programs only from what the policy file's exec rule
 * admits (xiptool.conf(5)): 0, or the exit status of a refusal (126, the
 * program cannot be started), said in one line.  Other users are not
 * bound: they could run a loader of their own.
 */
static int policy_check(const char *spec, struct xip_image *img)
{
	struct xip_policy *p;
	int ret;

	if (xip_euid() != 0)
		return EXIT_OK;
	p = malloc(sizeof(*p));
	ret = p ? xip_policy_load(p) : xip_error(-ENOMEM, "out of memory");
	if (ret) {
		msg_error("%s", xip_errmsg());
		free(p);
		return EXIT_CANNOT_EXEC;
	}
	ret = xip_registry_admits(xip_image_seg(img), p->exec.level);
	if (ret)
		msg_error("%s: refused by %s line %u (exec = %s): %s", spec,
			  p->path, p->exec.line,
			  xip_policy_level_name(p->exec.level), xip_errmsg());
	free(p);
	return ret ? EXIT_CANNOT_EXEC : EXIT_OK;
}

/*
 * Under SECBIT_EXEC_RESTRICT_FILE the caller asks its interpreters to run
 * only what the kernel would execute: the file the program is mapped from
 * (the image, or the segment file) is asked of the kernel as execve(2)
 * would open it (AT_EXECVE_CHECK: a noexec mount, no execute permission,
 * an LSM's no), its format aside.  0, or 126 said in one line.
 */
static int kernel_check(const char *spec, struct xip_image *img)
{
	int ret = xip_exec_restrict_check(xip_image_seg(img)->fd);

	if (!ret)
		return EXIT_OK;
	msg_error("%s: the kernel would not execute it (AT_EXECVE_CHECK under SECBIT_EXEC_RESTRICT_FILE): %s",
		  spec, strerror(-ret));
	return EXIT_CANNOT_EXEC;
}

/*
 * Open the image @spec, prepare @opts->path and run it with @pargv and
 * the environment @e says (with the marker that names this run), or
 * ours unchanged when @e is NULL (a run again: it holds the marker).
 */
static int run(const char *spec, struct xip_exec_opts *opts,
	       const char **pargv, const struct env_args *e)
{
	const struct xip_exec_info *info;
	const char **env = (const char **)environ;
	char *marker = NULL;
	struct xip_image *img;
	struct xip_exec *ex;
	int ret;

	/*
	 * like env(1): what keeps the program from starting is 126 or 127,
	 * never a status the program itself could return (the image too:
	 * 127 when it is not there, 126 when it cannot be read)
	 */
	ret = xip_image_open_read(spec, XIP_IMG_COPY | XIP_IMG_DEFER_FS, &img);
	if (ret)
		return exec_exit(ret);
	ret = policy_check(spec, img);
	if (!ret)
		ret = kernel_check(spec, img);
	if (ret) {
		xip_image_close(img);
		return ret;
	}
	ret = xip_exec_prepare(img, opts, &ex);
	if (ret) {
		xip_image_close(img);
		return exec_exit(ret);
	}
	if (e) {
		ret = xip_exec_marker_format(spec, xip_image_seg(img)->fd,
					     opts->path,
					     opts->interp_from, &marker);
		env = ret ? NULL : make_env(e->sets, e->clear, marker);
		if (!ret && !env)
			ret = xip_error(-ENOMEM, "out of memory");
		if (ret)
			goto fail;
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
fail:
	ret = exec_exit(ret);
	if (e)
		free(env);
	free(marker);
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
	"      --argv0=NAME                      pass NAME as argv[0] (busybox applets)\n"
	"  -e, --env NAME=VALUE                  set NAME to VALUE in the program's\n"
	"                                        environment (repeatable)\n"
	"  -i, --clear-env                       start from an empty environment\n"
	"      --interp-from=image|host|auto     take the ELF interpreter from the\n"
	"                                        image or the host (default auto: the\n"
	"                                        image when it holds it)\n"
	"\n"
	"Help options:\n"
	"  -h, --help                            Show this help message\n"
	"      --usage                           Display brief usage message\n";

static const char exec_usage_text[] =
	"Usage: xiptool exec [-ih] [--argv0=NAME] [-e|--env=NAME=VALUE]\n"
	"        [-i|--clear-env] [--interp-from=image|host|auto] [-h|--help]\n"
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
	/* no option at all (IMAGE first): where getopt would stop, unasked */
	optind = 1;
	if (argc > 1 && argv[1][0] != '-')
		goto done;
	opterr = 0;
	optind = 0;		/* a fresh start, in glibc and musl alike */
	for (;;) {
		/* the word the next option is read from */
		const char *word = argv[optind ? optind : 1];

		optopt = 0;
		idx = -1;
		c = getopt_long(argc, args, "+:e:ih?", exec_opts, &idx);
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
		case 'h':
		case '?':
		case OPT_HELP_LONG:
			fputs(exec_help, stdout);
			exit(EXIT_OK);
		case OPT_USAGE:
			fputs(exec_usage_text, stdout);
			exit(EXIT_OK);
		}
	}
done:
	a->first = optind;
	if (argc - optind < 2)
		return cmd_usage_error("missing argument (usage: xiptool %s %s)",
				       cmd_name, exec_usage);
	return EXIT_OK;
}

int cmd_exec(int argc, const char **argv)
{
	struct xip_exec_opts opts = exec_opts_of(argv);
	struct exec_args a = { 0 };
	const char **pargv = NULL;
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
	rc = run(argv[a.first], &opts, pargv,
		 &(struct env_args){ a.sets, a.clear_env });
out:
	free(pargv);
	free(a.sets);
	return rc;
}

/*
 * The front end executed again under another name (@argv[0]) by a
 * program `xiptool exec` started, the marker @value in its environment:
 * run that program again from the same image, as the kernel runs a
 * program's own file again for its /proc/self/exe, with these arguments
 * and this environment.  The marker grants nothing: the image and the
 * program are opened with our own rights, as `xiptool exec` would.
 */
int cmd_exec_again(const char *value, const char **argv)
{
	struct xip_exec_opts opts = exec_opts_of(argv);
	struct xip_exec_marker *m = malloc(sizeof(*m));
	int rc;

	if (!m) {
		msg_error("out of memory");
		return EXIT_CANNOT_EXEC;
	}
	/* warnings were the first run's to give */
	opt_quiet = 1;
	if (xip_exec_marker_parse(value, m)) {
		msg_error("started as '%s': %s", argv[0] ? argv[0] : "",
			  xip_errmsg());
		free(m);
		return EXIT_CANNOT_EXEC;
	}
	opts.path = m->path;
	opts.interp_from = m->interp_from;
	again = m;
	again_argv0 = argv[0] ? argv[0] : "";
	rc = run(m->image, &opts, argv, NULL);
	again = NULL;
	free(m);
	return rc;
}
