/* libFuzzer target: the workload parsers.  The input is split at its
 * first 0xff byte: /proc/PID/cgroup text before it, argv bytes after (as
 * a hostile process may make both).  Every field stays a bounded string,
 * a template expands within its buffer, and nothing reads past the input. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "identity.h"

static void check_fields(const struct workload_id *id)
{
	int f;

	for (f = 0; f < WID_NFIELDS; f++)
		CHECK(identity_field(id, f) != NULL);
	CHECK(strlen(id->cgroup) < sizeof(id->cgroup));
	CHECK(strlen(id->container) == 0 || strlen(id->container) == 64);
	CHECK(strlen(id->service) < sizeof(id->service));
	CHECK(strlen(id->script) < sizeof(id->script));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *cut = memchr(data, 0xff, size);
	size_t tlen = cut ? (size_t)(cut - data) : size;
	char *text = malloc(tlen + 1), out[64];
	struct workload_id id;

	if (!text)
		return 0;
	memcpy(text, data, tlen);
	text[tlen] = '\0';
	memset(&id, 0, sizeof(id));
	identity_parse_cgroup(text, &id);
	if (cut)
		identity_parse_cmdline((const char *)cut + 1, size - tlen - 1, &id);
	identity_derive(&id, "comm", "/usr/bin/exe");
	check_fields(&id);
	/* The cgroup text as a template too: any '{' a field or an error. */
	if (identity_format(&id, text, out, sizeof(out)) >= 0)
		CHECK(strlen(out) < sizeof(out));
	free(text);
	return 0;
}
