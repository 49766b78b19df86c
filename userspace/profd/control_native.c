/* control_native.c: the native (C) frames of each thread `profctl stacks`
 * reads on request (control_pystack.c), from outside the process.
 *
 * A thread blocked in the kernel has its user pc and sp in
 * /proc/PID/task/TID/syscall (a running one has none to give: it says
 * "running").  From there the stack is walked with profd's own unwind
 * tables (unwind_user.h), built here for the few files the walks pass
 * through, at most once each per request: the daemon's unwinder and
 * symbolizer belong to the ingest thread, and this runs on a reader
 * thread (memread.h) of its own, after the Python frames' one: a file
 * whose table takes long to build (no walk can stop in the middle of
 * one) then costs the native frames, never the Python ones.  For the
 * same reason each file's symbols are read here with elfsym (its debug
 * file found by build-id, as the symbolizer does), and dropped with the
 * request.  Files, bytes and time are bounded: the process names the
 * files and controls its stack. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon.h"
#include "arch.h"
#include "control.h"
#include "demangle.h"
#include "elfsym.h"
#include "memread.h"
#include "mixedstack.h"
#include "procmaps.h"
#include "pymem.h"
#include "rootfs.h"
#include "unwind_table.h"
#include "unwind_user.h"

#define NATIVE_MAX_FRAMES 128
/* How long the control thread waits for the native walks, on top of the
 * Python frames' read: their own budget, one table build running past it
 * (a file of NATIVE_MAX_FILE_SIZE), and a margin. */
#define NATIVE_MEMREAD_TIMEOUT_MS 1000
/* Files whose tables and symbols one request reads: a stack passes
 * through a handful (the program, libc, libpython, an extension). */
#define NATIVE_MAX_FILES 32
/* A bigger file is not read at all (its frames stay unnamed and end the
 * walk): its table could take longer to build than the timeout allows. */
#define NATIVE_MAX_FILE_SIZE (128ull << 20)
/* Rows of all the request's tables together. */
#define NATIVE_MAX_TABLE_BYTES (64ull << 20)
#define EVAL_FRAME "_PyEval_EvalFrameDefault"

struct native_file {
	struct procfile_id id;
	int err; /* why it has no table (then no symbols either) */
	struct unwind_table tab;
	struct elfsym *sym; /* NULL: none read */
};

/* One request's view of the process: its maps and the files read. */
struct native_req {
	uint32_t pid;
	char root[64]; /* /proc/PID/root, where its debug files are */
	struct procmaps maps;
	struct native_file files[NATIVE_MAX_FILES];
	size_t nfiles;
	size_t table_bytes;
	uint64_t deadline_ns;
};

static void file_read(struct native_req *q, const struct procmap *m, struct native_file *f)
{
	struct stat st;
	int fd = procfile_open_mapped("/proc", (int)q->pid, m);

	f->err = fd < 0 ? fd : 0;
	if (!f->err && (fstat(fd, &st) || st.st_size > (off_t)NATIVE_MAX_FILE_SIZE))
		f->err = -E2BIG;
	if (!f->err)
		f->err = unwind_table_build_fd(fd, NULL, &f->tab);
	if (!f->err && q->table_bytes + unwind_table_bytes(&f->tab) > NATIVE_MAX_TABLE_BYTES)
		f->err = -E2BIG;
	if (f->err) {
		unwind_table_free(&f->tab);
	} else {
		q->table_bytes += unwind_table_bytes(&f->tab);
		f->sym = elfsym_open_fd(fd, m->path, q->root);
	}
	if (fd >= 0)
		close(fd);
}

/* The mapping's file, read on first use; NULL for code in no file, or
 * once the request has read as many files as it may. */
static struct native_file *file_of(struct native_req *q, const struct procmap *m)
{
	struct native_file *f;
	size_t i;

	if (!m->inode || m->path[0] != '/')
		return NULL; /* anonymous (JIT), [vdso], ... */
	for (i = 0; i < q->nfiles; i++) {
		f = &q->files[i];
		if (f->id.inode == m->inode && f->id.dev_major == m->dev_major &&
		    f->id.dev_minor == m->dev_minor)
			return f;
	}
	if (q->nfiles == NATIVE_MAX_FILES || clock_mono_ns() > q->deadline_ns)
		return NULL;
	f = &q->files[q->nfiles++];
	memset(f, 0, sizeof(*f));
	f->id = (struct procfile_id){m->dev_major, m->dev_minor, m->inode};
	file_read(q, m, f);
	return f;
}

/* The ELF vaddr of runtime address pc through the file's executable
 * segments; false when in none. */
static bool vaddr_of(const struct native_file *f, const struct procmap *m, uint64_t pc,
		     uint64_t *vaddr)
{
	uint64_t off = pc - m->start + m->offset;
	size_t i;

	for (i = 0; i < f->tab.nsegs; i++) {
		const struct unwind_segment *s = &f->tab.segs[i];

		if (off >= s->offset && off - s->offset < s->filesz) {
			*vaddr = off - s->offset + s->vaddr;
			return true;
		}
	}
	return f->sym && !elfsym_offset_to_vaddr(f->sym, off, vaddr);
}

/* An executable mapping's file with a table, and pc's vaddr in it. */
static struct native_file *code_at(struct native_req *q, uint64_t pc, const struct procmap **m,
				   uint64_t *vaddr)
{
	struct native_file *f;

	*m = procmaps_find(&q->maps, pc);
	if (!*m || !((*m)->prot & PROT_EXEC))
		return NULL;
	f = file_of(q, *m);
	return f && !f->err && vaddr_of(f, *m, pc, vaddr) ? f : NULL;
}

static const struct profd_unwind_row *row_at(void *arg, uint64_t pc)
{
	const struct procmap *m;
	uint64_t vaddr;
	struct native_file *f = code_at(arg, pc, &m, &vaddr);

	return f ? unwind_table_lookup(&f->tab, vaddr) : NULL;
}

static int read_word(void *arg, uint64_t addr, uint64_t *out)
{
	const struct native_req *q = arg;

	return pymem_read_u64((pid_t)q->pid, addr, out);
}

/* pc and sp of a thread blocked in the kernel: the last two figures of
 * "NR args... sp pc" or "-1 sp pc".  -EBUSY while it runs. */
static int blocked_regs(uint32_t pid, uint32_t tid, struct unwind_user_regs *r)
{
	char path[96], text[512], *tok[16], *save = NULL, *s;
	size_t n = 0;

	snprintf(path, sizeof(path), "/proc/%u/task/%u/syscall", pid, tid);
	if (proc_read_small_file(path, text, sizeof(text)) < 0)
		return -ENOENT;
	if (!strncmp(text, "running", 7))
		return -EBUSY;
	for (s = strtok_r(text, " \n", &save); s && n < 16; s = strtok_r(NULL, " \n", &save))
		tok[n++] = s;
	if (n < 3)
		return -EPROTO;
	memset(r, 0, sizeof(*r));
	r->sp = strtoull(tok[n - 2], NULL, 16);
	r->pc = strtoull(tok[n - 1], NULL, 16);
	return r->pc && r->sp ? 0 : -EPROTO;
}

/* "name" of the function at pc, or "[file+0xVADDR]". */
static int64_t name_pc(struct native_req *q, uint64_t pc, struct stackset *out, bool *is_eval)
{
	const struct procmap *m;
	const char *sym = NULL, *slash;
	char text[512], *dm;
	uint64_t vaddr = 0;
	struct native_file *f = code_at(q, pc, &m, &vaddr);
	int64_t id;

	if (f && f->sym)
		sym = elfsym_lookup(f->sym, vaddr, NULL);
	*is_eval = sym && !strncmp(sym, EVAL_FRAME, strlen(EVAL_FRAME)) &&
		   (!sym[strlen(EVAL_FRAME)] || sym[strlen(EVAL_FRAME)] == '.');
	if (sym) {
		dm = demangle(sym);
		id = stackset_intern(out, FRAME_NATIVE, dm ? dm : sym);
		free(dm);
		return id;
	}
	if (!m || !m->path[0])
		return stackset_intern(out, FRAME_UNKNOWN, "[unknown]");
	slash = strrchr(m->path, '/');
	snprintf(text, sizeof(text), "[%s+0x%" PRIx64 "]", slash && slash[1] ? slash + 1 : m->path,
		 f ? vaddr : pc - m->start + m->offset);
	return stackset_intern(out, FRAME_UNKNOWN, text);
}

struct native_stack {
	uint32_t ids[NATIVE_MAX_FRAMES + 1]; /* root first, a cut marker at 0 */
	bool is_eval[NATIVE_MAX_FRAMES + 1];
	uint32_t n;
	bool cut;
};

/* The thread's native frames, root first, named into out. */
static int walk_thread(struct native_req *q, uint32_t tid, struct stackset *out,
		       struct native_stack *ns, const char **why)
{
	struct unwind_user_ops ops = {
	    .row = row_at,
	    .read = read_word,
	    .arg = q,
	    .deadline_ns = q->deadline_ns,
	    .code_mask = arch_code_addr_mask(),
	};
	struct unwind_user_regs r;
	uint64_t pcs[NATIVE_MAX_FRAMES];
	enum unwind_user_end end;
	char mark[160];
	uint32_t n, i;
	int64_t id;
	int err = blocked_regs(q->pid, tid, &r);

	ns->n = 0;
	ns->cut = false;
	if (err) {
		*why = err == -EBUSY ? "running: only a blocked thread's registers can be read"
				     : "its registers not readable";
		return 0;
	}
	end = unwind_user_walk(&ops, r, pcs, NATIVE_MAX_FRAMES, &n);
	if (end != UNWIND_USER_END) {
		snprintf(mark, sizeof(mark), "[native stack cut: %s]", unwind_user_end_name(end));
		id = stackset_intern(out, FRAME_UNKNOWN, mark);
		if (id < 0)
			return (int)id;
		ns->is_eval[ns->n] = false;
		ns->ids[ns->n++] = (uint32_t)id;
		ns->cut = true;
	}
	for (i = n; i > 0; i--) {
		/* A return address is after its call: name the call. */
		id = name_pc(q, i > 1 ? pcs[i - 1] - 1 : pcs[i - 1], out, &ns->is_eval[ns->n]);
		if (id < 0)
			return (int)id;
		ns->ids[ns->n++] = (uint32_t)id;
	}
	return 0;
}

/* The thread's user frames: its native ones with each eval call's Python
 * frames in place of its _PyEval_EvalFrameDefault frame (mixedstack.h),
 * paired from the leaf. */
static int merge_thread(struct pynow *pn, struct pynow_thread *t, const struct native_stack *ns)
{
	uint32_t max = ns->n + t->npy, *py = NULL, got;
	bool *entry = malloc((t->npy ? t->npy : 1) * sizeof(*entry));
	struct mixed_in mi = {.native = ns->ids,
			      .is_eval = ns->is_eval,
			      .nnative = ns->n,
			      .npy = t->npy,
			      .py_entry = entry,
			      .native_cut = ns->cut};
	int err = -ENOMEM;

	if (entry && !pynow_keep_ids(pn, max)) {
		/* py points into pn->ids, which the merge appends to: copy. */
		py = malloc((t->npy ? t->npy : 1) * sizeof(*py));
		if (py) {
			memcpy(py, pn->ids + t->py_first, t->npy * sizeof(*py));
			memcpy(entry, pn->entry + t->py_first, t->npy * sizeof(*entry));
			mi.py = py;
			got = mixed_merge(&mi, pn->ids + pn->nids, max);
			memset(pn->entry + pn->nids, 0, got * sizeof(*pn->entry));
			t->u_first = (uint32_t)pn->nids;
			t->nu = got;
			pn->nids += got;
			err = 0;
		}
	}
	free(py);
	free(entry);
	return err;
}

/* What the reader hands back: each thread's frames, root first, as ids
 * of ss in one flat array. */
struct native_job {
	uint32_t pid;
	size_t n;		 /* threads */
	uint32_t *tids;		 /* host tids, as pn->v lists them */
	uint32_t *first, *count; /* each thread's range of ids */
	bool *cut;
	const char **why;
	uint32_t *ids;
	bool *is_eval;
	size_t nids, cap;
	struct stackset *ss;
	int err;
};

static int keep_stack(struct native_job *j, size_t i, const struct native_stack *ns)
{
	if (pynow_grow_ids(&j->ids, &j->is_eval, &j->cap, j->nids + ns->n))
		return -ENOMEM;
	j->first[i] = (uint32_t)j->nids;
	j->count[i] = ns->n;
	j->cut[i] = ns->cut;
	if (!ns->n) /* no frames: j->ids may still be NULL */
		return 0;
	memcpy(j->ids + j->nids, ns->ids, ns->n * sizeof(*ns->ids));
	memcpy(j->is_eval + j->nids, ns->is_eval, ns->n * sizeof(*ns->is_eval));
	j->nids += ns->n;
	return 0;
}

static int read_threads(struct native_req *q, struct native_job *j)
{
	struct native_stack *ns = malloc(sizeof(*ns));
	size_t i;
	int err = ns ? 0 : -ENOMEM;

	for (i = 0; !err && i < j->n; i++) {
		if (clock_mono_ns() > q->deadline_ns) {
			j->why[i] = "not read: the 500 ms budget ran out";
			continue;
		}
		err = walk_thread(q, j->tids[i], j->ss, ns, &j->why[i]);
		if (!err)
			err = keep_stack(j, i, ns);
	}
	free(ns);
	return err;
}

static void free_req(struct native_req *q)
{
	size_t i;

	for (i = 0; i < q->nfiles; i++) {
		unwind_table_free(&q->files[i].tab);
		elfsym_free(q->files[i].sym);
	}
	procmaps_free(&q->maps);
	free(q);
}

/* On the reader thread. */
static void job_read(void *arg)
{
	struct native_job *j = arg;
	struct native_req *q = calloc(1, sizeof(*q));
	size_t i;

	j->err = q ? 0 : -ENOMEM;
	if (!q)
		return;
	q->pid = j->pid;
	q->deadline_ns = clock_mono_ns() + PYNOW_BUDGET_NS;
	snprintf(q->root, sizeof(q->root), "/proc/%u/root", j->pid);
	j->err = procmaps_read((int)j->pid, &q->maps);
	if (!j->err) {
		j->err = read_threads(q, j);
	} else if (j->err != -ENOMEM) {
		for (i = 0; i < j->n; i++)
			j->why[i] = "its memory map not readable";
		j->err = 0;
	}
	free_req(q);
}

static void job_drop(void *arg)
{
	struct native_job *j = arg;

	free(j->tids);
	free(j->first);
	free(j->count);
	free(j->cut);
	free(j->why);
	free(j->ids);
	free(j->is_eval);
	stackset_free(j->ss);
	free(j);
}

static struct native_job *job_new(const struct pynow *pn, uint32_t pid)
{
	struct native_job *j = calloc(1, sizeof(*j));
	size_t n = pn->n ? pn->n : 1, i;

	if (!j)
		return NULL;
	j->pid = pid;
	j->n = pn->n;
	j->tids = malloc(n * sizeof(*j->tids));
	j->first = calloc(n, sizeof(*j->first));
	j->count = calloc(n, sizeof(*j->count));
	j->cut = calloc(n, sizeof(*j->cut));
	j->why = calloc(n, sizeof(*j->why));
	j->ss = stackset_new();
	if (!j->tids || !j->first || !j->count || !j->cut || !j->why || !j->ss) {
		job_drop(j);
		return NULL;
	}
	for (i = 0; i < pn->n; i++)
		j->tids[i] = pn->v[i].tid;
	return j;
}

/* On the control thread: thread i's frames into out's ids, merged. */
static int merge_one(struct pynow *pn, size_t i, const struct native_job *j,
		     struct native_stack *ns, struct stackset *out)
{
	struct pynow_thread *t = &pn->v[i];
	uint32_t k;
	int64_t id;

	t->native_why = j->why[i];
	t->nnat = ns->n = j->count[i];
	ns->cut = j->cut[i];
	for (k = 0; k < ns->n; k++) {
		id = stackset_copy_frame(out, j->ss, j->ids[j->first[i] + k]);
		if (id < 0)
			return (int)id;
		ns->ids[k] = (uint32_t)id;
		ns->is_eval[k] = j->is_eval[j->first[i] + k];
	}
	return ns->n ? merge_thread(pn, t, ns) : 0;
}

static int merge_all(struct pynow *pn, const struct native_job *j, struct stackset *out)
{
	struct native_stack *ns = malloc(sizeof(*ns));
	size_t i;
	int err = ns ? 0 : -ENOMEM;

	for (i = 0; !err && i < j->n; i++)
		err = merge_one(pn, i, j, ns, out);
	free(ns);
	return err;
}

static void say_all(struct pynow *pn, const char *why)
{
	size_t i;

	for (i = 0; i < pn->n; i++)
		pn->v[i].native_why = why;
}

int pynow_read_native(struct pynow *pn, uint32_t pid, struct stackset *out)
{
	struct native_job *j = job_new(pn, pid);
	int err = j ? memread_run(job_read, job_drop, j, NATIVE_MEMREAD_TIMEOUT_MS) : -ENOMEM;

	/* The Python frames stand either way: on a timeout j is the
	 * reader's now. */
	if (err == -ETIMEDOUT) {
		say_all(pn, "not read: timed out (a big file's unwind table, or memory that did not answer)");
		return 0;
	}
	if (err == -EBUSY) {
		say_all(pn, "not read: too many reads of processes' memory are stuck");
		err = 0;
	} else if (!err) {
		err = j->err ? j->err : merge_all(pn, j, out);
	}
	if (j)
		job_drop(j);
	return err;
}
