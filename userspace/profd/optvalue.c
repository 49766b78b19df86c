#include "optvalue.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "duration.h"

int optvalue_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end || v < min || v > max || *s == '-')
		return -EINVAL;
	*out = v;
	return 0;
}

int optvalue_duration(const char *name, const char *arg, uint64_t *out)
{
	if (duration_parse(arg, out) == 0)
		return 0;
	fprintf(stderr, "profd: --%s: '%s' is not a duration (e.g. 10s, 5m, 24h)\n", name, arg);
	return -EINVAL;
}

int optvalue_number(const char *name, const char *arg, uint64_t min, uint64_t max,
		    uint64_t *out)
{
	if (optvalue_u64(arg, min, max, out) == 0)
		return 0;
	fprintf(stderr, "profd: --%s: '%s' must be a number from %llu to %llu\n", name, arg,
		(unsigned long long)min, (unsigned long long)max);
	return -EINVAL;
}

/* The multiplier of a size suffix ("", "K", "MiB", ...), 0 if none. */
static uint64_t size_unit(const char *u)
{
	static const char units[] = "KMGT";
	const char *k = *u ? strchr(units, toupper((unsigned char)*u)) : NULL;
	uint64_t m = 1;

	if (!*u)
		return 1;
	if (!k || (u[1] && strcasecmp(u + 1, "iB") && strcasecmp(u + 1, "B")))
		return 0;
	for (const char *c = units; c <= k; c++)
		m <<= 10;
	return m;
}

int optvalue_size(const char *name, const char *arg, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	uint64_t unit;
	char *end;

	errno = 0;
	v = strtoull(arg, &end, 10);
	unit = end != arg && *arg != '-' && !errno ? size_unit(end) : 0;
	if (unit && v <= max / unit && v * unit >= min) {
		*out = v * unit;
		return 0;
	}
	fprintf(stderr,
		"profd: --%s: '%s' must be a size from %llu to %llu bytes (a number, or with K, M, "
		"G or T: 64M)\n",
		name, arg, (unsigned long long)min, (unsigned long long)max);
	return -EINVAL;
}

void optvalue_origin(const struct config_argv *ca, int index)
{
	unsigned line = config_argv_line(ca, index);

	if (line)
		fprintf(stderr, "profd: (set at %s:%u)\n", ca->path, line);
}
