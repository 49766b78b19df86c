/* hexnum.c: see hexnum.h. */
#include "hexnum.h"

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

bool hexnum_parse(const char **p, const char *end, uint64_t *v)
{
	const char *start = *p;
	uint64_t x = 0;
	int d;

	for (; *p < end && (d = hex_digit(**p)) >= 0; (*p)++) {
		if (x >> 60)
			return false; /* would overflow 64 bits */
		x = x << 4 | (uint64_t)d;
	}
	*v = x;
	return *p > start;
}
