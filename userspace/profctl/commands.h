/* commands.h: profctl's commands, listed with their options in main.c's
 * table.  Each runs with its parsed options and returns an exit code:
 * 0 ok, 1 error, 2 usage (errors reported through client_error).  Each
 * usage function prints the command's --help. */
#ifndef PROFCTL_COMMANDS_H
#define PROFCTL_COMMANDS_H

#include <stdio.h>

#include "cli.h"

int cmd_list(const struct ctl *ctl, struct cli_args *a);
void list_usage(FILE *out);
int cmd_stats(const struct ctl *ctl, struct cli_args *a);
void stats_usage(FILE *out);
int cmd_dump(const struct ctl *ctl, struct cli_args *a);
void dump_usage(FILE *out);
int cmd_record(const struct ctl *ctl, struct cli_args *a);
void record_usage(FILE *out);
int cmd_top(const struct ctl *ctl, struct cli_args *a);
void top_usage(FILE *out);
/* profctl render FILE.folded: a saved profile in any format, offline. */
int cmd_render(const struct ctl *ctl, struct cli_args *a);
void render_usage(FILE *out);
/* profctl diff BEFORE.folded AFTER.folded: differential flamegraph. */
int cmd_diff(const struct ctl *ctl, struct cli_args *a);
void diff_usage(FILE *out);
/* profctl jobs [--explain ID]: distributed jobs, their ranks, the straggler. */
int cmd_jobs(const struct ctl *ctl, struct cli_args *a);
void jobs_usage(FILE *out);
/* profctl stacks --pid N: every thread's current stack. */
int cmd_stacks(const struct ctl *ctl, struct cli_args *a);
void stacks_usage(FILE *out);

#endif
