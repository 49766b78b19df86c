#include "pystack.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hashmap.h"
#include "pymem.h"
#include "pytstate.h"

#define FRAME_READ_MAX 256     /* bytes of a frame read in one go at most */
#define PTHREADS_SCANNED 64    /* struct pthreads searched for the tid offset */
#define PTHREAD_SCAN_SHORT 256 /* where a full scan cannot be read (musl) */
#define TLBC_MAX 4096	       /* per-thread bytecode copies believed */

/* What the walk needs of one frame. */
struct frame_fields {
	uint64_t code, instr, previous;
	int32_t tlbc_index;
	uint8_t owner, is_entry;
};

static bool instr_is_lasti(const struct profd_pyoffsets *o)
{
	return o->instr_kind == PYOFF_INSTR_LASTI_BYTES || o->instr_kind == PYOFF_INSTR_LASTI_UNITS;
}

static uint32_t field_end(uint32_t off, uint32_t width)
{
	return off == PYOFF_NONE ? 0 : off + width;
}

static bool has_shims(const struct profd_pyoffsets *o)
{
	return o->frame_owner_cstack != PYOFF_NONE && o->frame_owner != PYOFF_NONE;
}

/* Bytes from a frame's start that cover every field the walk reads, or 0
 * when that is more than one read should take (then field by field). */
static uint32_t frame_span(const struct profd_pyoffsets *o)
{
	uint32_t ends[] = {
	    field_end(o->frame_previous, 8),
	    field_end(o->frame_code, 8),
	    field_end(o->frame_instr, instr_is_lasti(o) ? 4 : 8),
	    has_shims(o) ? field_end(o->frame_owner, 1) : 0,
	    field_end(o->frame_tlbc_index, 4),
	    field_end(o->frame_is_entry, 1),
	};
	uint32_t span = 0;
	size_t i;

	for (i = 0; i < sizeof(ends) / sizeof(ends[0]); i++)
		span = ends[i] > span ? ends[i] : span;
	return span <= FRAME_READ_MAX ? span : 0;
}

/* One field: from the frame's copy in buf when there is one, else read
 * on its own. */
static int get_field(int pid, uint64_t frame, const uint8_t *buf, uint32_t off, size_t width,
		     void *out)
{
	if (buf) {
		memcpy(out, buf + off, width);
		return 0;
	}
	return pymem_read(pid, frame + off, out, width);
}

static int read_frame(int pid, const struct profd_pyoffsets *o, uint64_t frame, uint32_t span,
		      struct frame_fields *f)
{
	uint8_t copy[FRAME_READ_MAX];
	const uint8_t *buf = span && !pymem_read(pid, frame, copy, span) ? copy : NULL;
	uint32_t lasti = 0;

	memset(f, 0, sizeof(*f));
	if (get_field(pid, frame, buf, o->frame_code, 8, &f->code) ||
	    get_field(pid, frame, buf, o->frame_previous, 8, &f->previous))
		return -EFAULT;
	if (has_shims(o))
		get_field(pid, frame, buf, o->frame_owner, 1, &f->owner);
	if (o->frame_tlbc_index != PYOFF_NONE)
		get_field(pid, frame, buf, o->frame_tlbc_index, 4, &f->tlbc_index);
	if (o->frame_is_entry != PYOFF_NONE)
		get_field(pid, frame, buf, o->frame_is_entry, 1, &f->is_entry);
	if (instr_is_lasti(o)) {
		get_field(pid, frame, buf, o->frame_instr, 4, &lasti);
		f->instr = lasti;
	} else {
		get_field(pid, frame, buf, o->frame_instr, 8, &f->instr);
	}
	return 0;
}

/* Free-threaded 3.14+: the start of the bytecode copy instr_ptr points
 * into (copy 0 is co_code_adaptive; a thread with its own copy runs
 * entries[idx] of the code's _PyCodeArray { Py_ssize_t size; char
 * *entries[]; }), as the BPF walker takes it. */
static uint64_t bytecode_base(int pid, const struct profd_pyoffsets *o, int32_t idx, uint64_t code)
{
	uint64_t arr, base = 0;

	if (o->frame_tlbc_index == PYOFF_NONE || o->code_tlbc == PYOFF_NONE || idx <= 0 ||
	    idx > TLBC_MAX)
		return code + o->code_adaptive;
	if (pymem_read_u64(pid, code + o->code_tlbc, &arr) || !arr ||
	    pymem_read_u64(pid, arr + 8 + 8 * (uint64_t)idx, &base))
		base = 0;
	return base ? base : code + o->code_adaptive;
}

static int64_t instr_offset(int pid, const struct profd_pyoffsets *o, const struct frame_fields *f,
			    uint64_t code)
{
	if (instr_is_lasti(o))
		return (int32_t)(uint32_t)f->instr;
	return (int32_t)(f->instr - bytecode_base(pid, o, f->tlbc_index, code));
}

/* The innermost frame of a thread state (0: none, outside Python code). */
static int top_frame(const struct pyruntime *rt, uint64_t tstate, uint64_t *frame)
{
	const struct profd_pyoffsets *o = &rt->off;

	if (pymem_read_u64(rt->pid, tstate + o->tstate_frame, frame))
		return -EFAULT;
	if (o->frame_kind == PYOFF_FRAME_CFRAME && *frame &&
	    pymem_read_u64(rt->pid, *frame + o->cframe_current_frame, frame))
		return -EFAULT;
	return 0;
}

/* Follow the chain from frame; seen guards against a chain that loops. */
static int walk_from(const struct pyruntime *rt, uint64_t frame, struct hashmap *seen,
		     struct pystack_thread *t)
{
	const struct profd_pyoffsets *o = &rt->off;
	uint32_t span = frame_span(o), steps;
	struct frame_fields f;
	uint64_t code, v;

	for (steps = 0; frame; steps++) {
		if (steps == PYSTACK_MAX_WALK || hashmap_get(seen, frame, &v) ||
		    read_frame(rt->pid, o, frame, span, &f)) {
			t->cut = true;
			return 0;
		}
		if (hashmap_put(seen, frame, 1))
			return -ENOMEM;
		if (has_shims(o) && f.owner >= o->frame_owner_cstack) {
			/* A shim between eval calls: the frame leafward of it
			 * started one, as the BPF walker marks it. */
			if (t->nframes)
				t->entry[t->nframes - 1] = true;
		} else {
			if (t->nframes == PYSTACK_MAX_FRAMES) {
				t->cut = true;
				return 0;
			}
			code = f.code & ~PYOFF_STACKREF_TAG;
			/* <= 3.10: one eval call per frame; 3.11: is_entry. */
			t->entry[t->nframes] = o->frame_kind == PYOFF_FRAME_OBJECT || f.is_entry;
			t->code[t->nframes] = code;
			t->frame[t->nframes] = frame;
			t->instr[t->nframes++] = instr_offset(rt->pid, o, &f, code);
		}
		frame = f.previous;
	}
	return 0;
}

int pystack_walk(const struct pyruntime *rt, uint64_t tstate, struct pystack_thread *t)
{
	struct hashmap seen;
	uint64_t frame;
	int err;

	t->nframes = 0;
	t->cut = false;
	if (top_frame(rt, tstate, &frame))
		return -EFAULT;
	hashmap_init(&seen);
	err = walk_from(rt, frame, &seen, t);
	hashmap_free(&seen);
	return err;
}

/* ---- which thread a thread state is ---- */

/* Does every one of the m struct pthread images hold a distinct thread
 * id of the process at off? */
static bool tids_at(const uint8_t *img, size_t m, uint32_t off, const struct hashmap *tids)
{
	uint32_t v, w;
	uint64_t x;
	size_t i, j;

	for (i = 0; i < m; i++) {
		memcpy(&v, img + i * PYSTACK_PTHREAD_SCAN + off, sizeof(v));
		if (!v || !hashmap_get(tids, v, &x))
			return false;
		for (j = 0; j < i; j++) {
			memcpy(&w, img + j * PYSTACK_PTHREAD_SCAN + off, sizeof(w));
			if (v == w)
				return false;
		}
	}
	return true;
}

/* Copies of the struct pthreads that can be read, zero-filled past
 * what could (a short read at the end of a mapping); how many. */
static size_t read_pthreads(int pid, const uint64_t *pthreads, size_t n, uint8_t *img)
{
	size_t i, m = 0;

	for (i = 0; i < n && m < PTHREADS_SCANNED; i++) {
		uint8_t *p = img + m * PYSTACK_PTHREAD_SCAN;

		memset(p, 0, PYSTACK_PTHREAD_SCAN);
		if (!pymem_read(pid, pthreads[i], p, PYSTACK_PTHREAD_SCAN) ||
		    !pymem_read(pid, pthreads[i], p, PTHREAD_SCAN_SHORT))
			m++;
	}
	return m;
}

int pystack_tid_offset(int pid, const uint64_t *pthreads, size_t n, const uint32_t *tids,
		       size_t ntids)
{
	uint8_t *img = malloc((size_t)PTHREADS_SCANNED * PYSTACK_PTHREAD_SCAN);
	struct hashmap set;
	uint32_t off;
	size_t i, m = 0;
	int found = -ENOENT;

	hashmap_init(&set);
	for (i = 0; i < ntids; i++)
		if (hashmap_put(&set, tids[i], 1))
			goto out;
	if (img)
		m = read_pthreads(pid, pthreads, n, img);
	for (off = 0; m && off + 4 <= PYSTACK_PTHREAD_SCAN; off += 4) {
		if (tids_at(img, m, off, &set)) {
			found = (int)off;
			break;
		}
	}
out:
	hashmap_free(&set);
	free(img);
	return found;
}

/* ---- every thread ---- */

struct tstate_ref {
	uint64_t tstate, pthread;
	uint32_t tid; /* native_thread_id, 0 if none */
};

struct tstate_list {
	struct tstate_ref *v;
	size_t n, cap;
};

static int collect(const struct pyruntime *rt, uint64_t interp, uint64_t ts, void *arg)
{
	const struct profd_pyoffsets *o = &rt->off;
	struct tstate_list *l = arg;
	struct tstate_ref r = {.tstate = ts};
	uint64_t native = 0;

	(void)interp;
	if (!ts)
		return 0;
	if (o->tstate_native_thread_id != PYOFF_NONE &&
	    !pymem_read_u64(rt->pid, ts + o->tstate_native_thread_id, &native))
		r.tid = (uint32_t)native;
	if (pymem_read_u64(rt->pid, ts + o->tstate_thread_id, &r.pthread))
		r.pthread = 0;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 16;
		struct tstate_ref *v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = r;
	return 0;
}

/* Thread ids of the states native_thread_id did not give (3.9, 3.10, or
 * a state not bound yet): through struct pthread. */
static void tids_from_pthreads(const struct pyruntime *rt, struct tstate_list *l,
			       const uint32_t *tids, size_t ntids)
{
	uint64_t *pt = malloc(l->n * sizeof(*pt));
	size_t i, n = 0;
	uint32_t tid;
	int off;

	if (!pt)
		return;
	for (i = 0; i < l->n; i++)
		if (!l->v[i].tid && l->v[i].pthread)
			pt[n++] = l->v[i].pthread;
	off = n ? pystack_tid_offset(rt->pid, pt, n, tids, ntids) : -ENOENT;
	for (i = 0; off >= 0 && i < l->n; i++)
		if (!l->v[i].tid && l->v[i].pthread &&
		    !pymem_read_u32(rt->pid, l->v[i].pthread + (uint64_t)off, &tid))
			l->v[i].tid = tid;
	free(pt);
}

int pystack_threads(const struct pyruntime *rt, const uint32_t *tids, size_t ntids, pystack_fn fn,
		    void *arg)
{
	struct tstate_list l = {0};
	struct pystack_thread *t = malloc(sizeof(*t));
	size_t i;
	int err = t ? pytstate_each(rt, collect, &l) : -ENOMEM;

	if (!err)
		tids_from_pthreads(rt, &l, tids, ntids);
	/* Oldest first (CPython puts new threads at the head): the main
	 * thread, where a hung job usually hangs, is read before a time
	 * budget may stop the walk. */
	for (i = l.n; !err && i > 0; i--) {
		t->tstate = l.v[i - 1].tstate;
		t->tid = l.v[i - 1].tid;
		t->ident = l.v[i - 1].pthread;
		if (pystack_walk(rt, t->tstate, t))
			t->cut = true; /* freed under us: listed with no frames */
		err = fn(t, arg);
	}
	free(l.v);
	free(t);
	return err;
}
