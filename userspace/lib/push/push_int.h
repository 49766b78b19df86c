/* push internals: the queue and sender (push.c) take requests that an
 * encoder, one per protocol, builds from a push_item on the caller's
 * thread.  An encoder owns everything about its wire format: the URL
 * path and query, the body, its content type and encoding. */
#ifndef PROFD_PUSH_INT_H
#define PROFD_PUSH_INT_H

#include <stdbool.h>

#include "buf.h"
#include "push.h"

/* What an encoder sees of the pusher. */
struct push_target {
	const char *base;     /* the URL as given, scheme normalised to http(s)://,
			       * without trailing '/' */
	const char *hostname; /* "host" label */
};

/* One request, built by an encoder. */
struct push_request {
	char *url;                  /* malloc'd, the full URL */
	struct buf body;
	const char *content_type;   /* static string */
	const char *content_encoding; /* static string or NULL */
	const char *header;         /* static "Name: value" or NULL: one more */
};

/* Each returns 0, or -ENOMEM, -EINVAL, -EIO with nothing to free but
 * what push_request_free frees. */
int push_encode_ingest(const struct push_target *t, const struct push_item *it,
		       struct push_request *out);
int push_encode_connect(const struct push_target *t, const struct push_item *it,
			struct push_request *out);
int push_encode_otlp(const struct push_target *t, const struct push_item *it,
		     struct push_request *out);

/* push_ingest.c: the application name for it (service, comm, exe's
 * basename, "unknown") and its profile type. */
const char *push_service_of(const struct push_item *it);
const char *push_type_of(const struct push_item *it);

/* Series labels: at most this many of an item's, names this long. */
#define PUSH_MAX_LABELS 24
#define PUSH_LABEL_NAME_MAX 64

/* push_ingest.c: whether it->labels[i] is sent, its name cleaned into
 * name ([A-Za-z_][A-Za-z0-9_]*, what Prometheus-style label names allow):
 * not when its name or value is empty, its name is reserved ("__...") or
 * one of taken[] (NULL-terminated: the encoder's own), or an earlier
 * label's name cleans to the same (servers refuse a repeated name). */
bool push_label_name(const struct push_item *it, size_t i, const char *const *taken,
		     struct buf *name);

/* push_ingest.c: it->ss as gzipped pprof into out, with the pid as a
 * numeric sample label "pid" (render_pprof.h: it never splits a series). */
int push_render(const struct push_item *it, struct buf *out);

#endif
