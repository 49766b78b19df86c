/* push internals: the queue and sender (push.c) take requests that an
 * encoder, one per protocol, builds from a push_item on the caller's
 * thread.  An encoder owns everything about its wire format: the URL
 * path and query, the body, its content type and encoding. */
#ifndef PROFD_PUSH_INT_H
#define PROFD_PUSH_INT_H

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

#endif
