#include "render_pstats.h"
#include "array.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "framename.h"
#include "hashmap.h"
#include "pymarshal.h"

struct pst_fn {
	struct framename_py id; /* slices of a frame name: file, func; line = min */
	uint64_t cc, nc, tt, ct;
	size_t stamp; /* last stack counted in cc/ct, + 1 */
};

struct pst_edge {
	uint32_t caller, callee; /* function indices */
	uint64_t cc, nc, tt, ct;
	size_t stamp;
};

struct pst_ctx {
	const struct stackset *ss;
	uint32_t *fn_of;   /* frame id -> function index + 1; 0 unknown */
	struct pst_fn *fns;
	size_t nfns, fns_cap;
	struct hashmap fn_index; /* hash(file, func) -> index + 1, probing */
	struct pst_edge *edges;
	size_t nedges, edges_cap;
	struct hashmap edge_index; /* caller << 32 | callee -> index + 1 */
	uint32_t *rank; /* function index -> position in output order */
	uint32_t *path; /* function indices of the current stack */
	double scale;   /* seconds per unit of weight */
};

static int slice_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);

	return c ? c : (alen > blen) - (alen < blen);
}

static uint64_t fn_hash(const struct framename_py *id)
{
	return hash64_bytes(id->func, id->func_len, hash64_bytes(id->file, id->file_len, 0x9e37));
}

static bool same_fn(const struct framename_py *a, const struct framename_py *b)
{
	return !slice_cmp(a->file, a->file_len, b->file, b->file_len) &&
	       !slice_cmp(a->func, a->func_len, b->func, b->func_len);
}

/* Function index + 1 for a Python frame, 0 for other frames, or -ENOMEM. */
static int64_t function_of(struct pst_ctx *c, uint32_t frame)
{
	const struct ss_frame *f = &c->ss->frames[frame];
	struct framename_py id;
	uint64_t h, v;

	if (c->fn_of[frame])
		return c->fn_of[frame];
	if (f->kind != FRAME_PYTHON || !framename_python(f->name, &id))
		return 0;
	for (h = fn_hash(&id);; h++) {
		if (!hashmap_get(&c->fn_index, h, &v))
			break;
		if (same_fn(&c->fns[v - 1].id, &id))
			goto found;
	}
	if (c->nfns >= UINT32_MAX - 1 ||
	    array_grow((void **)&c->fns, &c->fns_cap, c->nfns + 1, sizeof(*c->fns)) ||
	    hashmap_put(&c->fn_index, h, c->nfns + 1))
		return -ENOMEM;
	c->fns[c->nfns] = (struct pst_fn){ .id = id };
	v = ++c->nfns;
found:
	if (id.line < c->fns[v - 1].id.line)
		c->fns[v - 1].id.line = id.line;
	c->fn_of[frame] = (uint32_t)v;
	return (int64_t)v;
}

static struct pst_edge *edge_of(struct pst_ctx *c, uint32_t caller, uint32_t callee)
{
	uint64_t key = (uint64_t)caller << 32 | callee, v;

	if (hashmap_get(&c->edge_index, key, &v))
		return &c->edges[v - 1];
	if (array_grow((void **)&c->edges, &c->edges_cap, c->nedges + 1, sizeof(*c->edges)) ||
	    hashmap_put(&c->edge_index, key, c->nedges + 1))
		return NULL;
	c->edges[c->nedges] = (struct pst_edge){ .caller = caller, .callee = callee };
	return &c->edges[c->nedges++];
}

/* Function indices of the Python frames of st, root first; -ENOMEM. */
static int64_t python_path(struct pst_ctx *c, const struct ss_stack *st)
{
	int64_t fn, n = 0;
	uint32_t i;

	for (i = 0; i < st->depth; i++) {
		fn = function_of(c, st->frames[i]);
		if (fn < 0)
			return fn;
		if (fn)
			c->path[n++] = (uint32_t)(fn - 1);
	}
	return n;
}

/* Counts saturate: nc grows by w per recursive occurrence. */
static void add(uint64_t *v, uint64_t w)
{
	*v = *v > UINT64_MAX - w ? UINT64_MAX : *v + w;
}

static int count_stack(struct pst_ctx *c, size_t k, uint64_t w)
{
	int64_t n = python_path(c, &c->ss->stacks[k]), i;
	struct pst_edge *e;
	struct pst_fn *f;

	if (n <= 0)
		return (int)n;
	add(&c->fns[c->path[n - 1]].tt, w);
	for (i = 0; i < n; i++) {
		f = &c->fns[c->path[i]];
		add(&f->nc, w);
		if (f->stamp != k + 1) {
			f->stamp = k + 1;
			add(&f->cc, w);
			add(&f->ct, w);
		}
		if (!i)
			continue;
		e = edge_of(c, c->path[i - 1], c->path[i]);
		if (!e)
			return -ENOMEM;
		add(&e->nc, w);
		if (i == n - 1)
			add(&e->tt, w);
		if (e->stamp != k + 1) {
			e->stamp = k + 1;
			add(&e->cc, w);
			add(&e->ct, w);
		}
	}
	return 0;
}

/* Output order: (file, line, function), as pstats keys sort. */
static int cmp_fn(const void *pa, const void *pb, void *arg)
{
	const struct pst_ctx *ctx = arg;
	const struct framename_py *a = &ctx->fns[*(const uint32_t *)pa].id;
	const struct framename_py *b = &ctx->fns[*(const uint32_t *)pb].id;
	int c = slice_cmp(a->file, a->file_len, b->file, b->file_len);

	if (c)
		return c;
	if (a->line != b->line)
		return a->line < b->line ? -1 : 1;
	return slice_cmp(a->func, a->func_len, b->func, b->func_len);
}

/* Edges grouped by callee in output order, callers sorted within. */
static int cmp_edge(const void *pa, const void *pb, void *arg)
{
	const struct pst_edge *a = pa, *b = pb;
	const uint32_t *r = ((const struct pst_ctx *)arg)->rank;

	if (r[a->callee] != r[b->callee])
		return r[a->callee] < r[b->callee] ? -1 : 1;
	return (r[a->caller] > r[b->caller]) - (r[a->caller] < r[b->caller]);
}

static void put_key(struct buf *out, const struct pst_fn *f)
{
	pymarshal_tuple(out, 3);
	pymarshal_str(out, f->id.file, f->id.file_len);
	pymarshal_uint(out, f->id.line);
	pymarshal_str(out, f->id.func, f->id.func_len);
}

static void put_times(struct pst_ctx *c, struct buf *out, uint64_t tt, uint64_t ct)
{
	pymarshal_float(out, (double)tt * c->scale);
	pymarshal_float(out, (double)ct * c->scale);
}

/* Writes function fi's entry; *e walks the sorted edges. */
static void put_function(struct pst_ctx *c, struct buf *out, uint32_t fi, size_t *e)
{
	const struct pst_fn *f = &c->fns[fi];
	const struct pst_edge *ed;

	put_key(out, f);
	pymarshal_tuple(out, 5);
	pymarshal_uint(out, f->cc);
	pymarshal_uint(out, f->nc);
	put_times(c, out, f->tt, f->ct);
	pymarshal_dict_begin(out);
	for (; *e < c->nedges && c->edges[*e].callee == fi; (*e)++) {
		ed = &c->edges[*e];
		put_key(out, &c->fns[ed->caller]);
		/* cProfile's caller tuples are (nc, cc, tt, ct). */
		pymarshal_tuple(out, 4);
		pymarshal_uint(out, ed->nc);
		pymarshal_uint(out, ed->cc);
		put_times(c, out, ed->tt, ed->ct);
	}
	pymarshal_dict_end(out);
}

static int write_stats(struct pst_ctx *c, struct buf *out)
{
	uint32_t *order = malloc(c->nfns * sizeof(*order));
	size_t i, e = 0;

	c->rank = malloc(c->nfns * sizeof(*c->rank));
	if (!order || !c->rank) {
		free(order);
		return -ENOMEM;
	}
	for (i = 0; i < c->nfns; i++)
		order[i] = (uint32_t)i;
	qsort_r(order, c->nfns, sizeof(*order), cmp_fn, c);
	for (i = 0; i < c->nfns; i++)
		c->rank[order[i]] = (uint32_t)i;
	if (c->nedges) /* NULL then, which qsort must not see */
		qsort_r(c->edges, c->nedges, sizeof(*c->edges), cmp_edge, c);
	pymarshal_dict_begin(out);
	for (i = 0; i < c->nfns; i++)
		put_function(c, out, order[i], &e);
	pymarshal_dict_end(out);
	free(order);
	return out->failed ? -ENOMEM : 0;
}

static double seconds_per_unit(const struct stackset *ss)
{
	if (ss->unit && !strcmp(ss->unit, "nanoseconds"))
		return 1e-9;
	if ((!ss->unit || !strcmp(ss->unit, "samples")) && ss->rate_hz)
		return 1.0 / ss->rate_hz;
	return 1.0;
}

static int build(struct pst_ctx *c, struct buf *out)
{
	uint32_t maxd = 0;
	size_t k;
	int err;

	for (k = 0; k < c->ss->nstacks; k++)
		if (c->ss->stacks[k].depth > maxd)
			maxd = c->ss->stacks[k].depth;
	c->fn_of = calloc(c->ss->nframes ? c->ss->nframes : 1, sizeof(*c->fn_of));
	c->path = calloc(maxd ? maxd : 1, sizeof(*c->path));
	if (!c->fn_of || !c->path)
		return -ENOMEM;
	for (k = 0; k < c->ss->nstacks; k++) {
		if (!c->ss->stacks[k].count)
			continue;
		err = count_stack(c, k, c->ss->stacks[k].count);
		if (err)
			return err;
	}
	if (!c->nfns)
		return -ENODATA;
	return write_stats(c, out);
}

int render_pstats(const struct stackset *ss, struct buf *out)
{
	struct pst_ctx c = { .ss = ss, .scale = seconds_per_unit(ss) };
	int err;

	err = build(&c, out);
	free(c.fn_of);
	free(c.path);
	free(c.fns);
	free(c.edges);
	free(c.rank);
	hashmap_free(&c.fn_index);
	hashmap_free(&c.edge_index);
	return err;
}
