/* commands.h: profctl subcommands.  Each takes the arguments from the
 * command name on (argv[0] is the command) and returns an exit code:
 * 0 ok, 1 error, 2 usage. */
#ifndef PROFCTL_COMMANDS_H
#define PROFCTL_COMMANDS_H

#include "client.h"

int cmd_list(const struct ctl *ctl, int argc, char **argv);
int cmd_stats(const struct ctl *ctl, int argc, char **argv);
int cmd_dump(const struct ctl *ctl, int argc, char **argv);
int cmd_record(const struct ctl *ctl, int argc, char **argv);
int cmd_top(const struct ctl *ctl, int argc, char **argv);
int cmd_render(int argc, char **argv);
/* profctl diff BEFORE.folded AFTER.folded: differential flamegraph. */
int cmd_diff(const struct ctl *ctl, int argc, char **argv);
/* profctl stacks --pid N: every thread's current stack. */
int cmd_stacks(const struct ctl *ctl, int argc, char **argv);

#endif
