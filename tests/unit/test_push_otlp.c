/* push_encode_otlp: a small stackset with series labels encoded as an OTLP
 * ExportProfilesServiceRequest (opentelemetry-proto v1.11.0), gunzipped and
 * read back with a small reader: resource attributes, scope, sample and
 * period types, and every sample's stack through the dictionary (stack ->
 * locations -> lines -> functions -> strings, mappings and their build
 * ids).  Where protoc is installed the body must also decode with
 * tests/data/otlp/profiles.proto. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>

#include "buf.h"
#include "push_int.h"
#include "stackset.h"

/* ---- a reader, just enough for the messages profd writes ---- */

struct field {
	uint32_t num, wire;
	uint64_t v;	  /* varint or fixed64 */
	const uint8_t *p; /* length-delimited payload */
	size_t len;
};

struct msg {
	const uint8_t *p, *end;
};

static uint64_t rd_varint(const uint8_t **p, const uint8_t *end)
{
	uint64_t v = 0;

	for (int shift = 0; shift < 70; shift += 7) {
		assert_true(*p < end);
		v |= (uint64_t)(**p & 0x7f) << shift;
		if (!(*(*p)++ & 0x80))
			return v;
	}
	fail_msg("varint too long");
	return 0;
}

static bool next(struct msg *m, struct field *f)
{
	uint64_t key;

	if (m->p >= m->end)
		return false;
	key = rd_varint(&m->p, m->end);
	f->num = (uint32_t)(key >> 3);
	f->wire = (uint32_t)(key & 7);
	f->p = NULL;
	f->len = 0;
	switch (f->wire) {
	case 0:
		f->v = rd_varint(&m->p, m->end);
		break;
	case 1:
		assert_true(m->end - m->p >= 8);
		f->v = 0;
		for (int i = 7; i >= 0; i--)
			f->v = f->v << 8 | m->p[i];
		m->p += 8;
		break;
	case 2:
		f->len = rd_varint(&m->p, m->end);
		assert_true(f->len <= (size_t)(m->end - m->p));
		f->p = m->p;
		m->p += f->len;
		break;
	default:
		fail_msg("wire type %u", f->wire);
	}
	return true;
}

static struct msg sub(const struct field *f)
{
	assert_int_equal(f->wire, 2);
	return (struct msg){f->p, f->p + f->len};
}

/* A packed (or a single unpacked) repeated varint field. */
static size_t rd_packed(const struct field *f, int64_t *out, size_t max)
{
	struct msg m;
	size_t n = 0;

	if (f->wire == 0) {
		out[0] = (int64_t)f->v;
		return 1;
	}
	m = sub(f);
	while (m.p < m.end && n < max)
		out[n++] = (int64_t)rd_varint(&m.p, m.end);
	return n;
}

#define MAXN 64

struct dict {
	char strs[MAXN][96];
	size_t nstrs;
	int64_t fn_name[MAXN], fn_file[MAXN];
	size_t nfns;
	struct {
		int64_t mapping, fn, line, attrs[4];
		uint64_t address;
		size_t nattrs;
	} locs[MAXN];
	size_t nlocs;
	struct {
		int64_t locs[16];
		size_t n;
	} stacks[MAXN];
	size_t nstacks;
	struct {
		int64_t file, attrs[4];
		uint64_t limit;
		size_t nattrs;
	} maps[MAXN];
	size_t nmaps;
	struct {
		int64_t key, ival;
		char value[96];
	} attrs[MAXN];
	size_t nattrs;
	size_t nlinks, link0_len;
};

struct request {
	struct dict d;
	size_t nresources, nscopes, nprofiles;
	char res_key[MAXN][48], res_val[MAXN][96];
	int64_t res_int[MAXN];
	size_t nres;
	char scope[32];
	int64_t sample_type[2], period_type[2], period;
	uint64_t time, duration;
	int64_t sample_stack[MAXN], sample_value[MAXN];
	int64_t sample_attrs[MAXN][4];
	size_t sample_nattrs[MAXN];
	size_t nsamples, nvalues_max;
};

static void copy_str(char *dst, size_t size, const struct field *f)
{
	assert_int_equal(f->wire, 2);
	assert_true(f->len < size);
	memcpy(dst, f->p, f->len);
	dst[f->len] = '\0';
}

/* AnyValue: a string into s, or an int into *i. */
static void rd_anyvalue(struct msg m, char *s, size_t size, int64_t *i)
{
	struct field f;

	while (next(&m, &f)) {
		if (f.num == 1)
			copy_str(s, size, &f);
		else if (f.num == 3 && i)
			*i = (int64_t)f.v;
		else
			fail_msg("AnyValue field %u", f.num);
	}
}

static void rd_dict(struct dict *d, struct msg m)
{
	struct field f, g, h;
	struct msg a, b;

	while (next(&m, &f)) {
		a = sub(&f);
		switch (f.num) {
		case 1:
			assert_true(d->nmaps < MAXN);
			while (next(&a, &g)) {
				if (g.num == 2)
					d->maps[d->nmaps].limit = g.v;
				else if (g.num == 4)
					d->maps[d->nmaps].file = (int64_t)g.v;
				else if (g.num == 5)
					d->maps[d->nmaps].nattrs =
					    rd_packed(&g, d->maps[d->nmaps].attrs, 4);
				else
					fail_msg("Mapping field %u", g.num);
			}
			d->nmaps++;
			break;
		case 2:
			assert_true(d->nlocs < MAXN);
			while (next(&a, &g)) {
				if (g.num == 1) {
					d->locs[d->nlocs].mapping = (int64_t)g.v;
				} else if (g.num == 2) {
					d->locs[d->nlocs].address = g.v;
				} else if (g.num == 3) {
					for (b = sub(&g); next(&b, &h);) {
						if (h.num == 1)
							d->locs[d->nlocs].fn = (int64_t)h.v;
						else if (h.num == 2)
							d->locs[d->nlocs].line = (int64_t)h.v;
						else
							fail_msg("Line field %u", h.num);
					}
				} else if (g.num == 4) {
					d->locs[d->nlocs].nattrs =
					    rd_packed(&g, d->locs[d->nlocs].attrs, 4);
				} else {
					fail_msg("Location field %u", g.num);
				}
			}
			d->nlocs++;
			break;
		case 3:
			assert_true(d->nfns < MAXN);
			while (next(&a, &g)) {
				if (g.num == 1)
					d->fn_name[d->nfns] = (int64_t)g.v;
				else if (g.num == 2)
					assert_int_equal(g.v, d->fn_name[d->nfns]);
				else if (g.num == 3)
					d->fn_file[d->nfns] = (int64_t)g.v;
				else
					fail_msg("Function field %u", g.num);
			}
			d->nfns++;
			break;
		case 4:
			if (!d->nlinks++)
				d->link0_len = f.len;
			break;
		case 5:
			assert_true(d->nstrs < MAXN);
			copy_str(d->strs[d->nstrs++], sizeof(d->strs[0]), &f);
			break;
		case 6:
			assert_true(d->nattrs < MAXN);
			while (next(&a, &g)) {
				if (g.num == 1)
					d->attrs[d->nattrs].key = (int64_t)g.v;
				else if (g.num == 2)
					rd_anyvalue(sub(&g), d->attrs[d->nattrs].value,
						    sizeof(d->attrs[0].value),
						    &d->attrs[d->nattrs].ival);
				else
					fail_msg("KeyValueAndUnit field %u", g.num);
			}
			d->nattrs++;
			break;
		case 7:
			assert_true(d->nstacks < MAXN);
			while (next(&a, &g)) {
				assert_int_equal(g.num, 1);
				d->stacks[d->nstacks].n =
				    rd_packed(&g, d->stacks[d->nstacks].locs, 16);
			}
			d->nstacks++;
			break;
		default:
			fail_msg("ProfilesDictionary field %u", f.num);
		}
	}
}

static void rd_value_type(struct msg m, int64_t out[2])
{
	struct field f;

	while (next(&m, &f)) {
		assert_true(f.num == 1 || f.num == 2);
		out[f.num - 1] = (int64_t)f.v;
	}
}

static void rd_profile(struct request *r, struct msg m)
{
	struct field f, g;
	struct msg a;
	int64_t vals[4];
	size_t n;

	r->nprofiles++;
	while (next(&m, &f)) {
		switch (f.num) {
		case 1:
			rd_value_type(sub(&f), r->sample_type);
			break;
		case 2:
			assert_true(r->nsamples < MAXN);
			for (a = sub(&f); next(&a, &g);) {
				if (g.num == 1) {
					r->sample_stack[r->nsamples] = (int64_t)g.v;
				} else if (g.num == 2) {
					r->sample_nattrs[r->nsamples] =
					    rd_packed(&g, r->sample_attrs[r->nsamples], 4);
				} else if (g.num == 4) {
					n = rd_packed(&g, vals, 4);
					r->sample_value[r->nsamples] = vals[0];
					if (n > r->nvalues_max)
						r->nvalues_max = n;
				} else {
					fail_msg("Sample field %u", g.num);
				}
			}
			r->nsamples++;
			break;
		case 3:
			assert_int_equal(f.wire, 1); /* fixed64 */
			r->time = f.v;
			break;
		case 4:
			r->duration = f.v;
			break;
		case 5:
			rd_value_type(sub(&f), r->period_type);
			break;
		case 6:
			r->period = (int64_t)f.v;
			break;
		default:
			fail_msg("Profile field %u", f.num);
		}
	}
}

static void rd_resource_profiles(struct request *r, struct msg m)
{
	struct field f, g, h;
	struct msg a, b;

	r->nresources++;
	while (next(&m, &f)) {
		if (f.num == 1) { /* Resource */
			for (a = sub(&f); next(&a, &g);) {
				assert_int_equal(g.num, 1);
				assert_true(r->nres < MAXN);
				for (b = sub(&g); next(&b, &h);) {
					if (h.num == 1)
						copy_str(r->res_key[r->nres], sizeof(r->res_key[0]),
							 &h);
					else if (h.num == 2)
						rd_anyvalue(sub(&h), r->res_val[r->nres],
							    sizeof(r->res_val[0]),
							    &r->res_int[r->nres]);
					else
						fail_msg("KeyValue field %u", h.num);
				}
				r->nres++;
			}
		} else if (f.num == 2) { /* ScopeProfiles */
			r->nscopes++;
			for (a = sub(&f); next(&a, &g);) {
				if (g.num == 1) {
					for (b = sub(&g); next(&b, &h);) {
						assert_int_equal(h.num, 1);
						copy_str(r->scope, sizeof(r->scope), &h);
					}
				} else if (g.num == 2) {
					rd_profile(r, sub(&g));
				} else {
					fail_msg("ScopeProfiles field %u", g.num);
				}
			}
		} else {
			fail_msg("ResourceProfiles field %u", f.num);
		}
	}
}

static void rd_request(struct request *r, const struct buf *raw)
{
	struct msg m = {(const uint8_t *)raw->data, (const uint8_t *)raw->data + raw->len};
	struct field f;

	memset(r, 0, sizeof(*r));
	while (next(&m, &f)) {
		if (f.num == 1)
			rd_resource_profiles(r, sub(&f));
		else if (f.num == 2)
			rd_dict(&r->d, sub(&f));
		else
			fail_msg("ExportProfilesServiceRequest field %u", f.num);
	}
}

static void gunzip(const struct buf *in, struct buf *out)
{
	z_stream z = {0};
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

/* ---- what the request says ---- */

static const char *str(const struct request *r, int64_t i)
{
	assert_true(i >= 0 && (size_t)i < r->d.nstrs);
	return r->d.strs[i];
}

static const char *res_attr(const struct request *r, const char *key)
{
	for (size_t i = 0; i < r->nres; i++)
		if (!strcmp(r->res_key[i], key))
			return r->res_val[i];
	return NULL;
}

/* The value of an attribute (by key) among indices into the table. */
static const char *attr_of(const struct request *r, const int64_t *idx, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++) {
		assert_true(idx[i] > 0 && (size_t)idx[i] < r->d.nattrs);
		if (!strcmp(str(r, r->d.attrs[idx[i]].key), key))
			return r->d.attrs[idx[i]].value;
	}
	return NULL;
}

/* Sample i as folded text, root first: "main;work (/srv/app.py:12)". */
static void folded(const struct request *r, size_t i, char *out, size_t size)
{
	int64_t s = r->sample_stack[i];
	size_t len = 0;

	assert_true(s > 0 && (size_t)s < r->d.nstacks);
	out[0] = '\0';
	for (size_t k = r->d.stacks[s].n; k-- > 0;) {
		int64_t l = r->d.stacks[s].locs[k], fn;

		assert_true(l > 0 && (size_t)l < r->d.nlocs);
		fn = r->d.locs[l].fn;
		assert_true(fn > 0 && (size_t)fn < r->d.nfns);
		if (r->d.fn_file[fn])
			len += (size_t)snprintf(out + len, size - len, "%s%s (%s:%lld)",
						len ? ";" : "", str(r, r->d.fn_name[fn]),
						str(r, r->d.fn_file[fn]),
						(long long)r->d.locs[l].line);
		else
			len += (size_t)snprintf(out + len, size - len, "%s%s", len ? ";" : "",
						str(r, r->d.fn_name[fn]));
		assert_true(len < size);
	}
}

static int64_t value_of(const struct request *r, const char *stack)
{
	char f[512];

	for (size_t i = 0; i < r->nsamples; i++) {
		folded(r, i, f, sizeof(f));
		if (!strcmp(f, stack))
			return r->sample_value[i];
	}
	return 0;
}

/* The location whose function is named name. */
static size_t loc_named(const struct request *r, const char *name)
{
	for (size_t l = 1; l < r->d.nlocs; l++)
		if (!strcmp(str(r, r->d.fn_name[r->d.locs[l].fn]), name))
			return l;
	fail_msg("no location named %s", name);
	return 0;
}

static struct stackset *sample_profile(void)
{
	struct stackset *ss = stackset_new();
	int64_t app, main_fn, work, sched, lib, wait;
	uint32_t s1[3], s2[2], s3[3];

	assert_non_null(ss);
	app = stackset_module(ss, "/usr/bin/app", "0123abcd");
	assert_true(app > 0);
	main_fn = stackset_intern_in(ss, FRAME_NATIVE, "main", (uint32_t)app);
	work = stackset_intern(ss, FRAME_PYTHON, "work (/srv/app.py:12)");
	sched = stackset_intern(ss, FRAME_KERNEL, "schedule_[k]");
	lib = stackset_intern(ss, FRAME_UNKNOWN, "[libfoo.so+0x1a2b]");
	wait = stackset_intern(ss, FRAME_WAIT, "[GIL wait]");
	assert_true(main_fn >= 0 && work >= 0 && sched >= 0 && lib >= 0 && wait >= 0);
	s1[0] = (uint32_t)main_fn, s1[1] = (uint32_t)work, s1[2] = (uint32_t)sched;
	s2[0] = (uint32_t)main_fn, s2[1] = (uint32_t)lib;
	s3[0] = (uint32_t)main_fn, s3[1] = (uint32_t)work, s3[2] = (uint32_t)wait;
	assert_int_equal(stackset_add(ss, s1, 3, 5), 0);
	assert_int_equal(stackset_add(ss, s2, 2, 3), 0);
	assert_int_equal(stackset_add(ss, s1, 2, 2), 0); /* main;work */
	assert_int_equal(stackset_add(ss, s3, 3, 7), 0);
	ss->rate_hz = 200;
	ss->start_ns = 1700000000000000000ull;
	ss->end_ns = ss->start_ns + 10000000000ull;
	return ss;
}

static const struct push_target target = {.base = "http://collector:4318", .hostname = "node-1"};

static const struct push_label labels[] = {
    {"service_name", "api"}, {"unit", "app.service"}, {"container", "c0ffee123"},
    {"pod", "5f8a-pod-uid"}, {"qos", "burstable"},
};

/* Encode it, check the request line and headers, read the body back. */
static void encode(const struct push_item *it, struct request *r)
{
	struct push_request req = {0};
	struct buf raw;

	buf_init(&req.body);
	buf_init(&raw);
	assert_int_equal(push_encode_otlp(&target, it, &req), 0);
	assert_string_equal(req.url, "http://collector:4318/v1development/profiles");
	assert_string_equal(req.content_type, "application/x-protobuf");
	assert_non_null(req.content_encoding);
	assert_string_equal(req.content_encoding, "gzip");
	assert_true(req.body.len > 2 && (uint8_t)req.body.data[0] == 0x1f &&
		    (uint8_t)req.body.data[1] == 0x8b);
	gunzip(&req.body, &raw);
	rd_request(r, &raw);

	/* Every table starts with its zero value. */
	assert_true(r->d.nstrs > 1 && r->d.nfns > 1 && r->d.nlocs > 1 && r->d.nstacks > 1 &&
		    r->d.nmaps >= 1 && r->d.nattrs >= 1 && r->d.nlinks == 1);
	assert_string_equal(r->d.strs[0], "");
	assert_int_equal(r->d.fn_name[0], 0);
	assert_int_equal(r->d.locs[0].fn, 0);
	assert_int_equal(r->d.stacks[0].n, 0);
	assert_int_equal(r->d.maps[0].file, 0);
	assert_int_equal(r->d.attrs[0].key, 0);
	assert_int_equal(r->d.link0_len, 2 + 16 + 2 + 8);
	/* ... and holds nothing twice. */
	for (size_t i = 0; i < r->d.nstrs; i++)
		for (size_t j = i + 1; j < r->d.nstrs; j++)
			assert_string_not_equal(r->d.strs[i], r->d.strs[j]);
	assert_int_equal(r->nresources, 1);
	assert_int_equal(r->nscopes, 1);
	assert_int_equal(r->nprofiles, 1);
	assert_string_equal(r->scope, "profd");
	assert_int_equal(r->nvalues_max, 1);

	/* protoc reads it with our .proto, where it is installed. */
	if (system("command -v protoc >/dev/null 2>&1") == 0) {
		char path[] = "/tmp/test_push_otlp.XXXXXX", cmd[2048], dir[256];
		const char *src = __FILE__, *slash = strrchr(src, '/');
		int fd = mkstemp(path);

		assert_true(fd >= 0);
		assert_int_equal(buf_write_fd(&raw, fd), 0);
		close(fd);
		snprintf(dir, sizeof(dir), "%.*s/../data/otlp", (int)(slash - src), src);
		snprintf(cmd, sizeof(cmd),
			 "protoc --decode opentelemetry.proto.collector.profiles.v1development."
			 "ExportProfilesServiceRequest -I %s %s/profiles.proto <%s >/dev/null",
			 dir, dir, path);
		assert_int_equal(system(cmd), 0);
		unlink(path);
	}
	free(req.url);
	buf_free(&req.body);
	buf_free(&raw);
}

static void test_cpu(void **state)
{
	struct stackset *ss = sample_profile();
	struct push_item it = {
	    .ss = ss,
	    .pid = 4242,
	    .labels = labels,
	    .n_labels = 5,
	    .comm = "app",
	    .exe = "/usr/bin/app",
	    .type = "cpu",
	    .from_ns = 1700000001000000000ull,
	    .until_ns = 1700000003000000000ull,
	};
	struct request *r = calloc(1, sizeof(*r));
	const char *v;
	size_t l;

	(void)state;
	assert_non_null(r);
	encode(&it, r);

	/* Resource: who and where. */
	assert_string_equal(res_attr(r, "service.name"), "app"); /* no it->service */
	assert_string_equal(res_attr(r, "host.name"), "node-1");
	/* The pid is each sample's, not the resource's: one series per workload. */
	assert_null(res_attr(r, "process.pid"));
	assert_true(r->nsamples > 0);
	for (size_t i = 0; i < r->nsamples; i++) {
		int64_t a;

		assert_int_equal(r->sample_nattrs[i], 1);
		a = r->sample_attrs[i][0];
		assert_true(a > 0 && (size_t)a < r->d.nattrs);
		assert_string_equal(str(r, r->d.attrs[a].key), "process.pid");
		assert_int_equal(r->d.attrs[a].ival, 4242);
	}
	assert_string_equal(res_attr(r, "process.executable.name"), "app");
	assert_string_equal(res_attr(r, "process.executable.path"), "/usr/bin/app");
	assert_string_equal(res_attr(r, "container.id"), "c0ffee123");
	assert_string_equal(res_attr(r, "k8s.pod.uid"), "5f8a-pod-uid");
	assert_string_equal(res_attr(r, "unit"), "app.service");
	assert_string_equal(res_attr(r, "qos"), "burstable");
	assert_string_equal(res_attr(r, "service_name"), "api");
	for (size_t i = 0; i < r->nres; i++)
		for (size_t j = i + 1; j < r->nres; j++)
			assert_string_not_equal(r->res_key[i], r->res_key[j]);

	/* Types: samples counted, each one period of cpu time. */
	assert_string_equal(str(r, r->sample_type[0]), "samples");
	assert_string_equal(str(r, r->sample_type[1]), "count");
	assert_string_equal(str(r, r->period_type[0]), "cpu");
	assert_string_equal(str(r, r->period_type[1]), "nanoseconds");
	assert_int_equal(r->period, 5000000);		   /* 200 Hz */
	assert_int_equal(r->time, 1700000001000000000ull); /* the item's window */
	assert_int_equal(r->duration, 2000000000ull);

	/* Samples through the dictionary. */
	assert_int_equal(r->nsamples, 4);
	assert_int_equal(value_of(r, "main;work (/srv/app.py:12);schedule_[k]"), 5);
	assert_int_equal(value_of(r, "main;[libfoo.so+0x1a2b]"), 3);
	assert_int_equal(value_of(r, "main;work (/srv/app.py:12)"), 2);
	assert_int_equal(value_of(r, "main;work (/srv/app.py:12);[GIL wait]"), 7);

	/* Where frames are: the binary with its build id, the module with
	 * the offset, the kernel; Python and synthetic frames nowhere. */
	l = loc_named(r, "main");
	assert_string_equal(str(r, r->d.maps[r->d.locs[l].mapping].file), "/usr/bin/app");
	v = attr_of(r, r->d.maps[r->d.locs[l].mapping].attrs,
		    r->d.maps[r->d.locs[l].mapping].nattrs, "process.executable.build_id.gnu");
	assert_non_null(v);
	assert_string_equal(v, "0123abcd");
	assert_string_equal(
	    attr_of(r, r->d.locs[l].attrs, r->d.locs[l].nattrs, "profile.frame.type"), "native");
	l = loc_named(r, "[libfoo.so+0x1a2b]");
	assert_string_equal(str(r, r->d.maps[r->d.locs[l].mapping].file), "libfoo.so");
	assert_int_equal(r->d.locs[l].address, 0x1a2b);
	assert_true(r->d.maps[r->d.locs[l].mapping].limit > 0x1a2b);
	assert_int_equal(r->d.maps[r->d.locs[l].mapping].nattrs, 0);
	l = loc_named(r, "schedule_[k]");
	assert_string_equal(str(r, r->d.maps[r->d.locs[l].mapping].file), "[kernel.kallsyms]");
	assert_string_equal(
	    attr_of(r, r->d.locs[l].attrs, r->d.locs[l].nattrs, "profile.frame.type"), "kernel");
	l = loc_named(r, "work");
	assert_int_equal(r->d.locs[l].mapping, 0);
	assert_int_equal(r->d.locs[l].line, 12);
	assert_string_equal(
	    attr_of(r, r->d.locs[l].attrs, r->d.locs[l].nattrs, "profile.frame.type"), "cpython");
	l = loc_named(r, "[GIL wait]");
	assert_int_equal(r->d.locs[l].mapping, 0);
	assert_int_equal(r->d.locs[l].nattrs, 0);
	free(r);
	stackset_free(ss);
}

/* The profile type picks the sample type; the stackset's window when the
 * item has none; the service given wins. */
static void test_types(void **state)
{
	static const struct {
		const char *type, *unit, *want_type, *want_unit;
	} cases[] = {
	    {"off-cpu", "nanoseconds", "off_cpu", "nanoseconds"},
	    {"memory", "bytes", "memory", "bytes"},
	    {"gpu-driver", "nanoseconds", "gpu_driver", "nanoseconds"},
	    {"cuda-calls", "calls", "cuda_calls", "count"},
	};
	struct request *r = calloc(1, sizeof(*r));

	(void)state;
	assert_non_null(r);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct stackset *ss = sample_profile();
		struct push_item it = {.ss = ss, .pid = 7, .service = "billing", .comm = "app"};

		assert_int_equal(stackset_set_str(&ss->type, cases[i].type), 0);
		assert_int_equal(stackset_set_str(&ss->unit, cases[i].unit), 0);
		encode(&it, r);
		assert_string_equal(res_attr(r, "service.name"), "billing");
		assert_string_equal(res_attr(r, "process.executable.name"), "app");
		assert_null(res_attr(r, "process.executable.path"));
		assert_null(res_attr(r, "container.id"));
		assert_string_equal(str(r, r->sample_type[0]), cases[i].want_type);
		assert_string_equal(str(r, r->sample_type[1]), cases[i].want_unit);
		assert_string_equal(str(r, r->period_type[0]), cases[i].want_type);
		assert_string_equal(str(r, r->period_type[1]), cases[i].want_unit);
		assert_int_equal(r->period, 1);
		assert_int_equal(r->time, ss->start_ns);
		assert_int_equal(r->duration, ss->end_ns - ss->start_ns);
		assert_int_equal(value_of(r, "main;work (/srv/app.py:12);[GIL wait]"), 7);
		stackset_free(ss);
	}
	free(r);
}

/* mmap's frees are negative values (int64, as in pprof). */
static void test_signed(void **state)
{
	struct stackset *ss = sample_profile();
	struct push_item it = {.ss = ss, .pid = 7, .comm = "app", .type = "mmap"};
	struct request *r = calloc(1, sizeof(*r));

	(void)state;
	assert_non_null(r);
	assert_int_equal(stackset_set_str(&ss->type, "mmap"), 0);
	assert_int_equal(stackset_set_str(&ss->unit, "bytes"), 0);
	ss->stacks[1].count = (uint64_t)-4096;
	if (!stackset_signed(ss)) {
		free(r);
		stackset_free(ss);
		skip();
	}
	encode(&it, r);
	assert_int_equal(value_of(r, "main;[libfoo.so+0x1a2b]"), -4096);
	free(r);
	stackset_free(ss);
}

/* Names that are not UTF-8 still make a request protobuf accepts. */
static void test_not_utf8(void **state)
{
	struct stackset *ss = stackset_new();
	struct push_item it = {.ss = ss, .pid = 1, .comm = "bad\xff", .exe = "/x/\xc3"};
	static const uint32_t kinds[] = {FRAME_NATIVE, FRAME_NATIVE};
	static const char *const names[] = {"main", "f\xfe\xff"};
	struct request *r = calloc(1, sizeof(*r));

	(void)state;
	assert_non_null(r);
	assert_int_equal(stackset_add_named(ss, kinds, names, 2, 1), 0);
	encode(&it, r);
	assert_int_equal(r->nsamples, 1);
	free(r);
	stackset_free(ss);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cpu),
	    cmocka_unit_test(test_types),
	    cmocka_unit_test(test_signed),
	    cmocka_unit_test(test_not_utf8),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
