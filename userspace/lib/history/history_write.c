/* history_write.c: one transaction per flush.  Rows arrive named (frame
 * kinds, names and binaries); modules, frames and stacks become ids
 * through bounded caches, so a flush of thousands of rows touches the
 * file only for what is new, and each row is one insert (or one update
 * when the cell exists). */
#include "history_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

/* Part of the file format (stored in frames.hash and stacks.hash): a
 * change needs a schema migration.  Words are read little endian so the
 * value is the same on every machine. */
uint64_t hist_hash(const void *data, size_t len, uint64_t seed)
{
	const uint8_t *p = data;
	uint64_t h = (seed + 0x9e3779b97f4a7c15ull) ^ (len * 0xff51afd7ed558ccdull);
	size_t i;

	while (len >= 8) {
		uint64_t w = 0;

		for (i = 0; i < 8; i++)
			w |= (uint64_t)p[i] << (8 * i);
		h = hash64_mix(h ^ w);
		p += 8;
		len -= 8;
	}
	if (len) {
		uint64_t w = 0;

		for (i = 0; i < len; i++)
			w |= (uint64_t)p[i] << (8 * i);
		h = hash64_mix(h ^ w ^ 0xff);
	}
	return hash64_mix(h);
}

void hist_encode_u32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

uint32_t hist_decode_u32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void hist_cache_init(struct hist_cache *c, size_t max)
{
	memset(c, 0, sizeof(*c));
	c->max = max;
}

void hist_cache_reset(struct hist_cache *c)
{
	size_t i;

	for (i = 0; i < c->n; i++)
		free(c->e[i].bytes);
	c->n = 0;
	hashmap_free(&c->index);
}

void hist_cache_free(struct hist_cache *c)
{
	hist_cache_reset(c);
	free(c->e);
	c->e = NULL;
	c->cap = 0;
}

/* A generation no other history object has had: a memo filled for one
 * file never passes for another's. */
uint64_t hist_new_gen(void)
{
	static uint64_t last;

	return __atomic_add_fetch(&last, 1, __ATOMIC_RELAXED);
}

/* Ids may be gone or reused (rollback, prune, a fresh file): every
 * cache forgets them together, as frame keys hold module ids. */
void hist_caches_reset(struct history *h)
{
	h->ids_gen = hist_new_gen();
	h->counts_stale = true;
	h->proc_id_max = 0;
	hist_cache_reset(&h->frames);
	hist_cache_reset(&h->stacks);
	hist_cache_reset(&h->modules);
}

/* Where an entry starts probing: the module is mixed in so one name in
 * many binaries ("_start", "main") does not make one long probe chain. */
static uint64_t cache_slot(const struct hist_key *k)
{
	return k->module ? hash64_mix(k->hash ^ (uint64_t)k->module) : k->hash;
}

/* The cached entry, or NULL.  Probes successive keys: equal hashes of
 * different contents never merge. */
static struct hist_centry *cache_find(const struct hist_cache *c, const struct hist_key *k)
{
	uint64_t key, v;

	for (key = cache_slot(k); hashmap_get(&c->index, key, &v); key++) {
		struct hist_centry *e = &c->e[v - 1];

		if (e->prefix == k->prefix && e->len == k->len && e->module == k->module &&
		    !memcmp(e->bytes, k->bytes, k->len))
			return e;
	}
	return NULL;
}

/* Best effort: without memory the entry is simply not cached. */
static void cache_put(struct hist_cache *c, const struct hist_key *k, int64_t id, uint64_t last_ns)
{
	struct hist_centry *e;
	uint64_t key = cache_slot(k);

	if (c->n >= c->max)
		hist_cache_reset(c);
	if (hist_grow((void **)&c->e, &c->cap, c->n + 1, sizeof(*c->e)))
		return;
	e = &c->e[c->n];
	e->bytes = malloc(k->len ? k->len : 1);
	if (!e->bytes)
		return;
	memcpy(e->bytes, k->bytes, k->len);
	e->hash = k->hash;
	e->id = id;
	e->last_ns = last_ns;
	e->module = k->module;
	e->prefix = k->prefix;
	e->len = k->len;
	while (hashmap_get(&c->index, key, NULL))
		key++;
	if (hashmap_put(&c->index, key, c->n + 1)) {
		free(e->bytes);
		return;
	}
	c->n++;
}

/* Frames and stacks are one pattern: find by hash and compare in full,
 * else insert; the FIND statements return id, last_ns, then content. */
struct hist_dict {
	enum hist_stmt find, insert, touch;
	const char *what;
};

static const struct hist_dict frame_dict = { HS_FRAME_FIND, HS_FRAME_INSERT, HS_FRAME_TOUCH,
					     "storing a frame" };
static const struct hist_dict stack_dict = { HS_STACK_FIND, HS_STACK_INSERT, HS_STACK_TOUCH,
					     "storing a stack" };

static bool row_matches(sqlite3_stmt *s, const struct hist_dict *d, const struct hist_key *k)
{
	const void *b;

	if (d == &frame_dict) {
		b = sqlite3_column_text(s, 3);
		return (uint32_t)sqlite3_column_int64(s, 2) == k->prefix &&
		       sqlite3_column_int64(s, 4) == k->module &&
		       (uint32_t)sqlite3_column_bytes(s, 3) == k->len && b &&
		       !memcmp(b, k->bytes, k->len);
	}
	b = sqlite3_column_blob(s, 2);
	return (uint32_t)sqlite3_column_bytes(s, 2) == k->len &&
	       (!k->len || !memcmp(b, k->bytes, k->len));
}

static void bind_insert(struct history *h, const struct hist_dict *d, const struct hist_key *k)
{
	sqlite3_stmt *s = hist_stmt(h, d->insert);

	sqlite3_bind_int64(s, 1, (int64_t)k->hash);
	sqlite3_bind_int64(s, 3, (int64_t)h->row_ns);
	if (d == &frame_dict) {
		sqlite3_bind_text(s, 2, k->bytes, (int)k->len, SQLITE_STATIC);
		sqlite3_bind_int64(s, 4, k->prefix); /* the kind */
		sqlite3_bind_int64(s, 5, k->module);
	} else {
		sqlite3_bind_blob(s, 2, k->len ? k->bytes : "", (int)k->len, SQLITE_STATIC);
	}
}

static int64_t dict_from_db(struct history *h, const struct hist_dict *d, const struct hist_key *k,
			    uint64_t *last_ns)
{
	sqlite3_stmt *s = hist_stmt(h, d->find);
	int64_t id = -ENOENT;
	int rc;

	sqlite3_bind_int64(s, 1, (int64_t)k->hash);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if (row_matches(s, d, k)) {
			id = sqlite3_column_int64(s, 0);
			*last_ns = (uint64_t)sqlite3_column_int64(s, 1);
			break;
		}
	}
	sqlite3_reset(s);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return hist_fail(h, rc, d->what);
	if (id != -ENOENT)
		return id;
	bind_insert(h, d, k);
	rc = hist_step_done(h, d->insert, d->what);
	*last_ns = h->row_ns;
	if (rc)
		return rc;
	h->counts_stale = true;
	return sqlite3_last_insert_rowid(h->db);
}

/* Keep a frame's or stack's "last used" (a bucket start) at most
 * mark_every_ns behind the newest bucket using it, so a prune can drop
 * what no remaining sample uses without reading the samples. */
static int touch(struct history *h, const struct hist_dict *d, int64_t id, uint64_t *last_ns)
{
	sqlite3_stmt *s;
	int err;

	if (h->row_ns <= *last_ns || h->row_ns - *last_ns <= h->o.mark_every_ns)
		return 0;
	s = hist_stmt(h, d->touch);
	sqlite3_bind_int64(s, 1, id);
	sqlite3_bind_int64(s, 2, (int64_t)h->row_ns);
	err = hist_step_done(h, d->touch, d->what);
	if (!err)
		*last_ns = h->row_ns;
	return err;
}

/* The id of k; *oldest drops to its "last used" if that is older. */
static int64_t dict_id(struct history *h, const struct hist_dict *d, struct hist_cache *c,
		       const struct hist_key *k, uint64_t *oldest)
{
	struct hist_centry *e = cache_find(c, k);
	uint64_t last_ns = 0;
	int64_t id;
	int err;

	if (e) {
		err = touch(h, d, e->id, &e->last_ns);
		if (e->last_ns < *oldest)
			*oldest = e->last_ns;
		return err ? err : e->id;
	}
	id = dict_from_db(h, d, k, &last_ns);
	if (id < 0)
		return id;
	if (id > UINT32_MAX)
		return -EOVERFLOW;
	err = touch(h, d, id, &last_ns);
	if (err)
		return err;
	if (last_ns < *oldest)
		*oldest = last_ns;
	cache_put(c, k, id, last_ns);
	return id;
}

static int64_t module_from_db(struct history *h, const char *path, const char *build_id)
{
	sqlite3_stmt *s = hist_stmt(h, HS_MODULE_FIND);
	uint64_t id;
	int err;

	sqlite3_bind_text(s, 1, path, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, build_id, -1, SQLITE_STATIC);
	err = hist_get_u64(h, HS_MODULE_FIND, &id, "looking up a module");
	if (err || id)
		return err ? err : (int64_t)id;
	s = hist_stmt(h, HS_MODULE_INSERT);
	sqlite3_bind_text(s, 1, path, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, build_id, -1, SQLITE_STATIC);
	err = hist_step_done(h, HS_MODULE_INSERT, "storing a module");
	if (err)
		return err;
	h->counts_stale = true;
	return sqlite3_last_insert_rowid(h->db);
}

/* modules.id of m.  Cached by content ("path\0build_id"): the caller's
 * pointers say nothing across rows. */
static int64_t module_id(struct history *h, const struct ss_module *m)
{
	const char *bid = m->build_id ? m->build_id : "";
	size_t plen = strlen(m->path), blen = strlen(bid);
	struct hist_key k = { 0, (uint32_t)plen, (uint32_t)(plen + 1 + blen), NULL, 0 };
	struct hist_centry *e;
	int64_t id;

	if (hist_grow((void **)&h->modkey, &h->modkey_cap, k.len, 1))
		return -ENOMEM;
	memcpy(h->modkey, m->path, plen + 1);
	memcpy(h->modkey + plen + 1, bid, blen);
	k.bytes = h->modkey;
	k.hash = hist_hash(k.bytes, k.len, 0);
	e = cache_find(&h->modules, &k);
	if (e)
		return e->id;
	id = module_from_db(h, m->path, bid);
	if (id > 0)
		cache_put(&h->modules, &k, id, 0);
	return id;
}

/* The stored hash is hash(kind, name) whatever the module, as in v1
 * files: the module is compared in full beside the name. */
static int64_t frame_id(struct history *h, uint32_t kind, const char *name, size_t len,
			int64_t module, uint64_t *oldest)
{
	struct hist_key k = { hist_hash(name, len, (uint64_t)kind + 1), kind, (uint32_t)len, name,
			      module };

	return dict_id(h, &frame_dict, &h->frames, &k, oldest);
}

/* Frame i of r in modules[i].  *mod keeps the module id of frame i - 1:
 * a stack's frames mostly come from a few binaries, each looked up once. */
static int64_t row_frame_id(struct history *h, const struct history_row *r,
			    const struct ss_module *const *modules, uint32_t i, int64_t *mod,
			    uint64_t *oldest)
{
	const struct ss_module *m = modules ? modules[i] : NULL;

	if (m && (!i || m != modules[i - 1]))
		*mod = module_id(h, m);
	if (m && *mod < 0)
		return *mod;
	return frame_id(h, r->kinds[i], r->names[i], strlen(r->names[i]), m ? *mod : 0, oldest);
}

/* The stack of r as frame ids encoded in h->scratch, then its id; the
 * oldest "last used" among them in *oldest. */
static int64_t stack_id_full(struct history *h, const struct history_row *r,
			     const struct ss_module *const *modules, uint64_t *oldest)
{
	struct hist_key k = { 0, r->depth, r->depth * 4, NULL, 0 };
	int64_t id, mod = 0;
	uint32_t i;

	if (hist_grow((void **)&h->scratch, &h->scratch_cap, (size_t)k.len + 4, 1))
		return -ENOMEM;
	for (i = 0; i < r->depth; i++) {
		id = row_frame_id(h, r, modules, i, &mod, oldest);
		if (id < 0)
			return id;
		hist_encode_u32(h->scratch + 4 * i, (uint32_t)id);
	}
	k.bytes = h->scratch;
	k.hash = hist_hash(h->scratch, k.len, r->depth);
	return dict_id(h, &stack_dict, &h->stacks, &k, oldest);
}

/* r's stack id, from its memo while that holds: same id generation, and
 * no frame of it due for a touch (the full path renews them all, so a
 * prune never takes a frame a remembered stack still uses). */
static int64_t stack_id(struct history *h, const struct history_row *r,
			const struct ss_module *const *modules)
{
	struct history_stack_memo *m = r->memo;
	uint64_t oldest = UINT64_MAX;
	int64_t id;

	if (m && m->id > 0 && m->gen == h->ids_gen &&
	    (h->row_ns <= m->last_ns || h->row_ns - m->last_ns <= h->o.mark_every_ns)) {
		h->s.stack_memo_hits++;
		return m->id;
	}
	id = stack_id_full(h, r, modules, &oldest);
	if (m && id > 0)
		*m = (struct history_stack_memo){ h->ids_gen, id, oldest };
	return id;
}

/* len of name without a trailing " (<tid>)", read backwards digit by
 * digit (once per row: no formatting). */
static size_t without_tid(const char *name, size_t len, uint32_t tid)
{
	size_t end = len;

	if (!end || name[--end] != ')')
		return len;
	do {
		if (!end || name[--end] != (char)('0' + tid % 10))
			return len;
		tid /= 10;
	} while (tid);
	if (end < 2 || name[end - 1] != '(' || name[end - 2] != ' ')
		return len;
	return end - 2;
}

/* The thread's own name: "worker (1234)" from the aggregator is "worker". */
static int64_t thread_frame(struct history *h, const struct history_row *r)
{
	const char *name = r->thread ? r->thread : "";

	return frame_id(h, FRAME_ROOT, name, without_tid(name, strlen(name), r->tid), 0,
			&(uint64_t){ 0 });
}

static uint64_t proc_key(uint32_t pid, uint64_t start_time)
{
	return hash64_mix(((uint64_t)pid << 1 | 1) ^ hash64_mix(start_time));
}

static int64_t proc_upsert(struct history *h, const struct history_proc *p)
{
	sqlite3_stmt *s = hist_stmt(h, HS_PROC_UPSERT);
	int64_t id;
	int rc, i;

	sqlite3_bind_int64(s, 1, p->pid);
	sqlite3_bind_int64(s, 2, (int64_t)p->start_time);
	sqlite3_bind_int64(s, 3, p->uid);
	sqlite3_bind_text(s, 4, p->comm ? p->comm : "", -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 5, p->exe ? p->exe : "", -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 6, (int64_t)p->first_ns);
	sqlite3_bind_int64(s, 7, (int64_t)p->last_ns);
	sqlite3_bind_int64(s, 8, (int64_t)p->exited_ns);
	for (i = 0; i < HISTORY_IDENT_N; i++)
		sqlite3_bind_text(s, 9 + i, p->ident[i] ? p->ident[i] : "", -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 9 + HISTORY_IDENT_N, p->ppid);
	rc = sqlite3_step(s);
	id = rc == SQLITE_ROW ? sqlite3_column_int64(s, 0) : -1;
	sqlite3_reset(s);
	if (id > h->proc_id_max) { /* a new row: ids only grow until a prune */
		h->proc_id_max = id;
		h->counts_stale = true;
	}
	return rc == SQLITE_ROW ? id : hist_fail(h, rc, "storing a process");
}

/* The process's row, written once per transaction (the caller passes
 * the same identity for every row of a process in a flush). */
static struct hist_txproc *txn_proc(struct history *h, const struct history_proc *p, int *err)
{
	uint64_t k = proc_key(p->pid, p->start_time), v;
	struct hist_txproc *tp;
	int64_t id;

	for (; hashmap_get(&h->txn_index, k, &v); k++) {
		tp = &h->txprocs[v - 1];
		if (tp->pid == p->pid && tp->start_time == p->start_time)
			return tp;
	}
	*err = -ENOMEM;
	if (hist_grow((void **)&h->txprocs, &h->txprocs_cap, h->ntxprocs + 1, sizeof(*tp)))
		return NULL;
	id = proc_upsert(h, p);
	if (id < 0) {
		*err = (int)id;
		return NULL;
	}
	if (hashmap_put(&h->txn_index, k, h->ntxprocs + 1))
		return NULL;
	tp = &h->txprocs[h->ntxprocs++];
	tp->pid = p->pid;
	tp->start_time = p->start_time;
	tp->id = id;
	tp->samples = 0;
	return tp;
}

/* The series of type, looked up once per type: a flush interleaves the
 * types of each process's cells (cpu, gil, ...). */
static int64_t series_id(struct history *h, const char *type)
{
	struct hist_series *se;
	sqlite3_stmt *s;
	uint64_t id;
	uint32_t i;
	int err;

	for (i = 0; i < h->nseries; i++)
		if (!strcmp(h->series[i].type, type))
			return h->series[i].id;
	s = hist_stmt(h, HS_SERIES_FIND);
	sqlite3_bind_text(s, 1, type, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, (int64_t)h->o.bucket_ns);
	err = hist_get_u64(h, HS_SERIES_FIND, &id, "looking up a series");
	if (!err && !id) {
		s = hist_stmt(h, HS_SERIES_INSERT);
		sqlite3_bind_text(s, 1, type, -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 2, (int64_t)h->o.bucket_ns);
		err = hist_step_done(h, HS_SERIES_INSERT, "storing a series");
		id = (uint64_t)sqlite3_last_insert_rowid(h->db);
	}
	if (err)
		return err;
	if (h->nseries == HIST_SERIES_CACHE)
		h->nseries = 0; /* more types than profd has: start over */
	se = &h->series[h->nseries++];
	strcpy(se->type, type);
	se->id = (int64_t)id;
	return se->id;
}

/* Insert the cell (true if it was new) or add to it. */
static int insert_sample(struct history *h, const int64_t key[6], uint64_t count, bool *added)
{
	sqlite3_stmt *s = hist_stmt(h, HS_SAMPLE_INSERT);
	int i, err;

	for (i = 0; i < 6; i++)
		sqlite3_bind_int64(s, i + 1, key[i]);
	sqlite3_bind_int64(s, 7, (int64_t)count);
	err = hist_step_done(h, HS_SAMPLE_INSERT, "storing samples");
	*added = !err && sqlite3_changes(h->db);
	if (*added)
		h->txn_new_rows++;
	return err;
}

static int update_sample(struct history *h, const int64_t key[6], uint64_t count, bool *added)
{
	sqlite3_stmt *s = hist_stmt(h, HS_SAMPLE_UPDATE);
	int i, err;

	for (i = 0; i < 5; i++)
		sqlite3_bind_int64(s, i + 1, key[i]);
	sqlite3_bind_int64(s, 6, (int64_t)count);
	err = hist_step_done(h, HS_SAMPLE_UPDATE, "adding samples");
	*added = !err && sqlite3_changes(h->db);
	return err;
}

/* Add count to the cell, trying first what the row says is likely:
 * one statement instead of two for a cell flushed before (unless a prune
 * took its bucket meanwhile). */
static int put_sample(struct history *h, const int64_t key[6], uint64_t count, bool stored)
{
	bool done;
	int err = stored ? update_sample(h, key, count, &done) : insert_sample(h, key, count, &done);

	if (err || done)
		return err;
	return stored ? insert_sample(h, key, count, &done) : update_sample(h, key, count, &done);
}

/* A row the file cannot take is refused alone: it must not fail the
 * flush, or the caller would send it again forever. */
static int check_row(const struct history *h, const struct history_row *r,
		     const struct ss_module *const *modules)
{
	uint32_t i;

	if (r->depth && (!r->kinds || !r->names))
		return -EINVAL;
	/* The mmap profile's frees are negative: int64 as SQLite stores. */
	if (r->bucket_ns > INT64_MAX || r->depth > HIST_MAX_DEPTH ||
	    (r->count > INT64_MAX && !(r->type && !strcmp(r->type, "mmap"))))
		return -ERANGE;
	if (r->type && strlen(r->type) >= sizeof(h->series[0].type))
		return -ENAMETOOLONG;
	for (i = 0; i < r->depth; i++)
		if (!r->names[i] || r->kinds[i] >= FRAME_KIND_MAX ||
		    (modules && modules[i] && !modules[i]->path))
			return -EINVAL;
	return 0;
}

static int add_row(struct history *h, const struct history_proc *p, const struct history_row *r,
		   const struct ss_module *const *modules)
{
	struct hist_txproc *tp;
	int64_t key[6], series, stack, thread;
	int err = 0;

	h->row_ns = r->bucket_ns / h->o.bucket_ns * h->o.bucket_ns;
	tp = txn_proc(h, p, &err);
	if (!tp)
		return err;
	series = series_id(h, r->type ? r->type : "cpu");
	if (series < 0)
		return (int)series;
	stack = stack_id(h, r, modules);
	if (stack < 0)
		return (int)stack;
	thread = thread_frame(h, r);
	if (thread < 0)
		return (int)thread;
	key[0] = tp->id;
	key[1] = series;
	key[2] = (int64_t)(h->row_ns / h->o.bucket_ns);
	key[3] = stack;
	key[4] = r->tid;
	key[5] = thread;
	err = put_sample(h, key, r->count, r->stored);
	if (err)
		return err;
	tp->samples += r->count;
	h->txn_samples += r->count;
	h->txn_rows++;
	return 0;
}

void hist_txn_reset(struct history *h)
{
	h->in_txn = false;
	h->txn_err = 0;
	h->ntxprocs = 0;
	hashmap_free(&h->txn_index);
	h->txn_rows = h->txn_new_rows = h->txn_samples = 0;
}

int history_begin(struct history *h)
{
	int rc;

	if (h->in_txn)
		return -EBUSY;
	if ((h->broken || !h->db) && (rc = hist_recover(h)) != 0)
		return rc;
	rc = sqlite3_step(hist_stmt(h, HS_BEGIN));
	sqlite3_reset(h->st[HS_BEGIN]);
	if (rc != SQLITE_DONE)
		return hist_fail(h, rc, "starting a flush");
	hist_txn_reset(h);
	h->in_txn = true;
	h->txn_start_ns = clock_mono_ns();
	return 0;
}

int history_add_in(struct history *h, const struct history_proc *p, const struct history_row *r,
		   const struct ss_module *const *modules)
{
	int err;

	if (!h->in_txn)
		return -EINVAL;
	if (h->txn_err)
		return h->txn_err;
	err = check_row(h, r, modules);
	if (err) {
		h->s.rows_refused++;
		return err;
	}
	err = add_row(h, p, r, modules);
	if (err)
		h->txn_err = err;
	return err;
}

int history_add(struct history *h, const struct history_proc *p, const struct history_row *r)
{
	return history_add_in(h, p, r, NULL);
}

int history_add_rss(struct history *h, const struct history_proc *p, uint64_t t_ns,
		    uint64_t bytes)
{
	struct hist_txproc *tp;
	sqlite3_stmt *s;
	int err = 0;

	if (!h->in_txn)
		return -EINVAL;
	if (h->txn_err)
		return h->txn_err;
	if (t_ns > INT64_MAX || bytes > INT64_MAX) {
		h->s.rows_refused++;
		return -ERANGE;
	}
	tp = txn_proc(h, p, &err);
	if (tp) {
		s = hist_stmt(h, HS_RSS_INSERT);
		sqlite3_bind_int64(s, 1, tp->id);
		sqlite3_bind_int64(s, 2, (int64_t)t_ns);
		sqlite3_bind_int64(s, 3, (int64_t)bytes);
		err = hist_step_done(h, HS_RSS_INSERT, "storing an RSS point");
	}
	if (err)
		h->txn_err = err;
	return err;
}

static int write_totals(struct history *h)
{
	size_t i;
	int err = 0;

	for (i = 0; i < h->ntxprocs && !err; i++) {
		sqlite3_stmt *s = hist_stmt(h, HS_PROC_SAMPLES);

		sqlite3_bind_int64(s, 1, h->txprocs[i].id);
		sqlite3_bind_int64(s, 2, (int64_t)h->txprocs[i].samples);
		err = hist_step_done(h, HS_PROC_SAMPLES, "counting process samples");
	}
	if (!err && h->txn_new_rows)
		err = hist_meta_add(h, "sample_rows", (int64_t)h->txn_new_rows);
	if (!err && h->txn_samples)
		err = hist_meta_add(h, "samples", (int64_t)h->txn_samples);
	return err;
}

int history_commit(struct history *h)
{
	int err, rc;

	if (!h->in_txn)
		return -EINVAL;
	err = h->txn_err;
	if (!err)
		err = write_totals(h);
	if (!err) {
		rc = sqlite3_step(hist_stmt(h, HS_COMMIT));
		sqlite3_reset(h->st[HS_COMMIT]);
		if (rc != SQLITE_DONE)
			err = hist_fail(h, rc, "committing a flush");
	}
	if (err) {
		history_rollback(h);
		return err;
	}
	h->s.flushes++;
	h->s.rows_written += h->txn_rows;
	h->s.last_flush_rows = h->txn_rows;
	h->s.last_flush_ns = clock_mono_ns() - h->txn_start_ns;
	hist_txn_reset(h);
	return 0;
}

/* Ids created in the transaction are gone with it: forget the caches. */
void history_rollback(struct history *h)
{
	if (!h->in_txn)
		return;
	if (h->db && !sqlite3_get_autocommit(h->db)) {
		sqlite3_step(hist_stmt(h, HS_ROLLBACK));
		sqlite3_reset(h->st[HS_ROLLBACK]);
	}
	hist_caches_reset(h);
	h->nseries = 0;
	hist_txn_reset(h);
}
