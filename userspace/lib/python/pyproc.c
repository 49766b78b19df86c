/* pyproc.c: one process's Python state; see pyproc.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "pyproc.h"
#include "pyruntime.h"

#define NAMES_MAX 65536 /* per process; a full cache starts over */
/* Distinct asyncio task names a process gets frames for: a server naming
 * a task per request must not grow the frame dictionary without end. */
#define TASK_NAMES_MAX 256
#define TASK_KEY_SALT 0x7461736b00000000ull /* task keys among frame keys */
#define CODE_KEY_SALT 0x636f646500000000ull /* fingerprints are 24 bits */
#define ASK_FAILED 1ull			     /* asked: the answer was "unreadable" */
/* Reads a process may await: a program starting (thousands of code
 * objects new at once) asks the rest as answers come back. */
#define ASKS_MAX 1024

struct pyproc *pyproc_new(void)
{
	return calloc(1, sizeof(struct pyproc));
}

static void forget_names(struct pyproc *pp)
{
	hashmap_free(&pp->names);
	hashmap_free(&pp->code_checked);
	hashmap_free(&pp->asked);
	hashmap_free(&pp->task_names);
	pp->asks_pending = 0;
}

void pyproc_forget(struct pyproc *pp)
{
	forget_names(pp);
	pp->gen++;
	free(pp->rt);
	pp->rt = NULL;
	pp->checked = false;
	pp->pending = false;
}

void pyproc_free(struct pyproc *pp)
{
	if (!pp)
		return;
	forget_names(pp);
	free(pp->rt);
	free(pp);
}

void pyproc_attach(struct pyproc *pp, struct pyruntime *rt)
{
	free(pp->rt);
	pp->rt = rt;
}

int pyproc_inherit(struct pyproc *child, const struct pyproc *parent, int pid, uint64_t mono_ns)
{
	if (!parent->rt || child->rt)
		return 0;
	child->rt = malloc(sizeof(*child->rt));
	if (!child->rt)
		return -ENOMEM;
	*child->rt = *parent->rt;
	child->rt->pid = pid;
	child->checked = true;
	child->checked_mono_ns = mono_ns;
	return 0;
}

uint64_t pyproc_code_key(uint64_t code, uint32_t fp)
{
	return hash64_mix(code ^ hash64_mix((uint64_t)fp | CODE_KEY_SALT));
}

uint64_t pyproc_frame_key(uint64_t code, uint32_t fp, int64_t off)
{
	return hash64_mix(pyproc_code_key(code, fp) ^ (uint64_t)off);
}

uint64_t pyproc_task_key(uint64_t addr)
{
	return hash64_mix(addr ^ TASK_KEY_SALT);
}

/* A names value: the epoch it was checked, and the id + 1. */
bool pyproc_name(const struct pyproc *pp, uint64_t key, int64_t *id, uint32_t *epoch)
{
	uint64_t v;

	if (!hashmap_get(&pp->names, key, &v))
		return false;
	*id = (int64_t)(uint32_t)v - 1;
	*epoch = (uint32_t)(v >> 32);
	return true;
}

bool pyproc_keep_name(struct pyproc *pp, uint64_t key, uint32_t epoch, int64_t id)
{
	bool full = pp->names.len >= NAMES_MAX;

	if (full) {
		hashmap_free(&pp->names);
		hashmap_free(&pp->code_checked);
	}
	hashmap_put(&pp->names, key, ((uint64_t)epoch << 32) | (uint64_t)(id + 1));
	return full;
}

bool pyproc_code_checked(const struct pyproc *pp, uint64_t code_key, uint32_t epoch)
{
	uint64_t checked;

	return hashmap_get(&pp->code_checked, code_key, &checked) && checked == epoch;
}

void pyproc_code_mark(struct pyproc *pp, uint64_t code_key, uint32_t epoch)
{
	hashmap_put(&pp->code_checked, code_key, epoch);
}

int pyproc_asked(const struct pyproc *pp, uint64_t key, uint32_t epoch)
{
	uint64_t v;

	if (!hashmap_get(&pp->asked, key, &v) || (uint32_t)(v >> 1) != epoch)
		return -1;
	return v & ASK_FAILED ? 0 : 1;
}

int pyproc_ask(struct pyproc *pp, uint64_t key, uint32_t epoch)
{
	if (pp->asks_pending >= ASKS_MAX)
		return -EBUSY;
	if (pp->asked.len >= NAMES_MAX)
		hashmap_free(&pp->asked); /* an answer still counts when it comes */
	if (hashmap_put(&pp->asked, key, (uint64_t)epoch << 1))
		return -ENOMEM;
	pp->asks_pending++;
	return 0;
}

bool pyproc_answer_fresh(struct pyproc *pp, uint64_t key, uint32_t epoch)
{
	uint32_t named;
	int64_t id;
	uint64_t v;

	if (pp->asks_pending)
		pp->asks_pending--;
	/* Asked again since (this one's epoch is over), or named since (a
	 * later answer, a client's read): that one is the newer. */
	if (hashmap_get(&pp->asked, key, &v) && (uint32_t)(v >> 1) > epoch)
		return false;
	return !pyproc_name(pp, key, &id, &named) || named <= epoch;
}

void pyproc_ask_done(struct pyproc *pp, uint64_t key)
{
	hashmap_del(&pp->asked, key);
}

void pyproc_ask_failed(struct pyproc *pp, uint64_t key, uint32_t epoch)
{
	hashmap_put(&pp->asked, key, ((uint64_t)epoch << 1) | ASK_FAILED);
}

void pyproc_task_label(struct pyproc *pp, const char *name, bool is_named, char *out, size_t size)
{
	uint64_t h = hash64_str(name);

	if (!is_named)
		snprintf(out, size, "[unnamed task]");
	else if (hashmap_get(&pp->task_names, h, NULL) ||
		 (pp->task_names.len < TASK_NAMES_MAX && !hashmap_put(&pp->task_names, h, 1)))
		snprintf(out, size, "[task %s]", name);
	else
		snprintf(out, size, "[task: one of more than %d names]", TASK_NAMES_MAX);
}
