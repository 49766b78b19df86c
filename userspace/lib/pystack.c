#include "pystack.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "pymem.h"

/* Bytes of a frame holding every field we read. */
static size_t frame_size(const struct profd_pyoffsets *o)
{
	uint32_t f[] = {o->frame_previous, o->frame_code, o->frame_instr, o->frame_owner,
			o->frame_is_entry, o->frame_tlbc_index};
	size_t i, max = 0;

	for (i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		if (f[i] != PYOFF_NONE && f[i] + 8 > max)
			max = f[i] + 8;
	return max;
}

static uint64_t get64(const uint8_t *p, uint32_t off)
{
	uint64_t v;

	memcpy(&v, p + off, sizeof(v));
	return v;
}

/* The innermost frame of a thread state, 0 if it runs no Python. */
static int first_frame(int pid, const struct profd_pyoffsets *o, uint64_t tstate, uint64_t *frame)
{
	uint64_t cframe;
	int err;

	if (o->frame_kind != PYOFF_FRAME_CFRAME)
		return pymem_read_u64(pid, tstate + o->tstate_frame, frame);
	err = pymem_read_u64(pid, tstate + o->tstate_frame, &cframe);
	if (err || !cframe) {
		*frame = 0;
		return err;
	}
	return pymem_read_u64(pid, cframe + o->cframe_current_frame, frame);
}

/* Free-threaded 3.14+: the address instr_ptr counts from when the frame
 * runs a thread's own copy of the bytecode (see python.bpf.h). */
static uint64_t bytecode_base(int pid, const struct profd_pyoffsets *o, const uint8_t *frame,
			      uint64_t code)
{
	uint64_t arr, base;
	int32_t idx;

	if (o->frame_tlbc_index == PYOFF_NONE || o->code_tlbc == PYOFF_NONE)
		return 0;
	memcpy(&idx, frame + o->frame_tlbc_index, sizeof(idx));
	if (idx <= 0 || idx > 4096 || pymem_read_u64(pid, code + o->code_tlbc, &arr) || !arr ||
	    pymem_read_u64(pid, arr + 8 + 8 * (uint64_t)idx, &base))
		return 0;
	return base;
}

/* Walk one thread's frames, leaf first. */
static void walk_frames(int pid, const struct profd_pyoffsets *o, uint64_t frame,
			struct pystack_thread *t)
{
	uint8_t buf[256];
	size_t size = frame_size(o);
	uint32_t steps;

	for (steps = 0; frame && steps < 2 * PYSTACK_MAX_FRAMES; steps++) {
		struct pystack_frame *f;
		uint64_t code, base;

		if (size > sizeof(buf) || pymem_read(pid, frame, buf, size)) {
			t->flags |= PYSTACK_T_TRUNCATED;
			return;
		}
		code = get64(buf, o->frame_code) & ~PYOFF_STACKREF_TAG;
		if (o->frame_owner_cstack != PYOFF_NONE &&
		    buf[o->frame_owner] >= o->frame_owner_cstack) {
			/* A shim: the eval loop's own C-stack entry frame. */
			if (t->nframes)
				t->frames[t->nframes - 1].flags |= PYSTACK_F_ENTRY;
		} else if (code) {
			if (t->nframes == PYSTACK_MAX_FRAMES) {
				t->flags |= PYSTACK_T_TRUNCATED;
				return;
			}
			f = &t->frames[t->nframes++];
			f->code_addr = code;
			base = bytecode_base(pid, o, buf, code);
			f->instr_off = base ? (int64_t)(get64(buf, o->frame_instr) - base)
					    : pycode_offset_from_frame(o, code,
								       get64(buf, o->frame_instr));
			f->flags = 0;
			if (o->frame_kind == PYOFF_FRAME_OBJECT ||
			    (o->frame_is_entry != PYOFF_NONE && buf[o->frame_is_entry]))
				f->flags |= PYSTACK_F_ENTRY;
		}
		frame = get64(buf, o->frame_previous);
	}
	if (frame)
		t->flags |= PYSTACK_T_TRUNCATED;
}

/* Kernel TID of the thread: native_thread_id (3.11+), else the tid
 * glibc keeps in struct pthread, checked against the process's tasks. */
static uint32_t thread_tid(int pid, const struct profd_pyoffsets *o, uint64_t tstate, uint64_t pthread_id)
{
	char path[64];
	uint64_t native;
	uint32_t tid;

	if (o->tstate_native_thread_id != PYOFF_NONE &&
	    !pymem_read_u64(pid, tstate + o->tstate_native_thread_id, &native) && native &&
	    native <= INT32_MAX)
		return (uint32_t)native;
	if (!pthread_id || pymem_read_u32(pid, pthread_id + PYSTACK_GLIBC_PTHREAD_TID, &tid) ||
	    !tid || tid > INT32_MAX)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/task/%u", pid, tid);
	return access(path, F_OK) == 0 ? tid : 0;
}

static int add_thread(struct pystack_dump *d, uint32_t *cap, struct pystack_thread **t)
{
	if (d->nthreads == *cap) {
		uint32_t ncap = *cap ? *cap * 2 : 8;
		struct pystack_thread *p;

		if (ncap > PYSTACK_MAX_THREADS)
			return -E2BIG;
		p = realloc(d->threads, ncap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		d->threads = p;
		*cap = ncap;
	}
	*t = &d->threads[d->nthreads++];
	memset(*t, 0, sizeof(**t));
	return 0;
}

static int walk_threads(int pid, const struct profd_pyoffsets *o, uint64_t interp, uint32_t index,
			struct pystack_dump *d, uint32_t *cap)
{
	uint64_t tstate, frame;
	uint32_t n;
	int err;

	err = pymem_read_u64(pid, interp + o->interp_tstate_head, &tstate);
	if (err)
		return err;
	for (n = 0; tstate && n < PYSTACK_MAX_THREADS; n++) {
		struct pystack_thread *t;

		err = add_thread(d, cap, &t);
		if (err)
			return err;
		t->tstate = tstate;
		t->interp = index;
		if (pymem_read_u64(pid, tstate + o->tstate_thread_id, &t->pthread_id) ||
		    first_frame(pid, o, tstate, &frame)) {
			t->flags |= PYSTACK_T_TRUNCATED;
			return 0; /* the list itself is unreadable from here */
		}
		t->tid = thread_tid(pid, o, tstate, t->pthread_id);
		walk_frames(pid, o, frame, t);
		err = pymem_read_u64(pid, tstate + o->tstate_next, &tstate);
		if (err)
			return 0;
	}
	return 0;
}

int pystack_dump(int pid, const struct pyruntime *rt, struct pystack_dump *out)
{
	const struct profd_pyoffsets *o = &rt->off;
	uint64_t interp;
	uint32_t cap = 0, i;
	int err;

	memset(out, 0, sizeof(*out));
	err = pymem_read_u64(pid, rt->runtime_addr + o->runtime_interp_head, &interp);
	for (i = 0; !err && interp && i < PYSTACK_MAX_INTERPS; i++) {
		err = walk_threads(pid, o, interp, i, out, &cap);
		if (!err)
			err = pymem_read_u64(pid, interp + o->interp_next, &interp);
	}
	if (err)
		log_debug("pystack: pid %d: walk stopped: %s", pid, strerror(-err));
	return err;
}

void pystack_dump_free(struct pystack_dump *d)
{
	if (!d)
		return;
	free(d->threads);
	d->threads = NULL;
	d->nthreads = 0;
}

void pystack_print(FILE *f, const struct pystack_dump *d, struct pycode_cache *c,
		   const struct pyruntime *rt)
{
	char name[PYCODE_MAX_STR * 8 + 64];
	uint32_t i, j;

	for (i = 0; i < d->nthreads; i++) {
		const struct pystack_thread *t = &d->threads[i];

		fprintf(f, "thread %u (tstate %#llx, pthread %#llx)%s\n", t->tid,
			(unsigned long long)t->tstate, (unsigned long long)t->pthread_id,
			(t->flags & PYSTACK_T_TRUNCATED) ? " truncated" : "");
		for (j = 0; j < t->nframes; j++) {
			const struct pystack_frame *fr = &t->frames[j];

			if (pycode_name(c, rt, fr->code_addr, fr->instr_off, name, sizeof(name)))
				snprintf(name, sizeof(name), "[code %#llx]",
					 (unsigned long long)fr->code_addr);
			fprintf(f, "  %s%s\n", name,
				(fr->flags & PYSTACK_F_ENTRY) ? "  [entry]" : "");
		}
	}
}

/* Static TLS blocks of the modules loaded at start-up sit just below the
 * thread pointer; libpython's is normally among the first. */
#define TLS_WINDOW (16u << 10)

/* Highest slot below fs (== pthread_id) holding value, scanning down a
 * page at a time until the window ends or memory is unmapped. */
static int tls_find_slot(int pid, uint64_t fs, uint64_t value, uint64_t *slot)
{
	uint64_t page[512], top = fs;

	while (fs - top < TLS_WINDOW && top >= sizeof(page)) {
		uint64_t base = (top - 1) & ~(uint64_t)(sizeof(page) - 1);
		size_t i, n = (size_t)(top - base) / 8;

		if (pymem_read(pid, base, page, n * 8))
			return -ENOENT;
		for (i = n; i-- > 0;) {
			if (page[i] == value) {
				*slot = base + i * 8;
				return 0;
			}
		}
		top = base;
	}
	return -ENOENT;
}

/* Every thread's slot must hold its own tstate or NULL (detached). */
static bool tls_consistent(int pid, const struct pyruntime *rt, const struct pystack_dump *d,
			   uint64_t off)
{
	uint32_t i;

	for (i = 0; i < d->nthreads; i++) {
		const struct pystack_thread *t = &d->threads[i];
		uint64_t v;

		if (pymem_read_u64(pid, t->pthread_id - off + rt->tls_tstate_off, &v) ||
		    (v && v != t->tstate))
			return false;
	}
	return true;
}

/* Only the main thread is probed: below the other threads' static TLS
 * lies their stack, where tstate pointers abound. */
int pystack_find_tls_offset(int pid, const struct pyruntime *rt, const struct pystack_dump *d,
			    uint64_t *tls_off)
{
	uint64_t slot, off;
	uint32_t i;

	if (rt->tls_tstate_off == PYRUNTIME_NO_TLS)
		return -ENOTSUP;
	for (i = 0; i < d->nthreads; i++) {
		const struct pystack_thread *t = &d->threads[i];

		if (t->tid != (uint32_t)pid || !t->pthread_id)
			continue;
		if (tls_find_slot(pid, t->pthread_id, t->tstate, &slot) ||
		    slot < rt->tls_tstate_off)
			return -ENOENT;
		off = t->pthread_id - (slot - rt->tls_tstate_off);
		if (!tls_consistent(pid, rt, d, off))
			return -ENOENT;
		*tls_off = off;
		return 0;
	}
	return -ENOENT;
}
