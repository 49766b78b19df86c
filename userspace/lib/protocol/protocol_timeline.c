/* protocol_timeline: a timeline (tlset.h) as the payload of a timeline
 * dump's response: its stackset nested as in a dump, then the names and
 * threads events refer to, then the events in chunks. */
#include "protocol.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "protocol_tlv.h"
#include "tlset.h"

static int encode_thread(struct buf *b, const struct tl_thread *th)
{
	size_t nest = proto_tlv_nest_start(b, PROTO_TL_A_THREAD);
	int err;

	proto_tlv_put_u32(b, PROTO_TL_THREAD_A_PID, th->pid);
	proto_tlv_put_u32(b, PROTO_TL_THREAD_A_TID, th->tid);
	err = proto_tlv_put_str(b, PROTO_TL_THREAD_A_NAME, th->name);
	if (!err && th->pyname && *th->pyname)
		err = proto_tlv_put_str(b, PROTO_TL_THREAD_A_PYNAME, th->pyname);
	return err ? err : proto_tlv_nest_end(b, nest);
}

static void encode_events(struct buf *b, const struct tlset *t)
{
	uint64_t q[4 * PROTO_TL_EVENTS_CHUNK];
	size_t i = 0, n;

	while (i < t->nevents) {
		for (n = 0; n < PROTO_TL_EVENTS_CHUNK && i < t->nevents; n++, i++) {
			const struct tl_event *e = &t->events[i];

			q[4 * n] = e->start_ns;
			q[4 * n + 1] = e->weight;
			q[4 * n + 2] = (uint64_t)e->thread << 32 | e->stack;
			q[4 * n + 3] = e->type;
		}
		proto_tlv_put_u64_array(b, PROTO_TL_A_EVENTS, q, (uint32_t)(4 * n));
	}
}

int proto_encode_timeline(struct buf *b, const struct tlset *t)
{
	size_t start, nest;
	int err;
	size_t i;

	if (!b || !t)
		return -EINVAL;
	start = b->len;
	nest = proto_tlv_nest_start(b, PROTO_TL_A_STACKSET);
	err = proto_encode_stackset(b, t->ss);
	if (!err)
		err = proto_tlv_nest_end(b, nest);
	for (i = 0; !err && i < t->ntypes; i++)
		err = proto_tlv_put_str(b, PROTO_TL_A_TYPE, t->types[i]);
	for (i = 0; !err && i < t->nthreads; i++)
		err = encode_thread(b, &t->threads[i]);
	proto_tlv_put_u64(b, PROTO_TL_A_DROPPED, t->dropped);
	proto_tlv_put_u64(b, PROTO_TL_A_START_NS, t->start_ns);
	proto_tlv_put_u64(b, PROTO_TL_A_END_NS, t->end_ns);
	proto_tlv_put_u32(b, PROTO_TL_A_RATE_HZ, t->rate_hz);
	if (!err)
		encode_events(b, t);
	return proto_tlv_finish(b, start, err);
}

struct tl_decoder {
	struct tlset *t;
	uint64_t seen;
	/* Events wait for the end: their indices are checked against the
	 * whole message, in whatever order its attributes came. */
	const struct proto_attr *chunks;
	size_t nchunks, chunks_cap;
};

struct thread_ctx {
	uint32_t pid, tid;
	char *name, *pyname;
	uint64_t seen;
};

static int thread_attr(const struct proto_attr *a, void *arg)
{
	struct thread_ctx *x = arg;

	switch (a->tag) {
	case PROTO_TL_THREAD_A_PID:
		return proto_tlv_get_u32(a, &x->seen, &x->pid);
	case PROTO_TL_THREAD_A_TID:
		return proto_tlv_get_u32(a, &x->seen, &x->tid);
	case PROTO_TL_THREAD_A_NAME:
		return proto_tlv_get_str(a, &x->seen, &x->name);
	case PROTO_TL_THREAD_A_PYNAME:
		return proto_tlv_get_str(a, &x->seen, &x->pyname);
	default:
		return 0;
	}
}

/* Threads are appended in message order: a repeated one is malformed,
 * or the indices events use would shift. */
static int decode_thread(struct tl_decoder *d, const struct proto_attr *a)
{
	struct thread_ctx x = {0};
	size_t before = d->t->nthreads;
	int err;

	if (before >= PROTO_TL_MAX_THREADS)
		return -EPROTO;
	err = proto_tlv_walk(a->val, a->len, thread_attr, &x);
	if (!err)
		err = proto_tlv_require(x.seen, PROTO_TLV_BIT(PROTO_TL_THREAD_A_PID) |
						    PROTO_TLV_BIT(PROTO_TL_THREAD_A_TID));
	if (!err && tlset_thread(d->t, x.pid, x.tid, x.name) < 0)
		err = -ENOMEM;
	if (!err && d->t->nthreads == before)
		err = -EPROTO;
	if (!err && x.pyname) { /* the thread's own, taken over */
		d->t->threads[before].pyname = x.pyname;
		x.pyname = NULL;
	}
	free(x.name);
	free(x.pyname);
	return err;
}

static int decode_type(struct tl_decoder *d, const struct proto_attr *a)
{
	uint64_t seen = 0;
	uint32_t before = d->t->ntypes;
	char *name = NULL;
	int err = proto_tlv_get_str(a, &seen, &name);

	if (!err && tlset_type(d->t, name) < 0)
		err = -EPROTO; /* too many */
	if (!err && d->t->ntypes == before)
		err = -EPROTO; /* repeated */
	free(name);
	return err;
}

static int decode_stackset(struct tl_decoder *d, const struct proto_attr *a)
{
	struct stackset *ss;
	int err = proto_tlv_once(&d->seen, a->tag);

	if (err)
		return err;
	ss = proto_decode_stackset(a->val, a->len, &err);
	if (!ss)
		return err;
	stackset_free(d->t->ss);
	d->t->ss = ss;
	return 0;
}

static int keep_chunk(struct tl_decoder *d, const struct proto_attr *a)
{
	if (a->len % 32)
		return -EPROTO;
	if (d->nchunks == d->chunks_cap) {
		size_t cap = d->chunks_cap ? 2 * d->chunks_cap : 16;
		const struct proto_attr *c = realloc((void *)d->chunks, cap * sizeof(*c));

		if (!c)
			return -ENOMEM;
		d->chunks = c;
		d->chunks_cap = cap;
	}
	((struct proto_attr *)d->chunks)[d->nchunks++] = *a;
	return 0;
}

static int tl_attr(const struct proto_attr *a, void *arg)
{
	struct tl_decoder *d = arg;
	struct tlset *t = d->t;

	switch (a->tag) {
	case PROTO_TL_A_STACKSET:
		return decode_stackset(d, a);
	case PROTO_TL_A_TYPE:
		return decode_type(d, a);
	case PROTO_TL_A_THREAD:
		return decode_thread(d, a);
	case PROTO_TL_A_EVENTS:
		return keep_chunk(d, a);
	case PROTO_TL_A_DROPPED:
		return proto_tlv_get_u64(a, &d->seen, &t->dropped);
	case PROTO_TL_A_START_NS:
		return proto_tlv_get_u64(a, &d->seen, &t->start_ns);
	case PROTO_TL_A_END_NS:
		return proto_tlv_get_u64(a, &d->seen, &t->end_ns);
	case PROTO_TL_A_RATE_HZ:
		return proto_tlv_get_u32(a, &d->seen, &t->rate_hz);
	default:
		return 0;
	}
}

/* tlset_add refuses an index past its table: malformed. */
static int decode_chunk(struct tl_decoder *d, const struct proto_attr *a)
{
	struct cursor c;
	struct tl_event e = {0};
	uint64_t ts;
	uint32_t i;
	int err;

	cursor_init(&c, a->val, a->len);
	for (i = 0; i < a->len / 32; i++) {
		e.start_ns = cursor_u64(&c);
		e.weight = cursor_u64(&c);
		ts = cursor_u64(&c);
		e.thread = (uint32_t)(ts >> 32);
		e.stack = (uint32_t)ts;
		ts = cursor_u64(&c);
		if (ts >= TLSET_MAX_TYPES)
			return -EPROTO;
		e.type = (uint32_t)ts;
		err = tlset_add(d->t, &e);
		if (err)
			return err == -EINVAL ? -EPROTO : err;
	}
	return 0;
}

struct tlset *proto_decode_timeline(const void *data, size_t len, int *err)
{
	struct tl_decoder d = {0};
	size_t i;
	int ret = -EINVAL;

	if (data || !len) {
		d.t = tlset_new();
		ret = d.t ? proto_tlv_walk(data, len, tl_attr, &d) : -ENOMEM;
	}
	if (!ret)
		ret = proto_tlv_require(d.seen, PROTO_TLV_BIT(PROTO_TL_A_STACKSET));
	for (i = 0; !ret && i < d.nchunks; i++)
		ret = decode_chunk(&d, &d.chunks[i]);
	free((void *)d.chunks);
	if (ret) {
		tlset_free(d.t);
		d.t = NULL;
		errno = -ret;
	}
	if (err)
		*err = ret;
	return d.t;
}
