/* protocol_msg: the small payloads (dump request, process list, stats,
 * error).  Decoders size every array from a counting pass over the
 * bytes, so allocation never exceeds what the input holds. */
#include "protocol.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "protocol_tlv.h"

/* ---- dump request ---- */

int proto_encode_dump_req(struct buf *b, const struct proto_dump_req *r)
{
	size_t start, i;
	int err;

	if (!b || !r || (r->npids && !r->pids))
		return -EINVAL;
	start = b->len;
	for (i = 0; i < r->npids; i++)
		proto_tlv_put_u32(b, PROTO_DUMP_A_PID, r->pids[i]);
	err = proto_tlv_put_str(b, PROTO_DUMP_A_COMM, r->comm);
	if (!err)
		err = proto_tlv_put_str(b, PROTO_DUMP_A_EXE, r->exe);
	if (!err)
		err = proto_tlv_put_str(b, PROTO_DUMP_A_TYPE, r->type);
	if (!err)
		err = proto_tlv_put_str(b, PROTO_DUMP_A_SERVICE, r->service);
	if (!err)
		err = proto_tlv_put_str(b, PROTO_DUMP_A_UNIT, r->unit);
	if (!err)
		err = proto_tlv_put_str(b, PROTO_DUMP_A_CONTAINER, r->container);
	if (!err)
		err = proto_tlv_put_str(b, PROTO_DUMP_A_CGROUP, r->cgroup);
	/* 0 means an open end, which is also what absence means. */
	if (r->since_ns)
		proto_tlv_put_u64(b, PROTO_DUMP_A_SINCE, r->since_ns);
	if (r->until_ns)
		proto_tlv_put_u64(b, PROTO_DUMP_A_UNTIL, r->until_ns);
	proto_tlv_put_u32(b, PROTO_DUMP_A_FLAGS, r->flags);
	return proto_tlv_finish(b, start, err);
}

struct dump_req_ctx {
	struct proto_dump_req *r;
	size_t max_pids;
	uint64_t seen;
};

static int dump_req_attr(const struct proto_attr *a, void *arg)
{
	struct dump_req_ctx *ctx = arg;
	struct proto_dump_req *r = ctx->r;
	uint64_t repeatable = 0;

	switch (a->tag) {
	case PROTO_DUMP_A_PID:
		if (r->npids >= ctx->max_pids)
			return -EPROTO; /* cannot happen: counted on the same bytes */
		return proto_tlv_get_u32(a, &repeatable, &r->pids[r->npids++]);
	case PROTO_DUMP_A_COMM:
		return proto_tlv_get_str(a, &ctx->seen, &r->comm);
	case PROTO_DUMP_A_EXE:
		return proto_tlv_get_str(a, &ctx->seen, &r->exe);
	case PROTO_DUMP_A_TYPE:
		return proto_tlv_get_str(a, &ctx->seen, &r->type);
	case PROTO_DUMP_A_SINCE:
		return proto_tlv_get_u64(a, &ctx->seen, &r->since_ns);
	case PROTO_DUMP_A_UNTIL:
		return proto_tlv_get_u64(a, &ctx->seen, &r->until_ns);
	case PROTO_DUMP_A_FLAGS:
		return proto_tlv_get_u32(a, &ctx->seen, &r->flags);
	case PROTO_DUMP_A_SERVICE:
		return proto_tlv_get_str(a, &ctx->seen, &r->service);
	case PROTO_DUMP_A_UNIT:
		return proto_tlv_get_str(a, &ctx->seen, &r->unit);
	case PROTO_DUMP_A_CONTAINER:
		return proto_tlv_get_str(a, &ctx->seen, &r->container);
	case PROTO_DUMP_A_CGROUP:
		return proto_tlv_get_str(a, &ctx->seen, &r->cgroup);
	default:
		return 0; /* a newer profctl's field */
	}
}

int proto_decode_dump_req(const void *data, size_t len, struct proto_dump_req *r)
{
	struct dump_req_ctx ctx = { .r = r };
	int ret;

	if (!r || (!data && len))
		return -EINVAL;
	memset(r, 0, sizeof(*r));
	ret = proto_tlv_count(data, len, PROTO_DUMP_A_PID, &ctx.max_pids);
	if (ret)
		return ret;
	if (ctx.max_pids && !(r->pids = calloc(ctx.max_pids, sizeof(*r->pids))))
		return -ENOMEM;
	ret = proto_tlv_walk(data, len, dump_req_attr, &ctx);
	if (!ret && !r->type && !(r->type = strdup("cpu")))
		ret = -ENOMEM;
	if (ret)
		proto_dump_req_free(r);
	return ret;
}

void proto_dump_req_free(struct proto_dump_req *r)
{
	if (!r)
		return;
	free(r->pids);
	free(r->comm);
	free(r->exe);
	free(r->type);
	free(r->service);
	free(r->unit);
	free(r->container);
	free(r->cgroup);
	memset(r, 0, sizeof(*r));
}

/* ---- process list ---- */

const char *proto_ident_name(int i)
{
	static const char *const names[PROTO_IDENT_N] = {
		"service", "unit",   "runtime",	   "container",	 "pod",
		"qos",	   "script", "cgroup",	   "rank",	 "local_rank",
		"world_size", "job",
	};

	return i >= 0 && i < PROTO_IDENT_N ? names[i] : NULL;
}

static int encode_proc(struct buf *b, const struct proto_proc *p, size_t ntypes)
{
	size_t nest, i;
	int err;

	if (p->ntotals > ntypes || (p->ntotals && !p->totals))
		return -EINVAL;
	nest = proto_tlv_nest_start(b, PROTO_LIST_A_PROC);
	proto_tlv_put_u32(b, PROTO_PROC_A_PID, p->pid);
	proto_tlv_put_u32(b, PROTO_PROC_A_UID, p->uid);
	proto_tlv_put_u32(b, PROTO_PROC_A_FLAGS, p->flags);
	if (p->ppid)
		proto_tlv_put_u32(b, PROTO_PROC_A_PPID, p->ppid);
	proto_tlv_put_u64(b, PROTO_PROC_A_START_TIME, p->start_time);
	if (p->exit_ns)
		proto_tlv_put_u64(b, PROTO_PROC_A_EXIT_NS, p->exit_ns);
	proto_tlv_put_u64(b, PROTO_PROC_A_SAMPLES, p->samples);
	if (p->ntotals)
		proto_tlv_put_u64_array(b, PROTO_PROC_A_TOTALS, p->totals, p->ntotals);
	if (p->rss_bytes)
		proto_tlv_put_u64(b, PROTO_PROC_A_RSS, p->rss_bytes);
	if (p->nrss)
		proto_tlv_put_u64_array(b, PROTO_PROC_A_RSS_HISTORY, p->rss_history, 2 * p->nrss);
	err = proto_tlv_put_str(b, PROTO_PROC_A_COMM, p->comm);
	if (!err)
		err = proto_tlv_put_str(b, PROTO_PROC_A_EXE, p->exe);
	for (i = 0; i < PROTO_IDENT_N && !err; i++)
		if (p->ident[i] && p->ident[i][0])
			err = proto_tlv_put_str(b, (uint16_t)(PROTO_PROC_A_IDENT + i), p->ident[i]);
	return err ? err : proto_tlv_nest_end(b, nest);
}

static int encode_type(struct buf *b, const struct proto_list_type *t)
{
	size_t nest;
	int err;

	if (!t->name || !t->unit)
		return -EINVAL;
	nest = proto_tlv_nest_start(b, PROTO_LIST_A_TYPE);
	err = proto_tlv_put_str(b, PROTO_TYPE_A_NAME, t->name);
	if (!err)
		err = proto_tlv_put_str(b, PROTO_TYPE_A_UNIT, t->unit);
	return err ? err : proto_tlv_nest_end(b, nest);
}

int proto_encode_list(struct buf *b, const struct proto_list *l)
{
	size_t start, i;
	int err = 0;

	if (!b || !l || (l->n && !l->procs) || (l->ntypes && !l->types) ||
	    l->ntypes > PROTO_TYPES_MAX)
		return -EINVAL;
	start = b->len;
	if (l->rate_hz)
		proto_tlv_put_u32(b, PROTO_LIST_A_RATE_HZ, l->rate_hz);
	if (l->comm_traced)
		proto_tlv_put_u32(b, PROTO_LIST_A_COMM_TRACED, 1);
	for (i = 0; i < l->ntypes && !err; i++)
		err = encode_type(b, &l->types[i]);
	for (i = 0; i < l->n && !err; i++)
		err = encode_proc(b, &l->procs[i], l->ntypes);
	return proto_tlv_finish(b, start, err);
}

struct proc_ctx {
	struct proto_proc *p;
	size_t ntypes; /* the list's, counted before the walk */
	uint64_t seen;
};

/* A u64 array attribute of n values (a->len checked by the caller). */
static uint64_t *get_u64s(const struct proto_attr *a, uint32_t n)
{
	uint64_t *v = malloc((size_t)n * sizeof(*v));
	struct cursor c;
	uint32_t i;

	if (!v)
		return NULL;
	cursor_init(&c, a->val, a->len);
	for (i = 0; i < n; i++)
		v[i] = cursor_u64(&c);
	return v;
}

static int get_rss_history(const struct proto_attr *a, struct proc_ctx *ctx)
{
	struct proto_proc *p = ctx->p;
	uint32_t n = a->len / 16;

	if (a->len % 16 || !n || proto_tlv_once(&ctx->seen, a->tag))
		return -EPROTO;
	if (n > PROTO_RSS_POINTS_MAX)
		return -EMSGSIZE;
	p->rss_history = get_u64s(a, 2 * n);
	if (!p->rss_history)
		return -ENOMEM;
	p->nrss = n;
	return 0;
}

/* A weight per type, so never more of them than the list has types. */
static int get_totals(const struct proto_attr *a, struct proc_ctx *ctx)
{
	struct proto_proc *p = ctx->p;
	uint32_t n = a->len / 8;

	if (a->len % 8 || !n || n > ctx->ntypes || proto_tlv_once(&ctx->seen, a->tag))
		return -EPROTO;
	p->totals = get_u64s(a, n);
	if (!p->totals)
		return -ENOMEM;
	p->ntotals = n;
	return 0;
}

static int proc_attr(const struct proto_attr *a, void *arg)
{
	struct proc_ctx *ctx = arg;
	struct proto_proc *p = ctx->p;

	switch (a->tag) {
	case PROTO_PROC_A_PID:
		return proto_tlv_get_u32(a, &ctx->seen, &p->pid);
	case PROTO_PROC_A_UID:
		return proto_tlv_get_u32(a, &ctx->seen, &p->uid);
	case PROTO_PROC_A_FLAGS:
		return proto_tlv_get_u32(a, &ctx->seen, &p->flags);
	case PROTO_PROC_A_PPID:
		return proto_tlv_get_u32(a, &ctx->seen, &p->ppid);
	case PROTO_PROC_A_START_TIME:
		return proto_tlv_get_u64(a, &ctx->seen, &p->start_time);
	case PROTO_PROC_A_EXIT_NS:
		return proto_tlv_get_u64(a, &ctx->seen, &p->exit_ns);
	case PROTO_PROC_A_SAMPLES:
		return proto_tlv_get_u64(a, &ctx->seen, &p->samples);
	case PROTO_PROC_A_TOTALS:
		return get_totals(a, ctx);
	case PROTO_PROC_A_RSS:
		return proto_tlv_get_u64(a, &ctx->seen, &p->rss_bytes);
	case PROTO_PROC_A_RSS_HISTORY:
		return get_rss_history(a, ctx);
	case PROTO_PROC_A_COMM:
		return proto_tlv_get_str(a, &ctx->seen, &p->comm);
	case PROTO_PROC_A_EXE:
		return proto_tlv_get_str(a, &ctx->seen, &p->exe);
	default:
		if (a->tag >= PROTO_PROC_A_IDENT && a->tag < PROTO_PROC_A_IDENT + PROTO_IDENT_N)
			return proto_tlv_get_str(a, &ctx->seen,
						 &p->ident[a->tag - PROTO_PROC_A_IDENT]);
		return 0;
	}
}

struct type_ctx {
	struct proto_list_type *t;
	uint64_t seen;
};

static int type_attr(const struct proto_attr *a, void *arg)
{
	struct type_ctx *ctx = arg;

	switch (a->tag) {
	case PROTO_TYPE_A_NAME:
		return proto_tlv_get_str(a, &ctx->seen, &ctx->t->name);
	case PROTO_TYPE_A_UNIT:
		return proto_tlv_get_str(a, &ctx->seen, &ctx->t->unit);
	default:
		return 0;
	}
}

struct list_ctx {
	struct proto_list *l;
	size_t max, max_types;
	uint64_t seen;
};

static int list_type(struct list_ctx *ctx, const struct proto_attr *a)
{
	struct type_ctx tc;
	int ret;

	if (ctx->l->ntypes >= ctx->max_types)
		return -EPROTO;
	tc = (struct type_ctx){ .t = &ctx->l->types[ctx->l->ntypes++] };
	ret = proto_tlv_walk(a->val, a->len, type_attr, &tc);
	return ret ? ret
		   : proto_tlv_require(tc.seen, PROTO_TLV_BIT(PROTO_TYPE_A_NAME) |
							PROTO_TLV_BIT(PROTO_TYPE_A_UNIT));
}

static int list_attr(const struct proto_attr *a, void *arg)
{
	struct list_ctx *ctx = arg;
	struct proc_ctx pc;
	uint32_t v;
	int ret;

	if (a->tag == PROTO_LIST_A_TYPE)
		return list_type(ctx, a);
	if (a->tag == PROTO_LIST_A_RATE_HZ)
		return proto_tlv_get_u32(a, &ctx->seen, &ctx->l->rate_hz);
	if (a->tag == PROTO_LIST_A_COMM_TRACED) {
		ret = proto_tlv_get_u32(a, &ctx->seen, &v);
		ctx->l->comm_traced = !ret && v;
		return ret;
	}
	if (a->tag != PROTO_LIST_A_PROC)
		return 0;
	if (ctx->l->n >= ctx->max)
		return -EPROTO;
	/* Count it first so proto_list_free() sees a half-decoded entry. */
	pc = (struct proc_ctx){ .p = &ctx->l->procs[ctx->l->n++], .ntypes = ctx->max_types };
	ret = proto_tlv_walk(a->val, a->len, proc_attr, &pc);
	return ret ? ret : proto_tlv_require(pc.seen, PROTO_TLV_BIT(PROTO_PROC_A_PID));
}

/* Both arrays sized by a counting pass, so types may follow the
 * processes whose totals they name. */
static int list_alloc(const void *data, size_t len, struct list_ctx *ctx)
{
	struct proto_list *l = ctx->l;
	int ret;

	ret = proto_tlv_count(data, len, PROTO_LIST_A_PROC, &ctx->max);
	if (!ret)
		ret = proto_tlv_count(data, len, PROTO_LIST_A_TYPE, &ctx->max_types);
	if (ret)
		return ret;
	if (ctx->max_types > PROTO_TYPES_MAX)
		return -EMSGSIZE;
	if (ctx->max && !(l->procs = calloc(ctx->max, sizeof(*l->procs))))
		return -ENOMEM;
	if (ctx->max_types && !(l->types = calloc(ctx->max_types, sizeof(*l->types))))
		return -ENOMEM;
	return 0;
}

int proto_decode_list(const void *data, size_t len, struct proto_list *l)
{
	struct list_ctx ctx = { .l = l };
	int ret;

	if (!l || (!data && len))
		return -EINVAL;
	memset(l, 0, sizeof(*l));
	ret = list_alloc(data, len, &ctx);
	if (!ret)
		ret = proto_tlv_walk(data, len, list_attr, &ctx);
	if (ret)
		proto_list_free(l);
	return ret;
}

void proto_list_free(struct proto_list *l)
{
	size_t i, k;

	if (!l)
		return;
	for (i = 0; i < l->n; i++) {
		free(l->procs[i].comm);
		free(l->procs[i].exe);
		for (k = 0; k < PROTO_IDENT_N; k++)
			free(l->procs[i].ident[k]);
		free(l->procs[i].rss_history);
		free(l->procs[i].totals);
	}
	for (i = 0; i < l->ntypes; i++) {
		free(l->types[i].name);
		free(l->types[i].unit);
	}
	free(l->procs);
	free(l->types);
	memset(l, 0, sizeof(*l));
}

/* ---- stats ---- */

int proto_stats_add(struct proto_stats *s, const char *name, uint64_t value)
{
	struct proto_stat *items;
	char *copy;

	if (!s || !name)
		return -EINVAL;
	if (strlen(name) > PROTO_MAX_STRING)
		return -EMSGSIZE;
	copy = strdup(name);
	if (!copy)
		return -ENOMEM;
	/* A few dozen counters: growing by one keeps the struct simple and
	 * lets decoded sets (sized exactly) be extended too. */
	items = realloc(s->items, (s->n + 1) * sizeof(*items));
	if (!items) {
		free(copy);
		return -ENOMEM;
	}
	s->items = items;
	s->items[s->n++] = (struct proto_stat){ .name = copy, .value = value };
	return 0;
}

int proto_encode_stats(struct buf *b, const struct proto_stats *s)
{
	size_t start, i, nest;
	int err = 0;

	if (!b || !s || (s->n && !s->items))
		return -EINVAL;
	start = b->len;
	for (i = 0; i < s->n && !err; i++) {
		if (!s->items[i].name) {
			err = -EINVAL;
			break;
		}
		nest = proto_tlv_nest_start(b, PROTO_STATS_A_STAT);
		err = proto_tlv_put_str(b, PROTO_STAT_A_NAME, s->items[i].name);
		proto_tlv_put_u64(b, PROTO_STAT_A_VALUE, s->items[i].value);
		if (!err)
			err = proto_tlv_nest_end(b, nest);
	}
	return proto_tlv_finish(b, start, err);
}

struct stat_ctx {
	struct proto_stat *st;
	uint64_t seen;
};

static int stat_attr(const struct proto_attr *a, void *arg)
{
	struct stat_ctx *ctx = arg;

	switch (a->tag) {
	case PROTO_STAT_A_NAME:
		return proto_tlv_get_str(a, &ctx->seen, &ctx->st->name);
	case PROTO_STAT_A_VALUE:
		return proto_tlv_get_u64(a, &ctx->seen, &ctx->st->value);
	default:
		return 0;
	}
}

struct stats_ctx {
	struct proto_stats *s;
	size_t max;
};

static int stats_attr(const struct proto_attr *a, void *arg)
{
	struct stats_ctx *ctx = arg;
	struct stat_ctx sc;
	int ret;

	if (a->tag != PROTO_STATS_A_STAT)
		return 0;
	if (ctx->s->n >= ctx->max)
		return -EPROTO;
	sc = (struct stat_ctx){ .st = &ctx->s->items[ctx->s->n++] };
	ret = proto_tlv_walk(a->val, a->len, stat_attr, &sc);
	return ret ? ret
		   : proto_tlv_require(sc.seen, PROTO_TLV_BIT(PROTO_STAT_A_NAME) |
							PROTO_TLV_BIT(PROTO_STAT_A_VALUE));
}

int proto_decode_stats(const void *data, size_t len, struct proto_stats *s)
{
	struct stats_ctx ctx = { .s = s };
	int ret;

	if (!s || (!data && len))
		return -EINVAL;
	memset(s, 0, sizeof(*s));
	ret = proto_tlv_count(data, len, PROTO_STATS_A_STAT, &ctx.max);
	if (ret)
		return ret;
	if (ctx.max && !(s->items = calloc(ctx.max, sizeof(*s->items))))
		return -ENOMEM;
	ret = proto_tlv_walk(data, len, stats_attr, &ctx);
	if (ret)
		proto_stats_free(s);
	return ret;
}

void proto_stats_free(struct proto_stats *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->n; i++)
		free(s->items[i].name);
	free(s->items);
	memset(s, 0, sizeof(*s));
}

/* ---- error ---- */

int proto_encode_error(struct buf *b, int32_t code, const char *message)
{
	size_t start;

	if (!b || code <= 0)
		return -EINVAL;
	start = b->len;
	proto_tlv_put_u32(b, PROTO_ERROR_A_CODE, (uint32_t)code);
	return proto_tlv_finish(b, start, proto_tlv_put_str(b, PROTO_ERROR_A_MESSAGE, message));
}

struct error_ctx {
	struct proto_error *e;
	uint32_t code;
	uint64_t seen;
};

static int error_attr(const struct proto_attr *a, void *arg)
{
	struct error_ctx *ctx = arg;

	switch (a->tag) {
	case PROTO_ERROR_A_CODE:
		return proto_tlv_get_u32(a, &ctx->seen, &ctx->code);
	case PROTO_ERROR_A_MESSAGE:
		return proto_tlv_get_str(a, &ctx->seen, &ctx->e->message);
	default:
		return 0;
	}
}

int proto_decode_error(const void *data, size_t len, struct proto_error *e)
{
	struct error_ctx ctx = { .e = e };
	int ret;

	if (!e || (!data && len))
		return -EINVAL;
	memset(e, 0, sizeof(*e));
	ret = proto_tlv_walk(data, len, error_attr, &ctx);
	if (!ret)
		ret = proto_tlv_require(ctx.seen, PROTO_TLV_BIT(PROTO_ERROR_A_CODE));
	/* Callers hand the code to strerror() and negate it: keep it a
	 * positive int. */
	if (!ret && (ctx.code == 0 || ctx.code > INT32_MAX))
		ret = -EPROTO;
	if (ret) {
		proto_error_free(e);
		return ret;
	}
	e->code = (int32_t)ctx.code;
	return 0;
}

void proto_error_free(struct proto_error *e)
{
	if (!e)
		return;
	free(e->message);
	memset(e, 0, sizeof(*e));
}

int proto_list_type_index(const struct proto_list *l, const char *name)
{
	size_t i;

	for (i = 0; i < l->ntypes; i++)
		if (l->types[i].name && !strcmp(l->types[i].name, name))
			return (int)i;
	return -1;
}

uint64_t proto_proc_total(const struct proto_proc *p, int t)
{
	return t >= 0 && p->totals && (uint32_t)t < p->ntotals ? p->totals[t] : 0;
}
