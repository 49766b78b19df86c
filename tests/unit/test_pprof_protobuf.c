/* protobuf encoder (wire-format vectors from the protobuf encoding guide)
 * and render_pprof, read back with a small decoder: gunzip, then walk the
 * Profile message field by field. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include <cmocka.h>

#include "buf.h"
#include "protobuf.h"
#include "render_pprof.h"
#include "stackset.h"
#include "utf8.h"

static void assert_bytes(const struct buf *b, const char *hex)
{
	char got[512] = "";

	for (size_t i = 0; i < b->len && i < 200; i++)
		snprintf(got + 2 * i, 3, "%02x", (unsigned char)b->data[i]);
	assert_string_equal(got, hex);
}

static void test_varint(void **state)
{
	static const struct {
		uint64_t v;
		const char *hex;
	} cases[] = {
		{ 0, "00" }, { 1, "01" }, { 127, "7f" }, { 128, "8001" }, { 150, "9601" },
		{ 300, "ac02" }, { 16384, "808001" }, { UINT32_MAX, "ffffffff0f" },
		{ UINT64_MAX, "ffffffffffffffffff01" },
	};
	struct buf b;

	(void)state;
	buf_init(&b);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		buf_reset(&b);
		pb_put_varint(&b, cases[i].v);
		assert_bytes(&b, cases[i].hex);
		assert_int_equal(pb_varint_size(cases[i].v), b.len);
	}
	buf_free(&b);
}

static void test_fields(void **state)
{
	static const uint64_t packed[] = { 3, 270, 86942 };
	static const int64_t neg[] = { -1 };
	struct buf b;

	(void)state;
	buf_init(&b);
	pb_put_uint64(&b, 1, 150);
	assert_bytes(&b, "089601");
	buf_reset(&b);
	pb_put_string(&b, 2, "testing");
	assert_bytes(&b, "120774657374696e67");
	buf_reset(&b);
	pb_put_int64(&b, 2, -1); /* int64, not sint64: ten bytes */
	assert_bytes(&b, "10ffffffffffffffffff01");
	buf_reset(&b);
	pb_put_packed_uint64(&b, 4, packed, 3);
	assert_bytes(&b, "2206038e029ea705");
	buf_reset(&b);
	pb_put_packed_int64(&b, 2, neg, 1);
	assert_bytes(&b, "120affffffffffffffffff01");
	buf_reset(&b);
	pb_put_packed_uint64(&b, 4, packed, 0); /* empty list: no field */
	pb_put_bool(&b, 7, 5);
	pb_put_key(&b, 16, PB_WIRE_LEN); /* field 16: two-byte key */
	assert_bytes(&b, "38018201");
	buf_reset(&b);
	pb_put_bytes(&b, 3, "", 0);
	assert_bytes(&b, "1a00");
	buf_free(&b);
}

/* ---- a reader, just enough for profile.proto ---- */

struct pb_field {
	uint32_t num;
	uint64_t v;        /* varint value */
	const uint8_t *p;  /* length-delimited payload */
	size_t len;
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

static bool next_field(const uint8_t **p, const uint8_t *end, struct pb_field *f)
{
	uint64_t key;

	if (*p >= end)
		return false;
	key = rd_varint(p, end);
	f->num = (uint32_t)(key >> 3);
	if ((key & 7) == PB_WIRE_VARINT) {
		f->v = rd_varint(p, end);
		f->p = NULL;
	} else {
		assert_int_equal(key & 7, PB_WIRE_LEN);
		f->len = rd_varint(p, end);
		assert_true(f->len <= (size_t)(end - *p));
		f->p = *p;
		*p += f->len;
	}
	return true;
}

struct pp_loc {
	uint64_t id, mapping, address, fn;
	int64_t line;
};

struct profile {
	char *strs[256];
	size_t nstrs;
	int64_t sample_type[4][2], period_type[2], period, time, duration;
	size_t ntypes, nsamples, nlocs, nfns, nmaps;
	struct { uint64_t locs[16]; int64_t vals[2]; size_t nlocs, nvals; } samples[16];
	struct pp_loc locs[32];
	struct { uint64_t id; int64_t name, file; } fns[32];
	struct { uint64_t id, start, limit; int64_t file, build_id; bool has_functions; } maps[8];
};

static size_t rd_packed(const struct pb_field *f, uint64_t *out, size_t max)
{
	const uint8_t *p = f->p, *end = f->p + f->len;
	size_t n = 0;

	if (!f->p) { /* unpacked single value */
		out[0] = f->v;
		return 1;
	}
	while (p < end && n < max)
		out[n++] = rd_varint(&p, end);
	return n;
}

static void rd_pair(const struct pb_field *f, int64_t out[2])
{
	const uint8_t *p = f->p;
	struct pb_field g;

	while (next_field(&p, f->p + f->len, &g))
		out[g.num - 1] = (int64_t)g.v;
}

static void rd_sample(struct profile *pr, const struct pb_field *f)
{
	const uint8_t *p = f->p;
	struct pb_field g;
	uint64_t vals[2];

	assert_true(pr->nsamples < 16);
	while (next_field(&p, f->p + f->len, &g)) {
		if (g.num == 1)
			pr->samples[pr->nsamples].nlocs =
			    rd_packed(&g, pr->samples[pr->nsamples].locs, 16);
		if (g.num == 2) {
			pr->samples[pr->nsamples].nvals = rd_packed(&g, vals, 2);
			pr->samples[pr->nsamples].vals[0] = (int64_t)vals[0];
			pr->samples[pr->nsamples].vals[1] = (int64_t)vals[1];
		}
	}
	pr->nsamples++;
}

static void rd_location(struct profile *pr, const struct pb_field *f)
{
	const uint8_t *p = f->p, *q;
	struct pb_field g, h;

	assert_true(pr->nlocs < 32);
	while (next_field(&p, f->p + f->len, &g)) {
		if (g.num == 1) pr->locs[pr->nlocs].id = g.v;
		if (g.num == 2) pr->locs[pr->nlocs].mapping = g.v;
		if (g.num == 3) pr->locs[pr->nlocs].address = g.v;
		for (q = g.p; g.num == 4 && next_field(&q, g.p + g.len, &h);) {
			if (h.num == 1) pr->locs[pr->nlocs].fn = h.v;
			if (h.num == 2) pr->locs[pr->nlocs].line = (int64_t)h.v;
		}
	}
	pr->nlocs++;
}

static void rd_function(struct profile *pr, const struct pb_field *f)
{
	const uint8_t *p = f->p;
	struct pb_field g;

	assert_true(pr->nfns < 32);
	while (next_field(&p, f->p + f->len, &g)) {
		if (g.num == 1) pr->fns[pr->nfns].id = g.v;
		if (g.num == 2) pr->fns[pr->nfns].name = (int64_t)g.v;
		if (g.num == 4) pr->fns[pr->nfns].file = (int64_t)g.v;
	}
	pr->nfns++;
}

static void rd_mapping(struct profile *pr, const struct pb_field *f)
{
	const uint8_t *p = f->p;
	struct pb_field g;

	assert_true(pr->nmaps < 8);
	while (next_field(&p, f->p + f->len, &g)) {
		if (g.num == 1) pr->maps[pr->nmaps].id = g.v;
		if (g.num == 2) pr->maps[pr->nmaps].start = g.v;
		if (g.num == 3) pr->maps[pr->nmaps].limit = g.v;
		if (g.num == 5) pr->maps[pr->nmaps].file = (int64_t)g.v;
		if (g.num == 6) pr->maps[pr->nmaps].build_id = (int64_t)g.v;
		if (g.num == 7) pr->maps[pr->nmaps].has_functions = g.v;
	}
	pr->nmaps++;
}

static void rd_profile(struct profile *pr, const uint8_t *p, size_t len)
{
	const uint8_t *end = p + len;
	struct pb_field f;

	memset(pr, 0, sizeof(*pr));
	while (next_field(&p, end, &f)) {
		switch (f.num) {
		case 1:
			assert_true(pr->ntypes < 4);
			rd_pair(&f, pr->sample_type[pr->ntypes++]);
			break;
		case 2: rd_sample(pr, &f); break;
		case 3: rd_mapping(pr, &f); break;
		case 4: rd_location(pr, &f); break;
		case 5: rd_function(pr, &f); break;
		case 6:
			assert_true(pr->nstrs < 256);
			pr->strs[pr->nstrs++] = strndup((const char *)f.p, f.len);
			break;
		case 9: pr->time = (int64_t)f.v; break;
		case 10: pr->duration = (int64_t)f.v; break;
		case 11: rd_pair(&f, pr->period_type); break;
		case 12: pr->period = (int64_t)f.v; break;
		}
	}
}

static void free_profile(struct profile *pr)
{
	for (size_t i = 0; i < pr->nstrs; i++)
		free(pr->strs[i]);
}

static const char *str(const struct profile *pr, int64_t i)
{
	assert_true(i >= 0 && (size_t)i < pr->nstrs);
	return pr->strs[i];
}

/* Render, gunzip, decode. */
static void render_read(const struct stackset *ss, struct profile *pr)
{
	struct buf gz, raw;
	z_stream zs = { 0 };

	buf_init(&gz);
	buf_init(&raw);
	assert_int_equal(render_pprof(ss, &gz), 0);
	assert_true(gz.len > 18 && (uint8_t)gz.data[0] == 0x1f && (uint8_t)gz.data[1] == 0x8b);
	assert_int_equal(inflateInit2(&zs, 31), Z_OK);
	zs.next_in = (Bytef *)gz.data;
	zs.avail_in = (uInt)gz.len;
	assert_true(buf_reserve(&raw, 1 << 20));
	zs.next_out = (Bytef *)raw.data;
	zs.avail_out = 1 << 20;
	assert_int_equal(inflate(&zs, Z_FINISH), Z_STREAM_END);
	raw.len = zs.total_out;
	inflateEnd(&zs);
	rd_profile(pr, (const uint8_t *)raw.data, raw.len);
	buf_free(&gz);
	buf_free(&raw);
}

static void add(struct stackset *ss, uint64_t count, uint32_t depth, const uint32_t *kinds,
		const char *const *names)
{
	assert_int_equal(stackset_add_named(ss, kinds, names, depth, count), 0);
}

static struct stackset *profile_7_2(void)
{
	static const uint32_t k1[] = { FRAME_PYTHON, FRAME_PYTHON, FRAME_KERNEL };
	static const char *const n1[] = { "main (/srv/app.py:10)", "work (/srv/app.py:4)",
					  "sys_write_[k]" };
	static const uint32_t k2[] = { FRAME_PYTHON, FRAME_UNKNOWN };
	static const char *const n2[] = { "main (/srv/app.py:10)", "[libfoo.so+0x1a2b]" };
	struct stackset *ss = stackset_new();

	assert_non_null(ss);
	add(ss, 7, 3, k1, n1);
	add(ss, 2, 2, k2, n2);
	ss->rate_hz = 100;
	ss->start_ns = 5000000000ull;
	ss->end_ns = 15000000000ull;
	assert_int_equal(stackset_set_str(&ss->title, "app (pid 1)"), 0);
	return ss;
}

static const struct pp_loc *loc(const struct profile *pr, uint64_t id)
{
	for (size_t i = 0; i < pr->nlocs; i++)
		if (pr->locs[i].id == id)
			return &pr->locs[i];
	fail_msg("no location %llu", (unsigned long long)id);
	return NULL;
}

static const char *fn_name(const struct profile *pr, uint64_t id, const char **file)
{
	for (size_t i = 0; i < pr->nfns; i++) {
		if (pr->fns[i].id == id) {
			*file = str(pr, pr->fns[i].file);
			return str(pr, pr->fns[i].name);
		}
	}
	fail_msg("no function %llu", (unsigned long long)id);
	return NULL;
}

static void test_profile(void **state)
{
	struct stackset *ss = profile_7_2();
	struct profile pr;
	const char *file;

	(void)state;
	render_read(ss, &pr);
	assert_string_equal(pr.strs[0], "");
	assert_int_equal(pr.ntypes, 2);
	assert_string_equal(str(&pr, pr.sample_type[0][0]), "samples");
	assert_string_equal(str(&pr, pr.sample_type[0][1]), "count");
	assert_string_equal(str(&pr, pr.sample_type[1][0]), "cpu");
	assert_string_equal(str(&pr, pr.sample_type[1][1]), "nanoseconds");
	assert_string_equal(str(&pr, pr.period_type[0]), "cpu");
	assert_int_equal(pr.period, 10000000);
	assert_int_equal(pr.time, 5000000000ll);
	assert_int_equal(pr.duration, 10000000000ll);
	assert_int_equal(pr.nsamples, 2);
	/* Folded order: "main;[libfoo...]" sorts before "main;work". */
	assert_int_equal(pr.samples[0].vals[0], 2);
	assert_int_equal(pr.samples[1].vals[0], 7);
	assert_int_equal(pr.samples[1].vals[1], 70000000);
	assert_int_equal(pr.samples[1].nlocs, 3);
	/* Leaf first: the kernel frame, then work at line 4, then main. */
	assert_string_equal(fn_name(&pr, loc(&pr, pr.samples[1].locs[0])->fn, &file),
			    "sys_write_[k]");
	assert_string_equal(fn_name(&pr, loc(&pr, pr.samples[1].locs[1])->fn, &file), "work");
	assert_string_equal(file, "/srv/app.py");
	assert_int_equal(loc(&pr, pr.samples[1].locs[1])->line, 4);
	assert_int_equal(loc(&pr, pr.samples[1].locs[2])->line, 10);
	/* Mappings: the title first, the module, the kernel. */
	assert_int_equal(pr.nmaps, 3);
	assert_string_equal(str(&pr, pr.maps[0].file), "app (pid 1)");
	assert_string_equal(str(&pr, pr.maps[1].file), "libfoo.so");
	assert_string_equal(str(&pr, pr.maps[2].file), "[kernel.kallsyms]");
	for (size_t i = 0; i < pr.nmaps; i++)
		assert_true(pr.maps[i].has_functions && pr.maps[i].id == i + 1);
	assert_int_equal(loc(&pr, pr.samples[0].locs[0])->mapping, 2);
	assert_int_equal(loc(&pr, pr.samples[0].locs[0])->address, 0x1a2b);
	assert_int_equal(pr.maps[1].limit, 0x1a2c);
	free_profile(&pr);
	stackset_free(ss);
}

/* The location of the frame named name, which must exist. */
static const struct pp_loc *loc_named(const struct profile *pr, const char *name)
{
	const char *file;

	for (size_t i = 0; i < pr->nlocs; i++)
		if (!strcmp(fn_name(pr, pr->locs[i].fn, &file), name))
			return &pr->locs[i];
	fail_msg("no location for %s", name);
	return NULL;
}

/* The mapping a location points at, which must exist. */
static size_t map_of(const struct profile *pr, const struct pp_loc *l)
{
	for (size_t i = 0; i < pr->nmaps; i++)
		if (pr->maps[i].id == l->mapping)
			return i;
	fail_msg("location %llu: no mapping %llu", (unsigned long long)l->id,
		 (unsigned long long)l->mapping);
	return 0;
}

static void test_modules(void **state)
{
	static const char bid[] = "4a1c7e0f5b3d2e6f8091a2b3c4d5e6f708192a3b";
	struct stackset *ss = stackset_new();
	int64_t app, lib, unused, f[6];
	struct profile pr;
	size_t m;

	(void)state;
	assert_non_null(ss);
	assert_int_equal(stackset_set_str(&ss->title, "app (pid 1)"), 0);
	app = stackset_module(ss, "/usr/bin/app", bid);
	lib = stackset_module(ss, "/usr/lib/libx.so", "");
	unused = stackset_module(ss, "/usr/lib/libunused.so", "ffff");
	assert_true(app > 0 && lib > 0 && unused > 0);
	f[0] = stackset_intern_in(ss, FRAME_NATIVE, "main", (uint32_t)app);
	f[1] = stackset_intern(ss, FRAME_PYTHON, "work (/srv/app.py:4)");
	f[2] = stackset_intern_in(ss, FRAME_NATIVE, "helper", (uint32_t)lib);
	f[3] = stackset_intern_in(ss, FRAME_UNKNOWN, "[libx.so+0x1a2b]", (uint32_t)lib);
	f[4] = stackset_intern(ss, FRAME_KERNEL, "sys_write_[k]");
	f[5] = stackset_intern_in(ss, FRAME_NATIVE, "gone", (uint32_t)unused);
	for (m = 0; m < 6; m++)
		assert_true(f[m] >= 0);
	assert_int_equal(stackset_add(ss, (uint32_t[]){ f[0], f[1], f[2], f[4] }, 4, 3), 0);
	assert_int_equal(stackset_add(ss, (uint32_t[]){ f[0], f[3] }, 2, 2), 0);
	/* Not rendered, so its binary gets no mapping. */
	assert_int_equal(stackset_add(ss, (uint32_t[]){ f[0], f[5] }, 2, 0), 0);
	render_read(ss, &pr);
	/* The title, the program, the library, the kernel. */
	assert_int_equal(pr.nmaps, 4);
	assert_string_equal(str(&pr, pr.maps[0].file), "app (pid 1)");
	m = map_of(&pr, loc_named(&pr, "main"));
	assert_string_equal(str(&pr, pr.maps[m].file), "/usr/bin/app");
	assert_string_equal(str(&pr, pr.maps[m].build_id), bid);
	assert_true(pr.maps[m].has_functions);
	assert_int_equal(loc_named(&pr, "main")->address, 0);
	/* A symbol and a bare offset in the library share its mapping. */
	m = map_of(&pr, loc_named(&pr, "helper"));
	assert_string_equal(str(&pr, pr.maps[m].file), "/usr/lib/libx.so");
	assert_int_equal(pr.maps[m].build_id, 0);
	assert_int_equal(map_of(&pr, loc_named(&pr, "[libx.so+0x1a2b]")), m);
	assert_int_equal(loc_named(&pr, "[libx.so+0x1a2b]")->address, 0x1a2b);
	assert_int_equal(pr.maps[m].limit, 0x1a2c);
	m = map_of(&pr, loc_named(&pr, "sys_write_[k]"));
	assert_string_equal(str(&pr, pr.maps[m].file), "[kernel.kallsyms]");
	/* Python frames stay file and line, outside any mapping. */
	assert_int_equal(loc_named(&pr, "work")->mapping, 0);
	assert_int_equal(loc_named(&pr, "work")->line, 4);
	for (size_t i = 0; i < pr.nstrs; i++)
		assert_string_not_equal(pr.strs[i], "/usr/lib/libunused.so");
	free_profile(&pr);
	stackset_free(ss);
}

static void test_units_and_edges(void **state)
{
	static const uint32_t k[] = { FRAME_NATIVE, FRAME_NATIVE };
	static const char *const n[] = { "a\xff\"b", "a\xff\"b" };
	struct stackset *ss = stackset_new();
	struct profile pr;

	(void)state;
	assert_non_null(ss);
	/* Empty: a valid profile with its sample type and no samples. */
	render_read(ss, &pr);
	assert_int_equal(pr.nsamples, 0);
	assert_int_equal(pr.ntypes, 1);
	assert_int_equal(pr.period, 1);
	free_profile(&pr);
	/* Nanoseconds of GPU time; a recursive frame; invalid UTF-8. */
	assert_int_equal(stackset_set_str(&ss->unit, "nanoseconds"), 0);
	assert_int_equal(stackset_set_str(&ss->type, "gpu-driver"), 0);
	add(ss, 12345, 2, k, n);
	render_read(ss, &pr);
	assert_int_equal(pr.ntypes, 1);
	assert_string_equal(str(&pr, pr.sample_type[0][0]), "gpu-driver");
	assert_string_equal(str(&pr, pr.sample_type[0][1]), "nanoseconds");
	assert_int_equal(pr.samples[0].nlocs, 2);
	assert_int_equal(pr.samples[0].locs[0], pr.samples[0].locs[1]);
	assert_int_equal(pr.samples[0].vals[0], 12345);
	for (size_t i = 0; i < pr.nstrs; i++)
		for (const char *s = pr.strs[i]; *s; s += utf8_seq_len(s))
			assert_true(utf8_seq_len(s) > 0);
	assert_int_equal(pr.nfns, 1);
	assert_string_equal(str(&pr, pr.fns[0].name), "a\xef\xbf\xbd\"b");
	free_profile(&pr);
	stackset_free(ss);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_varint),
		cmocka_unit_test(test_fields),
		cmocka_unit_test(test_profile),
		cmocka_unit_test(test_modules),
		cmocka_unit_test(test_units_and_edges),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
