/* pydict: a CPython dict, and the ints and str keys it holds, read from
 * outside the process (process_vm_readv) without running any Python.
 *
 * A dict is a keys object (the hash indices, then the entries) and, for a
 * split dict (an instance's attributes), a values array apart, indexed as
 * the entries are.  The keys object changed shape in 3.11 (sizes as
 * powers of two, a kind byte; str-keyed entries lose their hash), and
 * 3.13 put a small header before the values.  Everything read is
 * untrusted: sizes are checked against each other, counts are capped, a
 * pointer is only followed by reading through it. */
#ifndef PROFD_PYDICT_H
#define PROFD_PYDICT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pyoffsets.h"
#include "pyruntime.h"

/* Keys are compared as pylocals_str() reads them (pylocals.h). */

#define PYDICT_MAX_ENTRIES 4096 /* entries of one dict ever looked at */

/* Where the dict and int fields are, for one interpreter version. */
struct pydict_layout {
	uint32_t dict_keys, dict_values; /* PyDictObject's ma_keys, ma_values */
	uint32_t values_head;		 /* bytes before a values array's items (3.13+: 8) */
	uint32_t long_size, long_digits; /* ob_size or lv_tag, ob_digit */
	bool old_keys;			 /* 3.9, 3.10: the keys object before 3.11 */
	bool long_tagged;		 /* 3.12+: lv_tag, not a signed ob_size */
};

/* The entries of one dict (or of a keys object with its values). */
struct pydict_view {
	uint64_t entries; /* the first entry */
	uint64_t values;  /* a split dict's value pointers, else 0 */
	size_t esize;	  /* bytes a entry: 24 {hash, key, value} or 16 {key, value} */
	size_t n;	  /* entries to look at: dk_nentries, at most the max asked */
};

/* 0, or -EPROTONOSUPPORT for a version with no layout here. */
int pydict_layout(const struct pyruntime *rt, struct pydict_layout *out);
/* The same from the locals layout already read (pylocals_layout reads
 * 3.13+'s from the process). */
int pydict_layout_of(const struct pyruntime *rt, const struct pyoff_locals *lo,
		     struct pydict_layout *out);

/* The entries of the keys object at keys, at most max of them; values:
 * the items of a split dict's values (their address), or 0 for a
 * combined one.  0, -EFAULT or -EINVAL (not sane). */
int pydict_keys_view(int pid, bool old_keys, uint64_t keys, uint64_t values, size_t max,
		     struct pydict_view *v);

/* The same for the dict object at dict (split or combined). */
int pydict_view(const struct pyruntime *rt, const struct pydict_layout *lay, uint64_t dict,
		size_t max, struct pydict_view *v);

/* Entry i's key and value (either 0: a deleted or empty entry).  0 or
 * -EFAULT. */
int pydict_entry(int pid, const struct pydict_view *v, size_t i, uint64_t *key, uint64_t *value);

/* The value stored under the str key name: 0, -ENOENT (not there), or
 * -EFAULT where the entries could not be read. */
int pydict_find_str(const struct pyruntime *rt, const struct pydict_view *v, const char *name,
		    uint64_t *value);

/* The value of a non-negative int that fits 64 bits: 0, -EFAULT, or
 * -ERANGE (negative or too big). */
int pydict_long_u64(const struct pyruntime *rt, const struct pydict_layout *lay, uint64_t obj,
		    uint64_t *out);

#endif
