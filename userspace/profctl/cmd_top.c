/* profctl top: the hottest functions right now (py-spy top's habit).  On
 * a terminal it refreshes every interval with what ran during the last
 * one; otherwise it prints the whole profile once. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "duration.h"
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

static void usage(FILE *out)
{
	fprintf(out, "usage: profctl top [--pid PID ... | --all] [--interval 1s] [--once] [-n ROWS]\n"
		     "  -p, --pid PID        one process (repeatable); default: the whole machine\n"
		     "  -i, --interval DUR   refresh period (default 1s)\n"
		     "      --once           print once and exit (the default when not on a terminal)\n"
		     "      --python-only    Python frames only\n"
		     "  -n, --rows N         rows to show (default: fits the terminal)\n"
		     "  -t, --type TYPE      cpu (default), memory (MiB), off-cpu, wall, gil, ...\n");
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

static void print_table(const struct stackset *ss, const char *what, size_t rows, bool tty)
{
	struct fn_stat *st;
	size_t n = 0, i;
	double total = ss->total ? (double)ss->total : 1;
	double secs;
	const char *cu = column_unit(ss, &secs);
	char own[16], tot[16];
	struct stackset *split = NULL;

	/* A signed profile (mmap): mapped and unmapped bytes as two roots. */
	if (stackset_signed(ss)) {
		split = stackset_split_signs(ss);
		if (!split)
			return;
		ss = split;
		total = ss->total ? (double)ss->total : 1;
	}
	st = function_stats(ss, &n);
	if (!st) {
		stackset_free(split);
		return;
	}
	if (tty)
		fputs("\033[H\033[2J", stdout); /* home, clear */
	printf("profd top: %s, %llu %s%s\n\n", what, (unsigned long long)ss->total,
	       ss->unit && ss->unit[0] ? ss->unit : "samples",
	       tty ? " in the last interval (Ctrl-C quits)" : "");
	snprintf(own, sizeof(own), "OWN(%s)", cu);
	snprintf(tot, sizeof(tot), "TOTAL(%s)", cu);
	printf("%7s %7s %9s %9s  %s\n", "OWN%", "TOTAL%", own, tot, "FUNCTION");
	for (i = 0; i < n && i < rows; i++) {
		if (!st[i].total)
			break;
		printf("%6.1f%% %6.1f%% %9.2f %9.2f  %s\n", 100.0 * st[i].own / total,
		       100.0 * st[i].total / total, st[i].own * secs, st[i].total * secs,
		       ss->frames[st[i].frame].name);
	}
	fflush(stdout);
	free(st);
	stackset_free(split);
}

static size_t terminal_rows(void)
{
	struct winsize ws;

	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 6)
		return ws.ws_row - 5;
	return 20;
}

enum { OPT_ONCE = 256, OPT_PY_ONLY };

static int parse(int argc, char **argv, struct proto_dump_req *r, uint64_t *interval, bool *once,
		 size_t *rows)
{
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "all", no_argument, NULL, 'a' },
		{ "interval", required_argument, NULL, 'i' },
		{ "once", no_argument, NULL, OPT_ONCE },
		{ "python-only", no_argument, NULL, OPT_PY_ONLY },
		{ "rows", required_argument, NULL, 'n' },
		{ "type", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;

	while ((opt = getopt_long(argc, argv, "p:ai:n:t:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'p':
			if (client_add_pid("top", optarg, &r->pids, &r->npids))
				return 2;
			break;
		case 'a': break;
		case 'i':
			if (duration_parse(optarg, interval) || *interval < 100000000ull) {
				fprintf(stderr, "profctl top: --interval: at least 100ms\n");
				return 2;
			}
			break;
		case OPT_ONCE: *once = true; break;
		case OPT_PY_ONLY: r->flags |= PROTO_DUMP_PYTHON_ONLY; break;
		case 'n': *rows = strtoul(optarg, NULL, 10); break;
		case 't': r->type = optarg; break;
		case 'h': usage(stdout); return 1;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	if (!r->npids)
		r->flags |= PROTO_DUMP_ALL;
	return 0;
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
		print_table(window ? window : cur, what, rows ? rows : terminal_rows(), true);
		stackset_free(window);
		stackset_free(prev);
		prev = cur;
		cur = NULL;
		usleep((useconds_t)(interval / 1000));
	}
	stackset_free(prev);
	return err;
}

int cmd_top(const struct ctl *ctl, int argc, char **argv)
{
	struct proto_dump_req r = { 0 };
	uint64_t interval = 1000000000ull;
	struct stackset *ss = NULL;
	bool once = false;
	size_t rows = 0;
	char what[64];
	int rc = parse(argc, argv, &r, &interval, &once, &rows);

	if (rc) {
		free(r.pids);
		return rc == 1 ? 0 : 2;
	}
	if (r.npids == 1)
		snprintf(what, sizeof(what), "pid %u", r.pids[0]);
	else
		snprintf(what, sizeof(what), "%s", r.npids ? "selected processes" : "whole machine");
	if (once || !isatty(STDOUT_FILENO)) {
		rc = client_dump(ctl, &r, &ss) ? 1 : 0;
		if (!rc)
			print_table(ss, what, rows ? rows : 30, false);
		stackset_free(ss);
	} else {
		rc = live(ctl, &r, interval, rows, what) ? 1 : 0;
	}
	free(r.pids);
	return rc;
}
