/* protocol_stackset: a whole profile as the payload of a dump response.
 * Modules go first, then frames referring to them, then stacks referring
 * to frames, each by wire index. */
#include "protocol.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "protocol_tlv.h"

/* Lowercase hex, as the symbolizer writes it: anything else from a peer
 * is malformed rather than a string to show. */
static bool is_build_id(const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

static int encode_module(struct buf *b, const struct ss_module *m)
{
	const char *bid = m->build_id ? m->build_id : "";
	size_t nest;
	int err;

	/* Refuse what the decoder would refuse, naming the sender's bug. */
	if (!m->path)
		return -EINVAL;
	if (strlen(bid) > PROTO_MAX_BUILD_ID)
		return -EMSGSIZE;
	if (!is_build_id(bid, strlen(bid)))
		return -EINVAL;
	nest = proto_tlv_nest_start(b, PROTO_SS_A_MODULE);
	err = proto_tlv_put_str(b, PROTO_MODULE_A_PATH, m->path);
	if (!err && bid[0])
		err = proto_tlv_put_str(b, PROTO_MODULE_A_BUILD_ID, bid);
	return err ? err : proto_tlv_nest_end(b, nest);
}

static int encode_frame(struct buf *b, const struct ss_frame *f, size_t nmodules)
{
	size_t nest;
	int err;

	if (!f->name || f->kind >= FRAME_KIND_MAX || f->module > nmodules)
		return -EINVAL;
	nest = proto_tlv_nest_start(b, PROTO_SS_A_FRAME);
	proto_tlv_put_u32(b, PROTO_FRAME_A_KIND, f->kind);
	/* Only when set: most frames have none, and older decoders skip it. */
	if (f->module)
		proto_tlv_put_u32(b, PROTO_FRAME_A_MODULE, f->module);
	err = proto_tlv_put_str(b, PROTO_FRAME_A_NAME, f->name);
	return err ? err : proto_tlv_nest_end(b, nest);
}

static int encode_stack(struct buf *b, const struct ss_stack *st, size_t nframes)
{
	size_t nest;
	uint32_t i;

	/* Refuse what the decoder would refuse, naming the sender's bug. */
	if (st->depth > PROTO_MAX_DEPTH)
		return -EMSGSIZE;
	for (i = 0; i < st->depth; i++)
		if (st->frames[i] >= nframes)
			return -EINVAL;
	nest = proto_tlv_nest_start(b, PROTO_SS_A_STACK);
	proto_tlv_put_u64(b, PROTO_STACK_A_COUNT, st->count);
	proto_tlv_put_u32_array(b, PROTO_STACK_A_FRAMES, st->frames, st->depth);
	return proto_tlv_nest_end(b, nest);
}

/* Modules, frames, stacks: each refers only to what came before it. */
static int encode_tables(struct buf *b, const struct stackset *ss)
{
	size_t i;
	int err = 0;

	if (ss->nmodules > PROTO_MAX_MODULES)
		return -EMSGSIZE;
	for (i = 0; i < ss->nmodules && !err; i++)
		err = encode_module(b, &ss->modules[i]);
	for (i = 0; i < ss->nframes && !err; i++)
		err = encode_frame(b, &ss->frames[i], ss->nmodules);
	for (i = 0; i < ss->nstacks && !err; i++)
		err = encode_stack(b, &ss->stacks[i], ss->nframes);
	return err;
}

int proto_encode_stackset(struct buf *b, const struct stackset *ss)
{
	size_t start;
	int err;

	if (!b || !ss)
		return -EINVAL;
	start = b->len;
	err = proto_tlv_put_str(b, PROTO_SS_A_TITLE, ss->title);
	if (!err)
		err = proto_tlv_put_str(b, PROTO_SS_A_UNIT, ss->unit);
	if (!err)
		err = proto_tlv_put_str(b, PROTO_SS_A_TYPE, ss->type);
	if (!err && ss->workload && ss->workload[0])
		err = proto_tlv_put_str(b, PROTO_SS_A_WORKLOAD, ss->workload);
	proto_tlv_put_u64(b, PROTO_SS_A_START_NS, ss->start_ns);
	proto_tlv_put_u64(b, PROTO_SS_A_END_NS, ss->end_ns);
	proto_tlv_put_u32(b, PROTO_SS_A_RATE_HZ, ss->rate_hz);
	if (!err)
		err = encode_tables(b, ss);
	return proto_tlv_finish(b, start, err);
}

struct ss_decoder {
	struct stackset *ss;
	/* Wire frame index -> stackset id: interning merges repeated
	 * frames, so the two numberings can differ. */
	uint32_t *ids;
	size_t nframes, max_frames;
	/* Wire module index -> stackset module (index + 1), likewise. */
	uint32_t *mods;
	size_t nmodules, max_modules;
	uint64_t seen;
};

struct module_ctx {
	char *path, *build_id;
	uint64_t seen;
};

static int module_attr(const struct proto_attr *a, void *arg)
{
	struct module_ctx *m = arg;
	int ret;

	switch (a->tag) {
	case PROTO_MODULE_A_PATH:
		return proto_tlv_get_str(a, &m->seen, &m->path);
	case PROTO_MODULE_A_BUILD_ID:
		if (a->len > PROTO_MAX_BUILD_ID)
			return -EMSGSIZE;
		ret = proto_tlv_get_str(a, &m->seen, &m->build_id);
		if (!ret && !is_build_id(m->build_id, a->len))
			ret = -EPROTO;
		return ret;
	default:
		return 0;
	}
}

static int decode_module(struct ss_decoder *d, const struct proto_attr *a)
{
	struct module_ctx m = { 0 };
	int64_t id;
	int ret;

	if (d->nmodules >= d->max_modules)
		return -EPROTO; /* cannot happen: counted on the same bytes */
	ret = proto_tlv_walk(a->val, a->len, module_attr, &m);
	if (!ret)
		ret = proto_tlv_require(m.seen, PROTO_TLV_BIT(PROTO_MODULE_A_PATH));
	if (!ret) {
		id = stackset_module(d->ss, m.path, m.build_id);
		if (id < 0)
			ret = (int)id;
		else
			d->mods[d->nmodules++] = (uint32_t)id;
	}
	free(m.path);
	free(m.build_id);
	return ret;
}

/* First walk: the module table, so frames can be checked against all of
 * it wherever the sender put it. */
static int module_top_attr(const struct proto_attr *a, void *arg)
{
	return a->tag == PROTO_SS_A_MODULE ? decode_module(arg, a) : 0;
}

struct frame_ctx {
	uint32_t kind, module;
	char *name;
	uint64_t seen;
};

static int frame_attr(const struct proto_attr *a, void *arg)
{
	struct frame_ctx *f = arg;

	switch (a->tag) {
	case PROTO_FRAME_A_KIND:
		return proto_tlv_get_u32(a, &f->seen, &f->kind);
	case PROTO_FRAME_A_NAME:
		return proto_tlv_get_str(a, &f->seen, &f->name);
	case PROTO_FRAME_A_MODULE:
		return proto_tlv_get_u32(a, &f->seen, &f->module);
	default:
		return 0;
	}
}

/* Intern a checked frame, its wire module mapped to ours. */
static int add_frame(struct ss_decoder *d, const struct frame_ctx *f)
{
	uint32_t mod = f->module ? d->mods[f->module - 1] : 0;
	int64_t id = stackset_intern_in(d->ss, f->kind, f->name, mod);

	if (id < 0)
		return (int)id;
	d->ids[d->nframes++] = (uint32_t)id;
	return 0;
}

static int decode_frame(struct ss_decoder *d, const struct proto_attr *a)
{
	struct frame_ctx f = { 0 };
	int ret;

	if (d->nframes >= d->max_frames)
		return -EPROTO; /* cannot happen: counted on the same bytes */
	ret = proto_tlv_walk(a->val, a->len, frame_attr, &f);
	if (!ret)
		ret = proto_tlv_require(f.seen, PROTO_TLV_BIT(PROTO_FRAME_A_KIND) |
							PROTO_TLV_BIT(PROTO_FRAME_A_NAME));
	if (!ret && (f.kind >= FRAME_KIND_MAX || f.module > d->nmodules))
		ret = -EPROTO;
	if (!ret)
		ret = add_frame(d, &f);
	free(f.name);
	return ret;
}

/* Second walk: metadata and frames, so stacks can be checked against
 * the full frame table whatever order a sender used. */
static int meta_attr(const struct proto_attr *a, void *arg)
{
	struct ss_decoder *d = arg;
	struct stackset *ss = d->ss;

	switch (a->tag) {
	case PROTO_SS_A_TITLE:
		return proto_tlv_get_str(a, &d->seen, &ss->title);
	case PROTO_SS_A_UNIT:
		return proto_tlv_get_str(a, &d->seen, &ss->unit);
	case PROTO_SS_A_TYPE:
		return proto_tlv_get_str(a, &d->seen, &ss->type);
	case PROTO_SS_A_WORKLOAD:
		return proto_tlv_get_str(a, &d->seen, &ss->workload);
	case PROTO_SS_A_START_NS:
		return proto_tlv_get_u64(a, &d->seen, &ss->start_ns);
	case PROTO_SS_A_END_NS:
		return proto_tlv_get_u64(a, &d->seen, &ss->end_ns);
	case PROTO_SS_A_RATE_HZ:
		return proto_tlv_get_u32(a, &d->seen, &ss->rate_hz);
	case PROTO_SS_A_FRAME:
		return decode_frame(d, a);
	default:
		return 0; /* modules came in the first walk, stacks come in the third */
	}
}

struct stack_ctx {
	uint64_t count;
	struct proto_attr frames;
	uint64_t seen;
};

static int stack_attr(const struct proto_attr *a, void *arg)
{
	struct stack_ctx *st = arg;

	switch (a->tag) {
	case PROTO_STACK_A_COUNT:
		return proto_tlv_get_u64(a, &st->seen, &st->count);
	case PROTO_STACK_A_FRAMES:
		if (a->len % 4 || proto_tlv_once(&st->seen, a->tag))
			return -EPROTO;
		if (a->len / 4 > PROTO_MAX_DEPTH)
			return -EMSGSIZE;
		st->frames = *a;
		return 0;
	default:
		return 0;
	}
}

/* Map wire ids to stackset ids and add; the ids array is sized by the
 * attribute's bytes. */
static int add_stack(struct ss_decoder *d, const struct stack_ctx *st)
{
	uint32_t depth = st->frames.len / 4, i;
	struct cursor c;
	uint32_t *ids;
	int ret = 0;

	/* A wrapped total would turn every percentage into nonsense; a
	 * signed profile's (metadata is read first) wraps by design. */
	if (st->count > UINT64_MAX - d->ss->total && !stackset_signed(d->ss))
		return -EPROTO;
	ids = malloc(depth ? depth * sizeof(*ids) : 1);
	if (!ids)
		return -ENOMEM;
	cursor_init(&c, st->frames.val, st->frames.len);
	for (i = 0; i < depth && !ret; i++) {
		uint32_t wire = cursor_u32(&c);

		if (wire >= d->nframes)
			ret = -EPROTO;
		else
			ids[i] = d->ids[wire];
	}
	if (!ret)
		ret = stackset_add(d->ss, ids, depth, st->count);
	free(ids);
	return ret;
}

static int stack_top_attr(const struct proto_attr *a, void *arg)
{
	struct stack_ctx st = { 0 };
	int ret;

	if (a->tag != PROTO_SS_A_STACK)
		return 0;
	ret = proto_tlv_walk(a->val, a->len, stack_attr, &st);
	if (!ret)
		ret = proto_tlv_require(st.seen, PROTO_TLV_BIT(PROTO_STACK_A_COUNT) |
							 PROTO_TLV_BIT(PROTO_STACK_A_FRAMES));
	return ret ? ret : add_stack(arg, &st);
}

/* Size the wire-index tables by what the bytes really hold. */
static int size_tables(struct ss_decoder *d, const void *data, size_t len)
{
	int ret = proto_tlv_count(data, len, PROTO_SS_A_FRAME, &d->max_frames);

	if (!ret)
		ret = proto_tlv_count(data, len, PROTO_SS_A_MODULE, &d->max_modules);
	if (ret)
		return ret;
	if (d->max_modules > PROTO_MAX_MODULES)
		return -EMSGSIZE;
	if (d->max_frames && !(d->ids = calloc(d->max_frames, sizeof(*d->ids))))
		return -ENOMEM;
	if (d->max_modules && !(d->mods = calloc(d->max_modules, sizeof(*d->mods))))
		return -ENOMEM;
	return 0;
}

static int decode_into(struct ss_decoder *d, const void *data, size_t len)
{
	int ret = size_tables(d, data, len);

	if (!ret)
		ret = proto_tlv_walk(data, len, module_top_attr, d);
	if (!ret)
		ret = proto_tlv_walk(data, len, meta_attr, d);
	if (!ret)
		ret = proto_tlv_walk(data, len, stack_top_attr, d);
	return ret;
}

struct stackset *proto_decode_stackset(const void *data, size_t len, int *err)
{
	struct ss_decoder d = { 0 };
	int ret = -EINVAL;

	if (data || !len) {
		d.ss = stackset_new();
		ret = d.ss ? decode_into(&d, data, len) : -ENOMEM;
	}
	free(d.ids);
	free(d.mods);
	if (ret) {
		stackset_free(d.ss);
		d.ss = NULL;
		errno = -ret;
	}
	if (err)
		*err = ret;
	return d.ss;
}
