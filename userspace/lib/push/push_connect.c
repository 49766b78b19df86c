/* push_connect: Pyroscope's push API (Pyroscope 1.0 and later), the
 * Connect protocol's unary call over HTTP/1.1 (see push.h):
 *
 *   POST {base}/push.v1.PusherService/Push
 *   Content-Type: application/proto
 *   Connect-Protocol-Version: 1
 *   body: push.v1.PushRequest, one RawProfileSeries per window:
 *         labels __name__, service_name, hostname and the item's own;
 *         one RawSample: the gzipped pprof and a random UUID as its ID.
 *
 * The messages, as tests/data/pyroscope/push.proto writes them:
 *   PushRequest      { repeated RawProfileSeries series = 1; }
 *   RawProfileSeries { repeated types.v1.LabelPair labels = 1;
 *                      repeated RawSample samples = 2; }
 *   LabelPair        { string name = 1; string value = 2; }
 *   RawSample        { bytes raw_profile = 1; string ID = 2; }
 * Connect answers errors with an HTTP status of their own (400, 429, 503
 * ...), so push.c's retry rules hold as they are. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "protobuf.h"
#include "push_int.h"
#include "utf8.h"

#define CONNECT_PATH "/push.v1.PusherService/Push"
#define LABEL_VALUE_MAX 1024 /* bytes; Pyroscope's default limit is 2048 */

enum { PUSH_REQUEST_SERIES = 1 };
enum { SERIES_LABELS = 1, SERIES_SAMPLES };
enum { LABEL_PAIR_NAME = 1, LABEL_PAIR_VALUE };
enum { RAW_SAMPLE_RAW_PROFILE = 1, RAW_SAMPLE_ID };

/* Our profile types by the names Pyroscope gives them (its Go SDKs and
 * eBPF agent: process_cpu, memory; its OTLP ingester: off_cpu); the
 * others get their own name, made a valid metric name. */
static const struct {
	const char *type, *name;
} profile_names[] = {
	{ "cpu", "process_cpu" },
	{ "off-cpu", "off_cpu" },
	{ "memory", "memory" },
};

static void put_profile_name(struct buf *b, const char *type)
{
	size_t i;

	for (i = 0; i < sizeof(profile_names) / sizeof(profile_names[0]); i++) {
		if (!strcmp(type, profile_names[i].type)) {
			buf_puts(b, profile_names[i].name);
			return;
		}
	}
	/* "gpu-driver" -> "gpu_driver", "cuda-calls" -> "cuda_calls" */
	for (i = 0; type[i] && i < PUSH_LABEL_NAME_MAX; i++) {
		unsigned char c = (unsigned char)type[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
			  (i && c >= '0' && c <= '9');

		buf_put_u8(b, ok ? c : '_');
	}
	if (!i)
		buf_puts(b, "unknown");
}

/* A LabelPair into series; the value valid UTF-8 (proto3 strings must be)
 * and cut at a character boundary to at most LABEL_VALUE_MAX bytes sent. */
static void put_label(struct buf *series, struct buf *tmp, const char *name, const char *value)
{
	size_t n = 0, sent = 0, k, w;

	while (value[n]) {
		k = utf8_seq_len(value + n);
		w = k ? k : 3; /* an invalid byte becomes U+FFFD */
		if (sent + w > LABEL_VALUE_MAX)
			break;
		n += k ? k : 1;
		sent += w;
	}
	buf_reset(tmp);
	pb_put_string(tmp, LABEL_PAIR_NAME, name);
	pb_put_key(tmp, LABEL_PAIR_VALUE, PB_WIRE_LEN);
	pb_put_varint(tmp, utf8_clean_len(value, n));
	utf8_put_clean(tmp, value, n);
	if (tmp->failed)
		series->failed = true;
	pb_put_bytes(series, SERIES_LABELS, tmp->data, tmp->len);
}

static void put_labels(struct buf *series, const struct push_target *t,
		       const struct push_item *it)
{
	static const char *const taken[] = { "service_name", "hostname", NULL };
	struct buf tmp, name;
	size_t i, sent = 0;

	buf_init(&tmp);
	buf_init(&name);
	put_profile_name(&name, push_type_of(it));
	if (buf_cstr(&name))
		put_label(series, &tmp, "__name__", name.data);
	put_label(series, &tmp, "service_name", push_service_of(it));
	put_label(series, &tmp, "hostname", t->hostname);
	for (i = 0; i < it->n_labels && sent < PUSH_MAX_LABELS; i++) {
		if (!push_label_name(it, i, taken, &name))
			continue;
		put_label(series, &tmp, name.data, it->labels[i].value);
		sent++;
	}
	if (name.failed || tmp.failed)
		series->failed = true;
	buf_free(&tmp);
	buf_free(&name);
}

/* A version 4 UUID, or "" when the kernel has no randomness to spare:
 * the ID only names the profile in the server's logs. */
static void make_id(char out[37])
{
	uint8_t r[16];
	size_t i, n = 0;

	out[0] = 0;
	if (getrandom(r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r))
		return;
	r[6] = (uint8_t)((r[6] & 0x0f) | 0x40);
	r[8] = (uint8_t)((r[8] & 0x3f) | 0x80);
	for (i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[n++] = '-';
		n += (size_t)snprintf(out + n, 3, "%02x", r[i]);
	}
}

static char *build_url(const struct push_target *t)
{
	size_t n = strlen(t->base), k = strlen(CONNECT_PATH);
	struct buf url;
	char *out = NULL;

	buf_init(&url);
	buf_puts(&url, t->base);
	if (n < k || strcmp(t->base + n - k, CONNECT_PATH))
		buf_puts(&url, CONNECT_PATH);
	if (buf_cstr(&url))
		out = strdup(url.data);
	buf_free(&url);
	return out;
}

int push_encode_connect(const struct push_target *t, const struct push_item *it,
			struct push_request *out)
{
	struct buf profile, sample, series;
	char id[37];
	int err;

	buf_init(&profile);
	buf_init(&sample);
	buf_init(&series);
	err = push_render(it, &profile);
	if (!err) {
		pb_put_bytes(&sample, RAW_SAMPLE_RAW_PROFILE, profile.data, profile.len);
		make_id(id);
		if (id[0])
			pb_put_string(&sample, RAW_SAMPLE_ID, id);
		put_labels(&series, t, it);
		pb_put_bytes(&series, SERIES_SAMPLES, sample.data, sample.len);
		pb_put_bytes(&out->body, PUSH_REQUEST_SERIES, series.data, series.len);
		if (sample.failed || series.failed || out->body.failed)
			err = -ENOMEM;
	}
	buf_free(&profile);
	buf_free(&sample);
	buf_free(&series);
	if (err)
		return err;
	out->url = build_url(t);
	out->content_type = "application/proto";
	out->header = "Connect-Protocol-Version: 1";
	return out->url ? 0 : -ENOMEM;
}
