/* optvalue: checking the values of profd's options (command line and
 * config file alike), each with an error that names the option. */
#ifndef PROFD_OPTVALUE_H
#define PROFD_OPTVALUE_H

#include <stdint.h>

#include "config.h"

/* s as a number in [min, max] (decimal, 0x hex): 0 or -EINVAL, silent. */
int optvalue_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);
/* --name's value as a number in [min, max] / a duration; -EINVAL said. */
int optvalue_number(const char *name, const char *arg, uint64_t min, uint64_t max,
		    uint64_t *out);
int optvalue_duration(const char *name, const char *arg, uint64_t *out);
/* --name's value as a size in bytes in [min, max]: a number, or one with
 * a binary suffix (64M, 64MiB, 1G: K, M, G, T, any case); -EINVAL said. */
int optvalue_size(const char *name, const char *arg, uint64_t min, uint64_t max, uint64_t *out);
/* Says where a rejected value came from when the config file set it. */
void optvalue_origin(const struct config_argv *ca, int index);

#endif
