/* cli: profctl's command line.  Each option is specified once here (its
 * spellings, whether it takes a value, how the value is checked and
 * where it goes) and the command table (main.c) lists, per command, the
 * options it takes, so --pid or --format read the same in every command
 * that has them.  --json and --help are every command's: --json may come
 * before the command or anywhere after it. */
#ifndef PROFCTL_CLI_H
#define PROFCTL_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "client.h"
#include "protocol.h"
#include "render.h"

enum cli_opt_id {
	/* which processes and samples */
	OPT_PID, OPT_ALL, OPT_COMM, OPT_EXE, OPT_TYPE, OPT_SINCE, OPT_UNTIL,
	OPT_BY_THREAD, OPT_BY_TASK, OPT_PYTHON_ONLY, OPT_SUBPROCESSES,
	OPT_SERVICE, OPT_UNIT, OPT_CONTAINER, OPT_CGROUP,
	/* where the output goes and how it looks */
	OPT_FORMAT, OPT_OUTPUT, OPT_INPUT, OPT_TITLE, OPT_TITLE_T, OPT_SUBTITLE,
	OPT_INVERTED, OPT_FLAME, OPT_WIDTH, OPT_MIN_WIDTH, OPT_RATE,
	/* one command's own */
	OPT_DURATION, OPT_INTERVAL, OPT_ONCE, OPT_ROWS, OPT_BEFORE, OPT_AFTER,
	OPT_ABSOLUTE, OPT_QUIET, OPT_ASYNC, OPT_LOCALS, OPT_SOCKET, OPT_JOB, OPT_EXPLAIN,
	/* every command's */
	OPT_JSON, OPT_HELP,
	OPT_END /* ends a command's list */
};

/* Every option's value as the command line gave it (checked, not yet
 * defaulted: zero or NULL when not given). */
struct cli_args {
	/* --pid (repeatable), --comm, --exe, the workload's --service,
	 * --unit, --container, --cgroup, --type, --since, --until, and
	 * --all, --by-thread, --by-task, --python-only, --subprocesses as
	 * PROTO_DUMP_* flags: the request dump, record, top and diff send. */
	struct proto_dump_req req;
	const char *format, *output, *input;
	/* --title, --subtitle, --width, --min-width, --inverted, --flame */
	struct render_opts ro;
	uint32_t rate_hz;
	uint64_t duration_ns, interval_ns;
	size_t rows;
	const char *before, *after; /* diff's files or windows */
	bool once, absolute, quiet, async, locals;
	uint32_t job, explain; /* --job ID, --explain ID: a job's id (its launcher's pid) */
	bool job_of_cmd;       /* record --job -- CMD: the job CMD launches */
	char **operands; /* what follows the options */
	int noperands;
};

struct command {
	const char *name;
	const char *overview; /* its lines under "commands:" in profctl --help */
	void (*usage)(FILE *out);
	const enum cli_opt_id *opts; /* ends with OPT_END; --json, --help implied */
	int max_operands;            /* -1: any number */
	bool options_first;          /* options end at the first operand (record -- CMD) */
	/* Why --json means nothing to it (refused), or NULL: it honours it. */
	const char *no_json;
	/* 0 ok, 1 error, 2 usage; errors already reported. */
	int (*run)(const struct ctl *ctl, struct cli_args *a);
};

/* Parse c's options from argv (argv[0] is the command) into ctl and a.
 * 0 to go on, -1 after --help, 2 after a usage error (reported). */
int cli_parse(const struct command *c, struct ctl *ctl, int argc, char **argv,
	      struct cli_args *a);
/* Parse, check --json against the command, run: its exit code. */
int cli_run(const struct command *c, struct ctl *ctl, int argc, char **argv);
/* Whether the request names processes (--pid, --comm, --exe or a
 * workload selector), --all aside. */
bool cli_selects(const struct proto_dump_req *r);
/* "pid 42", "service myapp", "2 selectors": what a request selects, for
 * titles and progress lines. */
void cli_selection(const struct proto_dump_req *r, char *out, size_t size);
/* Report a usage error with a pointer to the command's help; returns 2. */
int cli_usage_error(const struct ctl *ctl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
