/* push: against a tiny HTTP/1.1 server in a thread of this test (loopback,
 * ephemeral port): the request line and query, the gzipped pprof body,
 * retries and backoff timing, no retry on 4xx, the bounded queue dropping
 * the oldest, shutdown against a stuck server, and exact windows out of
 * the aggregator (push_window). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>

#include "aggregate.h"
#include "buf.h"
#include "proctable.h"
#include "identity.h"
#include "push.h"
#include "stackset.h"

#define MAX_REQS 128

struct req {
	char line[2048];
	char ctype[128];
	struct buf body;
	uint64_t at_ns;
};

struct server {
	int lfd;
	uint16_t port;
	pthread_t thread;
	pthread_mutex_t lock;
	int codes[16]; /* answers in order; 200 after them */
	size_t ncodes;
	bool stall;    /* read requests but do not answer */
	bool quit;
	struct req reqs[MAX_REQS];
	size_t nreqs;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static bool srv_flag(struct server *s, bool *f)
{
	bool v;

	pthread_mutex_lock(&s->lock);
	v = *f;
	pthread_mutex_unlock(&s->lock);
	return v;
}

/* Read into b until pred holds; false on EOF, error or quit. */
static bool read_more(struct server *s, int fd, struct buf *b)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	char tmp[65536];
	ssize_t n;

	while (!srv_flag(s, &s->quit)) {
		if (poll(&pfd, 1, 50) <= 0)
			continue;
		n = read(fd, tmp, sizeof(tmp));
		if (n <= 0)
			return false;
		buf_append(b, tmp, (size_t)n);
		return true;
	}
	return false;
}

static void serve_conn(struct server *s, int fd)
{
	struct buf in;

	buf_init(&in);
	for (;;) {
		char *hdr_end, *cl, *ct;
		size_t hlen, blen = 0, idx;
		struct req *r;
		char resp[256];
		int code = 200;

		while (!(buf_cstr(&in) && (hdr_end = strstr(in.data, "\r\n\r\n"))))
			if (!read_more(s, fd, &in))
				goto out;
		hlen = (size_t)(hdr_end - in.data) + 4;
		cl = strcasestr(in.data, "\r\nContent-Length:");
		if (cl && cl < hdr_end)
			blen = strtoul(cl + 17, NULL, 10);
		while (in.len < hlen + blen)
			if (!read_more(s, fd, &in))
				goto out;
		pthread_mutex_lock(&s->lock);
		idx = s->nreqs < MAX_REQS ? s->nreqs++ : MAX_REQS - 1;
		r = &s->reqs[idx];
		buf_free(&r->body);
		buf_init(&r->body);
		snprintf(r->line, sizeof(r->line), "%.*s", (int)(strstr(in.data, "\r\n") - in.data),
			 in.data);
		ct = strcasestr(in.data, "\r\nContent-Type:");
		r->ctype[0] = 0;
		if (ct && ct < hdr_end)
			snprintf(r->ctype, sizeof(r->ctype), "%.*s",
				 (int)(strstr(ct + 2, "\r\n") - ct - 2), ct + 2);
		buf_append(&r->body, in.data + hlen, blen);
		r->at_ns = now_ns();
		if (idx < s->ncodes)
			code = s->codes[idx];
		pthread_mutex_unlock(&s->lock);
		while (srv_flag(s, &s->stall) && !srv_flag(s, &s->quit))
			usleep(10000);
		if (srv_flag(s, &s->quit))
			goto out;
		snprintf(resp, sizeof(resp), "HTTP/1.1 %d X\r\nContent-Length: 4\r\n\r\nbody", code);
		if (write(fd, resp, strlen(resp)) < 0)
			goto out;
		memmove(in.data, in.data + hlen + blen, in.len - hlen - blen);
		in.len -= hlen + blen;
	}
out:
	buf_free(&in);
	close(fd);
}

static void *server_main(void *arg)
{
	struct server *s = arg;
	struct pollfd pfd = { .fd = s->lfd, .events = POLLIN };

	while (!srv_flag(s, &s->quit)) {
		int fd;

		if (poll(&pfd, 1, 50) <= 0)
			continue;
		fd = accept(s->lfd, NULL, NULL);
		if (fd >= 0)
			serve_conn(s, fd);
	}
	return NULL;
}

static struct server *server_start(const int *codes, size_t ncodes, bool stall)
{
	struct server *s = calloc(1, sizeof(*s));
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);

	assert_non_null(s);
	pthread_mutex_init(&s->lock, NULL);
	if (ncodes)
		memcpy(s->codes, codes, ncodes * sizeof(*codes));
	s->ncodes = ncodes;
	s->stall = stall;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(s->lfd >= 0);
	assert_int_equal(bind(s->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(s->lfd, 16), 0);
	assert_int_equal(getsockname(s->lfd, (struct sockaddr *)&sa, &len), 0);
	s->port = ntohs(sa.sin_port);
	assert_int_equal(pthread_create(&s->thread, NULL, server_main, s), 0);
	return s;
}

static void server_set_stall(struct server *s, bool stall)
{
	pthread_mutex_lock(&s->lock);
	s->stall = stall;
	pthread_mutex_unlock(&s->lock);
}

static size_t server_nreqs(struct server *s)
{
	size_t n;

	pthread_mutex_lock(&s->lock);
	n = s->nreqs;
	pthread_mutex_unlock(&s->lock);
	return n;
}

static void server_stop(struct server *s)
{
	size_t i;

	pthread_mutex_lock(&s->lock);
	s->quit = true;
	pthread_mutex_unlock(&s->lock);
	pthread_join(s->thread, NULL);
	close(s->lfd);
	for (i = 0; i < MAX_REQS; i++)
		buf_free(&s->reqs[i].body);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

static struct pusher *pusher_for(struct server *s, struct push_opts *o)
{
	char url[64];
	struct pusher *p;

	snprintf(url, sizeof(url), "http://127.0.0.1:%u/", s->port);
	o->url = url;
	if (!o->hostname)
		o->hostname = "testhost";
	p = push_new(o);
	assert_non_null(p);
	return p;
}

static struct stackset *profile(uint64_t count)
{
	static const uint32_t kinds[] = { FRAME_NATIVE, FRAME_NATIVE, FRAME_NATIVE };
	static const char *const names[] = { "main", "work_loop", "leaf_compute" };
	struct stackset *ss = stackset_new();

	assert_non_null(ss);
	assert_int_equal(stackset_add_named(ss, kinds, names, 3, count), 0);
	stackset_set_str(&ss->type, "cpu");
	stackset_set_str(&ss->unit, "samples");
	ss->rate_hz = 99;
	ss->start_ns = 1700000000ull * 1000000000ull;
	ss->end_ns = ss->start_ns + 10ull * 1000000000ull;
	return ss;
}

static int enqueue(struct pusher *p, const struct stackset *ss, uint32_t pid, const char *comm)
{
	struct push_item it = { .ss = ss, .pid = pid, .comm = comm, .exe = "/usr/bin/myapp" };

	return push_enqueue(p, &it);
}

/* Wait up to 5 s for cond on the stats. */
#define WAIT_STATS(p, st, cond)                                                            \
	do {                                                                               \
		uint64_t end_ = now_ns() + 5000000000ull;                                  \
		for (;;) {                                                                 \
			push_stats((p), &(st));                                            \
			if ((cond) || now_ns() > end_)                                     \
				break;                                                     \
			usleep(5000);                                                      \
		}                                                                          \
		assert_true(cond);                                                         \
	} while (0)

/* The value of query parameter key in line, percent-decoded. */
static bool query_get(const char *line, const char *key, char *out, size_t size)
{
	const char *q = strchr(line, '?'), *end;
	size_t klen = strlen(key), n = 0;

	if (!q)
		return false;
	for (q++; *q && *q != ' '; q = *end ? end + 1 : end) {
		end = q + strcspn(q, "& ");
		if ((size_t)(end - q) > klen && !strncmp(q, key, klen) && q[klen] == '=') {
			for (q += klen + 1; q < end && n + 1 < size; q++) {
				if (*q == '%' && q + 2 < end + 1) {
					char hx[3] = { q[1], q[2], 0 };

					out[n++] = (char)strtol(hx, NULL, 16);
					q += 2;
				} else {
					out[n++] = *q;
				}
			}
			out[n] = 0;
			return true;
		}
		if (*end == ' ')
			break;
	}
	return false;
}

static void gunzip(const struct buf *in, struct buf *out)
{
	z_stream z = { 0 };
	char tmp[65536];
	int rc;

	assert_int_equal(inflateInit2(&z, 31), Z_OK);
	z.next_in = (Bytef *)in->data;
	z.avail_in = (uInt)in->len;
	do {
		z.next_out = (Bytef *)tmp;
		z.avail_out = sizeof(tmp);
		rc = inflate(&z, Z_NO_FLUSH);
		assert_true(rc == Z_OK || rc == Z_STREAM_END);
		buf_append(out, tmp, sizeof(tmp) - z.avail_out);
	} while (rc != Z_STREAM_END);
	inflateEnd(&z);
}

static uint64_t varint(const uint8_t **p, const uint8_t *end)
{
	uint64_t v = 0;
	int shift = 0;

	while (*p < end) {
		uint8_t c = *(*p)++;

		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			break;
		shift += 7;
	}
	return v;
}

/* Sum of the first value of every Sample in an uncompressed profile. */
static uint64_t pprof_total(const struct buf *pb)
{
	const uint8_t *p = (const uint8_t *)pb->data, *end = p + pb->len;
	uint64_t total = 0;

	while (p < end) {
		uint64_t key = varint(&p, end), len;
		const uint8_t *m, *mend;

		if ((key & 7) == 0) {
			varint(&p, end);
			continue;
		}
		assert_int_equal(key & 7, 2);
		len = varint(&p, end);
		m = p;
		mend = p + len;
		p = mend;
		if (key >> 3 != 2)
			continue;
		while (m < mend) { /* Sample: value is field 2, packed */
			uint64_t k = varint(&m, mend), l = (k & 7) == 2 ? varint(&m, mend) : 0;

			if (k >> 3 == 2 && (k & 7) == 2) {
				const uint8_t *v = m;

				total += varint(&v, m + l);
			}
			m += (k & 7) == 2 ? l : 0;
			if ((k & 7) == 0)
				varint(&m, mend);
		}
	}
	return total;
}

static void test_request(void **state)
{
	struct server *s = server_start(NULL, 0, false);
	struct stackset *ss = profile(42);
	struct push_opts o;
	struct push_stats st;
	struct pusher *p;
	struct buf raw;
	char v[512];
	const struct req *r;

	(void)state;
	push_opts_init(&o);
	p = pusher_for(s, &o);
	assert_int_equal(enqueue(p, ss, 1234, "myapp"), 0);
	WAIT_STATS(p, st, st.sent == 1);
	assert_int_equal(st.enqueued, 1);
	assert_int_equal(st.failed_attempts, 0);
	assert_int_equal(st.queue_len, 0);
	assert_true(st.bytes_sent > 20);
	push_free(p);

	assert_int_equal(server_nreqs(s), 1);
	r = &s->reqs[0];
	assert_true(!strncmp(r->line, "POST /ingest?", 13));
	assert_true(strstr(r->line, " HTTP/1.1") != NULL);
	assert_true(query_get(r->line, "name", v, sizeof(v)));
	assert_string_equal(v, "myapp.cpu{host=testhost}");
	assert_true(query_get(r->line, "from", v, sizeof(v)));
	assert_string_equal(v, "1700000000");
	assert_true(query_get(r->line, "until", v, sizeof(v)));
	assert_string_equal(v, "1700000010");
	assert_true(query_get(r->line, "format", v, sizeof(v)));
	assert_string_equal(v, "pprof");
	assert_true(query_get(r->line, "spyName", v, sizeof(v)));
	assert_string_equal(v, "profd");
	assert_true(query_get(r->line, "sampleRate", v, sizeof(v)));
	assert_string_equal(v, "99");
	assert_true(query_get(r->line, "units", v, sizeof(v)));
	assert_string_equal(v, "samples");
	assert_true(query_get(r->line, "aggregationType", v, sizeof(v)));
	assert_string_equal(v, "sum");
	assert_string_equal(r->ctype, "Content-Type: application/octet-stream");

	/* gzip, and inside a Profile: field 1 (sample_type) first. */
	assert_true(r->body.len > 10);
	assert_int_equal((uint8_t)r->body.data[0], 0x1f);
	assert_int_equal((uint8_t)r->body.data[1], 0x8b);
	buf_init(&raw);
	gunzip(&r->body, &raw);
	assert_int_equal((uint8_t)raw.data[0], 0x0a);
	assert_non_null(memmem(raw.data, raw.len, "leaf_compute", 12));
	assert_non_null(memmem(raw.data, raw.len, "\x32\x03pid", 5)); /* "pid" in the strings */
	assert_int_equal(pprof_total(&raw), 42);
	buf_free(&raw);
	stackset_free(ss);
	server_stop(s);
}

/* The push API: picked by the URL's path (a trailing '/' too) or by
 * opts.protocol for a bare URL, whose path it then adds. */
static void test_connect_request(void **state)
{
	static const int codes[] = { 503 };
	struct server *s = server_start(codes, 1, false);
	struct stackset *ss = profile(3);
	struct push_opts o;
	struct push_stats st;
	struct pusher *p;
	char url[96];
	size_t i;

	(void)state;
	push_opts_init(&o);
	o.backoff_base_ms = 10;
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/push.v1.PusherService/Push/", s->port);
	o.url = url;
	o.hostname = "testhost";
	p = push_new(&o);
	assert_non_null(p);
	assert_int_equal(enqueue(p, ss, 5, "app"), 0);
	WAIT_STATS(p, st, st.sent == 1);
	assert_int_equal(st.retried, 1); /* the 503 */
	push_free(p);

	push_opts_init(&o);
	o.protocol = PUSH_PROTO_CONNECT;
	p = pusher_for(s, &o);
	assert_int_equal(enqueue(p, ss, 5, "app"), 0);
	WAIT_STATS(p, st, st.sent == 1);
	push_free(p);

	assert_int_equal(server_nreqs(s), 3);
	for (i = 0; i < 3; i++) {
		assert_true(!strncmp(s->reqs[i].line, "POST /push.v1.PusherService/Push HTTP/1.1", 41));
		assert_string_equal(s->reqs[i].ctype, "Content-Type: application/proto");
		assert_non_null(memmem(s->reqs[i].body.data, s->reqs[i].body.len, "process_cpu", 11));
	}
	stackset_free(ss);
	server_stop(s);
}

/* Names Pyroscope's labelset parser would refuse are made safe. */
static void test_name_sanitized(void **state)
{
	struct server *s = server_start(NULL, 0, false);
	struct stackset *ss = profile(1);
	struct push_item it = { .ss = ss, .pid = 7, .comm = "kworker/0:1 x,y}", .type = "gpu-driver" };
	struct push_opts o;
	struct push_stats st;
	struct pusher *p;
	char v[512];

	(void)state;
	push_opts_init(&o);
	o.hostname = "web 1";
	p = pusher_for(s, &o);
	assert_int_equal(push_enqueue(p, &it), 0);
	it.comm = NULL;
	it.exe = "/opt/bin/server";
	it.type = NULL;
	assert_int_equal(push_enqueue(p, &it), 0);
	WAIT_STATS(p, st, st.sent == 2);
	push_free(p);
	assert_true(query_get(s->reqs[0].line, "name", v, sizeof(v)));
	assert_string_equal(v, "kworker/0_1_x_y_.gpu-driver{host=web_1}");
	assert_true(query_get(s->reqs[1].line, "name", v, sizeof(v)));
	assert_string_equal(v, "server.cpu{host=web_1}");
	stackset_free(ss);
	server_stop(s);
}

static void test_retry_then_success(void **state)
{
	static const int codes[] = { 503, 503, 200 };
	struct server *s = server_start(codes, 3, false);
	struct stackset *ss = profile(5);
	struct push_opts o;
	struct push_stats st;
	struct pusher *p;
	double gap0, gap1;

	(void)state;
	push_opts_init(&o);
	o.retries = 3;
	o.backoff_base_ms = 100;
	o.backoff_max_ms = 1000;
	p = pusher_for(s, &o);
	assert_int_equal(enqueue(p, ss, 1, "app"), 0);
	WAIT_STATS(p, st, st.sent == 1);
	assert_int_equal(st.failed_attempts, 2);
	assert_int_equal(st.retried, 2);
	assert_int_equal(st.dropped_after_retries, 0);
	assert_non_null(strstr(st.last_error, "503"));
	push_free(p);
	assert_int_equal(server_nreqs(s), 3);
	/* Equal jitter: retry k waits between half and all of base * 2^k. */
	gap0 = (double)(s->reqs[1].at_ns - s->reqs[0].at_ns) / 1e6;
	gap1 = (double)(s->reqs[2].at_ns - s->reqs[1].at_ns) / 1e6;
	assert_true(gap0 >= 50 && gap0 < 100 + 250);
	assert_true(gap1 >= 100 && gap1 < 200 + 250);
	stackset_free(ss);
	server_stop(s);
}

static void test_retries_exhausted(void **state)
{
	static const int codes[] = { 500, 502, 429, 200 };
	struct server *s = server_start(codes, 4, false);
	struct stackset *ss = profile(5);
	struct push_opts o;
	struct push_stats st;
	struct pusher *p;

	(void)state;
	push_opts_init(&o);
	o.retries = 2;
	o.backoff_base_ms = 10;
	o.backoff_max_ms = 20;
	p = pusher_for(s, &o);
	assert_int_equal(enqueue(p, ss, 1, "app"), 0);
	WAIT_STATS(p, st, st.dropped_after_retries == 1);
	assert_int_equal(st.failed_attempts, 3);
	assert_int_equal(st.retried, 2);
	assert_int_equal(st.sent, 0);
	push_free(p);
	assert_int_equal(server_nreqs(s), 3);
	stackset_free(ss);
	server_stop(s);
}

static void test_no_retry_on_400(void **state)
{
	static const int codes[] = { 400 };
	struct server *s = server_start(codes, 1, false);
	struct stackset *ss = profile(5);
	struct push_opts o;
	struct push_stats st;
	struct pusher *p;

	(void)state;
	push_opts_init(&o);
	o.retries = 5;
	o.backoff_base_ms = 10;
	p = pusher_for(s, &o);
	assert_int_equal(enqueue(p, ss, 1, "app"), 0);
	WAIT_STATS(p, st, st.dropped_rejected == 1);
	usleep(200000); /* a retry would come within 10-20 ms */
	push_stats(p, &st);
	assert_int_equal(st.failed_attempts, 1);
	assert_int_equal(st.retried, 0);
	assert_int_equal(st.sent, 0);
	assert_non_null(strstr(st.last_error, "HTTP 400"));
	assert_int_equal(server_nreqs(s), 1);
	/* The next window goes through: the worker did not get stuck. */
	assert_int_equal(enqueue(p, ss, 2, "app"), 0);
	WAIT_STATS(p, st, st.sent == 1);
	push_free(p);
	stackset_free(ss);
	server_stop(s);
}

static void test_connection_refused(void **state)
{
	struct stackset *ss = profile(5);
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	struct push_opts o;
	struct push_stats st;
	struct pusher *p;
	char url[64];
	int fd;

	(void)state;
	/* A port that was just free: nothing listens there. */
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	close(fd);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", ntohs(sa.sin_port));
	push_opts_init(&o);
	o.url = url;
	o.retries = 2;
	o.backoff_base_ms = 10;
	o.backoff_max_ms = 20;
	p = push_new(&o);
	assert_non_null(p);
	assert_int_equal(enqueue(p, ss, 1, "app"), 0);
	WAIT_STATS(p, st, st.dropped_after_retries == 1);
	assert_int_equal(st.failed_attempts, 3);
	assert_true(st.last_error[0] != 0);
	push_free(p);
	stackset_free(ss);
}

static void test_queue_bound(void **state)
{
	struct server *s = server_start(NULL, 0, true);
	struct stackset *ss = profile(5);
	struct push_opts o;
	struct push_stats st;
	struct pusher *p;
	char v[256], comm[16];
	size_t i;
	uint32_t pid;

	(void)state;
	push_opts_init(&o);
	o.max_queue_items = 5;
	p = pusher_for(s, &o);
	/* The first is taken by the worker and hangs on the stalled server. */
	assert_int_equal(enqueue(p, ss, 0, "app"), 0);
	WAIT_STATS(p, st, server_nreqs(s) == 1 && st.queue_len == 0);
	/* Told apart by name: the pid is no part of it. */
	for (i = 1; i < 50; i++) {
		snprintf(comm, sizeof(comm), "app%zu", i);
		assert_int_equal(enqueue(p, ss, (uint32_t)i, comm), 0);
	}
	push_stats(p, &st);
	assert_int_equal(st.enqueued, 50);
	assert_int_equal(st.queue_len, 5);
	assert_int_equal(st.dropped_queue_full, 44);
	server_set_stall(s, false);
	WAIT_STATS(p, st, st.sent == 6);
	push_free(p);
	/* The newest survived: 0 (in flight), then 45..49 in order. */
	assert_int_equal(server_nreqs(s), 6);
	for (i = 0; i < 6; i++) {
		assert_true(query_get(s->reqs[i].line, "name", v, sizeof(v)));
		pid = 0;
		if (i)
			assert_int_equal(sscanf(v, "app%u.", &pid), 1);
		assert_int_equal(pid, i ? 44 + i : 0);
	}
	server_stop(s);

	/* Bounded by bytes too: room for three of these windows. */
	s = server_start(NULL, 0, true);
	o.max_queue_items = 1000;
	o.max_queue_bytes = 3 * 1024;
	p = pusher_for(s, &o);
	for (i = 0; i < 200; i++)
		assert_int_equal(enqueue(p, ss, (uint32_t)i, "app"), 0);
	push_stats(p, &st);
	assert_true(st.queue_bytes <= o.max_queue_bytes);
	assert_true(st.queue_len >= 1 && st.queue_len < 200);
	/* Each window is queued, in flight (at most one) or dropped. */
	assert_int_equal(st.enqueued, 200);
	assert_true(st.dropped_queue_full + st.queue_len >= 199);
	assert_true(st.dropped_queue_full + st.queue_len <= 200);
	/* A window over the whole bound is refused, and counted. */
	{
		struct stackset *big = stackset_new();
		static const uint32_t k[] = { FRAME_NATIVE };
		char name[64];
		const char *n[] = { name };
		uint64_t before = st.dropped_queue_full;

		for (i = 0; i < 400; i++) {
			snprintf(name, sizeof(name), "function_number_%zu_%u", i, rand());
			assert_int_equal(stackset_add_named(big, k, n, 1, 1 + i), 0);
		}
		assert_int_equal(enqueue(p, big, 1, "big"), -E2BIG);
		push_stats(p, &st);
		assert_int_equal(st.dropped_queue_full, before + 1);
		stackset_free(big);
	}
	server_set_stall(s, false);
	push_free(p);
	stackset_free(ss);
	server_stop(s);
}

static void test_shutdown_stuck_server(void **state)
{
	struct server *s = server_start(NULL, 0, true);
	struct stackset *ss = profile(5);
	struct push_opts o;
	struct push_stats st;
	struct pusher *p;
	uint64_t t0;
	double ms;

	(void)state;
	push_opts_init(&o);
	o.shutdown_ms = 300;
	o.timeout_ms = 60000;
	p = pusher_for(s, &o);
	assert_int_equal(enqueue(p, ss, 1, "app"), 0);
	assert_int_equal(enqueue(p, ss, 2, "app"), 0);
	assert_int_equal(enqueue(p, ss, 3, "app"), 0);
	WAIT_STATS(p, st, server_nreqs(s) == 1);
	t0 = now_ns();
	push_free(p);
	ms = (double)(now_ns() - t0) / 1e6;
	assert_true(ms >= 250 && ms < 800);
	server_set_stall(s, false);
	stackset_free(ss);
	server_stop(s);
}

static void test_bad_url(void **state)
{
	struct push_opts o;

	(void)state;
	push_opts_init(&o);
	o.url = "ftp://127.0.0.1/";
	errno = 0;
	assert_null(push_new(&o));
	assert_int_equal(errno, EINVAL);
	o.url = NULL;
	assert_null(push_new(&o));
	push_free(NULL);
}

/* Exact windows out of time buckets wider than the push interval. */
static void test_window(void **state)
{
	struct server *s = server_start(NULL, 0, false);
	const uint64_t sec = 1000000000ull;
	uint64_t t = 1700000005ull * sec;
	struct push_window *w;
	struct push_opts o;
	struct push_stats st;
	struct proctable pt;
	struct aggregate a;
	struct pusher *p;
	struct proc *pr;
	uint32_t ids[2];
	int64_t idx;
	size_t i;
	struct buf raw;
	static const uint64_t want[] = { 5, 3, 4 };

	(void)state;
	push_opts_init(&o);
	p = pusher_for(s, &o);
	proctable_init(&pt, 16, "/proc");
	assert_int_equal(aggregate_own_procs(&pt), 0);
	assert_int_equal(aggregate_init(&a, 10 * sec), 0);
	pr = proctable_get(&pt, (uint32_t)getpid(), "tester");
	assert_non_null(pr);
	ids[0] = (uint32_t)aggregate_frame(&a, FRAME_NATIVE, "main");
	ids[1] = (uint32_t)aggregate_frame(&a, FRAME_NATIVE, "hot_loop");
	idx = aggregate_stack(&a, pr, ids, 2);
	assert_true(idx >= 0);
	w = push_window_new(5 * sec);
	assert_non_null(w);

	assert_int_equal(aggregate_count(&a, pr, (uint32_t)idx, 1, "t", t, 5), 0);
	assert_int_equal(push_window_flush(w, p, &a, &pt, t + sec, 99), 1);
	/* Same 10 s bucket: only the 3 new ones. */
	assert_int_equal(aggregate_count(&a, pr, (uint32_t)idx, 1, "t", t + 1500000000ull, 3), 0);
	assert_int_equal(push_window_flush(w, p, &a, &pt, t + 2 * sec, 99), 1);
	/* Nothing new: nothing sent. */
	assert_int_equal(push_window_flush(w, p, &a, &pt, t + 3 * sec, 99), 0);
	/* Late sample (stamped before the last push) and one in the next bucket. */
	assert_int_equal(aggregate_count(&a, pr, (uint32_t)idx, 1, "t", t + 2500000000ull, 1), 0);
	assert_int_equal(aggregate_count(&a, pr, (uint32_t)idx, 1, "t", t + 6 * sec, 3), 0);
	assert_int_equal(push_window_flush(w, p, &a, &pt, t + 7 * sec, 99), 1);

	WAIT_STATS(p, st, st.sent == 3);
	push_free(p);
	for (i = 0; i < 3; i++) {
		buf_init(&raw);
		gunzip(&s->reqs[i].body, &raw);
		assert_int_equal(pprof_total(&raw), want[i]);
		buf_free(&raw);
	}
	push_window_free(w);
	proctable_free(&pt);
	aggregate_free(&a);
	server_stop(s);
}

/* --push-name: the series is named from the process's workload, through
 * the template; a process whose workload is not known yet by its comm. */
static void test_window_name(void **state)
{
	struct server *s = server_start(NULL, 0, false);
	const uint64_t sec = 1000000000ull;
	uint64_t t = 1700000005ull * sec;
	struct workload_id *wid = calloc(1, sizeof(*wid));
	struct push_window *w;
	struct push_opts o;
	struct push_stats st;
	struct proctable pt;
	struct aggregate a;
	struct pusher *p;
	struct proc *pr;
	uint32_t ids[1];
	int64_t idx;
	char v[512];

	(void)state;
	push_opts_init(&o);
	p = pusher_for(s, &o);
	proctable_init(&pt, 16, "/proc");
	assert_int_equal(aggregate_own_procs(&pt), 0);
	assert_int_equal(aggregate_init(&a, 10 * sec), 0);
	pr = proctable_get(&pt, (uint32_t)getpid(), "tester");
	assert_non_null(pr);
	ids[0] = (uint32_t)aggregate_frame(&a, FRAME_NATIVE, "main");
	idx = aggregate_stack(&a, pr, ids, 1);
	w = push_window_new(5 * sec);
	assert_non_null(w);
	assert_int_equal(push_window_set_name(w, "{nope}"), -EINVAL);
	assert_int_equal(push_window_set_name(w, "{service}-{pod}"), 0);

	assert_int_equal(aggregate_count(&a, pr, (uint32_t)idx, 1, "t", t, 5), 0);
	assert_int_equal(push_window_flush(w, p, &a, &pt, t + sec, 99), 1); /* no workload yet */
	assert_non_null(wid);
	identity_parse_cgroup("0::/system.slice/myapp.service\n", wid);
	identity_derive(wid, pr->comm, "/usr/bin/tester");
	proctable_set_workload(pr, wid);
	assert_int_equal(aggregate_count(&a, pr, (uint32_t)idx, 1, "t", t + 1500000000ull, 3), 0);
	assert_int_equal(push_window_flush(w, p, &a, &pt, t + 2 * sec, 99), 1);
	WAIT_STATS(p, st, st.sent == 2);
	push_free(p);
	assert_true(query_get(s->reqs[0].line, "name", v, sizeof(v)));
	assert_true(!strncmp(v, pr->comm, strlen(pr->comm))); /* as /proc names it */
	assert_true(query_get(s->reqs[1].line, "name", v, sizeof(v)));
	assert_true(!strncmp(v, "myapp.cpu{", 10)); /* the empty pod and its '-' dropped */
	push_window_free(w);
	proctable_free(&pt);
	aggregate_free(&a);
	server_stop(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_request),
		cmocka_unit_test(test_name_sanitized),
		cmocka_unit_test(test_connect_request),
		cmocka_unit_test(test_retry_then_success),
		cmocka_unit_test(test_retries_exhausted),
		cmocka_unit_test(test_no_retry_on_400),
		cmocka_unit_test(test_connection_refused),
		cmocka_unit_test(test_queue_bound),
		cmocka_unit_test(test_shutdown_stuck_server),
		cmocka_unit_test(test_bad_url),
		cmocka_unit_test(test_window),
		cmocka_unit_test(test_window_name),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
