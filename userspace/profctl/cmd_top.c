/* profctl top: the hottest functions right now (py-spy top's habit).  On
 * a terminal it refreshes every interval with what ran during the last
 * one; otherwise it prints the whole profile once. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "jobsel.h"
#include "jsonw.h"
#include "protocol.h"
#include "stackset.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

struct fn_stat {
	uint32_t frame;
	uint64_t own, total;
};

void top_usage(FILE *out)
{
	fputs("usage: profctl top [--pid PID ... | --all | --job ID] [--interval 1s] [--once]\n"
	      "                   [-n ROWS]\n"
	      "  -p, --pid PID        one process (repeatable); default: the whole machine\n"
	      "      --service NAME   the processes of a workload; also --unit NAME,\n"
	      "                       --container ID, --cgroup PATH (as in profctl dump)\n"
	      "      --job ID         a distributed job's processes (profctl jobs)\n"
	      "  -i, --interval DUR   refresh period (default 1s)\n"
	      "      --once           print once and exit (the default when not on a terminal)\n"
	      "      --python-only    Python frames only\n"
	      "  -n, --rows N         rows to show (default: fits the terminal)\n"
	      "  -t, --type TYPE      cpu (default), memory (MiB), off-cpu, wall, gil, ...\n"
	      "  -j, --json           the profile so far as JSON, once: each function's own\n"
	      "                       and total weight in the profile's unit\n",
	      out);
}

static int by_own(const void *a, const void *b)
{
	const struct fn_stat *x = a, *y = b;

	if (x->own != y->own)
		return x->own < y->own ? 1 : -1;
	return (x->total < y->total) - (x->total > y->total);
}

/* Own (leaf) and total (anywhere on the stack, once per stack) per frame. */
static struct fn_stat *function_stats(const struct stackset *ss, size_t *n)
{
	struct fn_stat *st = calloc(ss->nframes ? ss->nframes : 1, sizeof(*st));
	uint32_t *seen = calloc(ss->nframes ? ss->nframes : 1, sizeof(*seen));
	size_t i, j;

	if (!st || !seen) {
		free(st);
		free(seen);
		return NULL;
	}
	for (i = 0; i < ss->nframes; i++)
		st[i].frame = (uint32_t)i;
	for (i = 0; i < ss->nstacks; i++) {
		const struct ss_stack *s = &ss->stacks[i];

		for (j = 0; j < s->depth; j++) {
			if (seen[s->frames[j]] == i + 1)
				continue; /* recursion: count once per stack */
			seen[s->frames[j]] = (uint32_t)(i + 1);
			st[s->frames[j]].total += s->count;
		}
		if (s->depth)
			st[s->frames[s->depth - 1]].own += s->count;
	}
	free(seen);
	qsort(st, ss->nframes, sizeof(*st), by_own);
	*n = ss->nframes;
	return st;
}

/* What the OWN and TOTAL columns show a weight as: seconds for samples
 * and ns, MiB for a memory profile, else the count. */
static const char *column_unit(const struct stackset *ss, double *scale)
{
	const char *u = ss->unit && ss->unit[0] ? ss->unit : "samples";

	if (!strcmp(u, "samples")) {
		*scale = ss->rate_hz ? 1.0 / ss->rate_hz : 0;
		return "s";
	}
	if (!strcmp(u, "nanoseconds")) {
		*scale = 1e-9;
		return "s";
	}
	if (!strcmp(u, "bytes")) {
		*scale = 1.0 / (1024.0 * 1024.0);
		return "MiB";
	}
	*scale = 1;
	return "n";
}

/* What top shows: the profile, a signed one (mmap) split into mapped and
 * unmapped bytes as two roots, and its functions, hottest first. */
struct top_view {
	const struct stackset *ss;
	struct stackset *split;
	struct fn_stat *st;
	size_t n;
	const char *what; /* "pid 42", "whole machine" */
};

static int view_init(struct top_view *v, const struct stackset *ss, const char *what)
{
	memset(v, 0, sizeof(*v));
	v->what = what;
	v->ss = ss;
	if (stackset_signed(ss)) {
		v->ss = v->split = stackset_split_signs(ss);
		if (!v->split)
			return -ENOMEM;
	}
	v->st = function_stats(v->ss, &v->n);
	if (!v->st) {
		stackset_free(v->split);
		return -ENOMEM;
	}
	return 0;
}

static void view_free(struct top_view *v)
{
	free(v->st);
	stackset_free(v->split);
}

static const char *unit_of(const struct stackset *ss)
{
	return ss->unit && ss->unit[0] ? ss->unit : "samples";
}

static void print_table(const struct top_view *v, size_t rows, bool tty)
{
	const struct stackset *ss = v->ss;
	double total = ss->total ? (double)ss->total : 1;
	double secs;
	const char *cu = column_unit(ss, &secs);
	char own[16], tot[16];
	size_t i;

	if (tty)
		fputs("\033[H\033[2J", stdout); /* home, clear */
	printf("profd top: %s, %llu %s%s\n\n", v->what, (unsigned long long)ss->total, unit_of(ss),
	       tty ? " in the last interval (Ctrl-C quits)" : "");
	snprintf(own, sizeof(own), "OWN(%s)", cu);
	snprintf(tot, sizeof(tot), "TOTAL(%s)", cu);
	printf("%7s %7s %9s %9s  %s\n", "OWN%", "TOTAL%", own, tot, "FUNCTION");
	for (i = 0; i < v->n && i < rows && v->st[i].total; i++)
		printf("%6.1f%% %6.1f%% %9.2f %9.2f  %s\n", 100.0 * v->st[i].own / total,
		       100.0 * v->st[i].total / total, v->st[i].own * secs, v->st[i].total * secs,
		       ss->frames[v->st[i].frame].name);
	fflush(stdout);
}

/* The snapshot for a script: weights in the profile's own unit, a
 * function a line. */
static int print_json(const struct ctl *ctl, const struct top_view *v, size_t rows)
{
	const struct stackset *ss = v->ss;
	struct jsonw w;
	size_t i;

	jsonw_init(&w, 2);
	jsonw_object(&w);
	jsonw_key_str(&w, "target", v->what);
	jsonw_key_str(&w, "unit", unit_of(ss));
	jsonw_key_u64(&w, "rate_hz", ss->rate_hz);
	jsonw_key_u64(&w, "total", ss->total);
	jsonw_key(&w, "functions");
	jsonw_array(&w);
	for (i = 0; i < v->n && i < rows && v->st[i].total; i++) {
		jsonw_object(&w);
		jsonw_key_str(&w, "name", ss->frames[v->st[i].frame].name);
		jsonw_key_u64(&w, "own", v->st[i].own);
		jsonw_key_u64(&w, "total", v->st[i].total);
		jsonw_end(&w);
	}
	jsonw_end(&w);
	jsonw_end(&w);
	return client_print_json(ctl, &w);
}

/* One profile, as the table or under --json as JSON: an exit code. */
static int show(const struct ctl *ctl, const struct stackset *ss, const char *what, size_t rows,
		bool tty)
{
	struct top_view v;
	int rc = 0;

	if (view_init(&v, ss, what)) {
		client_error(ctl, "out of memory");
		return 1;
	}
	if (ctl->json)
		rc = print_json(ctl, &v, rows);
	else
		print_table(&v, rows, tty);
	view_free(&v);
	return rc;
}

static size_t terminal_rows(void)
{
	struct winsize ws;

	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 6)
		return ws.ws_row - 5;
	return 20;
}

static int live(const struct ctl *ctl, const struct proto_dump_req *r, uint64_t interval,
		size_t rows, const char *what)
{
	struct stackset *prev = NULL, *cur = NULL, *window;
	int err = 0;

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	while (!stop) {
		err = client_dump(ctl, r, &cur);
		if (err)
			break;
		window = prev ? stackset_subtract(cur, prev) : NULL;
		show(ctl, window ? window : cur, what, rows ? rows : terminal_rows(), true);
		stackset_free(window);
		stackset_free(prev);
		prev = cur;
		cur = NULL;
		usleep((useconds_t)(interval / 1000));
	}
	stackset_free(prev);
	return err;
}

int cmd_top(const struct ctl *ctl, struct cli_args *a)
{
	struct proto_dump_req *r = &a->req;
	struct stackset *ss = NULL;
	struct jobsel s = { 0 };
	char what[64];
	int rc;

	if (a->job) {
		rc = jobsel_select(ctl, a, &s);
		jobsel_free(&s); /* the pids are in the request */
		if (rc)
			return rc;
		r->flags &= ~PROTO_DUMP_SUBPROCESSES; /* members only: no root frames to name */
		snprintf(what, sizeof(what), "job %u", a->job);
	} else {
		/* No --pid nor selector (--all, or nothing): the whole machine. */
		if (cli_selects(r))
			r->flags &= ~PROTO_DUMP_ALL;
		else
			r->flags |= PROTO_DUMP_ALL;
		cli_selection(r, what, sizeof(what));
	}
	/* A live view only for a person at a terminal: JSON is a snapshot. */
	if (a->once || ctl->json || !isatty(STDOUT_FILENO)) {
		rc = client_dump(ctl, r, &ss) ? 1 : 0;
		if (!rc)
			rc = show(ctl, ss, what, a->rows ? a->rows : 30, false);
		stackset_free(ss);
		return rc;
	}
	return live(ctl, r, a->interval_ns ? a->interval_ns : 1000000000ull, a->rows, what) ? 1 : 0;
}
