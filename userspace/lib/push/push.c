#include "push_int.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "buf.h"
#include "hashmap.h"
#include "log.h"

#define NS_PER_MS 1000000ull
#define NS_PER_S 1000000000ull
#define MAX_LOGGED_ERRORS 64
#define RESPONSE_KEEP 200 /* bytes of an error response kept for the log */

/* One queued window: the request an encoder built. */
struct push_job {
	struct push_job *next;
	struct push_request req;
	size_t bytes; /* counted against max_queue_bytes */
};

struct pusher {
	struct push_opts o;
	char *base;     /* the URL, http(s)://, no trailing '/' */
	char *hostname;
	enum push_protocol proto; /* never AUTO */
	char *tenant_hdr;

	pthread_mutex_t lock;
	pthread_cond_t cond; /* queue non-empty, or stopping */
	struct push_job *head, *tail;
	bool stopping;
	uint64_t deadline_mono; /* when stopping: stop sending after this */
	struct push_stats st;
	uint64_t logged[MAX_LOGGED_ERRORS]; /* hashes of errors already logged */
	size_t nlogged;
	bool failing; /* the last attempt failed: log the recovery */

	pthread_t thread;
	bool thread_started;
	CURL *easy;
	CURLM *multi;
	struct curl_slist *headers;
	struct buf response;
	unsigned seed;
};

void push_opts_init(struct push_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->max_queue_bytes = PUSH_DEFAULT_QUEUE_BYTES;
	o->max_queue_items = PUSH_DEFAULT_QUEUE_ITEMS;
	o->timeout_ms = PUSH_DEFAULT_TIMEOUT_MS;
	o->retries = PUSH_DEFAULT_RETRIES;
	o->backoff_base_ms = PUSH_DEFAULT_BACKOFF_BASE_MS;
	o->backoff_max_ms = PUSH_DEFAULT_BACKOFF_MAX_MS;
	o->shutdown_ms = PUSH_DEFAULT_SHUTDOWN_MS;
}

static void job_free(struct push_job *j)
{
	if (!j)
		return;
	free(j->req.url);
	buf_free(&j->req.body);
	free(j);
}

/* Called with the lock held. */
static struct push_job *queue_pop(struct pusher *p)
{
	struct push_job *j = p->head;

	if (!j)
		return NULL;
	p->head = j->next;
	if (!p->head)
		p->tail = NULL;
	p->st.queue_len--;
	p->st.queue_bytes -= j->bytes;
	return j;
}

static int encode(const struct pusher *p, const struct push_item *it, struct push_request *r)
{
	struct push_target t = { .base = p->base, .hostname = p->hostname };

	switch (p->proto) {
	case PUSH_PROTO_CONNECT:
		return push_encode_connect(&t, it, r);
	case PUSH_PROTO_OTLP:
		return push_encode_otlp(&t, it, r);
	default:
		return push_encode_ingest(&t, it, r);
	}
}

int push_enqueue(struct pusher *p, const struct push_item *it)
{
	struct push_job *j;
	int err;

	if (!p || !it || !it->ss)
		return -EINVAL;
	if (!it->ss->total || !it->ss->nstacks)
		return -ENODATA;
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	buf_init(&j->req.body);
	err = encode(p, it, &j->req);
	if (!err && (j->req.body.failed || !j->req.url))
		err = -ENOMEM;
	if (err) {
		job_free(j);
		pthread_mutex_lock(&p->lock);
		p->st.render_errors++;
		pthread_mutex_unlock(&p->lock);
		return err;
	}
	j->bytes = j->req.body.len + strlen(j->req.url) + sizeof(*j);

	pthread_mutex_lock(&p->lock);
	if (p->stopping || j->bytes > p->o.max_queue_bytes) {
		err = p->stopping ? -ESHUTDOWN : -E2BIG;
		if (p->stopping)
			p->st.dropped_shutdown++;
		else
			p->st.dropped_queue_full++;
		pthread_mutex_unlock(&p->lock);
		job_free(j);
		return err;
	}
	/* Room first, by dropping the oldest: the newest window matters most
	 * to someone looking at the server now. */
	while (p->head && (p->st.queue_len + 1 > p->o.max_queue_items ||
			   p->st.queue_bytes + j->bytes > p->o.max_queue_bytes)) {
		job_free(queue_pop(p));
		p->st.dropped_queue_full++;
	}
	if (p->tail)
		p->tail->next = j;
	else
		p->head = j;
	p->tail = j;
	p->st.queue_len++;
	p->st.queue_bytes += j->bytes;
	p->st.enqueued++;
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
	return 0;
}

void push_stats(struct pusher *p, struct push_stats *out)
{
	if (!p) {
		memset(out, 0, sizeof(*out));
		return;
	}
	pthread_mutex_lock(&p->lock);
	*out = p->st;
	pthread_mutex_unlock(&p->lock);
}

/* Record an error; log it the first time this kind (key) is seen. */
static void note_error(struct pusher *p, const char *key, const char *msg)
{
	uint64_t h = hash64_str(key);
	bool seen = false;
	size_t i;

	pthread_mutex_lock(&p->lock);
	snprintf(p->st.last_error, sizeof(p->st.last_error), "%s", msg);
	for (i = 0; i < p->nlogged && !seen; i++)
		seen = p->logged[i] == h;
	if (!seen && p->nlogged < MAX_LOGGED_ERRORS)
		p->logged[p->nlogged++] = h;
	p->failing = true;
	pthread_mutex_unlock(&p->lock);
	if (!seen)
		log_warn("push: %s", msg);
}

static size_t on_response(char *data, size_t size, size_t nmemb, void *ctx)
{
	struct pusher *p = ctx;
	size_t n = size * nmemb;

	if (p->response.len < RESPONSE_KEEP)
		buf_append(&p->response, data,
			   n < RESPONSE_KEEP - p->response.len ? n : RESPONSE_KEEP - p->response.len);
	return n;
}

/* Past the shutdown deadline: abandon what is under way. */
static bool must_abort(struct pusher *p)
{
	bool stop;

	pthread_mutex_lock(&p->lock);
	stop = p->stopping && clock_mono_ns() >= p->deadline_mono;
	pthread_mutex_unlock(&p->lock);
	return stop;
}

/* One request through the multi interface, so push_free can cut it
 * short (curl_multi_wakeup) instead of waiting for the timeout. */
static CURLcode perform(struct pusher *p)
{
	CURLcode res = CURLE_ABORTED_BY_CALLBACK;
	int running = 1, left;
	CURLMsg *m;

	if (curl_multi_add_handle(p->multi, p->easy) != CURLM_OK)
		return CURLE_FAILED_INIT;
	while (running) {
		if (curl_multi_perform(p->multi, &running) != CURLM_OK) {
			res = CURLE_FAILED_INIT;
			break;
		}
		if (!running)
			break;
		if (must_abort(p))
			break;
		curl_multi_poll(p->multi, NULL, 0, 100, NULL);
	}
	while ((m = curl_multi_info_read(p->multi, &left)))
		if (m->msg == CURLMSG_DONE && m->easy_handle == p->easy)
			res = m->data.result;
	curl_multi_remove_handle(p->multi, p->easy);
	return res;
}

enum attempt { ATTEMPT_OK, ATTEMPT_RETRY, ATTEMPT_REJECTED };

/* The request's own headers, then the pusher's (p->headers). */
static struct curl_slist *job_headers(const struct pusher *p, const struct push_request *r)
{
	struct curl_slist *h = NULL, *n;
	const struct curl_slist *s;
	char line[128];

	snprintf(line, sizeof(line), "Content-Type: %s", r->content_type);
	h = curl_slist_append(h, line);
	if (h && r->content_encoding) {
		snprintf(line, sizeof(line), "Content-Encoding: %s", r->content_encoding);
		n = curl_slist_append(h, line);
		h = n ? n : (curl_slist_free_all(h), NULL);
	}
	if (h && r->header) {
		n = curl_slist_append(h, r->header);
		h = n ? n : (curl_slist_free_all(h), NULL);
	}
	for (s = p->headers; h && s; s = s->next) {
		n = curl_slist_append(h, s->data);
		h = n ? n : (curl_slist_free_all(h), NULL);
	}
	return h;
}

static enum attempt send_once(struct pusher *p, struct push_job *j, uint64_t *retry_after_ms)
{
	char key[64], msg[sizeof(p->st.last_error)];
	curl_off_t after = 0;
	long code = 0;
	CURLcode res;

	struct curl_slist *hdrs = job_headers(p, &j->req);

	if (!hdrs)
		return ATTEMPT_RETRY; /* out of memory now, maybe not later */
	buf_reset(&p->response);
	curl_easy_setopt(p->easy, CURLOPT_URL, j->req.url);
	curl_easy_setopt(p->easy, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(p->easy, CURLOPT_POSTFIELDS, j->req.body.data);
	curl_easy_setopt(p->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)j->req.body.len);
	res = perform(p);
	curl_easy_setopt(p->easy, CURLOPT_HTTPHEADER, NULL);
	curl_slist_free_all(hdrs);
	*retry_after_ms = 0;
	if (res == CURLE_ABORTED_BY_CALLBACK && must_abort(p))
		return ATTEMPT_RETRY; /* shutdown, not the server's fault */
	if (res != CURLE_OK) {
		snprintf(key, sizeof(key), "curl %d", (int)res);
		snprintf(msg, sizeof(msg), "sending to %s failed: %s", p->base,
			 curl_easy_strerror(res));
		note_error(p, key, msg);
		/* Only a URL curl cannot use at all is final. */
		return res == CURLE_UNSUPPORTED_PROTOCOL || res == CURLE_URL_MALFORMAT ?
			       ATTEMPT_REJECTED :
			       ATTEMPT_RETRY;
	}
	curl_easy_getinfo(p->easy, CURLINFO_RESPONSE_CODE, &code);
	if (code >= 200 && code < 300)
		return ATTEMPT_OK;
	if (curl_easy_getinfo(p->easy, CURLINFO_RETRY_AFTER, &after) == CURLE_OK && after > 0)
		*retry_after_ms = (uint64_t)after * 1000;
	buf_cstr(&p->response);
	snprintf(key, sizeof(key), "http %ld", code);
	snprintf(msg, sizeof(msg), "%s answered HTTP %ld: %.100s", p->base, code,
		 p->response.data && !p->response.failed ? p->response.data : "");
	note_error(p, key, msg);
	return code >= 500 || code == 429 || code == 408 ? ATTEMPT_RETRY : ATTEMPT_REJECTED;
}

/* Exponential backoff with "equal jitter": half fixed, half random, so
 * a fleet that failed together does not retry together. */
static uint64_t backoff_ms(struct pusher *p, unsigned attempt, uint64_t retry_after_ms)
{
	uint64_t d = p->o.backoff_base_ms ? p->o.backoff_base_ms : 1;

	while (attempt-- && d < p->o.backoff_max_ms)
		d *= 2;
	if (d > p->o.backoff_max_ms)
		d = p->o.backoff_max_ms;
	d = d / 2 + (uint64_t)rand_r(&p->seed) % (d / 2 + 1);
	if (retry_after_ms > d)
		d = retry_after_ms < p->o.backoff_max_ms ? retry_after_ms : p->o.backoff_max_ms;
	return d;
}

/* Sleep ms unless stopping cuts it short: false when the shutdown
 * deadline has come. */
static bool wait_backoff(struct pusher *p, uint64_t ms)
{
	uint64_t until = clock_mono_ns() + ms * NS_PER_MS;
	struct timespec ts;
	bool ok;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		uint64_t now = clock_mono_ns(), end = until;

		if (p->stopping && p->deadline_mono < end)
			end = p->deadline_mono;
		if (now >= end)
			break;
		/* CLOCK_REALTIME for the condvar; a clock step only makes
		 * one wait shorter or longer, and the loop re-checks. */
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += (time_t)((end - now) / NS_PER_S);
		ts.tv_nsec += (long)((end - now) % NS_PER_S);
		if (ts.tv_nsec >= (long)NS_PER_S) {
			ts.tv_sec++;
			ts.tv_nsec -= (long)NS_PER_S;
		}
		pthread_cond_timedwait(&p->cond, &p->lock, &ts);
	}
	ok = !(p->stopping && clock_mono_ns() >= p->deadline_mono);
	pthread_mutex_unlock(&p->lock);
	return ok;
}

static void send_job(struct pusher *p, struct push_job *j)
{
	enum attempt r = ATTEMPT_RETRY;
	uint64_t retry_after = 0;
	unsigned attempt;

	for (attempt = 0;; attempt++) {
		if (attempt) {
			if (!wait_backoff(p, backoff_ms(p, attempt - 1, retry_after)))
				break;
			pthread_mutex_lock(&p->lock);
			p->st.retried++;
			pthread_mutex_unlock(&p->lock);
		}
		if (must_abort(p))
			break;
		r = send_once(p, j, &retry_after);
		pthread_mutex_lock(&p->lock);
		if (r != ATTEMPT_OK)
			p->st.failed_attempts++;
		pthread_mutex_unlock(&p->lock);
		if (r != ATTEMPT_RETRY || attempt >= p->o.retries)
			break;
	}
	pthread_mutex_lock(&p->lock);
	if (r == ATTEMPT_OK) {
		p->st.sent++;
		p->st.bytes_sent += j->req.body.len;
		if (p->failing)
			log_info("push: %s accepts profiles again", p->base);
		p->failing = false;
	} else if (r == ATTEMPT_REJECTED) {
		p->st.dropped_rejected++;
	} else if (p->stopping && clock_mono_ns() >= p->deadline_mono) {
		p->st.dropped_shutdown++;
	} else {
		p->st.dropped_after_retries++;
	}
	pthread_mutex_unlock(&p->lock);
}

static void *worker(void *arg)
{
	struct pusher *p = arg;
	struct push_job *j;

	pthread_setname_np(pthread_self(), "profd-push");
	for (;;) {
		pthread_mutex_lock(&p->lock);
		while (!p->head && !p->stopping)
			pthread_cond_wait(&p->cond, &p->lock);
		if (p->stopping && (!p->head || clock_mono_ns() >= p->deadline_mono)) {
			/* The deadline: what is left is dropped, and said so. */
			while ((j = queue_pop(p))) {
				p->st.dropped_shutdown++;
				job_free(j);
			}
			pthread_mutex_unlock(&p->lock);
			break;
		}
		j = queue_pop(p);
		pthread_mutex_unlock(&p->lock);
		send_job(p, j);
		job_free(j);
	}
	return NULL;
}

static bool starts(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

static bool ends(const char *s, size_t n, const char *suffix)
{
	size_t k = strlen(suffix);

	return n >= k && !strncmp(s + n - k, suffix, k);
}

/* The URL without "otlp+" and trailing '/'. */
static char *make_base(const char *url)
{
	size_t n;

	if (starts(url, "otlp+"))
		url += 5;
	n = strlen(url);
	while (n && url[n - 1] == '/')
		n--;
	return strndup(url, n);
}

/* base: make_base's, so a trailing '/' does not hide the push path. */
static enum push_protocol pick_protocol(const struct push_opts *o, const char *base)
{
	if (o->protocol != PUSH_PROTO_AUTO)
		return o->protocol;
	if (starts(o->url, "otlp+"))
		return PUSH_PROTO_OTLP;
	if (base && ends(base, strlen(base), "/push.v1.PusherService/Push"))
		return PUSH_PROTO_CONNECT;
	return PUSH_PROTO_INGEST;
}

static int setup_curl(struct pusher *p)
{
	p->easy = curl_easy_init();
	p->multi = curl_multi_init();
	if (!p->easy || !p->multi)
		return -ENOMEM;
	/* No "Expect: 100-continue" round trip for large bodies. */
	p->headers = curl_slist_append(NULL, "Expect:");
	if (p->headers && p->tenant_hdr)
		p->headers = curl_slist_append(p->headers, p->tenant_hdr);
	if (!p->headers)
		return -ENOMEM;
	curl_easy_setopt(p->easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(p->easy, CURLOPT_POST, 1L);
	curl_easy_setopt(p->easy, CURLOPT_USERAGENT, "profd");
	curl_easy_setopt(p->easy, CURLOPT_TIMEOUT_MS, (long)p->o.timeout_ms);
	curl_easy_setopt(p->easy, CURLOPT_CONNECTTIMEOUT_MS,
			 (long)(p->o.timeout_ms < 5000 ? p->o.timeout_ms : 5000));
	curl_easy_setopt(p->easy, CURLOPT_WRITEFUNCTION, on_response);
	curl_easy_setopt(p->easy, CURLOPT_WRITEDATA, p);
	curl_easy_setopt(p->easy, CURLOPT_FOLLOWLOCATION, 0L);
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(p->easy, CURLOPT_PROTOCOLS_STR, "http,https");
#else
	curl_easy_setopt(p->easy, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
	return 0;
}

static void pusher_destroy(struct pusher *p)
{
	struct push_job *j;

	while ((j = queue_pop(p)))
		job_free(j);
	if (p->multi)
		curl_multi_cleanup(p->multi);
	if (p->easy)
		curl_easy_cleanup(p->easy);
	curl_slist_free_all(p->headers);
	buf_free(&p->response);
	free(p->base);
	free(p->hostname);
	free(p->tenant_hdr);
	pthread_cond_destroy(&p->cond);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

static void curl_init_once(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

struct pusher *push_new(const struct push_opts *o)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	struct pusher *p;
	char host[256];
	int err;

	const char *url = o && o->url ? o->url : "";

	if (starts(url, "otlp+"))
		url += 5;
	if (!starts(url, "http://") && !starts(url, "https://")) {
		log_error("push: '%s' is not an http(s):// or otlp+http(s):// URL",
			  o && o->url ? o->url : "");
		errno = EINVAL;
		return NULL;
	}
	/* Not thread-safe, so once, before any thread of ours exists. */
	pthread_once(&once, curl_init_once);
	p = calloc(1, sizeof(*p));
	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	buf_init(&p->response);
	p->o = *o;
	if (!p->o.max_queue_bytes)
		p->o.max_queue_bytes = PUSH_DEFAULT_QUEUE_BYTES;
	if (!p->o.max_queue_items)
		p->o.max_queue_items = PUSH_DEFAULT_QUEUE_ITEMS;
	if (!p->o.timeout_ms)
		p->o.timeout_ms = PUSH_DEFAULT_TIMEOUT_MS;
	if (!p->o.backoff_max_ms)
		p->o.backoff_max_ms = PUSH_DEFAULT_BACKOFF_MAX_MS;
	if (p->o.backoff_base_ms > p->o.backoff_max_ms)
		p->o.backoff_base_ms = p->o.backoff_max_ms;
	p->o.url = NULL; /* not kept: the caller's string */
	p->o.hostname = NULL;
	p->o.tenant_id = NULL;
	p->seed = (unsigned)clock_mono_ns() ^ (unsigned)getpid();
	if (o->hostname) {
		p->hostname = strdup(o->hostname);
	} else {
		if (gethostname(host, sizeof(host)))
			snprintf(host, sizeof(host), "unknown");
		host[sizeof(host) - 1] = 0;
		p->hostname = strdup(host);
	}
	p->base = make_base(o->url);
	p->proto = pick_protocol(o, p->base);
	if (o->tenant_id && asprintf(&p->tenant_hdr, "X-Scope-OrgID: %s", o->tenant_id) < 0)
		p->tenant_hdr = NULL;
	err = !p->hostname || !p->base || (o->tenant_id && !p->tenant_hdr) ? -ENOMEM :
									      setup_curl(p);
	if (!err) {
		err = -pthread_create(&p->thread, NULL, worker, p);
		p->thread_started = !err;
	}
	if (err) {
		log_error("push: cannot start: %s", strerror(-err));
		pusher_destroy(p);
		errno = -err;
		return NULL;
	}
	log_info("push: sending profiles to %s (%s)", p->base,
		 p->proto == PUSH_PROTO_OTLP ? "OTLP" :
		 p->proto == PUSH_PROTO_CONNECT ? "Pyroscope push API" : "Pyroscope ingest");
	return p;
}

void push_free(struct pusher *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stopping = true;
	p->deadline_mono = clock_mono_ns() + (uint64_t)p->o.shutdown_ms * NS_PER_MS;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	if (p->thread_started) {
		curl_multi_wakeup(p->multi);
		pthread_join(p->thread, NULL);
	}
	if (p->st.dropped_shutdown)
		log_warn("push: %llu windows not sent at exit",
			 (unsigned long long)p->st.dropped_shutdown);
	pusher_destroy(p);
}
