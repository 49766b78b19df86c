#include "demangle.h"

#include <stddef.h>
#include <string.h>

/* Longer names are left alone: the demangler's work grows with input
 * that comes from files we do not trust. */
#define DEMANGLE_MAX_INPUT 4096

/* From libstdc++ (C linkage); the result is malloc'd. */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

char *demangle(const char *sym)
{
	int status = -1;
	char *out;

	if (!sym || strncmp(sym, "_Z", 2) || strnlen(sym, DEMANGLE_MAX_INPUT + 1) > DEMANGLE_MAX_INPUT)
		return NULL;
	out = __cxa_demangle(sym, NULL, NULL, &status);
	return status == 0 ? out : NULL;
}
