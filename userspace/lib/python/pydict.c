#include "pydict.h"

#include <errno.h>
#include <string.h>

#include "pylocals.h"
#include "pymem.h"

#define OLD_HEAD 40 /* 3.9, 3.10: dk_refcnt, dk_size, dk_lookup, dk_usable, dk_nentries */
#define NEW_HEAD 32 /* 3.11+: dk_refcnt, log2 sizes and kind, dk_usable, dk_nentries */
#define KIND_SPLIT 2
#define CHUNK 64	  /* entries read at once */
#define LONG_MAX_DIGITS 3 /* 30-bit digits: 64 bits fit in 3 */

static bool aligned(uint64_t p)
{
	return p && !(p & 7);
}

int pydict_layout_of(const struct pyruntime *rt, const struct pyoff_locals *lo,
		     struct pydict_layout *out)
{
	memset(out, 0, sizeof(*out));
	if (lo->dict_keys == PYOFF_NONE)
		return -EPROTONOSUPPORT;
	out->dict_keys = lo->dict_keys;
	out->dict_values = lo->dict_values;
	/* PyDictObject kept its shape from 3.6 on; the keys object's
	 * changed in 3.11, and 3.13 put a header before the values. */
	out->old_keys = rt->major == 3 && rt->minor < 11;
	out->values_head = rt->minor >= 13 ? 8 : 0; /* capacity, size, embedded, valid */
	out->long_size = lo->long_size;
	out->long_digits = lo->long_digits;
	out->long_tagged = lo->long_tagged;
	return 0;
}

int pydict_layout(const struct pyruntime *rt, struct pydict_layout *out)
{
	struct pyoff_locals lo;
	int err = pylocals_layout(rt, &lo);

	if (err) {
		memset(out, 0, sizeof(*out));
		return err;
	}
	return pydict_layout_of(rt, &lo, out);
}

/* Bytes of one hash index for a table of size slots (3.9, 3.10). */
static size_t old_index_bytes(uint64_t size)
{
	return size <= 0xff ? 1 : size <= 0xffff ? 2 : size <= 0xffffffffull ? 4 : 8;
}

static int old_keys_view(int pid, uint64_t keys, struct pydict_view *v, int64_t *nentries)
{
	uint64_t head[OLD_HEAD / 8];

	if (pymem_read(pid, keys, head, sizeof(head)))
		return -EFAULT;
	/* dk_size: a power of two, 8 at least; dk_nentries within it. */
	if (head[1] < 8 || head[1] > (1ull << 40) || (head[1] & (head[1] - 1)))
		return -EINVAL;
	*nentries = (int64_t)head[4];
	if (*nentries < 0 || (uint64_t)*nentries > head[1])
		return -EINVAL;
	v->esize = 24;
	v->entries = keys + OLD_HEAD + head[1] * old_index_bytes(head[1]);
	return 0;
}

static int new_keys_view(int pid, uint64_t keys, bool split, struct pydict_view *v,
			 int64_t *nentries)
{
	uint8_t head[NEW_HEAD];
	unsigned int log2_size, log2_index, kind;

	if (pymem_read(pid, keys, head, sizeof(head)))
		return -EFAULT;
	log2_size = head[8];
	log2_index = head[9];
	kind = head[10];
	memcpy(nentries, head + 24, 8);
	if (log2_size > 40 || log2_index > 43 || log2_index < log2_size || kind > KIND_SPLIT ||
	    (kind == KIND_SPLIT) != split || *nentries < 0 || *nentries > (1ll << log2_size))
		return -EINVAL;
	v->esize = kind ? 16 : 24; /* str keys (split ones too): no hash kept */
	v->entries = keys + NEW_HEAD + (1ull << log2_index);
	return 0;
}

int pydict_keys_view(int pid, bool old_keys, uint64_t keys, uint64_t values, size_t max,
		     struct pydict_view *v)
{
	int64_t nentries;
	int err;

	if (!aligned(keys) || (values && !aligned(values)))
		return -EINVAL;
	err = old_keys ? old_keys_view(pid, keys, v, &nentries)
		       : new_keys_view(pid, keys, values != 0, v, &nentries);
	if (err)
		return err;
	if (max > PYDICT_MAX_ENTRIES)
		max = PYDICT_MAX_ENTRIES;
	v->values = values;
	v->n = (uint64_t)nentries < max ? (size_t)nentries : max;
	return 0;
}

int pydict_view(const struct pyruntime *rt, const struct pydict_layout *lay, uint64_t dict,
		size_t max, struct pydict_view *v)
{
	uint64_t keys, values;

	if (!aligned(dict) || pymem_read_u64(rt->pid, dict + lay->dict_keys, &keys) ||
	    pymem_read_u64(rt->pid, dict + lay->dict_values, &values))
		return -EFAULT;
	return pydict_keys_view(rt->pid, lay->old_keys, keys,
				values ? values + lay->values_head : 0, max, v);
}

int pydict_entry(int pid, const struct pydict_view *v, size_t i, uint64_t *key, uint64_t *value)
{
	uint64_t e[3];

	if (i >= v->n || pymem_read(pid, v->entries + i * v->esize, e, v->esize))
		return -EFAULT;
	*key = e[v->esize == 24]; /* after the hash, where there is one */
	*value = e[(v->esize == 24) + 1];
	if (v->values && pymem_read_u64(pid, v->values + 8 * i, value))
		return -EFAULT;
	return 0;
}

int pydict_find_str(const struct pyruntime *rt, const struct pydict_view *v, const char *name,
		    uint64_t *value)
{
	char text[PYLOCALS_NAME_MAX];
	uint64_t key, val;
	size_t i;

	for (i = 0; i < v->n; i++) {
		if (pydict_entry(rt->pid, v, i, &key, &val))
			return -EFAULT;
		if (!aligned(key) || !val || pylocals_str(rt, key, text, sizeof(text)) ||
		    strcmp(text, name))
			continue;
		*value = val;
		return 0;
	}
	return -ENOENT;
}

int pydict_long_u64(const struct pyruntime *rt, const struct pydict_layout *lay, uint64_t obj,
		    uint64_t *out)
{
	uint32_t d[LONG_MAX_DIGITS];
	int64_t size;
	uint64_t n, v = 0, i;

	if (!aligned(obj) || pymem_read(rt->pid, obj + lay->long_size, &size, 8))
		return -EFAULT;
	if (lay->long_tagged) { /* digits << 3 | sign: 0 positive, 1 zero, 2 negative */
		if ((size & 3) >= 2)
			return -ERANGE;
		n = (uint64_t)size >> 3;
	} else {
		if (size < 0)
			return -ERANGE;
		n = (uint64_t)size;
	}
	if (n > LONG_MAX_DIGITS)
		return -ERANGE;
	if (n && pymem_read(rt->pid, obj + lay->long_digits, d, n * 4))
		return -EFAULT;
	for (i = n; i > 0; i--) {
		if (d[i - 1] >> 30 || (v >> 34))
			return -ERANGE; /* not a digit, or past 64 bits */
		v = v << 30 | d[i - 1];
	}
	*out = v;
	return 0;
}
