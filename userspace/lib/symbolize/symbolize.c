#include "symbolize.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "demangle.h"
#include "elffile.h"
#include "elfsym.h"
#include "hashmap.h"
#include "kallsyms.h"
#include "log.h"
#include "perfmap.h"
#include "rootfs.h"
#include "symcache.h"

/* The documented JIT convention; the PID is the one the process itself
 * sees (its innermost namespace), the path is under its root. */
/* A perf map that missed is re-stat'ed at most this often. */
#define PERFMAP_RECHECK_NS (1000000000ull)
/* A load asked of the loader and not answered by then (a job dropped from
 * a full queue) is asked again. */
#define PERFMAP_LOAD_LOST_NS (30ull * 1000000000ull)
/* Missing kernel symbols (a new module or BPF program) trigger a
 * kallsyms reload at most this often: reading it costs ~100 ms. */
#define KALLSYMS_RELOAD_NS (30ull * 1000000000ull)

struct pid_jit {
	struct perfmap *pm;
	struct perfmap_stamp stamp;
	uint64_t checked_ns;
	uint64_t gen;	   /* which load its map came from (perfmap_loads then): 0, none */
	uint32_t load_seq; /* the ask whose answer is awaited: older answers are dropped */
	bool loading;	   /* asked of the loader, no answer yet */
};

struct symbolizer {
	struct symcache *cache;
	struct kallsyms *ks;
	char *kallsyms_path;
	char *proc_root;
	uint64_t ks_loaded_ns;
	struct elfsym *vdso;
	bool vdso_tried;
	struct hashmap jits; /* pid -> struct pid_jit * */
	struct symbolizer_perfmap_loader pm_loader;
	size_t perfmaps_loading; /* asked of pm_loader, no answer yet */
	uint32_t pm_seq;	 /* asks made */
	bool waiting; /* the last user frame's file (or perf map) is being read */
	void (*ks_reload)(void *ctx, const char *path);
	void *ks_reload_ctx;
	struct symbolizer_counters c;
};

static void load_kallsyms(struct symbolizer *s, bool first)
{
	struct kallsyms *ks = kallsyms_load(s->kallsyms_path);
	int err = errno;

	s->ks_loaded_ns = clock_mono_ns();
	if (ks) {
		kallsyms_free(s->ks);
		s->ks = ks;
		return;
	}
	if (!first)
		log_debug("symbolize: reloading %s: %s", s->kallsyms_path, strerror(err));
	else if (err == EPERM)
		log_warn("symbolize: %s: addresses are hidden (kernel.kptr_restrict); kernel frames will show as [unknown]_[k]",
			 s->kallsyms_path);
	else
		log_warn("symbolize: %s: %s; kernel frames will show as [unknown]_[k]", s->kallsyms_path,
			 strerror(err));
}

struct symbolizer *symbolizer_new(const struct symbolizer_opts *o)
{
	struct symbolizer_opts def = { 0 };
	struct symbolizer *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	if (!o)
		o = &def;
	s->cache = symcache_new(o->max_files ? o->max_files : SYMBOLIZER_DEFAULT_MAX_FILES);
	s->kallsyms_path = strdup(o->kallsyms_path ? o->kallsyms_path : KALLSYMS_DEFAULT_PATH);
	s->proc_root = strdup(o->proc_root ? o->proc_root : "/proc");
	hashmap_init(&s->jits);
	if (!s->cache || !s->kallsyms_path || !s->proc_root) {
		symbolizer_free(s);
		errno = ENOMEM;
		return NULL;
	}
	/* kallsyms loads on the first kernel frame, or earlier through
	 * symbolizer_preload_kernel: reading 100k+ symbols takes ~150 ms,
	 * which must not delay the daemon's start. */
	return s;
}

void symbolizer_preload_kernel(struct symbolizer *s)
{
	if (!s->ks_loaded_ns)
		load_kallsyms(s, true);
}

static void pid_jit_free(struct pid_jit *pj)
{
	if (pj)
		perfmap_free(pj->pm);
	free(pj);
}

void symbolizer_free(struct symbolizer *s)
{
	uint64_t key, val;
	size_t it = 0;

	if (!s)
		return;
	while (hashmap_next(&s->jits, &it, &key, &val))
		pid_jit_free((struct pid_jit *)(uintptr_t)val);
	hashmap_free(&s->jits);
	symcache_free(s->cache);
	kallsyms_free(s->ks);
	elfsym_free(s->vdso);
	free(s->kallsyms_path);
	free(s->proc_root);
	free(s);
}

int symbolizer_kernel(struct symbolizer *s, uint64_t ip, struct buf *name, uint32_t *kind)
{
	const char *sym;

	if (!s->ks_loaded_ns)
		load_kallsyms(s, true);
	sym = s->ks ? kallsyms_lookup(s->ks, ip, NULL) : NULL;

	s->c.kernel_lookups++;
	if (!sym && clock_mono_ns() - s->ks_loaded_ns >= KALLSYMS_RELOAD_NS) {
		if (s->ks_reload) { /* this frame stays unknown */
			s->ks_loaded_ns = clock_mono_ns();
			s->ks_reload(s->ks_reload_ctx, s->kallsyms_path);
		} else {
			load_kallsyms(s, false);
			sym = s->ks ? kallsyms_lookup(s->ks, ip, NULL) : NULL;
		}
	}
	buf_reset(name);
	if (sym) {
		buf_printf(name, "%s_[k]", sym);
	} else {
		buf_puts(name, "[unknown]_[k]");
		s->c.kernel_misses++;
	}
	*kind = FRAME_KERNEL;
	return name->failed ? -ENOMEM : 0;
}

/* A load's answer into pj: counted, and its map (if any) now pj's. */
static void perfmap_apply(struct symbolizer *s, struct pid_jit *pj, struct perfmap_loaded *r)
{
	pj->stamp = r->stamp;
	if (r->refused)
		s->c.perfmap_refused++;
	if (!r->pm)
		return;
	perfmap_free(pj->pm);
	pj->pm = r->pm;
	r->pm = NULL;
	pj->gen = ++s->c.perfmap_loads;
}

uint64_t symbolizer_perfmap_gen(const struct symbolizer *s, int pid)
{
	uint64_t val;

	if (pid <= 0 || !hashmap_get(&s->jits, (uint64_t)pid, &val))
		return 0;
	return ((const struct pid_jit *)(uintptr_t)val)->gen;
}

static struct pid_jit *pid_jit_of(struct symbolizer *s, int pid)
{
	struct pid_jit *pj;
	uint64_t val;

	if (hashmap_get(&s->jits, (uint64_t)pid, &val))
		return (struct pid_jit *)(uintptr_t)val;
	pj = calloc(1, sizeof(*pj));
	if (!pj || hashmap_put(&s->jits, (uint64_t)pid, (uintptr_t)pj)) {
		free(pj);
		return NULL;
	}
	pj->stamp.uid = (uid_t)-1;
	return pj;
}

/* addr's name in pid's perf map.  The map is looked at again at most once
 * a second while addresses miss it; with a loader, on its thread (the
 * frame waits for the answer like a file's symbols: s->waiting). */
static const char *perfmap_name(struct symbolizer *s, int pid, uint64_t addr)
{
	struct perfmap_loaded r;
	struct pid_jit *pj;
	const char *sym;
	uint64_t now;

	if (pid <= 0 || !(pj = pid_jit_of(s, pid)))
		return NULL;
	sym = pj->pm ? perfmap_lookup(pj->pm, addr, NULL) : NULL;
	now = clock_mono_ns();
	if (pj->loading && now - pj->checked_ns > PERFMAP_LOAD_LOST_NS) {
		pj->loading = false;
		s->perfmaps_loading--;
	}
	if (!sym && pj->loading)
		s->waiting = true;
	if (sym || pj->loading || (pj->checked_ns && now - pj->checked_ns < PERFMAP_RECHECK_NS))
		return sym;
	pj->checked_ns = now;
	if (s->pm_loader.load) {
		pj->loading = true;
		pj->load_seq = ++s->pm_seq;
		s->perfmaps_loading++;
		s->waiting = true;
		s->pm_loader.load(s->pm_loader.ctx, pid, pj->load_seq, &pj->stamp);
		return NULL;
	}
	perfmap_load(s->proc_root, pid, &pj->stamp, &r);
	perfmap_apply(s, pj, &r);
	return pj->pm ? perfmap_lookup(pj->pm, addr, NULL) : NULL;
}

void symbolizer_set_perfmap_loader(struct symbolizer *s,
				   const struct symbolizer_perfmap_loader *l)
{
	s->pm_loader = *l;
}

void symbolizer_perfmap_loaded(struct symbolizer *s, int pid, uint32_t seq,
			       struct perfmap_loaded *r)
{
	uint64_t val;
	struct pid_jit *pj;

	/* Only the answer to the ask pending now: one for an earlier program
	 * of this pid (forgotten at its exec or exit since) read another
	 * process's status and map. */
	if (pid > 0 && hashmap_get(&s->jits, (uint64_t)pid, &val)) {
		pj = (struct pid_jit *)(uintptr_t)val;
		if (pj->loading && pj->load_seq == seq) {
			pj->loading = false;
			s->perfmaps_loading--;
			perfmap_apply(s, pj, r);
		}
	}
	perfmap_free(r->pm); /* not taken: stale, or the process was forgotten */
	r->pm = NULL;
}

void symbolizer_set_io(struct symbolizer *s, const struct symcache_io *io)
{
	symcache_set_io(s->cache, io);
}

void symbolizer_set_loader(struct symbolizer *s, const struct symcache_loader *l)
{
	symcache_set_loader(s->cache, l);
}

void symbolizer_file_loaded(struct symbolizer *s, const struct procmap *m,
			    struct symcache_loaded *r)
{
	symcache_put(s->cache, m, r);
}

void symbolizer_file_upgraded(struct symbolizer *s, const struct procmap *m,
			      struct symcache_loaded *r)
{
	symcache_upgrade(s->cache, m, r);
}

uint64_t symbolizer_file_seq(const struct symbolizer *s, const struct procmap *m)
{
	return symcache_seq(s->cache, m);
}

bool symbolizer_waiting(const struct symbolizer *s)
{
	return s->waiting;
}

size_t symbolizer_loading(const struct symbolizer *s)
{
	return symcache_loading(s->cache) + s->perfmaps_loading;
}

void symbolizer_set_kallsyms_reload(struct symbolizer *s,
				    void (*reload)(void *ctx, const char *path), void *ctx)
{
	s->ks_reload = reload;
	s->ks_reload_ctx = ctx;
}

void symbolizer_kallsyms_loaded(struct symbolizer *s, struct kallsyms *ks)
{
	if (!ks)
		return; /* kept: tried again after the interval */
	kallsyms_free(s->ks);
	s->ks = ks;
}

void symbolizer_forget_pid(struct symbolizer *s, int pid)
{
	uint64_t val;

	if (pid > 0 && hashmap_get(&s->jits, (uint64_t)pid, &val)) {
		struct pid_jit *pj = (struct pid_jit *)(uintptr_t)val;

		if (pj->loading) /* its answer finds no entry and is dropped */
			s->perfmaps_loading--;
		pid_jit_free(pj);
		hashmap_del(&s->jits, (uint64_t)pid);
	}
}

/* Every 64-bit process maps the same kernel vdso image as we do. */
static void vdso_init(struct symbolizer *s)
{
	uint64_t ehdr = getauxval(AT_SYSINFO_EHDR);
	const struct procmap *m;
	struct procmaps self;
	size_t len;
	char *text;

	s->vdso_tried = true;
	if (!ehdr || rootfs_read_file(NULL, "/proc/self/maps", 64u << 20, &text, &len))
		return;
	if (!procmaps_parse(text, len, &self)) {
		m = procmaps_find(&self, ehdr);
		if (m)
			s->vdso = elfsym_open_mem((const void *)(uintptr_t)ehdr, m->end - ehdr);
		procmaps_free(&self);
	}
	free(text);
	if (!s->vdso)
		log_debug("symbolize: cannot read the vdso image");
}

static void put_native(struct buf *name, const char *sym)
{
	char *dm = demangle(sym);

	buf_puts(name, dm ? dm : sym);
	free(dm);
}

/* "[libfoo.so+0x1a2b]", or "[vdso+0x10]" for a bracketed name. */
static void put_unknown(struct buf *name, const char *path, uint64_t off)
{
	const char *slash = strrchr(path, '/');
	size_t len;

	if (path[0] == '[' && (len = strlen(path)) > 2 && path[len - 1] == ']') {
		buf_printf(name, "[%.*s+0x%" PRIx64 "]", (int)(len - 2), path + 1, off);
		return;
	}
	buf_printf(name, "[%s+0x%" PRIx64 "]", slash && slash[1] ? slash + 1 : path, off);
}

/* The mapping's file and its build-id, as hex. */
static void put_module(struct sym_module *mod, const struct procmap *map, const struct elfsym *es)
{
	static const char hex[] = "0123456789abcdef";
	const uint8_t *id;
	size_t len = 0, i;

	if (!mod)
		return;
	mod->path = map->path;
	mod->from_file = es && map->path[0] == '/';
	id = es ? elfsym_build_id(es, &len) : NULL;
	if (!id || len > (sizeof(mod->build_id) - 1) / 2)
		len = 0;
	for (i = 0; i < len; i++) {
		mod->build_id[2 * i] = hex[id[i] >> 4];
		mod->build_id[2 * i + 1] = hex[id[i] & 15];
	}
	mod->build_id[2 * len] = '\0';
}

/* A file-backed mapping, or the vdso when es is given. */
static uint32_t name_mapped(struct symbolizer *s, int pid, const struct procmap *map, uint64_t addr,
			    const struct elfsym *es, struct buf *name, struct sym_module *mod)
{
	uint64_t file_off = addr - map->start + map->offset, vaddr = file_off;
	const char *sym = NULL;

	if (!es && map->path[0] == '/') {
		es = symcache_get(s->cache, s->proc_root, pid, map);
		s->waiting = !es && errno == EINPROGRESS;
	}
	put_module(mod, map, es);
	if (es && !elfsym_offset_to_vaddr(es, file_off, &vaddr))
		sym = elfsym_lookup(es, vaddr, NULL);
	if (sym) {
		put_native(name, sym);
		return FRAME_NATIVE;
	}
	/* Not ELF: maybe JIT code in a memfd or a file-backed arena (not
	 * while the file is being read: it may well be ELF). */
	if (!es && !s->waiting && (sym = perfmap_name(s, pid, addr))) {
		buf_puts(name, sym);
		return FRAME_NATIVE;
	}
	put_unknown(name, map->path, vaddr);
	return FRAME_UNKNOWN;
}

/* addr's name in the perf map pid has loaded already, if any: nothing
 * read, nothing asked. */
static const char *perfmap_known_name(const struct symbolizer *s, int pid, uint64_t addr)
{
	const struct pid_jit *pj;
	uint64_t val;

	if (pid <= 0 || !hashmap_get(&s->jits, (uint64_t)pid, &val))
		return NULL;
	pj = (const struct pid_jit *)(uintptr_t)val;
	return pj->pm ? perfmap_lookup(pj->pm, addr, NULL) : NULL;
}

/* Anonymous code is named from the process's perf map.  An address in no
 * mapping (maps not read yet, or a JIT region newer than them) only from
 * a map already loaded: an exec storm's new processes would otherwise
 * each have their /proc entries read for nothing; the caller reads the
 * maps again. */
static uint32_t name_anon(struct symbolizer *s, int pid, const struct procmap *map, uint64_t addr,
			  struct buf *name)
{
	const char *sym = map ? perfmap_name(s, pid, addr) : perfmap_known_name(s, pid, addr);

	if (sym) {
		buf_puts(name, sym);
		return FRAME_NATIVE;
	}
	if (!map)
		buf_puts(name, "[unknown]");
	else if (map->path[0] == '[')
		buf_puts(name, map->path); /* [heap], [stack], [anon:name] */
	else
		buf_puts(name, "[anon]");
	return FRAME_UNKNOWN;
}

int symbolizer_user(struct symbolizer *s, int pid, const struct procmaps *m, uint64_t ip,
		    bool is_return_addr, struct buf *name, uint32_t *kind, struct sym_module *mod)
{
	uint64_t addr = is_return_addr && ip ? ip - 1 : ip;
	const struct procmap *map = m ? procmaps_find(m, addr) : NULL;

	if (mod) {
		mod->path = NULL;
		mod->from_file = false;
	}
	buf_reset(name);
	s->waiting = false;
	s->c.lookups++;
	if (map && !strcmp(map->path, "[vdso]")) {
		if (!s->vdso_tried)
			vdso_init(s);
		*kind = s->vdso ? name_mapped(s, pid, map, addr, s->vdso, name, mod)
				: name_anon(s, pid, map, addr, name);
	} else if (map && map->path[0] == '/') {
		*kind = name_mapped(s, pid, map, addr, NULL, name, mod);
	} else {
		*kind = name_anon(s, pid, map, addr, name);
	}
	if (*kind != FRAME_NATIVE)
		s->c.misses++;
	return name->failed ? -ENOMEM : 0;
}

void symbolizer_stats(const struct symbolizer *s, struct symbolizer_counters *out)
{
	struct symcache_stats cs;

	symcache_stats(s->cache, &cs);
	*out = s->c;
	out->files_cached = cs.files;
	out->files_failed = cs.failed;
	out->evictions = cs.evictions;
	out->open_failures = cs.open_failures;
	out->parse_failures = cs.parse_failures;
	out->kallsyms_symbols = s->ks ? kallsyms_count(s->ks) : 0;
	out->files_too_big = elffile_too_big();
	out->names_left_mangled = demangle_refused();
}
