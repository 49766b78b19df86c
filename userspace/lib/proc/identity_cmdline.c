/* identity_cmdline.c: the script or module an interpreter runs, from its
 * argv.  `python3 -m uvicorn app:api` is uvicorn, `python3 -u train.py`
 * is train.py: the interpreter's own options (and their arguments) are
 * skipped as the interpreter would.  argv comes from the process, so it
 * is only read within its len bytes, and a cut last argument is a cut
 * name, never a read past the end. */
#include "identity.h"

#include <stdbool.h>
#include <string.h>

#define ARGS_MAX 64 /* arguments looked at: the script comes early */

struct args {
	const char *v[ARGS_MAX];
	size_t n;
};

static void split_args(const char *buf, size_t len, struct args *a)
{
	size_t i = 0, end;

	a->n = 0;
	while (i < len && a->n < ARGS_MAX) {
		end = i;
		while (end < len && buf[end])
			end++;
		if (end == len)
			break; /* cut: no NUL in bounds, so not a C string here */
		a->v[a->n++] = buf + i;
		i = end + 1;
	}
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

static void set_script(struct workload_id *id, const char *s)
{
	size_t len = strlen(s);

	if (len >= sizeof(id->script))
		len = sizeof(id->script) - 1;
	memcpy(id->script, s, len);
	id->script[len] = '\0';
}

/* python, python3, python3.11, python3.13t, python3.12-dbg. */
static bool is_python(const char *name)
{
	if (strncmp(name, "python", 6))
		return false;
	for (name += 6; *name; name++)
		if (!strchr("0123456789.tdm-bg", *name))
			return false;
	return true;
}

/* Python's short options that take an argument (-X dev, -W ignore, also
 * attached as -Xdev); -c and -m end the options. */
#define PY_ARG_OPTS "XW"

/* One short-option cluster ("-uX", "-m", "-OO"): *i advanced past what it
 * takes.  true when it ends option parsing (-c, -m: script set for -m). */
static bool python_cluster(const struct args *a, size_t *i, struct workload_id *id)
{
	const char *o = a->v[*i] + 1;

	for (; *o; o++) {
		if (*o == 'c')
			return true; /* code on the command line: no script */
		if (*o == 'm' || strchr(PY_ARG_OPTS, *o)) {
			const char *val = o[1] ? o + 1 : (*i + 1 < a->n ? a->v[++*i] : "");

			if (*o != 'm')
				return false;
			set_script(id, val);
			return true;
		}
	}
	return false;
}

static void python_script(const struct args *a, struct workload_id *id)
{
	size_t i;

	for (i = 1; i < a->n; i++) {
		const char *s = a->v[i];

		if (!strcmp(s, "--")) {
			if (i + 1 < a->n)
				set_script(id, base_name(a->v[i + 1]));
			return;
		}
		if (!strcmp(s, "--check-hash-based-pycs")) {
			i++; /* the one long option with an argument */
			continue;
		}
		if (!strcmp(s, "-") || s[0] != '-') {
			if (strcmp(s, "-"))
				set_script(id, base_name(s));
			return;
		}
		if (s[1] != '-' && python_cluster(a, &i, id))
			return;
	}
}

static bool in_list(const char *s, const char *const *list)
{
	for (; *list; list++)
		if (!strcmp(s, *list))
			return true;
	return false;
}

/* Interpreters with plainer options: the first argument that is not an
 * option (nor an option's argument) is the script; some options mean
 * there is none (code on the command line). */
struct interp {
	const char *name;
	const char *const *with_arg;
	const char *const *no_script;
};

static const char *const node_arg[] = { "-r", "--require", "--import", "--loader", NULL };
static const char *const node_none[] = { "-e", "--eval", "-p", "--print", NULL };
static const char *const ruby_arg[] = { "-I", "-r", "-C", "-E", NULL };
static const char *const ruby_none[] = { "-e", NULL };
static const char *const java_arg[] = { "-cp", "-classpath", "--class-path", "-p",
					 "--module-path", NULL };

static const struct interp interps[] = {
	{ "node", node_arg, node_none },
	{ "nodejs", node_arg, node_none },
	{ "ruby", ruby_arg, ruby_none },
	{ "java", java_arg, NULL },
};

static void plain_script(const struct interp *in, const struct args *a, struct workload_id *id)
{
	static const char *const none[] = { NULL };
	size_t i;

	for (i = 1; i < a->n; i++) {
		const char *s = a->v[i];

		if (in_list(s, in->no_script ? in->no_script : none))
			return;
		if ((!strcmp(s, "-jar") || !strcmp(s, "-m")) && i + 1 < a->n) {
			set_script(id, base_name(a->v[i + 1])); /* java's jar or module */
			return;
		}
		if (in_list(s, in->with_arg)) {
			i++;
			continue;
		}
		if (s[0] != '-') {
			set_script(id, base_name(s));
			return;
		}
	}
}

void identity_parse_cmdline(const char *argv, size_t len, struct workload_id *id)
{
	struct args a;
	const char *prog;
	size_t i;

	id->script[0] = '\0';
	split_args(argv, len, &a);
	if (!a.n)
		return;
	prog = base_name(a.v[0]);
	if (is_python(prog)) {
		python_script(&a, id);
		return;
	}
	for (i = 0; i < sizeof(interps) / sizeof(interps[0]); i++)
		if (!strcmp(prog, interps[i].name))
			plain_script(&interps[i], &a, id);
}
