/* options.h: profd's options: the config file's, then the command line's,
 * into struct daemon_config. */
#ifndef PROFD_OPTIONS_H
#define PROFD_OPTIONS_H

#include "config.h"

struct daemon_config;

/* options.c: one getopt pass over the config file's options, then the
 * command line's; 0 to run, 1 to exit successfully (--help), -1 on a
 * usage error (said). */
int daemon_parse_args(const struct config_argv *ca, struct daemon_config *c);
/* config_find_path and config_to_argv with profd's option table. */
int daemon_find_config(int argc, char **argv, const char **path);
int daemon_config_argv(const char *path, unsigned flags, int argc, char **argv, struct config_argv *out);

#endif
