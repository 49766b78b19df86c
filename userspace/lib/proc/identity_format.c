/* identity_format.c: names made from a template over a workload's fields
 * ("{service}", "{unit}/{container}"), for push series names and titles. */
#include "identity.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

/* The field "{name}" at t (t[0] == '{'): its value, *len its template
 * length; NULL when unknown or unclosed. */
static const char *field_at(const struct workload_id *id, const char *t, size_t *len)
{
	const char *close = strchr(t, '}');
	int f;

	if (!close)
		return NULL;
	*len = (size_t)(close - t) + 1;
	for (f = 0; f < WID_NFIELDS; f++) {
		const char *name = identity_field_name(f);

		if (strlen(name) == *len - 2 && !memcmp(t + 1, name, *len - 2))
			return id ? identity_field(id, f) : "";
	}
	return NULL;
}

struct out {
	char *p;
	size_t n, len;
	size_t keep; /* where the text since the last field began */
};

static void put(struct out *o, const char *s, size_t len)
{
	size_t room = o->n - 1 - o->len;

	if (len > room)
		len = room;
	memcpy(o->p + o->len, s, len);
	o->len += len;
}

static int expand(const struct workload_id *id, const char *tmpl, struct out *o)
{
	const char *t = tmpl, *v;
	bool skip = false; /* text after an empty field with nothing before it */
	size_t flen;

	while (*t) {
		if (*t != '{') {
			if (!skip)
				put(o, t, 1);
			t++;
			continue;
		}
		v = field_at(id, t, &flen);
		if (!v)
			return -EINVAL;
		if (*v)
			put(o, v, strlen(v));
		else
			o->len = o->keep; /* the separator before it goes too */
		skip = !*v && !o->len;
		o->keep = o->len;
		t += flen;
	}
	return 0;
}

int identity_format(const struct workload_id *id, const char *tmpl, char *out, size_t n)
{
	struct out o = { .p = out, .n = n };
	int err;

	if (!n)
		return -EINVAL;
	err = expand(id, tmpl, &o);
	out[err ? 0 : o.len] = '\0';
	if (err)
		return err;
	if (!o.len) {
		o.len = strlen(id->service) < n ? strlen(id->service) : n - 1;
		memcpy(out, id->service, o.len);
		out[o.len] = '\0';
	}
	return (int)o.len;
}

int identity_check_template(const char *tmpl)
{
	char out[8];
	struct out o = { .p = out, .n = sizeof(out) };

	return expand(NULL, tmpl, &o);
}
