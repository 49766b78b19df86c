#include "pythreads.h"

#include <errno.h>
#include <string.h>

#include "pydict.h"
#include "pylocals.h"
#include "pymem.h"

#define TPFLAGS_INLINE_VALUES (1ull << 2) /* 3.13+ */
#define TPFLAGS_MANAGED_DICT (1ull << 4)  /* 3.11+ */
#define MODULES_MAX 65536		  /* sys.modules entries looked at */
#define ATTRS_MAX 256			  /* an instance's attributes looked at */

struct reader {
	const struct pyruntime *rt;
	struct pydict_layout lay;
	struct pyoff_threads th;
};

static bool aligned(uint64_t p)
{
	return p && !(p & 7);
}

static int layouts(const struct pyruntime *rt, struct reader *r)
{
	uint8_t head[PYOFF_DEBUG_READ_SIZE];
	int err;

	if (rt->major != 3 || rt->off.free_threaded)
		return -EPROTONOSUPPORT;
	r->rt = rt;
	err = pydict_layout(rt, &r->lay);
	if (!err && rt->minor >= 13 && pymem_read(rt->pid, rt->runtime_addr, head, sizeof(head)))
		err = -EFAULT;
	return err ? err : pyoffsets_threads(rt->minor, head, sizeof(head), &r->th);
}

/* The value under the str key name in the dict at dict. */
static int dict_get(const struct reader *r, uint64_t dict, size_t max, const char *name,
		    uint64_t *value)
{
	struct pydict_view v;
	int err = pydict_view(r->rt, &r->lay, dict, max, &v);

	return err ? err : pydict_find_str(r->rt, &v, name, value);
}

/* threading._active of the interpreter at interp, through its
 * sys.modules. */
static int active_dict(const struct reader *r, uint64_t interp, uint64_t *active)
{
	const struct pyruntime *rt = r->rt;
	uint64_t modules, module, md_dict;

	if (pymem_read_u64(rt->pid, interp + r->th.interp_modules, &modules))
		return -EFAULT;
	if (dict_get(r, modules, MODULES_MAX, "threading", &module) || !aligned(module) ||
	    pymem_read_u64(rt->pid, module + r->th.module_dict, &md_dict))
		return -ENOENT;
	return dict_get(r, md_dict, MODULES_MAX, "_active", active);
}

/* An instance's attributes with their keys in its class (3.11+): the
 * values array values (its items' address) indexed by the class's shared
 * keys. */
static int shared_view(const struct reader *r, uint64_t type, uint64_t values,
		       struct pydict_view *v)
{
	uint64_t keys;

	if (r->th.heap_cached_keys == PYOFF_NONE ||
	    pymem_read_u64(r->rt->pid, type + r->th.heap_cached_keys, &keys))
		return -EFAULT;
	return pydict_keys_view(r->rt->pid, false, keys, values, ATTRS_MAX, v);
}

/* 3.13+: the values inline after the object (basicsize bytes), unless
 * they moved into a dict (their valid byte cleared). */
static int inline_view(const struct reader *r, uint64_t obj, uint64_t type, struct pydict_view *v)
{
	int64_t basicsize;
	uint8_t head[4]; /* capacity, size, embedded, valid */

	if (pymem_read(r->rt->pid, type + r->th.type_basicsize, &basicsize, 8) || basicsize < 16 ||
	    basicsize > 4096 || (basicsize & 7) ||
	    pymem_read(r->rt->pid, obj + (uint64_t)basicsize, head, sizeof(head)) || !head[3])
		return -EFAULT;
	return shared_view(r, type, obj + (uint64_t)basicsize + r->lay.values_head, v);
}

/* 3.11+: a dict made for the object (pointer three words before it), or
 * its values apart (four words before, 3.11), tagged in the same word
 * (3.12: low bit set), or inline (3.13+). */
static int managed_view(const struct reader *r, uint64_t obj, uint64_t type, uint64_t flags,
			struct pydict_view *v)
{
	uint64_t word, values;
	int pid = r->rt->pid;

	if (!(flags & TPFLAGS_MANAGED_DICT) || pymem_read_u64(pid, obj - 24, &word))
		return -EINVAL;
	if (r->rt->minor == 12 && (word & 1))
		return shared_view(r, type, word + 1, v); /* stored as values - 1 */
	if (word)
		return pydict_view(r->rt, &r->lay, word, ATTRS_MAX, v);
	if (r->rt->minor == 11) {
		if (pymem_read_u64(pid, obj - 32, &values))
			return -EFAULT;
		return shared_view(r, type, values, v);
	}
	if (r->rt->minor >= 13 && (flags & TPFLAGS_INLINE_VALUES))
		return inline_view(r, obj, type, v);
	return -ENOENT;
}

/* 3.9, 3.10: the dict at tp_dictoffset (a positive one: a plain class). */
static int offset_view(const struct reader *r, uint64_t obj, uint64_t type, struct pydict_view *v)
{
	int64_t off;
	uint64_t dict;

	if (pymem_read(r->rt->pid, type + r->th.type_dictoffset, &off, 8) || off <= 0 ||
	    off > 4096 || (off & 7) || pymem_read_u64(r->rt->pid, obj + (uint64_t)off, &dict))
		return -EFAULT;
	return pydict_view(r->rt, &r->lay, dict, ATTRS_MAX, v);
}

static int attrs_view(const struct reader *r, uint64_t obj, struct pydict_view *v)
{
	uint64_t type, flags;
	int pid = r->rt->pid;

	if (!aligned(obj) || pymem_read_u64(pid, obj + r->rt->off.object_type, &type) ||
	    !aligned(type) || pymem_read_u64(pid, type + r->th.type_flags, &flags))
		return -EFAULT;
	return r->rt->minor <= 10 ? offset_view(r, obj, type, v)
				  : managed_view(r, obj, type, flags, v);
}

/* thread._name, into name. */
static int thread_name(const struct reader *r, uint64_t thread, char *name, size_t len)
{
	struct pydict_view v;
	uint64_t str;

	if (attrs_view(r, thread, &v) || pydict_find_str(r->rt, &v, "_name", &str))
		return -ENOENT;
	return pylocals_str(r->rt, str, name, len);
}

/* The names one interpreter's threading knows. */
static int names_in(const struct reader *r, uint64_t interp, pythreads_fn fn, void *arg)
{
	char name[PYTHREADS_NAME_MAX];
	struct pydict_view v;
	uint64_t active, key, thread, ident;
	size_t i;
	int err;

	if (active_dict(r, interp, &active))
		return 0; /* threading not imported (yet): no names */
	if (pydict_view(r->rt, &r->lay, active, PYTHREADS_MAX, &v))
		return -EFAULT;
	for (i = 0; i < v.n; i++) {
		if (pydict_entry(r->rt->pid, &v, i, &key, &thread))
			return -EFAULT;
		if (!key || !thread || pydict_long_u64(r->rt, &r->lay, key, &ident) ||
		    thread_name(r, thread, name, sizeof(name)))
			continue; /* deleted, or not readable as a name */
		err = fn(ident, name, arg);
		if (err)
			return err;
	}
	return 0;
}

int pythreads_names(const struct pyruntime *rt, pythreads_fn fn, void *arg)
{
	const struct profd_pyoffsets *o = &rt->off;
	struct reader r;
	uint64_t interp;
	size_t n;
	int err = layouts(rt, &r);

	/* Every interpreter's (newest first, the main one last): a thread
	 * of a subinterpreter is in its threading only. */
	if (!err && pymem_read_u64(rt->pid, rt->runtime_addr + o->runtime_interp_head, &interp))
		err = -EFAULT;
	for (n = 0; !err && aligned(interp) && n < PYTHREADS_MAX_INTERPS; n++) {
		err = names_in(&r, interp, fn, arg);
		if (err == -EFAULT)
			err = 0; /* that one's threading unreadable: the others' still */
		if (!err && pymem_read_u64(rt->pid, interp + o->interp_next, &interp))
			break;
	}
	return err;
}
