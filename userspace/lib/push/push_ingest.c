/* push_ingest: Pyroscope's HTTP ingest API (see push.h):
 *
 *   POST {url}/ingest?name={service}.{type}{host=H,LABEL=V,...}
 *        &from=..&until=..&format=pprof&spyName=profd&sampleRate=..
 *   body: the gzipped pprof (render_pprof), the pid a sample label */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "push_int.h"
#include "render_pprof.h"

#define NS_PER_S 1000000000ull

/* Percent-encode everything but RFC 3986's unreserved characters. */
static void put_escaped(struct buf *b, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '.' || c == '_' || c == '~') {
			buf_put_u8(b, c);
		} else {
			buf_put_u8(b, '%');
			buf_put_u8(b, (uint8_t)hex[c >> 4]);
			buf_put_u8(b, (uint8_t)hex[c & 15]);
		}
	}
}

/* Pyroscope's labelset parser accepts [A-Za-z0-9_./-] in the application
 * name, and anything but ',' '}' (and surrounding blanks) in a value:
 * anything else becomes '_', so a comm like "kworker/0:1" still sends. */
static void put_clean(struct buf *b, const char *s, bool service, size_t max)
{
	size_t n = 0;

	for (; *s && n < max; s++, n++) {
		unsigned char c = (unsigned char)*s;
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-' || c == '/';

		if (!service)
			ok = c > ' ' && c < 0x7f && c != ',' && c != '}' && c != '{' && c != '=';
		buf_put_u8(b, ok ? c : '_');
	}
}

const char *push_service_of(const struct push_item *it)
{
	const char *base;

	if (it->service && *it->service)
		return it->service;
	if (it->comm && *it->comm)
		return it->comm;
	if (it->exe && *it->exe) {
		base = strrchr(it->exe, '/');
		return base && base[1] ? base + 1 : it->exe;
	}
	return "unknown";
}

static bool name_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* l's name cleaned into name; false when l is not sent whatever the
 * other labels are (push_label_name). */
static bool clean_label(const struct push_label *l, const char *const *taken, struct buf *name)
{
	const char *s = l->name;

	buf_reset(name);
	if (!s || !*s || !l->value || !*l->value)
		return false;
	if (*s >= '0' && *s <= '9')
		buf_put_u8(name, '_');
	for (; *s && name->len < PUSH_LABEL_NAME_MAX; s++)
		buf_put_u8(name, name_char((unsigned char)*s) ? (uint8_t)*s : '_');
	if (!buf_cstr(name) || !strncmp(name->data, "__", 2))
		return false;
	for (; taken && *taken; taken++)
		if (!strcmp(name->data, *taken))
			return false;
	return true;
}

bool push_label_name(const struct push_item *it, size_t i, const char *const *taken,
		     struct buf *name)
{
	struct buf prev;
	bool dup = false;
	size_t k;

	if (!clean_label(&it->labels[i], taken, name))
		return false;
	/* A name that an earlier label of it cleans to as well: the first wins. */
	buf_init(&prev);
	for (k = 0; k < i && !dup; k++)
		dup = clean_label(&it->labels[k], taken, &prev) && !strcmp(prev.data, name->data);
	if (prev.failed)
		name->failed = true;
	buf_free(&prev);
	return !dup && !name->failed;
}

/* name={service}.{type}{host=..,label=..}, unescaped.  The pid is not a
 * label: one series per workload, whichever processes run it (the pid
 * travels in the profile, push_render). */
static void build_name(struct buf *b, const struct push_target *p, const struct push_item *it,
		       const char *type)
{
	static const char *const taken[] = { "host", NULL };
	struct buf name;
	size_t i, sent = 0;

	put_clean(b, push_service_of(it), true, 128);
	buf_put_u8(b, '.');
	put_clean(b, type, true, 64);
	buf_puts(b, "{host=");
	put_clean(b, p->hostname, false, 128);
	buf_init(&name);
	for (i = 0; i < it->n_labels && sent < PUSH_MAX_LABELS; i++) {
		if (!push_label_name(it, i, taken, &name))
			continue;
		buf_put_u8(b, ',');
		buf_append(b, name.data, name.len);
		buf_put_u8(b, '=');
		put_clean(b, it->labels[i].value, false, 128);
		sent++;
	}
	if (name.failed)
		b->failed = true;
	buf_free(&name);
	buf_puts(b, "}");
}

static char *build_url(const struct push_target *p, const struct push_item *it)
{
	const struct stackset *ss = it->ss;
	const char *type = push_type_of(it);
	uint64_t from = it->from_ns ? it->from_ns : ss->start_ns;
	uint64_t until = it->until_ns ? it->until_ns : ss->end_ns;
	bool nanos = ss->unit && !strcmp(ss->unit, "nanoseconds");
	struct buf name, url;
	char *out = NULL;

	if (!until || until < from)
		until = from;
	buf_init(&name);
	buf_init(&url);
	build_name(&name, p, it, type);
	buf_puts(&url, p->base);
	if (strlen(p->base) < 7 || strcmp(p->base + strlen(p->base) - 7, "/ingest"))
		buf_puts(&url, "/ingest");
	buf_puts(&url, "?name=");
	if (buf_cstr(&name))
		put_escaped(&url, name.data);
	buf_printf(&url,
		   "&from=%llu&until=%llu&format=pprof&spyName=profd&sampleRate=%u"
		   "&units=%s&aggregationType=sum",
		   (unsigned long long)(from / NS_PER_S),
		   (unsigned long long)((until + NS_PER_S - 1) / NS_PER_S),
		   ss->rate_hz ? ss->rate_hz : 100, nanos ? "nanoseconds" : "samples");
	if (!name.failed && buf_cstr(&url))
		out = strdup(url.data);
	buf_free(&name);
	buf_free(&url);
	return out;
}

const char *push_type_of(const struct push_item *it)
{
	return it->type ? it->type : it->ss->type ? it->ss->type : "cpu";
}

int push_render(const struct push_item *it, struct buf *out)
{
	struct pprof_num_label pid = { "pid", it->pid };
	int err = render_pprof_labeled(it->ss, &pid, it->pid ? 1 : 0, out);

	return !err && out->failed ? -ENOMEM : err;
}

int push_encode_ingest(const struct push_target *t, const struct push_item *it,
		       struct push_request *out)
{
	int err = push_render(it, &out->body);

	if (err)
		return err;
	out->url = build_url(t, it);
	out->content_type = "application/octet-stream";
	return out->url ? 0 : -ENOMEM;
}
