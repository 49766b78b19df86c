/* push_otlp: OpenTelemetry profiles over OTLP/HTTP, opentelemetry-proto
 * v1.11.0 (profiles signal v1development; our own subset of its messages
 * is tests/data/otlp/profiles.proto):
 *
 *   POST {base}/v1development/profiles
 *   Content-Type: application/x-protobuf, Content-Encoding: gzip
 *   body: ExportProfilesServiceRequest, gzipped
 *
 * One request per window of one workload and profile type: one
 * ResourceProfiles (service.name, host.name, process.executable.*,
 * container.id, k8s.pod.uid and the series labels as resource
 * attributes: the workload, so a restart or a worker pool stays one
 * series; the pid is each sample's attribute process.pid), one
 * ScopeProfiles "profd", one Profile, and the request's dictionary
 * (push_otlp_dict.c).  Sample and period types by unit:
 *   samples      (samples, count), period (cpu, nanoseconds) = 1e9 / rate
 *   nanoseconds  (<type>, nanoseconds), period 1 of the same
 *   bytes        (<type>, bytes), period 1 of the same
 *   calls, other (<type>, count), period 1 of the same
 * with '-' in profd's type names written '_' ("off-cpu" -> "off_cpu", as
 * the proto's examples spell them).  Every sample carries one value. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "push_int.h"
#include "push_otlp_dict.h"
#include "protobuf.h"
#include "render_pprof.h"
#include "stackset.h"
#include "utf8.h"

#define OTLP_PATH "/v1development/profiles"
#define DEFAULT_RATE_HZ 100

/* Field numbers of the pinned version (tests/data/otlp/profiles.proto). */
enum { REQUEST_RESOURCE_PROFILES = 1, REQUEST_DICTIONARY };
enum { RESOURCE_PROFILES_RESOURCE = 1, RESOURCE_PROFILES_SCOPE_PROFILES };
enum { RESOURCE_ATTRIBUTES = 1 };
enum { SCOPE_PROFILES_SCOPE = 1, SCOPE_PROFILES_PROFILES };
enum { SCOPE_NAME = 1 };
enum { KEYVALUE_KEY = 1, KEYVALUE_VALUE };
enum { ANYVALUE_STRING = 1 };
enum {
	PROFILE_SAMPLE_TYPE = 1,
	PROFILE_SAMPLES,
	PROFILE_TIME_UNIX_NANO,
	PROFILE_DURATION_NANO,
	PROFILE_PERIOD_TYPE,
	PROFILE_PERIOD
};
enum { VALUETYPE_TYPE = 1, VALUETYPE_UNIT };
enum { SAMPLE_STACK = 1, SAMPLE_ATTRIBUTES, SAMPLE_VALUES = 4 };

#define NS_PER_S 1000000000ull

/* Series labels that have a resource attribute of their own in the
 * semantic conventions (besides being sent under their own name). */
static const struct {
	const char *label, *key;
} semconv_labels[] = {
    {"container", "container.id"},
    {"pod", "k8s.pod.uid"},
};

struct otlp_ctx {
	const struct push_target *t;
	const struct push_item *it;
	struct otlp_dict *dict;
	struct buf req, resource, scope, profile, msg, sub, text;
};

/* Append the message in *from as field of *to, and empty *from. */
static void nest(struct buf *to, uint32_t field, struct buf *from)
{
	if (from->failed)
		to->failed = true;
	else
		pb_put_bytes(to, field, from->data ? from->data : "", from->len);
	buf_reset(from);
}

/* A KeyValue with a string AnyValue into c->resource, if value is not
 * empty.  Protobuf strings are UTF-8: anything else in it is replaced. */
static void put_str_attr(struct otlp_ctx *c, const char *key, const char *value)
{
	if (!value || !value[0])
		return;
	pb_put_string(&c->sub, KEYVALUE_KEY, key);
	buf_reset(&c->text);
	utf8_put_clean(&c->text, value, strlen(value));
	if (c->text.failed)
		c->msg.failed = true;
	pb_put_bytes(&c->msg, ANYVALUE_STRING, c->text.data ? c->text.data : "", c->text.len);
	nest(&c->sub, KEYVALUE_VALUE, &c->msg);
	nest(&c->resource, RESOURCE_ATTRIBUTES, &c->sub);
}

static const char *basename_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash && slash[1] ? slash + 1 : path;
}

static void put_resource(struct otlp_ctx *c)
{
	const struct push_item *it = c->it;
	size_t i, j;

	put_str_attr(c, "service.name", push_service_of(it));
	put_str_attr(c, "host.name", c->t->hostname);
	if (it->exe && it->exe[0]) {
		put_str_attr(c, "process.executable.name", basename_of(it->exe));
		put_str_attr(c, "process.executable.path", it->exe);
	} else {
		put_str_attr(c, "process.executable.name", it->comm);
	}
	for (i = 0; i < it->n_labels; i++)
		for (j = 0; j < sizeof(semconv_labels) / sizeof(semconv_labels[0]); j++)
			if (it->labels[i].name &&
			    !strcmp(it->labels[i].name, semconv_labels[j].label))
				put_str_attr(c, semconv_labels[j].key, it->labels[i].value);
	for (i = 0; i < it->n_labels; i++)
		if (it->labels[i].name && it->labels[i].name[0])
			put_str_attr(c, it->labels[i].name, it->labels[i].value);
}

static void put_value_type(struct otlp_ctx *c, uint32_t field, const char *type, const char *unit)
{
	int32_t ti = otlp_dict_string(c->dict, type), ui = otlp_dict_string(c->dict, unit);

	if (ti < 0 || ui < 0) {
		c->profile.failed = true;
		return;
	}
	pb_put_uint64(&c->msg, VALUETYPE_TYPE, (uint64_t)ti);
	pb_put_uint64(&c->msg, VALUETYPE_UNIT, (uint64_t)ui);
	nest(&c->profile, field, &c->msg);
}

static bool is(const char *s, const char *want)
{
	return s && !strcmp(s, want);
}

/* Sample type, period type and period: see the top of the file. */
static void put_types(struct otlp_ctx *c)
{
	const struct stackset *ss = c->it->ss;
	const char *unit = ss->unit && ss->unit[0] ? ss->unit : "samples";
	char type[64], *p;
	uint32_t rate = ss->rate_hz ? ss->rate_hz : DEFAULT_RATE_HZ;

	snprintf(type, sizeof(type), "%s", push_type_of(c->it));
	for (p = type; *p; p++)
		if (*p == '-')
			*p = '_';
	if (is(unit, "samples")) {
		put_value_type(c, PROFILE_SAMPLE_TYPE, "samples", "count");
		put_value_type(c, PROFILE_PERIOD_TYPE, type, "nanoseconds");
		pb_put_int64(&c->profile, PROFILE_PERIOD, (int64_t)((NS_PER_S + rate / 2) / rate));
		return;
	}
	if (!is(unit, "nanoseconds") && !is(unit, "bytes"))
		unit = "count";
	put_value_type(c, PROFILE_SAMPLE_TYPE, type, unit);
	put_value_type(c, PROFILE_PERIOD_TYPE, type, unit);
	pb_put_int64(&c->profile, PROFILE_PERIOD, 1);
}

static int64_t clamp64(uint64_t v)
{
	return v > INT64_MAX ? INT64_MAX : (int64_t)v;
}

/* One Sample per stack of the dictionary's stack table: stacks of the
 * stackset that came out alike (the same names) are one sample. */
static int put_samples(struct otlp_ctx *c)
{
	const struct stackset *ss = c->it->ss;
	bool is_signed = stackset_signed(ss);
	int32_t pid = otlp_dict_attr_int(c->dict, "process.pid", c->it->pid);
	int32_t *stack_of = calloc(ss->nstacks ? ss->nstacks : 1, sizeof(*stack_of));
	/* A new dictionary: at most one stack index per stack, from 1. */
	int64_t *sum = calloc(ss->nstacks + 1, sizeof(*sum));
	bool *done = calloc(ss->nstacks + 1, sizeof(*done));
	size_t k;
	int err = -ENOMEM;

	if (!stack_of || !sum || !done || pid < 0)
		goto out;
	err = otlp_dict_add_stacks(c->dict, ss, stack_of);
	if (err)
		goto out;
	for (k = 0; k < ss->nstacks; k++) {
		/* mmap's frees are negative: int64 as pprof's, no clamp. */
		uint64_t n = ss->stacks[k].count;

		sum[stack_of[k]] += is_signed ? (int64_t)n : clamp64(n);
	}
	for (k = 0; k < ss->nstacks; k++) {
		int32_t s = stack_of[k];

		if (done[s] || !sum[s])
			continue;
		done[s] = true;
		pb_put_uint64(&c->msg, SAMPLE_STACK, (uint64_t)s);
		pb_put_packed_uint64(&c->msg, SAMPLE_ATTRIBUTES, &(uint64_t){(uint64_t)pid}, 1);
		pb_put_packed_int64(&c->msg, SAMPLE_VALUES, &sum[s], 1);
		nest(&c->profile, PROFILE_SAMPLES, &c->msg);
	}
out:
	free(stack_of);
	free(sum);
	free(done);
	return err;
}

static int put_profile(struct otlp_ctx *c)
{
	const struct push_item *it = c->it;
	uint64_t from = it->from_ns ? it->from_ns : it->ss->start_ns;
	uint64_t until = it->until_ns ? it->until_ns : it->ss->end_ns;
	int err;

	put_types(c);
	err = put_samples(c);
	if (err)
		return err;
	pb_put_fixed64(&c->profile, PROFILE_TIME_UNIX_NANO, from);
	if (until > from)
		pb_put_uint64(&c->profile, PROFILE_DURATION_NANO, until - from);
	return 0;
}

static int encode(struct otlp_ctx *c, struct buf *raw)
{
	int err;

	c->dict = otlp_dict_new();
	if (!c->dict)
		return -ENOMEM;
	err = put_profile(c);
	if (err)
		return err;
	pb_put_string(&c->msg, SCOPE_NAME, "profd");
	nest(&c->scope, SCOPE_PROFILES_SCOPE, &c->msg);
	nest(&c->scope, SCOPE_PROFILES_PROFILES, &c->profile);

	put_resource(c);
	nest(&c->req, RESOURCE_PROFILES_RESOURCE, &c->resource);
	nest(&c->req, RESOURCE_PROFILES_SCOPE_PROFILES, &c->scope);
	nest(raw, REQUEST_RESOURCE_PROFILES, &c->req);

	/* Last: every string above is in it. */
	otlp_dict_encode(c->dict, &c->req);
	nest(raw, REQUEST_DICTIONARY, &c->req);
	return raw->failed ? -ENOMEM : 0;
}

int push_encode_otlp(const struct push_target *t, const struct push_item *it,
		     struct push_request *out)
{
	struct otlp_ctx c = {.t = t, .it = it};
	struct buf raw;
	size_t len;
	int err;

	buf_init(&raw);
	err = encode(&c, &raw);
	if (!err)
		err = pprof_gzip(raw.data ? raw.data : "", raw.len, &out->body);
	if (!err) {
		len = strlen(t->base) + sizeof(OTLP_PATH);
		out->url = malloc(len);
		if (out->url)
			snprintf(out->url, len, "%s%s", t->base, OTLP_PATH);
		else
			err = -ENOMEM;
	}
	out->content_type = "application/x-protobuf";
	out->content_encoding = "gzip";
	otlp_dict_free(c.dict);
	buf_free(&raw);
	buf_free(&c.req);
	buf_free(&c.resource);
	buf_free(&c.scope);
	buf_free(&c.profile);
	buf_free(&c.msg);
	buf_free(&c.sub);
	buf_free(&c.text);
	return err;
}
