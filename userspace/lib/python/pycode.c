#include "pycode.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hashmap.h"
#include "log.h"
#include "pylinetable.h"
#include "pymem.h"

/* Fields that identify a live code object; all re-read on every hit. */
struct code_key {
	uint64_t type, filename, name, qualname, linetable;
	int32_t firstlineno;
	int32_t _pad;
};

struct code_entry {
	int pid;
	uint64_t addr;
	struct code_entry *pid_prev, *pid_next; /* the pid's entries */
	struct code_key key;
	char *qualname;
	char *filename;
	struct pylines lines;
};

struct pycode_cache {
	struct hashmap entries;	   /* hash(pid, addr) -> struct code_entry * */
	struct hashmap code_types; /* pid -> address of PyCode_Type */
	/* pid -> its first entry: the process's end frees its entries at
	 * once, a walk of its own list.  (They once stayed until the cache
	 * filled, 64 MiB, and every exit of any process left a pid behind.) */
	struct hashmap by_pid;
	size_t bytes;		   /* held by the entries */
};

static size_t entry_bytes(const struct code_entry *e)
{
	return sizeof(*e) + strlen(e->qualname) + strlen(e->filename) + 2 +
	       pylines_bytes(&e->lines);
}

static uint64_t entry_hash(int pid, uint64_t addr)
{
	return hash64_mix(addr ^ hash64_mix((uint64_t)(uint32_t)pid + 1));
}

static uint64_t pid_key(int pid)
{
	return (uint64_t)(uint32_t)pid + 1;
}

struct pycode_cache *pycode_cache_new(void)
{
	struct pycode_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	hashmap_init(&c->entries);
	hashmap_init(&c->code_types);
	hashmap_init(&c->by_pid);
	return c;
}

static void entry_free(struct code_entry *e)
{
	if (!e)
		return;
	free(e->qualname);
	free(e->filename);
	pylines_free(&e->lines);
	free(e);
}

static void flush(struct pycode_cache *c)
{
	uint64_t k, v;

	for (size_t i = 0; hashmap_next(&c->entries, &i, &k, &v);)
		entry_free((struct code_entry *)(uintptr_t)v);
	hashmap_free(&c->entries);
	hashmap_free(&c->code_types);
	hashmap_free(&c->by_pid);
	c->bytes = 0;
}

/* e into the cache under h, first of its pid's list. */
static int link_entry(struct pycode_cache *c, uint64_t h, struct code_entry *e)
{
	uint64_t v;

	if (hashmap_put(&c->entries, h, (uint64_t)(uintptr_t)e))
		return -ENOMEM;
	e->pid_next = hashmap_get(&c->by_pid, pid_key(e->pid), &v)
			      ? (struct code_entry *)(uintptr_t)v
			      : NULL;
	if (hashmap_put(&c->by_pid, pid_key(e->pid), (uint64_t)(uintptr_t)e)) {
		hashmap_del(&c->entries, h);
		return -ENOMEM;
	}
	e->pid_prev = NULL;
	if (e->pid_next)
		e->pid_next->pid_prev = e;
	c->bytes += entry_bytes(e);
	return 0;
}

/* e out of the cache (its hash h) and freed. */
static void drop_entry(struct pycode_cache *c, uint64_t h, struct code_entry *e)
{
	hashmap_del(&c->entries, h);
	if (e->pid_prev)
		e->pid_prev->pid_next = e->pid_next;
	else if (e->pid_next) /* the list's head: its pid now starts at the next */
		hashmap_put(&c->by_pid, pid_key(e->pid), (uint64_t)(uintptr_t)e->pid_next);
	else
		hashmap_del(&c->by_pid, pid_key(e->pid));
	if (e->pid_next)
		e->pid_next->pid_prev = e->pid_prev;
	c->bytes -= entry_bytes(e);
	entry_free(e);
}

void pycode_cache_free(struct pycode_cache *c)
{
	if (!c)
		return;
	flush(c);
	free(c);
}

void pycode_cache_forget_pid(struct pycode_cache *c, int pid)
{
	uint64_t v;

	while (hashmap_get(&c->by_pid, pid_key(pid), &v)) {
		struct code_entry *e = (struct code_entry *)(uintptr_t)v;

		drop_entry(c, entry_hash(e->pid, e->addr), e);
	}
	hashmap_del(&c->code_types, pid_key(pid));
}

size_t pycode_cache_entries(const struct pycode_cache *c)
{
	return c->entries.len;
}

size_t pycode_cache_bytes(const struct pycode_cache *c)
{
	return c->bytes;
}

int64_t pycode_offset_from_frame(const struct profd_pyoffsets *off, uint64_t code_addr,
				 uint64_t raw_instr)
{
	switch (off->instr_kind) {
	case PYOFF_INSTR_LASTI_BYTES:
	case PYOFF_INSTR_LASTI_UNITS:
		return (int32_t)(uint32_t)raw_instr;
	default:
		return (int64_t)(raw_instr - (code_addr + off->code_adaptive));
	}
}

int64_t pycode_byte_offset(const struct profd_pyoffsets *off, int64_t instr_off)
{
	if (off->instr_kind == PYOFF_INSTR_LASTI_UNITS && instr_off >= 0)
		return instr_off * 2;
	return instr_off;
}

/* ---- str objects ---- */

static size_t put_utf8(char *out, uint32_t cp)
{
	if (cp < 0x20 || cp == 0x7f || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff) {
		out[0] = '?';
		return 1;
	}
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | cp >> 6);
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | cp >> 12);
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | cp >> 18);
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* Characters of width kind (1, 2, 4) to UTF-8 in buf (len >= 1). */
static void encode(const uint8_t *data, size_t nchars, unsigned int kind, char *buf, size_t len)
{
	size_t i, o = 0;

	for (i = 0; i < nchars; i++) {
		uint32_t cp;
		char tmp[4];
		size_t n;

		if (kind == 1) {
			cp = data[i];
		} else if (kind == 2) {
			uint16_t u;

			memcpy(&u, data + i * 2, 2);
			cp = u;
		} else {
			memcpy(&cp, data + i * 4, 4);
		}
		n = put_utf8(tmp, cp);
		if (o + n >= len)
			break;
		memcpy(buf + o, tmp, n);
		o += n;
	}
	buf[o] = '\0';
}

#define STR_HEAD_MAX 128

int pycode_read_str(int pid, const struct profd_pyoffsets *off, uint64_t addr, char *buf, size_t len)
{
	uint8_t head[STR_HEAD_MAX], data[PYCODE_MAX_STR * 4];
	uint64_t length, data_addr;
	uint32_t state, kind;
	int err;

	if (!len)
		return -EINVAL;
	buf[0] = '\0';
	if (off->unicode_compact_data + 8 > sizeof(head) || off->unicode_state + 4 > sizeof(head) ||
	    off->unicode_length + 8 > sizeof(head))
		return -EINVAL;
	err = pymem_read(pid, addr, head, off->unicode_compact_data + 8);
	if (err)
		return err;
	memcpy(&length, head + off->unicode_length, 8);
	memcpy(&state, head + off->unicode_state, 4);
	/* Free-threaded 3.14+ keeps state.interned in a whole byte, not two
	 * bits, so the other bits sit 6 higher. */
	if (off->free_threaded && off->version >= 0x030e)
		state >>= PYOFF_UNICODE_FT_SHIFT;
	kind = (state >> PYOFF_UNICODE_KIND_SHIFT) & PYOFF_UNICODE_KIND_MASK;
	if (kind != 1 && kind != 2 && kind != 4)
		return -EINVAL;
	if (off->unicode_has_ready_bit && !(state & PYOFF_UNICODE_READY))
		return -EINVAL;
	if (state & PYOFF_UNICODE_COMPACT)
		data_addr = addr + ((state & PYOFF_UNICODE_ASCII) ? off->unicode_ascii_data
								  : off->unicode_compact_data);
	else /* legacy string: PyUnicodeObject.data.any follows the header */
		memcpy(&data_addr, head + off->unicode_compact_data, 8);
	if (length > PYCODE_MAX_STR)
		length = PYCODE_MAX_STR;
	err = pymem_read(pid, data_addr, data, (size_t)length * kind);
	if (err)
		return err;
	encode(data, (size_t)length, kind, buf, len);
	return 0;
}

/* ---- code objects ---- */

/* Bytes of the code object header holding every field we use. */
static size_t head_size(const struct profd_pyoffsets *o)
{
	uint32_t f[] = {o->object_type,	  o->code_filename,  o->code_name,
			o->code_qualname, o->code_linetable, o->code_firstlineno};
	size_t i, max = 0;

	for (i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		if (f[i] != PYOFF_NONE && f[i] + 8 > max)
			max = f[i] + 8;
	return max;
}

static uint64_t field64(const uint8_t *head, uint32_t off)
{
	uint64_t v = 0;

	if (off != PYOFF_NONE)
		memcpy(&v, head + off, sizeof(v));
	return v;
}

static int read_key(int pid, const struct profd_pyoffsets *o, uint64_t addr, struct code_key *k)
{
	uint8_t head[512];
	size_t n = head_size(o);
	int err;

	if (n > sizeof(head))
		return -EINVAL;
	err = pymem_read(pid, addr, head, n);
	if (err)
		return err;
	memset(k, 0, sizeof(*k));
	k->type = field64(head, o->object_type);
	k->filename = field64(head, o->code_filename);
	k->name = field64(head, o->code_name);
	k->qualname = field64(head, o->code_qualname);
	k->linetable = field64(head, o->code_linetable);
	memcpy(&k->firstlineno, head + o->code_firstlineno, 4);
	if (!k->type || !k->filename || !k->name || !k->linetable)
		return -EINVAL;
	return 0;
}

/* Is type the code type?  Checked by tp_name once per process. */
static int check_code_type(struct pycode_cache *c, const struct pyruntime *rt, uint64_t type)
{
	uint64_t known, name_ptr;
	char name[8];
	int err;

	if (hashmap_get(&c->code_types, pid_key(rt->pid), &known) && known == type)
		return 0;
	err = pymem_read_u64(rt->pid, type + rt->off.type_name, &name_ptr);
	if (err)
		return err;
	err = pymem_read(rt->pid, name_ptr, name, 5);
	if (err)
		return err;
	if (memcmp(name, "code", 5))
		return -EINVAL;
	return hashmap_put(&c->code_types, pid_key(rt->pid), type);
}

static int read_linetable(const struct pyruntime *rt, const struct code_key *k,
			  struct pylines *lines)
{
	const struct profd_pyoffsets *o = &rt->off;
	uint64_t size;
	uint8_t *tab;
	int err;

	err = pymem_read_u64(rt->pid, k->linetable + o->bytes_size, &size);
	if (err)
		return err;
	if (size > PYLINES_MAX_TABLE)
		return -E2BIG;
	tab = malloc(size ? size : 1);
	if (!tab)
		return -ENOMEM;
	err = pymem_read(rt->pid, k->linetable + o->bytes_data, tab, (size_t)size);
	if (!err)
		err = pylines_decode(o->line_format, tab, (size_t)size, k->firstlineno, lines);
	free(tab);
	return err;
}

static int load_entry(const struct pyruntime *rt, uint64_t addr, const struct code_key *k,
		      struct code_entry **out)
{
	char *s = malloc(PYCODE_MAX_STR * 4 + 1);
	struct code_entry *e = calloc(1, sizeof(*e));
	uint64_t qual = k->qualname ? k->qualname : k->name;
	int err = -ENOMEM;

	if (!s || !e)
		goto fail;
	e->pid = rt->pid;
	e->addr = addr;
	e->key = *k;
	err = pycode_read_str(rt->pid, &rt->off, qual, s, PYCODE_MAX_STR * 4 + 1);
	if (err || !(e->qualname = strdup(s)))
		goto fail;
	err = pycode_read_str(rt->pid, &rt->off, k->filename, s, PYCODE_MAX_STR * 4 + 1);
	if (err || !(e->filename = strdup(s)))
		goto fail;
	err = read_linetable(rt, k, &e->lines);
	if (err)
		goto fail;
	free(s);
	*out = e;
	return 0;
fail:
	if (!err)
		err = -ENOMEM;
	free(s);
	entry_free(e);
	return err;
}

/* The fingerprint the stack walker gives a code object with this key. */
static uint32_t key_fp(const struct code_key *k)
{
	return profd_pyfp(k->filename, k->name, k->qualname, k->linetable,
			  (uint32_t)k->firstlineno);
}

static int lookup(struct pycode_cache *c, const struct pyruntime *rt, uint64_t addr, uint32_t fp,
		  struct code_entry **out)
{
	uint64_t h = entry_hash(rt->pid, addr), v;
	struct code_entry *e = NULL;
	struct code_key k;
	int err;

	err = read_key(rt->pid, &rt->off, addr, &k);
	if (err)
		return err;
	if (fp && key_fp(&k) != fp)
		return -ESTALE; /* freed since the sample, another one there now */
	if (hashmap_get(&c->entries, h, &v)) {
		e = (struct code_entry *)(uintptr_t)v;
		if (e->pid == rt->pid && e->addr == addr && !memcmp(&e->key, &k, sizeof(k))) {
			*out = e;
			return 0;
		}
		/* Reused address (or a hash collision): read it afresh. */
		drop_entry(c, h, e);
	}
	err = check_code_type(c, rt, k.type);
	if (err)
		return err;
	err = load_entry(rt, addr, &k, &e);
	if (err)
		return err;
	if (c->entries.len >= PYCODE_CACHE_MAX || c->bytes >= PYCODE_CACHE_MAX_BYTES) {
		log_debug("pycode: cache full (%zu code objects, %zu bytes), flushing",
			  c->entries.len, c->bytes);
		flush(c);
	}
	err = link_entry(c, h, e);
	if (err) {
		entry_free(e);
		return err;
	}
	*out = e;
	return 0;
}

int pycode_resolve(struct pycode_cache *c, const struct pyruntime *rt, uint64_t code_addr,
		   uint32_t fp, int64_t instr_off, struct pycode_frame *out)
{
	struct code_entry *e;
	int32_t line;
	int err;

	err = lookup(c, rt, code_addr, fp, &e);
	if (err)
		return err;
	line = pylines_line(&e->lines, pycode_byte_offset(&rt->off, instr_off));
	out->qualname = e->qualname;
	out->filename = e->filename;
	out->firstlineno = e->key.firstlineno;
	out->line = line >= 0 ? line : e->key.firstlineno;
	return 0;
}

int pycode_name(struct pycode_cache *c, const struct pyruntime *rt, uint64_t code_addr, uint32_t fp,
		int64_t instr_off, char *buf, size_t len)
{
	struct pycode_frame f;
	int err, n;

	err = pycode_resolve(c, rt, code_addr, fp, instr_off, &f);
	if (err)
		return err;
	n = snprintf(buf, len, "%s (%s:%d)", f.qualname, f.filename, f.line);
	return n < 0 ? -EINVAL : 0;
}

int pycode_name_in_donor(struct pycode_cache *c, const struct pyruntime *rt, int donor,
			 uint64_t code_addr, uint32_t fp, int64_t instr_off, char *buf, size_t len)
{
	struct pyruntime there = *rt;

	if (donor <= 0 || !fp)
		return -ESRCH;
	there.pid = donor;
	return pycode_name(c, &there, code_addr, fp, instr_off, buf, len);
}
