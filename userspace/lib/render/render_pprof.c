#include "render_pprof.h"
#include "array.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "framename.h"
#include "hashmap.h"
#include "protobuf.h"
#include "render_tree.h"
#include "utf8.h"

/* Field numbers from profile.proto, one enum per message. */
enum { PROFILE_SAMPLE_TYPE = 1, PROFILE_SAMPLE, PROFILE_MAPPING, PROFILE_LOCATION,
       PROFILE_FUNCTION, PROFILE_STRING_TABLE, PROFILE_TIME_NANOS = 9, PROFILE_DURATION_NANOS,
       PROFILE_PERIOD_TYPE, PROFILE_PERIOD, PROFILE_COMMENT };
enum { VALUETYPE_TYPE = 1, VALUETYPE_UNIT };
enum { SAMPLE_LOCATION_ID = 1, SAMPLE_VALUE, SAMPLE_LABEL };
enum { LABEL_KEY = 1, LABEL_STR, LABEL_NUM };
enum { MAPPING_ID = 1, MAPPING_MEMORY_START, MAPPING_MEMORY_LIMIT, MAPPING_FILE_OFFSET,
       MAPPING_FILENAME, MAPPING_BUILD_ID, MAPPING_HAS_FUNCTIONS };
enum { LOCATION_ID = 1, LOCATION_MAPPING_ID, LOCATION_ADDRESS, LOCATION_LINE };
enum { LINE_FUNCTION_ID = 1, LINE_LINE };
enum { FUNCTION_ID = 1, FUNCTION_NAME, FUNCTION_SYSTEM_NAME, FUNCTION_FILENAME };

#define PPROF_KERNEL_MAPPING "[kernel.kallsyms]"

/* The string table: index 0 is "", every string stored once. */
struct strtab {
	struct buf pool; /* the strings, each NUL-terminated */
	size_t *off;     /* offset of string i in pool */
	size_t n, cap;
	struct hashmap index; /* content hash -> i + 1, probing on collision */
	struct buf clean;     /* scratch: the string as valid UTF-8 */
};

struct pprof_fn {
	int64_t name, filename;
};

struct pprof_loc {
	uint64_t fn, mapping, address;
	int64_t line;
	bool used;
};

struct pprof_map {
	int64_t file, build_id; /* string indices; build_id 0 = none */
	uint64_t limit;
};

struct pprof_ctx {
	const struct stackset *ss;
	struct render_tree tree;
	struct strtab st;
	struct pprof_loc *locs; /* by frame id */
	struct pprof_fn *fns;
	size_t nfns, fns_cap;
	struct hashmap fn_index; /* hash(fn) -> index + 1, probing */
	struct pprof_map *maps;
	size_t nmaps, maps_cap;
	struct hashmap map_index; /* hash(file, build_id) -> index + 1, probing */
	struct buf *msg;
	struct buf sub; /* one nested message at a time */
	uint64_t *loc_ids;
	const struct pprof_num_label *labels;
	size_t nlabels;
	struct buf label_fields; /* every sample's Sample.label fields, encoded once */
	int64_t period;
	bool cpu_time; /* a second, derived value: count * period ns */
};

/* Index of s[0..len) in the table, added when new; -ENOMEM. */
static int64_t strtab_add(struct strtab *t, const char *s, size_t len)
{
	uint64_t h, v;

	buf_reset(&t->clean);
	utf8_put_clean(&t->clean, s, len);
	if (!buf_cstr(&t->clean))
		return -ENOMEM;
	for (h = hash64_bytes(t->clean.data, t->clean.len, 0x9e3779b9);; h++) {
		if (!hashmap_get(&t->index, h, &v))
			break;
		if (!strcmp(t->pool.data + t->off[v - 1], t->clean.data))
			return (int64_t)(v - 1);
	}
	if (array_grow((void **)&t->off, &t->cap, t->n + 1, sizeof(*t->off)))
		return -ENOMEM;
	t->off[t->n] = t->pool.len;
	buf_append(&t->pool, t->clean.data, t->clean.len + 1);
	if (t->pool.failed || hashmap_put(&t->index, h, t->n + 1))
		return -ENOMEM;
	return (int64_t)t->n++;
}

static int64_t strtab_str(struct strtab *t, const char *s)
{
	return strtab_add(t, s, strlen(s));
}

static void strtab_free(struct strtab *t)
{
	buf_free(&t->pool);
	buf_free(&t->clean);
	free(t->off);
	hashmap_free(&t->index);
}

/* Function id (1-based) for (name, filename); 0 on -ENOMEM. */
static uint64_t add_function(struct pprof_ctx *c, int64_t name, int64_t filename)
{
	int64_t key[2] = { name, filename };
	uint64_t h = hash64_bytes(key, sizeof(key), 0xf00d), v;

	for (;; h++) {
		if (!hashmap_get(&c->fn_index, h, &v))
			break;
		if (c->fns[v - 1].name == name && c->fns[v - 1].filename == filename)
			return v;
	}
	if (array_grow((void **)&c->fns, &c->fns_cap, c->nfns + 1, sizeof(*c->fns)) ||
	    hashmap_put(&c->fn_index, h, c->nfns + 1))
		return 0;
	c->fns[c->nfns] = (struct pprof_fn){ .name = name, .filename = filename };
	return ++c->nfns;
}

/* Mapping id (1-based) for the module (file and build-id string
 * indices); 0 on -ENOMEM.  Each mapping spans [0, highest address + 1). */
static uint64_t add_mapping(struct pprof_ctx *c, int64_t file, int64_t build_id, uint64_t address)
{
	int64_t key[2] = { file, build_id };
	uint64_t h = hash64_bytes(key, sizeof(key), 0x6d6170), v;
	uint64_t limit = address < UINT64_MAX ? address + 1 : address;
	struct pprof_map *m;

	for (; hashmap_get(&c->map_index, h, &v); h++) {
		m = &c->maps[v - 1];
		if (m->file != file || m->build_id != build_id)
			continue;
		if (m->limit < limit)
			m->limit = limit;
		return v;
	}
	if (array_grow((void **)&c->maps, &c->maps_cap, c->nmaps + 1, sizeof(*c->maps)) ||
	    hashmap_put(&c->map_index, h, c->nmaps + 1))
		return 0;
	c->maps[c->nmaps] = (struct pprof_map){ .file = file, .build_id = build_id, .limit = limit };
	return ++c->nmaps;
}

/* pprof titles its reports "File: <first mapping>".  The profiled
 * program's name is the title; without this first mapping (no address
 * range, no locations) pprof would name some library instead. */
static int add_title_mapping(struct pprof_ctx *c)
{
	int64_t file;

	if (!c->ss->title || !c->ss->title[0])
		return 0;
	file = strtab_str(&c->st, c->ss->title);
	if (file < 0 || array_grow((void **)&c->maps, &c->maps_cap, 1, sizeof(*c->maps)))
		return -ENOMEM;
	c->maps[c->nmaps++] = (struct pprof_map){ .file = file, .limit = 0 };
	return 0;
}

/* Where a non-Python frame lives: the binary the stackset names (path
 * and build-id, so pprof can match the right debug info), else the
 * module of "[module+0xOFF]", the kernel for "sym_[k]", nothing known for
 * the rest.  Only "[module+0xOFF]" names carry an address.  0 or -ENOMEM. */
static int place_frame(struct pprof_ctx *c, uint32_t id, struct pprof_loc *l)
{
	const struct ss_frame *f = &c->ss->frames[id];
	const struct ss_module *m = stackset_frame_module(c->ss, id);
	struct framename_mod mod;
	bool named = f->kind == FRAME_UNKNOWN && framename_module(f->name, &mod);
	int64_t file, build_id = 0;

	l->address = named ? mod.offset : 0;
	if (m) {
		file = strtab_str(&c->st, m->path);
		build_id = strtab_str(&c->st, m->build_id ? m->build_id : "");
	} else if (f->kind == FRAME_KERNEL) {
		file = strtab_str(&c->st, PPROF_KERNEL_MAPPING);
	} else if (named) {
		file = strtab_add(&c->st, mod.module, mod.module_len);
	} else {
		return 0;
	}
	if (file < 0 || build_id < 0)
		return -ENOMEM;
	l->mapping = add_mapping(c, file, build_id, l->address);
	return l->mapping ? 0 : -ENOMEM;
}

static int describe_frame(struct pprof_ctx *c, uint32_t id)
{
	const struct ss_frame *f = &c->ss->frames[id];
	struct pprof_loc *l = &c->locs[id];
	struct framename_py py;
	int64_t name, file = 0;
	int err;

	l->used = true;
	if (f->kind == FRAME_PYTHON && framename_python(f->name, &py)) {
		name = strtab_add(&c->st, py.func, py.func_len);
		file = strtab_add(&c->st, py.file, py.file_len);
		l->line = (int64_t)py.line;
	} else {
		name = strtab_str(&c->st, f->name);
		err = place_frame(c, id, l);
		if (err)
			return err;
	}
	if (name < 0 || file < 0)
		return -ENOMEM;
	l->fn = add_function(c, name, file);
	return l->fn ? 0 : -ENOMEM;
}

static int collect(struct pprof_ctx *c)
{
	size_t k;
	uint32_t i;
	int err;

	for (k = 0; k < c->tree.n; k++) {
		const struct ss_stack *st = &c->ss->stacks[c->tree.order[k]];

		for (i = 0; i < st->depth; i++) {
			if (c->locs[st->frames[i]].used)
				continue;
			err = describe_frame(c, st->frames[i]);
			if (err)
				return err;
		}
	}
	return 0;
}

/* Append the nested message in c->sub as field of the profile. */
static void flush_sub(struct pprof_ctx *c, uint32_t field)
{
	if (c->sub.failed)
		c->msg->failed = true;
	else
		pb_put_bytes(c->msg, field, c->sub.data, c->sub.len);
	buf_reset(&c->sub);
}

static void put_value_type(struct pprof_ctx *c, uint32_t field, const char *type,
			   const char *unit)
{
	int64_t t = strtab_str(&c->st, type), u = strtab_str(&c->st, unit);

	if (t < 0 || u < 0) {
		c->msg->failed = true;
		return;
	}
	pb_put_int64(&c->sub, VALUETYPE_TYPE, t);
	pb_put_int64(&c->sub, VALUETYPE_UNIT, u);
	flush_sub(c, field);
}

static bool is(const char *s, const char *want)
{
	return s && !strcmp(s, want);
}

/* Sample types, period and period type from unit, type and rate. */
static void put_types(struct pprof_ctx *c)
{
	const struct stackset *ss = c->ss;
	const char *unit = ss->unit && ss->unit[0] ? ss->unit : "samples";
	const char *type = ss->type && ss->type[0] ? ss->type : NULL;

	if (is(unit, "samples")) {
		put_value_type(c, PROFILE_SAMPLE_TYPE, "samples", "count");
		c->cpu_time = ss->rate_hz && (!type || is(type, "cpu"));
	} else if (is(unit, "nanoseconds")) {
		put_value_type(c, PROFILE_SAMPLE_TYPE, type ? type : "time", "nanoseconds");
	} else if (is(unit, "bytes")) {
		put_value_type(c, PROFILE_SAMPLE_TYPE, "space", "bytes"); /* as heap profiles */
	} else {
		put_value_type(c, PROFILE_SAMPLE_TYPE, unit, "count");
	}
	if (c->cpu_time) {
		c->period = (int64_t)((1000000000ull + ss->rate_hz / 2) / ss->rate_hz);
		put_value_type(c, PROFILE_SAMPLE_TYPE, "cpu", "nanoseconds");
		put_value_type(c, PROFILE_PERIOD_TYPE, "cpu", "nanoseconds");
		pb_put_int64(c->msg, PROFILE_PERIOD, c->period);
	} else {
		put_value_type(c, PROFILE_PERIOD_TYPE,
			       is(unit, "samples") ? "samples" : is(unit, "bytes") ? "space" : unit,
			       is(unit, "nanoseconds") || is(unit, "bytes") ? unit : "count");
		pb_put_int64(c->msg, PROFILE_PERIOD, 1);
	}
}

static int64_t clamp64(uint64_t v)
{
	return v > INT64_MAX ? INT64_MAX : (int64_t)v;
}

/* The labels are the same on every sample: encode them once. */
static void encode_labels(struct pprof_ctx *c)
{
	struct buf one;
	int64_t key;
	size_t i;

	buf_init(&one);
	for (i = 0; i < c->nlabels; i++) {
		key = strtab_str(&c->st, c->labels[i].key);
		if (key < 0) {
			c->label_fields.failed = true;
			break;
		}
		buf_reset(&one);
		pb_put_int64(&one, LABEL_KEY, key);
		pb_put_int64(&one, LABEL_NUM, c->labels[i].num);
		if (one.failed)
			c->label_fields.failed = true;
		pb_put_bytes(&c->label_fields, SAMPLE_LABEL, one.data, one.len);
	}
	buf_free(&one);
	if (c->label_fields.failed)
		c->msg->failed = true;
}

static void put_samples(struct pprof_ctx *c)
{
	size_t k;
	uint32_t i;

	encode_labels(c);

	for (k = 0; k < c->tree.n; k++) {
		const struct ss_stack *st = &c->ss->stacks[c->tree.order[k]];
		/* pprof's values are int64: the mmap profile's frees go negative. */
		int64_t values[2] = { stackset_signed(c->ss) ? (int64_t)st->count : clamp64(st->count),
				      0 };

		/* pprof lists the leaf first. */
		for (i = 0; i < st->depth; i++)
			c->loc_ids[i] = (uint64_t)st->frames[st->depth - 1 - i] + 1;
		if (c->cpu_time)
			values[1] = st->count > (uint64_t)(INT64_MAX / c->period)
					    ? INT64_MAX
					    : (int64_t)st->count * c->period;
		pb_put_packed_uint64(&c->sub, SAMPLE_LOCATION_ID, c->loc_ids, st->depth);
		pb_put_packed_int64(&c->sub, SAMPLE_VALUE, values, c->cpu_time ? 2 : 1);
		buf_append(&c->sub, c->label_fields.data, c->label_fields.len);
		flush_sub(c, PROFILE_SAMPLE);
	}
}

static void put_mappings(struct pprof_ctx *c)
{
	size_t i;

	for (i = 0; i < c->nmaps; i++) {
		pb_put_uint64(&c->sub, MAPPING_ID, i + 1);
		pb_put_uint64(&c->sub, MAPPING_MEMORY_START, 0);
		pb_put_uint64(&c->sub, MAPPING_MEMORY_LIMIT, c->maps[i].limit);
		pb_put_int64(&c->sub, MAPPING_FILENAME, c->maps[i].file);
		if (c->maps[i].build_id)
			pb_put_int64(&c->sub, MAPPING_BUILD_ID, c->maps[i].build_id);
		/* Names are final: pprof must not look for the binaries. */
		pb_put_bool(&c->sub, MAPPING_HAS_FUNCTIONS, 1);
		flush_sub(c, PROFILE_MAPPING);
	}
}

static void put_locations(struct pprof_ctx *c)
{
	struct buf line;
	size_t i;

	buf_init(&line);
	for (i = 0; i < c->ss->nframes; i++) {
		const struct pprof_loc *l = &c->locs[i];

		if (!l->used)
			continue;
		pb_put_uint64(&c->sub, LOCATION_ID, i + 1);
		if (l->mapping) {
			pb_put_uint64(&c->sub, LOCATION_MAPPING_ID, l->mapping);
			pb_put_uint64(&c->sub, LOCATION_ADDRESS, l->address);
		}
		buf_reset(&line);
		pb_put_uint64(&line, LINE_FUNCTION_ID, l->fn);
		if (l->line)
			pb_put_int64(&line, LINE_LINE, l->line);
		if (line.failed)
			c->sub.failed = true;
		pb_put_bytes(&c->sub, LOCATION_LINE, line.data, line.len);
		flush_sub(c, PROFILE_LOCATION);
	}
	buf_free(&line);
}

static void put_functions(struct pprof_ctx *c)
{
	size_t i;

	for (i = 0; i < c->nfns; i++) {
		pb_put_uint64(&c->sub, FUNCTION_ID, i + 1);
		pb_put_int64(&c->sub, FUNCTION_NAME, c->fns[i].name);
		pb_put_int64(&c->sub, FUNCTION_SYSTEM_NAME, c->fns[i].name);
		if (c->fns[i].filename)
			pb_put_int64(&c->sub, FUNCTION_FILENAME, c->fns[i].filename);
		flush_sub(c, PROFILE_FUNCTION);
	}
}

/* The workload's "key=value" lines, a comment each after the title
 * (`pprof -comments` lists them; pprof has no profile-wide labels). */
static void put_workload(struct pprof_ctx *c)
{
	const char *line = c->ss->workload, *end;
	char buf[512];
	int64_t s;

	for (; line && *line; line = *end ? end + 1 : end) {
		end = strchrnul(line, '\n');
		if (end == line || (size_t)(end - line) >= sizeof(buf))
			continue;
		memcpy(buf, line, (size_t)(end - line));
		buf[end - line] = '\0';
		s = strtab_str(&c->st, buf);
		if (s < 0)
			c->msg->failed = true;
		else
			pb_put_packed_int64(c->msg, PROFILE_COMMENT, &s, 1);
	}
}

static void put_metadata(struct pprof_ctx *c)
{
	const struct stackset *ss = c->ss;
	int64_t s;

	if (ss->start_ns) {
		pb_put_int64(c->msg, PROFILE_TIME_NANOS, clamp64(ss->start_ns));
		if (ss->end_ns > ss->start_ns)
			pb_put_int64(c->msg, PROFILE_DURATION_NANOS,
				     clamp64(ss->end_ns - ss->start_ns));
	}
	if (ss->title && ss->title[0]) {
		s = strtab_str(&c->st, ss->title);
		if (s < 0)
			c->msg->failed = true;
		else
			pb_put_packed_int64(c->msg, PROFILE_COMMENT, &s, 1);
	}
	put_workload(c);
}

/* Last, so every string the fields above added is in it. */
static void put_strings(struct pprof_ctx *c)
{
	size_t i;

	for (i = 0; i < c->st.n; i++)
		pb_put_string(c->msg, PROFILE_STRING_TABLE, c->st.pool.data + c->st.off[i]);
}

static int encode(struct pprof_ctx *c)
{
	int err;

	c->locs = calloc(c->ss->nframes ? c->ss->nframes : 1, sizeof(*c->locs));
	c->loc_ids = calloc(c->tree.max_depth ? c->tree.max_depth : 1, sizeof(*c->loc_ids));
	if (!c->locs || !c->loc_ids || strtab_add(&c->st, "", 0) != 0)
		return -ENOMEM;
	err = add_title_mapping(c);
	if (!err)
		err = collect(c);
	if (err)
		return err;
	put_types(c);
	put_samples(c);
	put_mappings(c);
	put_locations(c);
	put_functions(c);
	put_metadata(c);
	put_strings(c);
	return c->msg->failed ? -ENOMEM : 0;
}

int render_pprof_raw_labeled(const struct stackset *ss, const struct pprof_num_label *labels,
			     size_t nlabels, struct buf *out)
{
	struct pprof_ctx c = { .ss = ss, .msg = out, .labels = labels, .nlabels = nlabels };
	int err;

	err = render_tree_init(&c.tree, ss, RENDER_ORDER_NAMES);
	if (err)
		return err;
	err = encode(&c);
	render_tree_free(&c.tree);
	strtab_free(&c.st);
	free(c.locs);
	free(c.loc_ids);
	free(c.fns);
	free(c.maps);
	hashmap_free(&c.fn_index);
	hashmap_free(&c.map_index);
	buf_free(&c.sub);
	buf_free(&c.label_fields);
	return err;
}

int render_pprof_raw(const struct stackset *ss, struct buf *out)
{
	return render_pprof_raw_labeled(ss, NULL, 0, out);
}

int pprof_gzip(const void *in, size_t len, struct buf *out)
{
	z_stream zs;
	size_t chunk;
	int zr = Z_OK;

	memset(&zs, 0, sizeof(zs));
	/* windowBits 15 + 16: a gzip header and trailer, not zlib's. */
	if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	zs.next_in = (Bytef *)in;
	do {
		chunk = len > (1u << 30) ? 1u << 30 : len;
		zs.avail_in = (uInt)chunk;
		len -= chunk;
		do {
			if (!buf_reserve(out, 1 << 16)) {
				deflateEnd(&zs);
				return -ENOMEM;
			}
			zs.next_out = (Bytef *)out->data + out->len;
			zs.avail_out = 1 << 16;
			zr = deflate(&zs, len ? Z_NO_FLUSH : Z_FINISH);
			out->len = (size_t)((char *)zs.next_out - out->data);
		} while (zs.avail_out == 0);
	} while (len);
	deflateEnd(&zs);
	return zr == Z_STREAM_END ? 0 : -EIO;
}

int render_pprof_labeled(const struct stackset *ss, const struct pprof_num_label *labels,
			 size_t nlabels, struct buf *out)
{
	struct buf raw;
	int err;

	buf_init(&raw);
	err = render_pprof_raw_labeled(ss, labels, nlabels, &raw);
	if (!err)
		err = pprof_gzip(raw.data ? raw.data : "", raw.len, out);
	buf_free(&raw);
	return err;
}

int render_pprof(const struct stackset *ss, struct buf *out)
{
	return render_pprof_labeled(ss, NULL, 0, out);
}
