#include "duration.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
	const char *suffix;
	uint64_t ns;
} units[] = {
	{ "ns", 1ull }, { "us", 1000ull }, { "ms", 1000000ull }, { "s", 1000000000ull },
	{ "m", 60000000000ull }, { "h", 3600000000000ull }, { "d", 86400000000000ull },
};

int duration_parse(const char *s, uint64_t *ns)
{
	unsigned long long v;
	char *end;
	size_t i;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	if (*end == '\0') {
		end = "s";
	}
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].suffix) == 0) {
			if (v > UINT64_MAX / units[i].ns)
				return -EINVAL;
			*ns = v * units[i].ns;
			return 0;
		}
	}
	return -EINVAL;
}

char *duration_format(uint64_t ns, char *buf, size_t size)
{
	size_t i = sizeof(units) / sizeof(units[0]);

	while (i-- > 0) {
		if (ns % units[i].ns == 0 || i == 0) {
			snprintf(buf, size, "%llu%s", (unsigned long long)(ns / units[i].ns),
				 units[i].suffix);
			return buf;
		}
	}
	return buf;
}
