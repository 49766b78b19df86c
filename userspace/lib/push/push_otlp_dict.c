#include "push_otlp_dict.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "framename.h"
#include "hashmap.h"
#include "protobuf.h"
#include "utf8.h"

/* Field numbers of the pinned version (tests/data/otlp/profiles.proto). */
enum {
	DICT_MAPPING = 1,
	DICT_LOCATION,
	DICT_FUNCTION,
	DICT_LINK,
	DICT_STRING,
	DICT_ATTRIBUTE,
	DICT_STACK
};
enum {
	MAPPING_MEMORY_START = 1,
	MAPPING_MEMORY_LIMIT,
	MAPPING_FILE_OFFSET,
	MAPPING_FILENAME,
	MAPPING_ATTRIBUTES
};
enum { LOCATION_MAPPING = 1, LOCATION_ADDRESS, LOCATION_LINES, LOCATION_ATTRIBUTES };
enum { LINE_FUNCTION = 1, LINE_LINE };
enum { FUNCTION_NAME = 1, FUNCTION_SYSTEM_NAME, FUNCTION_FILENAME };
enum { STACK_LOCATIONS = 1 };
enum { LINK_TRACE_ID = 1, LINK_SPAN_ID };
enum { KVU_KEY = 1, KVU_VALUE };
enum { ANYVALUE_STRING = 1, ANYVALUE_INT = 3 };

#define KERNEL_MAPPING "[kernel.kallsyms]"
#define ATTR_BUILD_ID "process.executable.build_id.gnu"
#define ATTR_FRAME_TYPE "profile.frame.type"

/* A table of encoded items (a message's bytes, or a string's), each
 * stored once: the item is its own identity, and encoding the table is
 * writing the items out.  Item 0 is the zero value. */
struct table {
	struct buf pool;
	size_t *off; /* item i is pool[off[i], off[i + 1]) */
	size_t n, cap;
	struct hashmap index; /* content hash -> i + 1, probing on collision */
};

/* Mappings change after they are made (the limit grows to the highest
 * address seen), so they are kept as fields until encoded. */
struct mapping {
	int32_t file, build_id_attr; /* build_id_attr 0: none */
	uint64_t limit;
};

struct otlp_dict {
	struct table strings, functions, locations, stacks, attrs, links;
	struct mapping *maps;
	size_t nmaps, maps_cap;
	struct hashmap map_index;      /* hash(file, build id) -> index, probing */
	struct buf scratch, item, sub; /* one item and its nested message */
	int32_t *loc_of;	       /* per frame of the stackset: index, 0 = not yet */
	uint64_t *ids;		       /* one stack's location indices */
	size_t ids_cap;
};

static void table_free(struct table *t)
{
	buf_free(&t->pool);
	free(t->off);
	hashmap_free(&t->index);
}

static const char *table_item(const struct table *t, size_t i, size_t *len)
{
	*len = t->off[i + 1] - t->off[i];
	return t->pool.data ? t->pool.data + t->off[i] : "";
}

/* Index of the item data[0..len), added when new; -ENOMEM. */
static int32_t table_add(struct table *t, const void *data, size_t len)
{
	uint64_t h = hash64_bytes(data, len, 0x6f746c70), v;
	const char *have;
	size_t have_len;

	if (t->n >= INT32_MAX)
		return -ENOMEM;
	for (; hashmap_get(&t->index, h, &v); h++) {
		have = table_item(t, v - 1, &have_len);
		if (have_len == len && !memcmp(have, data, len))
			return (int32_t)(v - 1);
	}
	if (array_grow((void **)&t->off, &t->cap, t->n + 2, sizeof(*t->off)))
		return -ENOMEM;
	buf_append(&t->pool, data, len);
	if (t->pool.failed || hashmap_put(&t->index, h, t->n + 1))
		return -ENOMEM;
	t->off[t->n + 1] = t->pool.len;
	return (int32_t)t->n++;
}

/* An item from a buf that a builder filled (failed: -ENOMEM). */
static int32_t table_add_buf(struct table *t, const struct buf *b)
{
	return b->failed ? -ENOMEM : table_add(t, b->data ? b->data : "", b->len);
}

static int table_init(struct table *t, const void *zero, size_t len)
{
	if (array_grow((void **)&t->off, &t->cap, 1, sizeof(*t->off)))
		return -ENOMEM;
	t->off[0] = 0;
	return table_add(t, zero, len) == 0 ? 0 : -ENOMEM;
}

void otlp_dict_free(struct otlp_dict *d)
{
	if (!d)
		return;
	table_free(&d->strings);
	table_free(&d->functions);
	table_free(&d->locations);
	table_free(&d->stacks);
	table_free(&d->attrs);
	table_free(&d->links);
	free(d->maps);
	hashmap_free(&d->map_index);
	buf_free(&d->scratch);
	buf_free(&d->item);
	buf_free(&d->sub);
	free(d->loc_of);
	free(d->ids);
	free(d);
}

struct otlp_dict *otlp_dict_new(void)
{
	/* Link{} as the proto asks: ids of their full length, all zero. */
	static const uint8_t zero_link[28] = {
	    [0] = LINK_TRACE_ID << 3 | PB_WIRE_LEN,
	    [1] = 16, /* 16 zero bytes */
	    [18] = LINK_SPAN_ID << 3 | PB_WIRE_LEN,
	    [19] = 8, /* 8 zero bytes */
	};
	struct otlp_dict *d = calloc(1, sizeof(*d));

	if (!d)
		goto nomem;
	if (table_init(&d->strings, "", 0) || table_init(&d->functions, "", 0) ||
	    table_init(&d->locations, "", 0) || table_init(&d->stacks, "", 0) ||
	    table_init(&d->attrs, "", 0) || table_init(&d->links, zero_link, sizeof(zero_link)) ||
	    array_grow((void **)&d->maps, &d->maps_cap, 1, sizeof(*d->maps)))
		goto nomem;
	d->maps[d->nmaps++] = (struct mapping){0};
	return d;
nomem:
	otlp_dict_free(d);
	errno = ENOMEM;
	return NULL;
}

static int32_t string_n(struct otlp_dict *d, const char *s, size_t len)
{
	buf_reset(&d->scratch);
	utf8_put_clean(&d->scratch, s, len);
	return table_add_buf(&d->strings, &d->scratch);
}

int32_t otlp_dict_string(struct otlp_dict *d, const char *s)
{
	return string_n(d, s, strlen(s));
}

/* The attribute key = the AnyValue in d->sub. */
static int32_t attr_add(struct otlp_dict *d, const char *key)
{
	int32_t k = otlp_dict_string(d, key);

	if (k < 0)
		return k;
	buf_reset(&d->item);
	pb_put_uint64(&d->item, KVU_KEY, (uint64_t)k);
	pb_put_bytes(&d->item, KVU_VALUE, d->sub.data ? d->sub.data : "", d->sub.len);
	if (d->sub.failed)
		return -ENOMEM;
	return table_add_buf(&d->attrs, &d->item);
}

int32_t otlp_dict_attr(struct otlp_dict *d, const char *key, const char *value)
{
	buf_reset(&d->sub);
	buf_reset(&d->scratch);
	utf8_put_clean(&d->scratch, value, strlen(value));
	pb_put_bytes(&d->sub, ANYVALUE_STRING, d->scratch.data ? d->scratch.data : "",
		     d->scratch.len);
	if (d->scratch.failed)
		return -ENOMEM;
	return attr_add(d, key);
}

int32_t otlp_dict_attr_int(struct otlp_dict *d, const char *key, int64_t value)
{
	buf_reset(&d->sub);
	pb_put_int64(&d->sub, ANYVALUE_INT, value);
	return attr_add(d, key);
}

/* Mapping index for (file, build id attribute), its limit raised past
 * address; -ENOMEM. */
static int32_t mapping_add(struct otlp_dict *d, int32_t file, int32_t build_id, uint64_t address)
{
	int32_t key[2] = {file, build_id};
	uint64_t h = hash64_bytes(key, sizeof(key), 0x6d6170), v;
	uint64_t limit = address < UINT64_MAX ? address + 1 : address;
	struct mapping *m;

	for (; hashmap_get(&d->map_index, h, &v); h++) {
		m = &d->maps[v];
		if (m->file != file || m->build_id_attr != build_id)
			continue;
		if (m->limit < limit)
			m->limit = limit;
		return (int32_t)v;
	}
	if (d->nmaps >= INT32_MAX ||
	    array_grow((void **)&d->maps, &d->maps_cap, d->nmaps + 1, sizeof(*d->maps)) ||
	    hashmap_put(&d->map_index, h, d->nmaps))
		return -ENOMEM;
	d->maps[d->nmaps] =
	    (struct mapping){.file = file, .build_id_attr = build_id, .limit = limit};
	return (int32_t)d->nmaps++;
}

/* Where a frame's code lives (0: nowhere known) and its address there;
 * as render_pprof places frames.  -ENOMEM. */
static int32_t place_frame(struct otlp_dict *d, const struct stackset *ss, uint32_t id,
			   uint64_t *address)
{
	const struct ss_frame *f = &ss->frames[id];
	const struct ss_module *m = stackset_frame_module(ss, id);
	struct framename_mod mod;
	bool named = f->kind == FRAME_UNKNOWN && framename_module(f->name, &mod);
	int32_t file, build_id = 0;

	*address = named ? mod.offset : 0;
	if (m) {
		file = otlp_dict_string(d, m->path);
		if (m->build_id && m->build_id[0])
			build_id = otlp_dict_attr(d, ATTR_BUILD_ID, m->build_id);
	} else if (f->kind == FRAME_KERNEL) {
		file = otlp_dict_string(d, KERNEL_MAPPING);
	} else if (named) {
		file = string_n(d, mod.module, mod.module_len);
	} else {
		return 0;
	}
	if (file < 0 || build_id < 0)
		return -ENOMEM;
	return mapping_add(d, file, build_id, *address);
}

/* profile.frame.type of the semantic conventions; NULL for frames that
 * are no code (process roots, waits, GPU commands, tasks). */
static const char *frame_type(uint32_t kind)
{
	switch (kind) {
	case FRAME_KERNEL:
		return "kernel";
	case FRAME_PYTHON:
		return "cpython";
	case FRAME_NATIVE:
	case FRAME_UNKNOWN:
		return "native";
	default:
		return NULL;
	}
}

static int32_t function_add(struct otlp_dict *d, int32_t name, int32_t file)
{
	buf_reset(&d->item);
	pb_put_uint64(&d->item, FUNCTION_NAME, (uint64_t)name);
	pb_put_uint64(&d->item, FUNCTION_SYSTEM_NAME, (uint64_t)name);
	if (file)
		pb_put_uint64(&d->item, FUNCTION_FILENAME, (uint64_t)file);
	return table_add_buf(&d->functions, &d->item);
}

/* The Location of frame id of ss; -ENOMEM. */
static int32_t location_add(struct otlp_dict *d, const struct stackset *ss, uint32_t id)
{
	const struct ss_frame *f = &ss->frames[id];
	const char *type = frame_type(f->kind);
	struct framename_py py;
	int32_t name, file = 0, fn, mapping = 0, attr = 0;
	uint64_t address = 0, line = 0;

	if (f->kind == FRAME_PYTHON && framename_python(f->name, &py)) {
		name = string_n(d, py.func, py.func_len);
		file = string_n(d, py.file, py.file_len);
		line = py.line;
	} else {
		name = otlp_dict_string(d, f->name);
		mapping = place_frame(d, ss, id, &address);
	}
	if (type)
		attr = otlp_dict_attr(d, ATTR_FRAME_TYPE, type);
	if (name < 0 || file < 0 || mapping < 0 || attr < 0)
		return -ENOMEM;
	fn = function_add(d, name, file);
	if (fn < 0)
		return fn;

	buf_reset(&d->sub);
	pb_put_uint64(&d->sub, LINE_FUNCTION, (uint64_t)fn);
	if (line)
		pb_put_uint64(&d->sub, LINE_LINE, line);
	buf_reset(&d->item);
	if (mapping)
		pb_put_uint64(&d->item, LOCATION_MAPPING, (uint64_t)mapping);
	if (address)
		pb_put_uint64(&d->item, LOCATION_ADDRESS, address);
	pb_put_bytes(&d->item, LOCATION_LINES, d->sub.data ? d->sub.data : "", d->sub.len);
	if (attr) {
		uint64_t a = (uint64_t)attr;

		pb_put_packed_uint64(&d->item, LOCATION_ATTRIBUTES, &a, 1);
	}
	if (d->sub.failed)
		return -ENOMEM;
	return table_add_buf(&d->locations, &d->item);
}

static int32_t stack_add(struct otlp_dict *d, const struct stackset *ss, const struct ss_stack *st)
{
	uint32_t i, id;
	int32_t loc;

	if (array_grow((void **)&d->ids, &d->ids_cap, st->depth ? st->depth : 1, sizeof(*d->ids)))
		return -ENOMEM;
	/* The stackset is root first; OTLP leaf first. */
	for (i = 0; i < st->depth; i++) {
		id = st->frames[st->depth - 1 - i];
		loc = d->loc_of[id];
		if (!loc) {
			loc = location_add(d, ss, id);
			if (loc < 0)
				return loc;
			d->loc_of[id] = loc;
		}
		d->ids[i] = (uint64_t)loc;
	}
	buf_reset(&d->item);
	pb_put_packed_uint64(&d->item, STACK_LOCATIONS, d->ids, st->depth);
	return table_add_buf(&d->stacks, &d->item);
}

int otlp_dict_add_stacks(struct otlp_dict *d, const struct stackset *ss, int32_t *stack_of)
{
	int32_t idx = 0;
	size_t k;

	/* Locations are per frame of this stackset only: frame ids are. */
	free(d->loc_of);
	d->loc_of = calloc(ss->nframes ? ss->nframes : 1, sizeof(*d->loc_of));
	if (!d->loc_of)
		return -ENOMEM;
	for (k = 0; k < ss->nstacks && idx >= 0; k++)
		stack_of[k] = idx = stack_add(d, ss, &ss->stacks[k]);
	free(d->loc_of);
	d->loc_of = NULL;
	return idx < 0 ? idx : 0;
}

static void put_table(struct buf *out, uint32_t field, const struct table *t)
{
	const char *item;
	size_t i, len;

	for (i = 0; i < t->n; i++) {
		item = table_item(t, i, &len);
		pb_put_bytes(out, field, item, len);
	}
}

static void put_mappings(const struct otlp_dict *d, struct buf *out, struct buf *item)
{
	const struct mapping *m;
	uint64_t attr;
	size_t i;

	for (i = 0; i < d->nmaps; i++) {
		m = &d->maps[i];
		buf_reset(item);
		/* The module's range is not known: [0, highest address + 1). */
		if (m->limit)
			pb_put_uint64(item, MAPPING_MEMORY_LIMIT, m->limit);
		if (m->file)
			pb_put_uint64(item, MAPPING_FILENAME, (uint64_t)m->file);
		attr = (uint64_t)m->build_id_attr;
		if (attr)
			pb_put_packed_uint64(item, MAPPING_ATTRIBUTES, &attr, 1);
		if (item->failed)
			out->failed = true;
		pb_put_bytes(out, DICT_MAPPING, item->data ? item->data : "", item->len);
	}
}

void otlp_dict_encode(const struct otlp_dict *d, struct buf *out)
{
	struct buf item;

	buf_init(&item);
	put_mappings(d, out, &item);
	buf_free(&item);
	put_table(out, DICT_LOCATION, &d->locations);
	put_table(out, DICT_FUNCTION, &d->functions);
	put_table(out, DICT_LINK, &d->links);
	put_table(out, DICT_STRING, &d->strings);
	put_table(out, DICT_ATTRIBUTE, &d->attrs);
	put_table(out, DICT_STACK, &d->stacks);
}
