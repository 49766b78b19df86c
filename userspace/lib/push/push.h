/* push: send flushed profile windows to a Pyroscope-compatible server
 * (Grafana Pyroscope, Grafana Alloy's pyroscope.receive_http, the old
 * pyroscope-io server) through one of Pyroscope's two APIs, one request
 * per window (one process, one profile type):
 *
 * /ingest (push_ingest.c; every Pyroscope version):
 *   POST {url}/ingest?name={service}.{type}{host=H,LABEL=V,...}
 *        &from={unix_s}&until={unix_s}&format=pprof&spyName=profd
 *        &sampleRate={hz}&units=samples|nanoseconds&aggregationType=sum
 *   Content-Type: application/octet-stream
 *   body: the gzipped pprof (render_pprof)
 * With format=pprof every Pyroscope version takes the raw body as the
 * profile (gzip or not); the multipart form (field "profile") is only
 * looked at when format is not given, so the raw body is the one form
 * all of them accept.
 *
 * push.v1 (push_connect.c; Grafana Pyroscope 1.0 and later, Alloy):
 *   POST {url}/push.v1.PusherService/Push   (a Connect unary call)
 *   Content-Type: application/proto
 *   body: push.v1.PushRequest: one series labelled __name__ (process_cpu,
 *         off_cpu, memory, or the type's own name), service_name, hostname
 *         and the item's labels, with one sample: the same gzipped pprof.
 *
 * A series is the workload, not the process: the service (it->service,
 * else comm, else the exe's basename) and it->labels, never the pid,
 * which every sample of the pprof carries as the numeric label "pid"
 * (Pyroscope keeps numeric sample labels out of the series).
 *
 * push_enqueue renders on the caller's thread and queues; one worker
 * thread sends, so the daemon's event loop never waits on the network.
 * The queue is bounded by bytes and items: when full the OLDEST window is
 * dropped and counted.  Connection errors, 5xx, 408 and 429 are retried
 * with exponential backoff and jitter; other 4xx are not.  Nothing is
 * dropped without a counter in push_stats. */
#ifndef PROFD_PUSH_H
#define PROFD_PUSH_H

#include <stddef.h>
#include <stdint.h>

#include "stackset.h"

#define PUSH_DEFAULT_QUEUE_BYTES (64u << 20)
#define PUSH_DEFAULT_QUEUE_ITEMS 4096u
#define PUSH_DEFAULT_TIMEOUT_MS 10000u
#define PUSH_DEFAULT_RETRIES 4u
#define PUSH_DEFAULT_BACKOFF_BASE_MS 500u
#define PUSH_DEFAULT_BACKOFF_MAX_MS 30000u
#define PUSH_DEFAULT_SHUTDOWN_MS 2000u

/* What the server speaks.  AUTO picks from the URL: otlp+http(s)://
 * is OTLP, a path ending in /push.v1.PusherService/Push is Pyroscope's
 * push API, anything else /ingest.  A bare server URL does not say which
 * API the server has (finding out would mean a request at start-up), so
 * profd's --push-protocol sets one of the others. */
enum push_protocol {
	PUSH_PROTO_AUTO,
	PUSH_PROTO_INGEST,  /* Pyroscope /ingest?format=pprof (push_ingest.c) */
	PUSH_PROTO_CONNECT, /* Pyroscope push.v1.PusherService/Push (push_connect.c) */
	PUSH_PROTO_OTLP,    /* OTLP profiles over HTTP (push_otlp.c) */
};

struct push_opts {
	/* Server base URL, http:// or https:// (the API's path,
	 * "/ingest" or "/push.v1.PusherService/Push", is appended unless
	 * the URL already ends with it), or otlp+http(s)://.
	 * user:password@ in the URL is sent as HTTP basic auth; HTTPS uses
	 * the system CA bundle. */
	const char *url;
	enum push_protocol protocol; /* AUTO: from the URL */
	const char *hostname;   /* "host" label; NULL: gethostname() */
	const char *tenant_id;  /* X-Scope-OrgID header, or NULL */
	size_t max_queue_bytes; /* rendered bytes queued; 0: default */
	size_t max_queue_items; /* windows queued; 0: default */
	uint32_t timeout_ms;    /* per request; 0: default */
	uint32_t retries;       /* further attempts after the first */
	uint32_t backoff_base_ms; /* first retry delay (before jitter) */
	uint32_t backoff_max_ms;  /* cap of the delay, and of Retry-After */
	uint32_t shutdown_ms;   /* push_free: how long to keep sending */
};

/* Fills o with the defaults above (url NULL). */
void push_opts_init(struct push_opts *o);

/* A series label: one of the workload's identity fields. */
struct push_label {
	const char *name, *value;
};

/* One window of one process and one profile type. */
struct push_item {
	const struct stackset *ss; /* rendered inside push_enqueue: the
				    * caller keeps ownership */
	uint32_t pid;
	const char *service;     /* application name; NULL/"": comm, then exe's basename */
	const struct push_label *labels; /* series labels besides host (unit, container ...) */
	size_t n_labels;
	const char *comm;
	const char *exe;         /* may be NULL */
	const char *type;        /* "cpu", "gpu-driver" ...; NULL: ss->type */
	uint64_t from_ns, until_ns; /* CLOCK_REALTIME; 0: ss->start/end_ns */
};

struct push_stats {
	uint64_t enqueued;              /* windows accepted by push_enqueue */
	uint64_t sent;                  /* windows the server accepted (2xx) */
	uint64_t failed_attempts;       /* requests that failed, any reason */
	uint64_t retried;               /* attempts that were retries */
	uint64_t dropped_queue_full;    /* oldest dropped for room (or too big) */
	uint64_t dropped_after_retries; /* retryable errors, retries used up */
	uint64_t dropped_rejected;      /* 4xx other than 408/429: not retried */
	uint64_t dropped_shutdown;      /* still queued at the push_free deadline */
	uint64_t render_errors;         /* push_enqueue could not render */
	uint64_t bytes_sent;            /* body bytes of sent windows */
	uint64_t queue_len;             /* windows waiting now */
	uint64_t queue_bytes;           /* their bytes */
	char last_error[160];           /* "" when none yet */
};

/* NULL with errno set (EINVAL for a URL that is not http(s):// or otlp+http(s)://, ENOMEM,
 * or the thread's error). */
struct pusher *push_new(const struct push_opts *o);

/* Render it->ss to gzipped pprof and queue it.  Never blocks on the
 * network.  0 when queued (older windows may have been dropped for
 * room), -ENODATA for an empty profile (nothing queued), -E2BIG when the
 * window alone is over max_queue_bytes (dropped and counted), -EINVAL,
 * -ENOMEM or -EIO (rendering; counted). */
int push_enqueue(struct pusher *p, const struct push_item *it);

void push_stats(struct pusher *p, struct push_stats *out);

/* Keep sending what is queued for at most opts.shutdown_ms, then drop
 * and count the rest (an in-flight request is aborted), stop the worker
 * and free.  NULL is fine. */
void push_free(struct pusher *p);

/* Daemon integration (push_window.c): exact per-process windows out of
 * the aggregator's time buckets.  The aggregator counts samples in
 * buckets of bucket_ns, wider than a push interval, so a window is the
 * difference between the recent buckets now and the same buckets at the
 * previous push.  Only buckets starting after (previous push - slack_ns)
 * are read, so each push costs a dump of a few recent buckets per active
 * process, and the state kept is bounded the same way. */
struct aggregate;
struct proctable;
struct push_window;

/* slack_ns: how late a sample may be counted after its timestamp (ringbuf
 * and symbolization delay); 0: 10 s. */
struct push_window *push_window_new(uint64_t slack_ns);
/* The series' application name, a template over the process's workload
 * (identity.h: "{service}", the default, "{unit}", "{container}" ...).
 * Copied.  0, or -EINVAL for an unknown field (nothing changed). */
#define PUSH_DEFAULT_NAME "{service}"
int push_window_set_name(struct push_window *w, const char *tmpl);
void push_window_free(struct push_window *w);

/* Enqueue to p, for every process in pt with samples since the previous
 * call and every profile type, what was counted since the previous call
 * (the first call: everything counted so far).  now_ns is CLOCK_REALTIME,
 * rate_hz the sampling rate.  Returns the number of windows queued, or
 * -ENOMEM. */
int push_window_flush(struct push_window *w, struct pusher *p, struct aggregate *a,
		      struct proctable *pt, uint64_t now_ns, uint32_t rate_hz);

#endif
