#include "cli.h"

#include <assert.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "duration.h"
#include "render_svg.h"

/* getopt_long's value for an option without a letter: past any char. */
#define LONG_ONLY 256

struct cli_opt {
	const char *name;
	char letter;   /* 0: long only */
	bool has_arg;
	uint32_t flag; /* PROTO_DUMP_* it sets, for the pure switches */
};

/* Every option, once.  Letters differ between commands only where two
 * commands always spelt them so (-t: --type for dump, record and top,
 * --title for render and diff; -a, -i). */
static const struct cli_opt specs[OPT_END] = {
	[OPT_PID] = { "pid", 'p', true, 0 },
	[OPT_ALL] = { "all", 'a', false, PROTO_DUMP_ALL },
	[OPT_COMM] = { "comm", 'c', true, 0 },
	[OPT_EXE] = { "exe", 'e', true, 0 },
	[OPT_TYPE] = { "type", 't', true, 0 },
	[OPT_SINCE] = { "since", 0, true, 0 },
	[OPT_UNTIL] = { "until", 0, true, 0 },
	[OPT_BY_THREAD] = { "by-thread", 0, false, PROTO_DUMP_BY_THREAD },
	[OPT_BY_TASK] = { "by-task", 0, false, PROTO_DUMP_BY_TASK },
	[OPT_PYTHON_ONLY] = { "python-only", 0, false, PROTO_DUMP_PYTHON_ONLY },
	[OPT_SUBPROCESSES] = { "subprocesses", 0, false, PROTO_DUMP_SUBPROCESSES },
	[OPT_SERVICE] = { "service", 0, true, 0 },
	[OPT_UNIT] = { "unit", 0, true, 0 },
	[OPT_CONTAINER] = { "container", 0, true, 0 },
	[OPT_CGROUP] = { "cgroup", 0, true, 0 },
	[OPT_FORMAT] = { "format", 'f', true, 0 },
	[OPT_OUTPUT] = { "output", 'o', true, 0 },
	[OPT_INPUT] = { "input", 'i', true, 0 },
	[OPT_TITLE] = { "title", 0, true, 0 },
	[OPT_TITLE_T] = { "title", 't', true, 0 },
	[OPT_SUBTITLE] = { "subtitle", 0, true, 0 },
	[OPT_INVERTED] = { "inverted", 0, false, 0 },
	[OPT_FLAME] = { "flame", 0, false, 0 },
	[OPT_WIDTH] = { "width", 'w', true, 0 },
	[OPT_MIN_WIDTH] = { "min-width", 0, true, 0 },
	[OPT_RATE] = { "rate", 'r', true, 0 },
	[OPT_DURATION] = { "duration", 'd', true, 0 },
	[OPT_INTERVAL] = { "interval", 'i', true, 0 },
	[OPT_ONCE] = { "once", 0, false, 0 },
	[OPT_ROWS] = { "rows", 'n', true, 0 },
	[OPT_BEFORE] = { "before", 0, true, 0 },
	[OPT_AFTER] = { "after", 0, true, 0 },
	[OPT_ABSOLUTE] = { "absolute", 0, false, 0 },
	[OPT_QUIET] = { "quiet", 'q', false, 0 },
	[OPT_ASYNC] = { "async", 'a', false, 0 },
	[OPT_LOCALS] = { "locals", 'l', false, 0 },
	[OPT_SOCKET] = { "socket", 's', true, 0 },
	[OPT_JOB] = { "job", 0, true, 0 },
	[OPT_EXPLAIN] = { "explain", 0, true, 0 },
	[OPT_JSON] = { "json", 'j', false, 0 },
	[OPT_HELP] = { "help", 'h', false, 0 },
};

int cli_usage_error(const struct ctl *ctl, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	client_error(ctl, "%s (try 'profctl%s%s --help')", msg, ctl->cmd ? " " : "",
		     ctl->cmd ? ctl->cmd : "");
	return 2;
}

bool cli_selects(const struct proto_dump_req *r)
{
	return r->npids || r->comm || r->exe || r->service || r->unit || r->container ||
	       r->cgroup;
}

void cli_selection(const struct proto_dump_req *r, char *out, size_t size)
{
	const char *names[] = { "comm", "exe", "service", "unit", "container", "cgroup" };
	const char *vals[] = { r->comm, r->exe, r->service, r->unit, r->container, r->cgroup };
	size_t i, n = r->npids;
	const char *name = NULL, *val = NULL;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (vals[i] && !n++) {
			name = names[i];
			val = vals[i];
		}
	if (n == 1 && r->npids)
		snprintf(out, size, "pid %u", r->pids[0]);
	else if (n == 1)
		snprintf(out, size, "%s %s", name, val);
	else
		snprintf(out, size, "%s", n ? "selected processes" : "whole machine");
}

static int add_pid(const struct ctl *ctl, struct proto_dump_req *r, const char *arg)
{
	unsigned long v;
	uint32_t *p;
	char *end;

	errno = 0;
	v = strtoul(arg, &end, 10);
	if (errno || end == arg || *end || *arg == '-' || v == 0 || v > 0x3fffffff)
		return cli_usage_error(ctl, "--pid: '%s' is not a process id", arg);
	p = realloc(r->pids, (r->npids + 1) * sizeof(*p));
	if (!p) {
		client_error(ctl, "out of memory");
		return 1;
	}
	r->pids = p;
	r->pids[r->npids++] = (uint32_t)v;
	return 0;
}

/* --since/--until DUR: that long ago, as a CLOCK_REALTIME timestamp. */
static int ago(const struct ctl *ctl, const char *opt, const char *arg, uint64_t *out)
{
	uint64_t d;

	if (duration_parse(arg, &d))
		return cli_usage_error(ctl, "--%s: '%s' is not a duration (e.g. 30s, 5m)", opt, arg);
	*out = clock_realtime_ns() - d;
	return 0;
}

static int parse_number(const char *s, double lo, double hi, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= lo && v <= hi))
		return -EINVAL;
	*out = v;
	return 0;
}

/* A whole number in lo..hi. */
static int parse_uint(const char *s, double lo, double hi, uint32_t *out)
{
	double v;

	if (parse_number(s, lo, hi, &v) || v != (uint32_t)v)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

/* The options stored as given.  argv's strings outlive the command. */
static void set_plain(struct ctl *ctl, struct cli_args *a, enum cli_opt_id id, char *arg)
{
	switch (id) {
	case OPT_COMM: a->req.comm = arg; break;
	case OPT_EXE: a->req.exe = arg; break;
	case OPT_SERVICE: a->req.service = arg; break;
	case OPT_UNIT: a->req.unit = arg; break;
	case OPT_CONTAINER: a->req.container = arg; break;
	case OPT_CGROUP: a->req.cgroup = arg; break;
	case OPT_TYPE: a->req.type = arg; break;
	case OPT_FORMAT: a->format = arg; break;
	case OPT_OUTPUT: a->output = arg; break;
	case OPT_INPUT: a->input = arg; break;
	case OPT_TITLE: case OPT_TITLE_T: a->ro.title = arg; break;
	case OPT_SUBTITLE: a->ro.subtitle = arg; break;
	case OPT_INVERTED: a->ro.inverted = true; break;
	case OPT_FLAME: a->ro.flame = true; break;
	case OPT_ONCE: a->once = true; break;
	case OPT_ROWS: a->rows = strtoul(arg, NULL, 10); break;
	case OPT_BEFORE: a->before = arg; break;
	case OPT_AFTER: a->after = arg; break;
	case OPT_ABSOLUTE: a->absolute = true; break;
	case OPT_QUIET: a->quiet = true; break;
	case OPT_ASYNC: a->async = true; break;
	case OPT_LOCALS: a->locals = true; break;
	case OPT_SOCKET: ctl->socket_path = arg; break;
	case OPT_JSON: ctl->json = true; break;
	default: a->req.flags |= specs[id].flag; break;
	}
}

/* Store one option's value, checking those that can be wrong: 0, or
 * non-zero after the error was reported. */
static int set_option(struct ctl *ctl, struct cli_args *a, enum cli_opt_id id, char *arg)
{
	double px;

	switch (id) {
	case OPT_PID: return add_pid(ctl, &a->req, arg);
	case OPT_SINCE: return ago(ctl, "since", arg, &a->req.since_ns);
	case OPT_UNTIL: return ago(ctl, "until", arg, &a->req.until_ns);
	case OPT_WIDTH:
		if (parse_uint(arg, SVG_MIN_WIDTH, SVG_MAX_WIDTH, &a->ro.width))
			return cli_usage_error(ctl, "bad --width '%s'", arg);
		return 0;
	case OPT_MIN_WIDTH:
		if (parse_number(arg, 0, 1000, &px))
			return cli_usage_error(ctl, "bad --min-width '%s' (0..1000 px)", arg);
		a->ro.min_frame_px = px > 0 ? px : -1; /* 0: draw everything */
		return 0;
	case OPT_RATE:
		if (parse_uint(arg, 1, 1000000, &a->rate_hz))
			return cli_usage_error(ctl, "bad --rate '%s' (1..1000000 Hz)", arg);
		return 0;
	case OPT_DURATION:
		if (duration_parse(arg, &a->duration_ns) || !a->duration_ns)
			return cli_usage_error(ctl, "--duration: '%s' is not a duration", arg);
		return 0;
	case OPT_INTERVAL:
		if (duration_parse(arg, &a->interval_ns) || a->interval_ns < 100000000ull)
			return cli_usage_error(ctl, "--interval: at least 100ms");
		return 0;
	case OPT_JOB:
		/* record --job -- CMD: getopt took the "--" as the value. */
		if (ctl->cmd && !strcmp(ctl->cmd, "record") && arg[0] == '-') {
			if (strcmp(arg, "--"))
				return cli_usage_error(ctl, "--job: a job id, or last before -- CMD "
							    "(record [options] --job -- CMD)");
			a->job_of_cmd = true;
			return 0;
		}
		/* fall through */
	case OPT_EXPLAIN:
		if (parse_uint(arg, 1, 0x3fffffff, id == OPT_JOB ? &a->job : &a->explain))
			return cli_usage_error(ctl, "--%s: '%s' is not a job id (profctl jobs lists "
						    "them)", specs[id].name, arg);
		return 0;
	default:
		set_plain(ctl, a, id, arg);
		return 0;
	}
}

/* getopt_long's tables, filled an option at a time. */
struct getopt_tables {
	enum cli_opt_id ids[OPT_END]; /* the option of longs[i] */
	struct option longs[OPT_END + 1];
	char shorts[2 * OPT_END + 3];
	size_t n, nshort;
};

static void add_option(struct getopt_tables *t, enum cli_opt_id id)
{
	const struct cli_opt *s = &specs[id];

	/* One letter, one option: a clash in the table is a bug. */
	assert(!s->letter || !memchr(t->shorts, s->letter, t->nshort));
	t->ids[t->n] = id;
	t->longs[t->n] = (struct option){ s->name, s->has_arg ? required_argument : no_argument,
					  NULL, s->letter ? s->letter : LONG_ONLY + (int)t->n };
	t->n++;
	if (s->letter)
		t->nshort += (size_t)sprintf(t->shorts + t->nshort, "%c%s", s->letter,
					     s->has_arg ? ":" : "");
}

/* c's options, then --json and --help. */
static void getopt_tables(const struct command *c, struct getopt_tables *t)
{
	const enum cli_opt_id *id;

	memset(t, 0, sizeof(*t));
	/* '+': CMD's options are CMD's; ':': a missing value is told apart. */
	t->nshort = (size_t)sprintf(t->shorts, "%s:", c->options_first ? "+" : "");
	for (id = c->opts; *id != OPT_END; id++)
		add_option(t, *id);
	add_option(t, OPT_JSON);
	add_option(t, OPT_HELP);
}

/* Which option getopt_long's answer v is. */
static enum cli_opt_id option_of(const struct getopt_tables *t, int v)
{
	size_t i;

	if (v >= LONG_ONLY)
		return t->ids[v - LONG_ONLY];
	for (i = 0; i < t->n && specs[t->ids[i]].letter != v; i++)
		;
	return i < t->n ? t->ids[i] : OPT_END;
}

static int bad_option(const struct ctl *ctl, int v, char **argv)
{
	const char *word = argv[optind - 1];

	if (v == ':')
		return cli_usage_error(ctl, "option '%s' needs a value", word);
	if (optopt > 0 && optopt < LONG_ONLY)
		return cli_usage_error(ctl, "unknown option '-%c'", optopt);
	return cli_usage_error(ctl, "unknown option '%s'", word);
}

int cli_parse(const struct command *c, struct ctl *ctl, int argc, char **argv, struct cli_args *a)
{
	struct getopt_tables t;
	enum cli_opt_id id;
	int v;

	getopt_tables(c, &t);
	optind = 0; /* glibc: a full reset, for the command after the global options */
	opterr = 0; /* the errors are said through client_error */
	while ((v = getopt_long(argc, argv, t.shorts, t.longs, NULL)) != -1) {
		if (v == '?' || v == ':')
			return bad_option(ctl, v, argv);
		id = option_of(&t, v);
		if (id == OPT_HELP) {
			c->usage(stdout);
			return -1;
		}
		if (set_option(ctl, a, id, optarg))
			return 2;
	}
	a->operands = argv + optind;
	a->noperands = argc - optind;
	if (c->max_operands >= 0 && a->noperands > c->max_operands)
		return cli_usage_error(ctl, "unexpected argument '%s'", a->operands[c->max_operands]);
	return 0;
}

int cli_run(const struct command *c, struct ctl *ctl, int argc, char **argv)
{
	struct cli_args a;
	int rc;

	memset(&a, 0, sizeof(a));
	ctl->cmd = c->name;
	rc = cli_parse(c, ctl, argc, argv, &a);
	if (!rc && ctl->json && c->no_json) {
		client_error(ctl, "--json means nothing to %s: %s", c->name, c->no_json);
		rc = 2;
	}
	if (!rc)
		rc = c->run(ctl, &a);
	free(a.req.pids);
	return rc < 0 ? 0 : rc;
}
