#include "log.h"

#include <bpf/libbpf.h>
#include <stdarg.h>
#include <stdio.h>

static enum log_level current_level = LOG_WARN;

void log_set_level(enum log_level level)
{
	current_level = level;
}

enum log_level log_get_level(void)
{
	return current_level;
}

static void log_vmsg(enum log_level level, const char *fmt, va_list ap)
{
	static const char *const names[] = { "error", "warning", "info", "debug" };

	if (level > current_level)
		return;
	fprintf(stderr, "profd %s: ", names[level]);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(level, fmt, ap);
	va_end(ap);
}

/* libbpf messages end in '\n' already and are mostly verifier chatter:
 * only warnings and worse show unless -v. */
static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	enum log_level mapped = level == LIBBPF_WARN ? LOG_WARN : LOG_DEBUG;

	if (mapped > current_level)
		return 0;
	fprintf(stderr, "profd libbpf: ");
	return vfprintf(stderr, fmt, ap);
}

void log_route_libbpf(void)
{
	libbpf_set_print(libbpf_print);
}
