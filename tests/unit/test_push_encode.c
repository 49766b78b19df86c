/* push encoders without a server: push_encode_connect's PushRequest
 * (URL, headers, labels, the profile inside with its pid sample label)
 * decoded field by field, and push_encode_ingest's series name with the
 * item's labels.  tests/data/pyroscope/push.proto names the fields. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include <cmocka.h>

#include "buf.h"
#include "framename.h"
#include "push_int.h"
#include "stackset.h"

#define MAX_FIELDS 64

/* One field of a message: a varint's value or a length-delimited span. */
struct field {
	uint32_t num;
	uint64_t v;
	const uint8_t *data;
	size_t len;
};

static uint64_t varint(const uint8_t **p, const uint8_t *end)
{
	uint64_t v = 0;
	int shift = 0;

	for (;;) {
		uint8_t c;

		assert_true(*p < end);
		c = *(*p)++;
		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return v;
		shift += 7;
		assert_true(shift < 64);
	}
}

/* The fields of data[0..len), in order; only varint and length-delimited
 * ones (all that these messages use).  Returns how many. */
static size_t fields(const void *data, size_t len, struct field *out, size_t max)
{
	const uint8_t *p = data, *end = p + len;
	size_t n = 0;

	while (p < end) {
		uint64_t key = varint(&p, end);

		assert_true(n < max);
		out[n].num = (uint32_t)(key >> 3);
		if ((key & 7) == 0) {
			out[n].v = varint(&p, end);
		} else {
			assert_int_equal(key & 7, 2);
			out[n].len = varint(&p, end);
			assert_true(out[n].len <= (size_t)(end - p));
			out[n].data = p;
			p += out[n].len;
		}
		n++;
	}
	assert_true(p == end);
	return n;
}

static bool str_is(const struct field *f, const char *s)
{
	return f->len == strlen(s) && !memcmp(f->data, s, f->len);
}

static void gunzip(const void *in, size_t len, struct buf *out)
{
	z_stream z = { 0 };
	char tmp[65536];
	int rc;

	assert_int_equal(inflateInit2(&z, 31), Z_OK);
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)len;
	do {
		z.next_out = (Bytef *)tmp;
		z.avail_out = sizeof(tmp);
		rc = inflate(&z, Z_NO_FLUSH);
		assert_true(rc == Z_OK || rc == Z_STREAM_END);
		buf_append(out, tmp, sizeof(tmp) - z.avail_out);
	} while (rc != Z_STREAM_END);
	inflateEnd(&z);
}

static struct stackset *profile(const char *type, const char *unit)
{
	static const uint32_t kinds[] = { FRAME_NATIVE, FRAME_NATIVE };
	static const char *const a[] = { "main", "leaf_a" }, *const b[] = { "main", "leaf_b" };
	struct stackset *ss = stackset_new();

	assert_non_null(ss);
	assert_int_equal(stackset_add_named(ss, kinds, a, 2, 30), 0);
	assert_int_equal(stackset_add_named(ss, kinds, b, 2, 12), 0);
	stackset_set_str(&ss->type, type);
	stackset_set_str(&ss->unit, unit);
	ss->rate_hz = 99;
	ss->start_ns = 1700000000ull * 1000000000ull;
	ss->end_ns = ss->start_ns + 10ull * 1000000000ull;
	return ss;
}

/* Every sample of the gzipped pprof carries the numeric label pid = want,
 * and the values add up to total. */
static void check_pprof(const void *gz, size_t len, int64_t want, uint64_t total)
{
	struct field f[MAX_FIELDS * 4], s[16], l[8];
	struct buf raw;
	const struct field *strings[64];
	size_t n, i, j, k, nstr = 0, nsamples = 0;
	uint64_t sum = 0;

	assert_true(len > 2 && ((const uint8_t *)gz)[0] == 0x1f && ((const uint8_t *)gz)[1] == 0x8b);
	buf_init(&raw);
	gunzip(gz, len, &raw);
	n = fields(raw.data, raw.len, f, MAX_FIELDS * 4);
	for (i = 0; i < n; i++)
		if (f[i].num == 6 && nstr < 64)
			strings[nstr++] = &f[i];
	for (i = 0; i < n; i++) {
		bool labeled = false;

		if (f[i].num != 2)
			continue;
		nsamples++;
		k = fields(f[i].data, f[i].len, s, 16);
		for (j = 0; j < k; j++) {
			if (s[j].num == 2) { /* packed values: the first */
				const uint8_t *p = s[j].data;

				sum += varint(&p, s[j].data + s[j].len);
			}
			if (s[j].num == 3) { /* Label { key = 1, num = 3 } */
				size_t m = fields(s[j].data, s[j].len, l, 8);

				assert_int_equal(m, 2);
				assert_int_equal(l[0].num, 1);
				assert_true(l[0].v < nstr);
				assert_true(str_is(strings[l[0].v], "pid"));
				assert_int_equal(l[1].num, 3);
				assert_int_equal((int64_t)l[1].v, want);
				labeled = true;
			}
		}
		assert_int_equal(labeled, want != 0);
	}
	assert_int_equal(nsamples, 2);
	assert_int_equal(sum, total);
	buf_free(&raw);
}

struct label {
	char name[80], value[1100];
};

/* Decode a PushRequest: exactly one series with one sample; its labels
 * into out (returns how many), the profile checked for pid. */
static size_t decode_push(const struct buf *body, struct label *out, size_t max, uint32_t pid,
			  uint64_t total)
{
	struct field req[4], series[MAX_FIELDS], pair[4], sample[4];
	size_t n, i, j, nl = 0, nsamples = 0;

	n = fields(body->data, body->len, req, 4);
	assert_int_equal(n, 1);
	assert_int_equal(req[0].num, 1);
	n = fields(req[0].data, req[0].len, series, MAX_FIELDS);
	for (i = 0; i < n; i++) {
		if (series[i].num == 1) {
			assert_int_equal(fields(series[i].data, series[i].len, pair, 4), 2);
			assert_int_equal(pair[0].num, 1);
			assert_int_equal(pair[1].num, 2);
			assert_true(nl < max && pair[0].len < sizeof(out->name) &&
				    pair[1].len < sizeof(out->value));
			memcpy(out[nl].name, pair[0].data, pair[0].len);
			out[nl].name[pair[0].len] = 0;
			memcpy(out[nl].value, pair[1].data, pair[1].len);
			out[nl].value[pair[1].len] = 0;
			nl++;
		} else {
			assert_int_equal(series[i].num, 2);
			nsamples++;
			j = fields(series[i].data, series[i].len, sample, 4);
			assert_int_equal(j, 2);
			assert_int_equal(sample[0].num, 1);
			check_pprof(sample[0].data, sample[0].len, pid, total);
			assert_int_equal(sample[1].num, 2); /* ID: a version 4 UUID */
			assert_int_equal(sample[1].len, 36);
			assert_int_equal(sample[1].data[14], '4');
			assert_int_equal(sample[1].data[8], '-');
		}
	}
	assert_int_equal(nsamples, 1);
	return nl;
}

static const char *label_of(const struct label *l, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(l[i].name, name))
			return l[i].value;
	return NULL;
}

static void request_free(struct push_request *r)
{
	free(r->url);
	buf_free(&r->body);
	memset(r, 0, sizeof(*r));
}

static const struct push_label item_labels[] = {
	{ "unit", "api.service" },
	{ "container-id", "c0ffee" },
	{ "container_id", "shadowed" }, /* cleans to an earlier name: dropped */
	{ "__name__", "evil" },        /* reserved */
	{ "service_name", "other" },   /* the encoder's own */
	{ "hostname", "other" },
	{ "host", "other" },           /* /ingest's own; kept by the push API */
	{ "empty", "" },
	{ "9lives", "cat" },
	{ "bad_utf8", "a\xff" "b" },
};
#define N_ITEM_LABELS (sizeof(item_labels) / sizeof(item_labels[0]))

static void test_connect(void **state)
{
	struct stackset *ss = profile("cpu", "samples");
	struct push_target t = { .base = "http://127.0.0.1:4040", .hostname = "web-1" };
	struct push_item it = { .ss = ss, .pid = 4242, .service = "api", .comm = "python3",
				.labels = item_labels, .n_labels = N_ITEM_LABELS };
	struct push_request r = { 0 };
	struct label l[32];
	size_t n;

	(void)state;
	assert_int_equal(push_encode_connect(&t, &it, &r), 0);
	assert_string_equal(r.url, "http://127.0.0.1:4040/push.v1.PusherService/Push");
	assert_string_equal(r.content_type, "application/proto");
	assert_null(r.content_encoding);
	assert_string_equal(r.header, "Connect-Protocol-Version: 1");
	n = decode_push(&r.body, l, 32, 4242, 42);
	assert_int_equal(n, 8);
	assert_string_equal(l[0].name, "__name__");
	assert_string_equal(l[0].value, "process_cpu");
	assert_string_equal(l[1].name, "service_name");
	assert_string_equal(l[1].value, "api");
	assert_string_equal(l[2].name, "hostname");
	assert_string_equal(l[2].value, "web-1");
	assert_string_equal(label_of(l, n, "unit"), "api.service");
	assert_string_equal(label_of(l, n, "container_id"), "c0ffee");
	assert_string_equal(label_of(l, n, "host"), "other");
	assert_string_equal(label_of(l, n, "_9lives"), "cat");
	assert_string_equal(label_of(l, n, "bad_utf8"), "a\xef\xbf\xbd" "b");
	assert_null(label_of(l, n, "empty"));
	request_free(&r);

	/* Long values are cut to 1024 bytes at a character boundary,
	 * counting what is sent (an invalid byte is sent as 3). */
	{
		static char longv[3000];
		static const struct push_label big[] = { { "a", longv } };

		memset(longv, '\xff', 1500);
		memset(longv + 1500, 'x', 1499);
		it.labels = big;
		it.n_labels = 1;
		assert_int_equal(push_encode_connect(&t, &it, &r), 0);
		n = decode_push(&r.body, l, 32, 4242, 42);
		assert_int_equal(strlen(label_of(l, n, "a")), 1023); /* 341 x U+FFFD */
		request_free(&r);
		/* "\xc3\xa9" (é) 512 times: 1024 bytes exactly */
		for (size_t i = 0; i < 513; i++)
			memcpy(longv + 2 * i, "\xc3\xa9", 2);
		longv[1026] = 0;
		assert_int_equal(push_encode_connect(&t, &it, &r), 0);
		n = decode_push(&r.body, l, 32, 4242, 42);
		assert_int_equal(strlen(label_of(l, n, "a")), 1024);
		request_free(&r);
	}

	/* The full path given is kept as it is; no service: the comm. */
	t.base = "https://p.example/prefix/push.v1.PusherService/Push";
	it.service = NULL;
	it.labels = NULL;
	it.n_labels = 0;
	assert_int_equal(push_encode_connect(&t, &it, &r), 0);
	assert_string_equal(r.url, "https://p.example/prefix/push.v1.PusherService/Push");
	n = decode_push(&r.body, l, 32, 4242, 42);
	assert_int_equal(n, 3);
	assert_string_equal(label_of(l, n, "service_name"), "python3");
	request_free(&r);
	stackset_free(ss);
}

/* Our profile types by Pyroscope's names. */
static void test_connect_names(void **state)
{
	static const struct {
		const char *type, *unit, *name;
	} cases[] = {
		{ "cpu", "samples", "process_cpu" },
		{ "off-cpu", "nanoseconds", "off_cpu" },
		{ "memory", "bytes", "memory" },
		{ "gpu-driver", "nanoseconds", "gpu_driver" },
		{ "cuda-calls", "calls", "cuda_calls" },
	};
	struct push_target t = { .base = "http://h", .hostname = "h" };
	struct push_request r = { 0 };
	struct label l[8];
	size_t i, n;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct stackset *ss = profile(cases[i].type, cases[i].unit);
		struct push_item it = { .ss = ss, .pid = 1, .comm = "x" };

		assert_int_equal(push_encode_connect(&t, &it, &r), 0);
		n = decode_push(&r.body, l, 8, 1, 42);
		assert_string_equal(label_of(l, n, "__name__"), cases[i].name);
		request_free(&r);
		/* it->type wins over the stackset's */
		it.type = "off-cpu";
		assert_int_equal(push_encode_connect(&t, &it, &r), 0);
		n = decode_push(&r.body, l, 8, 1, 42);
		assert_string_equal(label_of(l, n, "__name__"), "off_cpu");
		request_free(&r);
		stackset_free(ss);
	}
}

/* The value of query parameter key in url, percent-decoded. */
static void query_get(const char *url, const char *key, char *out, size_t size)
{
	const char *q = strchr(url, '?');
	size_t klen = strlen(key), n = 0;

	assert_non_null(q);
	for (q++; *q; q += strcspn(q, "&") + (q[strcspn(q, "&")] ? 1 : 0)) {
		if (strncmp(q, key, klen) || q[klen] != '=')
			continue;
		for (q += klen + 1; *q && *q != '&' && n + 1 < size; q++) {
			if (*q == '%') {
				char hx[3] = { q[1], q[2], 0 };

				out[n++] = (char)strtol(hx, NULL, 16);
				q += 2;
			} else {
				out[n++] = *q;
			}
		}
		out[n] = 0;
		return;
	}
	fail_msg("no %s in %s", key, url);
}

static void test_ingest_labels(void **state)
{
	struct stackset *ss = profile("cpu", "samples");
	struct push_target t = { .base = "http://127.0.0.1:4040", .hostname = "web-1" };
	struct push_item it = { .ss = ss, .pid = 4242, .service = "api", .comm = "python3",
				.labels = item_labels, .n_labels = N_ITEM_LABELS };
	struct push_request r = { 0 };
	char v[512];

	(void)state;
	assert_int_equal(push_encode_ingest(&t, &it, &r), 0);
	assert_true(!strncmp(r.url, "http://127.0.0.1:4040/ingest?", 29));
	assert_string_equal(r.content_type, "application/octet-stream");
	query_get(r.url, "name", v, sizeof(v));
	/* No pid, no comm: one series for the workload.  Values cleaned as
	 * Pyroscope's labelset parser needs (no ',', '}', '{', '=', blank,
	 * byte outside ASCII). */
	assert_string_equal(v, "api.cpu{host=web-1,unit=api.service,container_id=c0ffee,"
			       "service_name=other,hostname=other,_9lives=cat,bad_utf8=a_b}");
	check_pprof(r.body.data, r.body.len, 4242, 42);
	request_free(&r);

	/* Labels beyond PUSH_MAX_LABELS are not sent; the pid 0 is none. */
	{
		struct push_label many[PUSH_MAX_LABELS + 5];
		char names[PUSH_MAX_LABELS + 5][8];
		size_t i, commas = 0;

		for (i = 0; i < PUSH_MAX_LABELS + 5; i++) {
			snprintf(names[i], sizeof(names[i]), "l%zu", i);
			many[i].name = names[i];
			many[i].value = "v";
		}
		it.labels = many;
		it.n_labels = PUSH_MAX_LABELS + 5;
		it.pid = 0;
		assert_int_equal(push_encode_ingest(&t, &it, &r), 0);
		query_get(r.url, "name", v, sizeof(v));
		for (i = 0; v[i]; i++)
			commas += v[i] == ',';
		assert_int_equal(commas, PUSH_MAX_LABELS);
		check_pprof(r.body.data, r.body.len, 0, 42);
		request_free(&r);
	}
	/* Many labels of one name: one sent, the rest checked in time
	 * quadratic in their number (each against the earlier ones). */
	{
		static struct push_label same[2000];
		size_t i;

		for (i = 0; i < 2000; i++) {
			same[i].name = i & 1 ? "a-b" : "a_b";
			same[i].value = "v";
		}
		it.labels = same;
		it.n_labels = 2000;
		assert_int_equal(push_encode_ingest(&t, &it, &r), 0);
		query_get(r.url, "name", v, sizeof(v));
		assert_string_equal(v, "api.cpu{host=web-1,a_b=v}");
		request_free(&r);
	}
	stackset_free(ss);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_connect),
		cmocka_unit_test(test_connect_names),
		cmocka_unit_test(test_ingest_labels),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
