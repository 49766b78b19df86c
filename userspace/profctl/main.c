/* profctl: ask profd for profiles and render them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"

/* Option groups more than one command takes. */
#define PROFILE_OPTS OPT_TYPE, OPT_BY_THREAD, OPT_BY_TASK, OPT_PYTHON_ONLY, OPT_SUBPROCESSES
#define WORKLOAD_OPTS OPT_SERVICE, OPT_UNIT, OPT_CONTAINER, OPT_CGROUP
#define SVG_OPTS OPT_TITLE_T, OPT_SUBTITLE, OPT_WIDTH, OPT_MIN_WIDTH

static const enum cli_opt_id no_opts[] = { OPT_END };
static const enum cli_opt_id list_opt_ids[] = { OPT_ALL, OPT_SINCE, OPT_TYPE, OPT_END };
static const enum cli_opt_id dump_opt_ids[] = {
	OPT_PID, OPT_ALL, OPT_COMM, OPT_EXE, WORKLOAD_OPTS, OPT_JOB, OPT_SINCE, OPT_UNTIL,
	PROFILE_OPTS, OPT_FORMAT, OPT_OUTPUT, OPT_TITLE, OPT_INVERTED, OPT_FLAME, OPT_END
};
static const enum cli_opt_id record_opt_ids[] = {
	OPT_PID, WORKLOAD_OPTS, OPT_JOB, OPT_DURATION, PROFILE_OPTS, OPT_FORMAT, OPT_OUTPUT,
	OPT_TITLE, OPT_END
};
static const enum cli_opt_id top_opt_ids[] = {
	OPT_PID, OPT_ALL, WORKLOAD_OPTS, OPT_JOB, OPT_INTERVAL, OPT_ONCE, OPT_PYTHON_ONLY,
	OPT_ROWS, OPT_TYPE, OPT_END
};
static const enum cli_opt_id render_opt_ids[] = {
	OPT_INPUT, OPT_FORMAT, OPT_OUTPUT, OPT_RATE, OPT_INVERTED, OPT_FLAME, SVG_OPTS, OPT_END
};
static const enum cli_opt_id diff_opt_ids[] = {
	OPT_PID, OPT_BEFORE, OPT_AFTER, OPT_OUTPUT, OPT_ABSOLUTE, OPT_QUIET, SVG_OPTS, OPT_END
};
static const enum cli_opt_id stacks_opt_ids[] = { OPT_PID, OPT_ASYNC, OPT_LOCALS, OPT_END };
static const enum cli_opt_id jobs_opt_ids[] = { OPT_EXPLAIN, OPT_SINCE, OPT_UNTIL, OPT_END };

/* Every command.  Unsaid: no operands, options anywhere, --json honoured. */
static const struct command commands[] = {
	{ .name = "list", .usage = list_usage, .opts = list_opt_ids, .run = cmd_list,
	  .overview = "  list [--all | --since DUR] [-t TYPE]\n"
		      "                            running processes by CPU samples (--all: the\n"
		      "                            exited too; -t: a type's weights in its unit)\n" },
	{ .name = "jobs", .usage = jobs_usage, .opts = jobs_opt_ids, .run = cmd_jobs,
	  .overview = "  jobs [--explain ID [--since DUR]]\n"
		      "                            distributed jobs (torchrun, mpirun, srun): ranks,\n"
		      "                            time in collectives, the straggler named\n" },
	{ .name = "stats", .usage = stats_usage, .opts = no_opts, .run = cmd_stats,
	  .overview = "  stats                     profd's counters: samples, drops, memory, CPU\n" },
	{ .name = "dump", .usage = dump_usage, .opts = dump_opt_ids, .run = cmd_dump,
	  .overview = "  dump (--pid N | --comm NAME | --exe PATH | --service NAME | --all)\n"
		      "       [--format FMT] [-o FILE]\n"
		      "                            a profile; FMT: folded, svg, pprof, speedscope,\n"
		      "                            pstats, json; --since/--until for a time window\n" },
	{ .name = "record", .usage = record_usage, .opts = record_opt_ids, .run = cmd_record,
	  .max_operands = -1, .options_first = true, /* record [options] -- CMD ARGS */
	  .overview = "  record --pid N --duration 30s -o out.svg\n"
		      "                            record from now for a while, then write the file\n" },
	{ .name = "top", .usage = top_usage, .opts = top_opt_ids, .run = cmd_top,
	  .overview = "  top [--pid N | --service NAME]\n"
		      "                            live view of the hottest functions\n" },
	{ .name = "render", .usage = render_usage, .opts = render_opt_ids, .run = cmd_render,
	  .max_operands = 1, /* the input, as -i gives it */
	  .no_json = "it only writes the rendered profile (--format json writes profd's JSON)",
	  .overview = "  render -i FILE.folded [--format FMT] [-o FILE]\n"
		      "                            render a saved folded profile offline\n" },
	{ .name = "diff", .usage = diff_usage, .opts = diff_opt_ids, .run = cmd_diff,
	  .max_operands = -1, /* BEFORE AFTER, checked by diff */
	  .overview = "  diff BEFORE.folded AFTER.folded [-o OUT.svg]\n"
		      "  diff --pid N --before 10m..5m --after 5m.. [-o OUT.svg]\n"
		      "                            differential flamegraph (red grew, blue shrank)\n" },
	{ .name = "stacks", .usage = stacks_usage, .opts = stacks_opt_ids, .run = cmd_stacks,
	  .overview = "  stacks --pid N [--json]   every thread's current stack, state and wait\n" },
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *out)
{
	size_t i;

	fputs("usage: profctl [--socket PATH] [--json] COMMAND [ARGS]\n\ncommands:\n", out);
	for (i = 0; i < NCOMMANDS; i++)
		fputs(commands[i].overview, out);
	fprintf(out,
		"\n"
		"  -s, --socket PATH         profd's socket (default %s, or $PROFD_SOCKET)\n"
		"  -j, --json                machine-readable output and errors (also after\n"
		"                            COMMAND); render refuses it\n"
		"  -h, --help                this help; COMMAND --help for a command's\n",
		PROFCTL_DEFAULT_SOCKET);
}

/* What comes before the command, parsed as a command's options are. */
static const enum cli_opt_id global_opts[] = { OPT_SOCKET, OPT_END };
static const struct command global = { .usage = usage, .opts = global_opts,
				       .max_operands = -1, .options_first = true };

int main(int argc, char **argv)
{
	struct ctl ctl = { .socket_path = getenv("PROFD_SOCKET") };
	struct cli_args a = { 0 };
	size_t i;
	int rc;

	if (!ctl.socket_path || !*ctl.socket_path)
		ctl.socket_path = PROFCTL_DEFAULT_SOCKET;
	rc = cli_parse(&global, &ctl, argc, argv, &a);
	if (rc)
		return rc < 0 ? 0 : rc;
	if (!a.noperands) {
		usage(stderr);
		return 2;
	}
	for (i = 0; i < NCOMMANDS; i++)
		if (!strcmp(a.operands[0], commands[i].name))
			return cli_run(&commands[i], &ctl, a.noperands, a.operands);
	client_error(&ctl, "unknown command '%s' (try --help)", a.operands[0]);
	return 2;
}
