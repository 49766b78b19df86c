#include "elfsym.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "debuginfo.h"
#include "elffile.h"
#include "elfsplit.h"
#include "log.h"
#include "rootfs.h"

/* How far back a lookup walks to find an enclosing symbol when the
 * nearest one below the address is a smaller nested symbol. */
#define ENCLOSING_SCAN 8

struct func {
	uint64_t addr, end;
	const char *name;
};

struct dsym {
	uint64_t addr, size;
	const char *name;
	unsigned rank;
};

struct seg {
	uint64_t off, vaddr, filesz;
};

struct elfsym {
	struct func *funcs;
	size_t nfuncs;
	struct dsym *data;
	size_t ndata;
	struct seg *segs;
	size_t nsegs;
	char *names; /* every name, one blob */
	uint8_t build_id[ELFFILE_BUILD_ID_MAX];
	size_t build_id_len;
	bool debug_file;
	bool stripped; /* no .symtab of its own */
};

/* A symbol as read; the name still points into libelf's data.  For an
 * unsized function, end is its section's end (0 if unknown). */
struct raw {
	uint64_t addr, end;
	const char *name;
	unsigned rank; /* lower is better: .symtab, then GLOBAL > WEAK > LOCAL */
	bool sized;
};

struct rawvec {
	struct raw *v;
	size_t n, cap;
};

struct collect {
	struct rawvec funcs, data;
};

static int rawvec_push(struct rawvec *rv, const struct raw *r)
{
	if (rv->n == rv->cap) {
		size_t cap = rv->cap ? rv->cap * 2 : 256;
		struct raw *v = reallocarray(rv->v, cap, sizeof(*v));

		if (!v)
			return -ENOMEM;
		rv->v = v;
		rv->cap = cap;
	}
	rv->v[rv->n++] = *r;
	return 0;
}

static unsigned bind_rank(unsigned char bind)
{
	switch (bind) {
	case STB_GLOBAL: return 0;
	case STB_WEAK: return 1;
	case STB_LOCAL: return 2;
	default: return 3;
	}
}

/* A zero-size function may extend at most to its section's end. */
static uint64_t section_end(struct elffile *f, const GElf_Sym *s)
{
	GElf_Shdr sh;

	if (s->st_shndx >= SHN_LORESERVE || !elffile_shdr(f, s->st_shndx, &sh))
		return 0;
	if (s->st_value < sh.sh_addr || s->st_value - sh.sh_addr >= sh.sh_size)
		return 0;
	return sh.sh_addr + sh.sh_size;
}

static int add_sym(struct elffile *f, const GElf_Sym *s, const char *name, bool dynsym,
		   struct collect *c)
{
	unsigned char type = GELF_ST_TYPE(s->st_info);
	struct raw r = {
		.addr = s->st_value,
		.name = name,
		.rank = (dynsym ? 4 : 0) + bind_rank(GELF_ST_BIND(s->st_info)),
	};

	if (type == STT_FUNC || type == STT_GNU_IFUNC) {
		if (s->st_size && s->st_value + s->st_size > s->st_value) {
			r.end = s->st_value + s->st_size;
			r.sized = true;
		} else {
			r.end = section_end(f, s);
		}
		return rawvec_push(&c->funcs, &r);
	}
	if (type == STT_OBJECT || type == STT_TLS || type == STT_COMMON) {
		r.end = s->st_size; /* data keeps its size here */
		return rawvec_push(&c->data, &r);
	}
	return 0;
}

/* Returns the number of symbols read or -errno. */
static long collect_table(struct elffile *f, Elf_Scn *scn, bool dynsym, struct collect *c)
{
	size_t entsize = gelf_fsize(f->elf, ELF_T_SYM, 1, EV_CURRENT), i, n;
	GElf_Shdr sh;
	Elf_Data *d = elffile_section_data(f, scn, &sh), *strs;
	int err;

	if (!d || !entsize)
		return 0;
	strs = elffile_strtab(f, sh.sh_link);
	if (!strs)
		return 0;
	n = d->d_size / entsize;
	if (n > INT_MAX)
		n = INT_MAX; /* gelf_getsym takes an int */
	for (i = 0; i < n; i++) {
		const char *name;
		GElf_Sym s;

		if (!gelf_getsym(d, (int)i, &s))
			break;
		if (s.st_shndx == SHN_UNDEF)
			continue;
		name = elffile_data_str(strs, s.st_name);
		if (!name || !*name)
			continue;
		err = add_sym(f, &s, name, dynsym, c);
		if (err)
			return err;
	}
	return (long)n;
}

/* Reads .symtab and (unless symtab_only) .dynsym; *has_symtab tells
 * whether a non-trivial .symtab was there. */
static int collect_file(struct elffile *f, bool symtab_only, struct collect *c, bool *has_symtab)
{
	Elf_Scn *scn = NULL;
	long n;

	*has_symtab = false;
	while ((scn = elf_nextscn(f->elf, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh))
			break;
		if (sh.sh_type != SHT_SYMTAB && (symtab_only || sh.sh_type != SHT_DYNSYM))
			continue;
		n = collect_table(f, scn, sh.sh_type == SHT_DYNSYM, c);
		if (n < 0)
			return (int)n;
		if (sh.sh_type == SHT_SYMTAB && n > 1)
			*has_symtab = true;
	}
	return 0;
}

static unsigned underscores(const char *s)
{
	unsigned n = 0;

	while (s[n] == '_')
		n++;
	return n;
}

/* "memcpy@GLIBC_2.2.5" in .symtab is a compatibility alias; the default
 * version is "name@@VERSION" and the plain name is best of all. */
static bool compat_version(const char *s)
{
	const char *at = strchr(s, '@');

	return at && at[1] != '@';
}

/* Address order; among aliases the best name first: .symtab, global,
 * not a compat version, fewest leading underscores, then by name so
 * output is stable. */
static int cmp_raw(const void *pa, const void *pb)
{
	const struct raw *a = pa, *b = pb;
	unsigned ua, ub;
	bool ca, cb;

	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	if (a->rank != b->rank)
		return a->rank < b->rank ? -1 : 1;
	ca = compat_version(a->name);
	cb = compat_version(b->name);
	if (ca != cb)
		return ca ? 1 : -1;
	ua = underscores(a->name);
	ub = underscores(b->name);
	if (ua != ub)
		return ua < ub ? -1 : 1;
	return strcmp(a->name, b->name);
}

/* Sort and fold aliases in place.  The folded names stay findable by
 * elfsym_lookup_symbol through the data list. */
static int merge_aliases(struct collect *c)
{
	struct raw *v = c->funcs.v;
	size_t i, out = 0;

	if (c->funcs.n)
		qsort(v, c->funcs.n, sizeof(*v), cmp_raw);
	for (i = 0; i < c->funcs.n; i++) {
		struct raw *m = out ? &v[out - 1] : NULL, alias = v[i];

		if (!m || m->addr != v[i].addr) {
			v[out++] = v[i];
			continue;
		}
		if (v[i].sized && (!m->sized || v[i].end > m->end)) {
			m->end = v[i].end;
			m->sized = true;
		} else if (!m->sized && v[i].end > m->end) {
			m->end = v[i].end;
		}
		alias.end = alias.sized ? alias.end - alias.addr : 0;
		if (rawvec_push(&c->data, &alias))
			return -ENOMEM;
	}
	c->funcs.n = out;
	return 0;
}

/* Zero-size symbols (assembly, some linkers) run to the next symbol,
 * never past their section. */
static void extend_unsized(struct raw *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		uint64_t end = v[i].end > v[i].addr ? v[i].end : UINT64_MAX;

		if (v[i].sized)
			continue;
		if (i + 1 < n && v[i + 1].addr < end)
			end = v[i + 1].addr;
		v[i].end = end == UINT64_MAX ? v[i].addr + 1 : end;
	}
}

/* Frame names drop the symbol version ("@@GLIBC_2.34"). */
static size_t name_len(const char *s)
{
	size_t len = strcspn(s, "@");

	return len ? len : strlen(s);
}

static char *copy_name(char **blob, const char *s)
{
	size_t len = name_len(s);
	char *p = *blob;

	memcpy(p, s, len);
	p[len] = '\0';
	*blob += len + 1;
	return p;
}

static int finalize(struct elfsym *e, struct collect *c)
{
	size_t i, bytes = 1;
	char *blob;

	if (merge_aliases(c))
		return -ENOMEM;
	extend_unsized(c->funcs.v, c->funcs.n);
	for (i = 0; i < c->funcs.n; i++)
		bytes += name_len(c->funcs.v[i].name) + 1;
	for (i = 0; i < c->data.n; i++)
		bytes += name_len(c->data.v[i].name) + 1;
	e->names = malloc(bytes);
	e->funcs = calloc(c->funcs.n ? c->funcs.n : 1, sizeof(*e->funcs));
	e->data = calloc(c->data.n ? c->data.n : 1, sizeof(*e->data));
	if (!e->names || !e->funcs || !e->data)
		return -ENOMEM;
	blob = e->names;
	for (i = 0; i < c->funcs.n; i++) {
		const struct raw *r = &c->funcs.v[i];

		e->funcs[i] = (struct func){ r->addr, r->end, copy_name(&blob, r->name) };
	}
	for (i = 0; i < c->data.n; i++) {
		const struct raw *r = &c->data.v[i];

		e->data[i] = (struct dsym){ r->addr, r->end, copy_name(&blob, r->name), r->rank };
	}
	e->nfuncs = c->funcs.n;
	e->ndata = c->data.n;
	return 0;
}

static int read_segments(struct elffile *f, struct elfsym *e)
{
	size_t i;

	e->segs = calloc(f->phnum ? f->phnum : 1, sizeof(*e->segs));
	if (!e->segs)
		return -ENOMEM;
	for (i = 0; i < f->phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(f->elf, (int)i, &ph))
			return -EINVAL;
		if (ph.p_type != PT_LOAD || !ph.p_filesz)
			continue;
		e->segs[e->nsegs++] = (struct seg){ ph.p_offset, ph.p_vaddr, ph.p_filesz };
	}
	return 0;
}

/* Stripped file: merge the separate debug file's .symtab: the one given
 * (given_fd >= 0: fetched by build-id, checked to match), else one found
 * on the machine. */
static int add_debug_symbols(struct elfsym *e, struct elffile *f, int fd, const char *path,
			     const char *root, int given_fd, struct collect *c,
			     struct elffile *dbg, int *dbg_fd)
{
	bool has_symtab;
	int err;

	if (given_fd >= 0) { /* a copy: closed with a found one's, after finalize */
		*dbg_fd = dup(given_fd);
		if (*dbg_fd >= 0 && debuginfo_open_given(f, *dbg_fd, dbg)) {
			close(*dbg_fd);
			*dbg_fd = -1;
		}
		if (*dbg_fd < 0)
			return 0;
	} else if (debuginfo_open(f, fd, root, path, dbg, dbg_fd)) {
		return 0;
	}
	err = collect_file(dbg, true, c, &has_symtab);
	e->debug_file = has_symtab;
	log_debug("symbolize: %s: separate debug info %s", path ? path : "?",
		  has_symtab ? "found" : "has no .symtab");
	return err;
}

/* Functions whose split-off part (F.cold) must carry their name in a
 * stripped file: Python frames take the eval loop's place (mixedstack). */
static const char *const split_funcs[] = {"_PyEval_EvalFrameDefault"};

static bool covered(const struct rawvec *funcs, uint64_t start, uint64_t end)
{
	size_t i;

	for (i = 0; i < funcs->n; i++)
		if (funcs->v[i].sized && funcs->v[i].addr < end && funcs->v[i].end > start)
			return true;
	return false;
}

/* Stripped file without separate debug info: name the split parts of
 * split_funcs after their function. */
static int add_split_parts(struct elffile *f, struct collect *c)
{
	size_t i, j, n = c->funcs.n;

	for (i = 0; i < n; i++) {
		struct raw part = c->funcs.v[i];

		for (j = 0; j < sizeof(split_funcs) / sizeof(split_funcs[0]); j++)
			if (part.sized && name_len(part.name) == strlen(split_funcs[j]) &&
			    !strncmp(part.name, split_funcs[j], name_len(part.name)))
				break;
		if (j == sizeof(split_funcs) / sizeof(split_funcs[0]))
			continue;
		if (elfsplit_find(f, part.addr, part.end, &part.addr, &part.end) ||
		    covered(&c->funcs, part.addr, part.end))
			continue;
		if (rawvec_push(&c->funcs, &part))
			return -ENOMEM;
	}
	return 0;
}

static struct elfsym *build(struct elffile *f, int fd, const char *path, const char *root,
			    int given_fd)
{
	struct elffile dbg = { .fd = -1 };
	struct collect c = { 0 };
	struct elfsym *e = calloc(1, sizeof(*e));
	bool has_symtab;
	int err = -ENOMEM, dbg_fd = -1;

	if (!e)
		goto out;
	err = read_segments(f, e);
	if (err)
		goto out;
	e->build_id_len = elffile_build_id(f, e->build_id);
	err = collect_file(f, false, &c, &has_symtab);
	e->stripped = !has_symtab;
	if (!err && !has_symtab && root)
		err = add_debug_symbols(e, f, fd, path, root, given_fd, &c, &dbg, &dbg_fd);
	if (!err && !has_symtab && !e->debug_file)
		err = add_split_parts(f, &c);
	if (!err)
		err = finalize(e, &c);
out:
	free(c.funcs.v);
	free(c.data.v);
	if (dbg_fd >= 0) {
		elffile_close(&dbg);
		close(dbg_fd);
	}
	if (err) {
		elfsym_free(e);
		errno = -err;
		return NULL;
	}
	return e;
}

struct elfsym *elfsym_open_fd_debug(int fd, const char *path_in_root, const char *root_prefix,
				    int debug_fd)
{
	struct elffile f;
	struct elfsym *e;
	int err = elffile_open_fd(&f, fd);

	if (err) {
		errno = -err;
		return NULL;
	}
	e = build(&f, fd, path_in_root, root_prefix ? root_prefix : "", debug_fd);
	err = errno;
	elffile_close(&f);
	errno = err;
	return e;
}

struct elfsym *elfsym_open_fd(int fd, const char *path_in_root, const char *root_prefix)
{
	return elfsym_open_fd_debug(fd, path_in_root, root_prefix, -1);
}

struct elfsym *elfsym_open(const char *path, const char *root_prefix)
{
	struct elfsym *e;
	int fd = rootfs_open(root_prefix, path), err;

	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	e = elfsym_open_fd(fd, path, root_prefix);
	err = errno;
	close(fd);
	errno = err;
	return e;
}

struct elfsym *elfsym_open_mem(const void *image, size_t len)
{
	struct elffile f;
	struct elfsym *e;
	int err = elffile_open_mem(&f, image, len);

	if (err) {
		errno = -err;
		return NULL;
	}
	e = build(&f, -1, NULL, NULL, -1);
	err = errno;
	elffile_close(&f);
	errno = err;
	return e;
}

void elfsym_free(struct elfsym *e)
{
	if (!e)
		return;
	free(e->funcs);
	free(e->data);
	free(e->segs);
	free(e->names);
	free(e);
}

const char *elfsym_lookup(const struct elfsym *e, uint64_t vaddr, uint64_t *sym_off)
{
	size_t lo = 0, hi = e->nfuncs, i;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (e->funcs[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (i = lo; i > 0 && lo - i < ENCLOSING_SCAN; i--) {
		const struct func *fn = &e->funcs[i - 1];

		if (vaddr < fn->end) {
			if (sym_off)
				*sym_off = vaddr - fn->addr;
			return fn->name;
		}
	}
	return NULL;
}

int elfsym_offset_to_vaddr(const struct elfsym *e, uint64_t file_off, uint64_t *vaddr)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	size_t i;

	for (i = 0; i < e->nsegs; i++) {
		const struct seg *s = &e->segs[i];

		if (file_off >= s->off && file_off - s->off < s->filesz) {
			*vaddr = file_off - s->off + s->vaddr;
			return 0;
		}
	}
	/* Mappings start on page boundaries: accept the rounded-out range. */
	for (i = 0; i < e->nsegs; i++) {
		const struct seg *s = &e->segs[i];
		uint64_t lo = s->off & ~(page - 1), hi = s->off + s->filesz;

		if (hi < s->off || hi > UINT64_MAX - page)
			continue;
		hi = (hi + page - 1) & ~(page - 1);
		if (file_off >= lo && file_off < hi) {
			*vaddr = file_off - s->off + s->vaddr;
			return 0;
		}
	}
	return -ENOENT;
}

int elfsym_vaddr_to_offset(const struct elfsym *e, uint64_t vaddr, uint64_t *file_off)
{
	size_t i;

	for (i = 0; i < e->nsegs; i++) {
		const struct seg *s = &e->segs[i];

		if (vaddr >= s->vaddr && vaddr - s->vaddr < s->filesz) {
			*file_off = vaddr - s->vaddr + s->off;
			return 0;
		}
	}
	return -ENOENT;
}

int elfsym_lookup_symbol(const struct elfsym *e, const char *name, uint64_t *vaddr, uint64_t *size)
{
	const struct dsym *best = NULL;
	size_t i;

	for (i = 0; i < e->nfuncs; i++) {
		if (!strcmp(e->funcs[i].name, name)) {
			*vaddr = e->funcs[i].addr;
			if (size)
				*size = e->funcs[i].end - e->funcs[i].addr;
			return 0;
		}
	}
	for (i = 0; i < e->ndata; i++)
		if ((!best || e->data[i].rank < best->rank) && !strcmp(e->data[i].name, name))
			best = &e->data[i];
	if (!best)
		return -ENOENT;
	*vaddr = best->addr;
	if (size)
		*size = best->size;
	return 0;
}

const uint8_t *elfsym_build_id(const struct elfsym *e, size_t *len)
{
	*len = e->build_id_len;
	return e->build_id_len ? e->build_id : NULL;
}

size_t elfsym_nsyms(const struct elfsym *e)
{
	return e->nfuncs;
}

bool elfsym_has_debug_file(const struct elfsym *e)
{
	return e->debug_file;
}

bool elfsym_lacks_debug(const struct elfsym *e)
{
	return e->stripped && !e->debug_file && e->build_id_len;
}
