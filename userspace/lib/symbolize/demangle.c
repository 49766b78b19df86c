#include "demangle.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* From libstdc++ (C linkage); the result is malloc'd. */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

static uint64_t refused;

uint64_t demangle_refused(void)
{
	return __atomic_load_n(&refused, __ATOMIC_RELAXED);
}

/* S_, S<seq>_, T_, T<seq>_: the references whose expansion can repeat
 * earlier parts of the name. */
static unsigned back_refs(const char *s)
{
	unsigned n = 0;

	for (; *s; s++) {
		const char *p = s + 1;

		if (*s != 'S' && *s != 'T')
			continue;
		while ((*p >= '0' && *p <= '9') || (*p >= 'A' && *p <= 'Z'))
			p++;
		n += *p == '_';
	}
	return n;
}

static bool work_bounded(const char *sym, size_t len)
{
	unsigned r = back_refs(sym);

	return r < 32 && ((uint64_t)len << r) <= DEMANGLE_MAX_WORK;
}

char *demangle(const char *sym)
{
	int status = -1;
	size_t len;
	char *out;

	if (!sym || strncmp(sym, "_Z", 2))
		return NULL;
	len = strnlen(sym, DEMANGLE_MAX_INPUT + 1);
	if (len > DEMANGLE_MAX_INPUT || !work_bounded(sym, len)) {
		__atomic_fetch_add(&refused, 1, __ATOMIC_RELAXED);
		return NULL;
	}
	out = __cxa_demangle(sym, NULL, NULL, &status);
	if (status != 0)
		return NULL;
	if (strnlen(out, DEMANGLE_MAX_OUTPUT + 1) > DEMANGLE_MAX_OUTPUT) {
		__atomic_fetch_add(&refused, 1, __ATOMIC_RELAXED);
		free(out);
		return NULL;
	}
	return out;
}
