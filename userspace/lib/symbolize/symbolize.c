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
#define PERFMAP_PATH_FMT "/tmp/perf-%d.map"
/* A perf map that missed is re-stat'ed at most this often. */
#define PERFMAP_RECHECK_NS (1000000000ull)
/* Missing kernel symbols (a new module or BPF program) trigger a
 * kallsyms reload at most this often: reading it costs ~100 ms. */
#define KALLSYMS_RELOAD_NS (30ull * 1000000000ull)

struct pid_jit {
	struct perfmap *pm;
	int nspid;
	uid_t uid;	      /* effective uid of the process */
	uint64_t refused_ino; /* last map refused, logged once */
	uint64_t size, ino;
	struct timespec mtime;
	uint64_t checked_ns;
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
	bool waiting; /* the last user frame's file is being read */
	void (*ks_reload)(void *ctx, const char *path);
	void *ks_reload_ctx;
	struct symbolizer_counters c;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void load_kallsyms(struct symbolizer *s, bool first)
{
	struct kallsyms *ks = kallsyms_load(s->kallsyms_path);
	int err = errno;

	s->ks_loaded_ns = now_ns();
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
	if (!sym && now_ns() - s->ks_loaded_ns >= KALLSYMS_RELOAD_NS) {
		if (s->ks_reload) { /* this frame stays unknown */
			s->ks_loaded_ns = now_ns();
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

/* Number idx (0 first, -1 the last) on the status line starting with
 * key ("\nUid:"), or -1. */
static long status_number(const char *text, const char *key, int idx)
{
	const char *line = strstr(text, key), *p, *end, *num = NULL;
	long v;
	int i = 0;

	if (!line)
		return -1;
	p = line + strlen(key);
	end = p + strcspn(p, "\n");
	for (; (p = strpbrk(p, "0123456789")) && p < end; p += strspn(p, "0123456789"), i++) {
		num = p;
		if (i == idx)
			break;
	}
	if (!num || (idx >= 0 && i != idx))
		return -1;
	v = strtol(num, NULL, 10);
	return v >= 0 && v <= INT_MAX ? v : -1;
}

/* From /proc/PID/status: the innermost-namespace pid (else pid) and the
 * effective uid (else -1: then only root's perf maps are read). */
static void read_status(const struct symbolizer *s, int pid, struct pid_jit *pj)
{
	char path[PATH_MAX], *text;
	size_t len;
	long v;

	pj->nspid = pid;
	pj->uid = (uid_t)-1;
	snprintf(path, sizeof(path), "%s/%d/status", s->proc_root, pid);
	if (rootfs_read_file(NULL, path, 1 << 16, &text, &len))
		return;
	v = status_number(text, "\nNSpid:", -1);
	if (v > 0)
		pj->nspid = (int)v;
	v = status_number(text, "\nUid:", 1); /* real, effective, saved, fs */
	if (v >= 0)
		pj->uid = (uid_t)v;
	free(text);
}

static void perfmap_refresh(struct symbolizer *s, int pid, struct pid_jit *pj)
{
	char root[PATH_MAX], path[64];
	struct perfmap *pm;
	struct stat st;
	size_t len;
	char *text;
	int fd;

	snprintf(root, sizeof(root), "%s/%d/root", s->proc_root, pid);
	snprintf(path, sizeof(path), PERFMAP_PATH_FMT, pj->nspid);
	fd = procfile_open(root, path, NULL);
	if (fd < 0)
		return;
	if (fstat(fd, &st) || ((uint64_t)st.st_size == pj->size && st.st_ino == pj->ino &&
			       st.st_mtim.tv_sec == pj->mtime.tv_sec &&
			       st.st_mtim.tv_nsec == pj->mtime.tv_nsec))
		goto out;
	/* /tmp is everyone's: a map another user planted there would name
	 * this process's code as they like. */
	if (!perfmap_owner_ok(st.st_uid, pj->uid)) {
		if (st.st_ino != pj->refused_ino)
			log_info("symbolize: ignoring %s of pid %d: owned by uid %u, not by the "
				 "process (uid %d) or root",
				 path, pid, (unsigned)st.st_uid, (int)pj->uid);
		pj->refused_ino = st.st_ino;
		s->c.perfmap_refused++;
		goto out;
	}
	if (rootfs_read_fd(fd, PERFMAP_MAX_BYTES, &text, &len))
		goto out;
	pm = perfmap_parse(text, len);
	free(text);
	if (!pm)
		goto out;
	perfmap_free(pj->pm);
	pj->pm = pm;
	pj->size = (uint64_t)st.st_size;
	pj->ino = st.st_ino;
	pj->mtime = st.st_mtim;
	s->c.perfmap_loads++;
out:
	close(fd);
}

static const char *perfmap_name(struct symbolizer *s, int pid, uint64_t addr)
{
	struct pid_jit *pj;
	uint64_t val, now;
	const char *sym;

	if (pid <= 0)
		return NULL;
	if (hashmap_get(&s->jits, (uint64_t)pid, &val)) {
		pj = (struct pid_jit *)(uintptr_t)val;
	} else {
		pj = calloc(1, sizeof(*pj));
		if (!pj || hashmap_put(&s->jits, (uint64_t)pid, (uintptr_t)pj)) {
			free(pj);
			return NULL;
		}
		read_status(s, pid, pj);
	}
	sym = pj->pm ? perfmap_lookup(pj->pm, addr, NULL) : NULL;
	now = now_ns();
	if (sym || (pj->checked_ns && now - pj->checked_ns < PERFMAP_RECHECK_NS))
		return sym;
	pj->checked_ns = now;
	perfmap_refresh(s, pid, pj);
	return pj->pm ? perfmap_lookup(pj->pm, addr, NULL) : NULL;
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
	return symcache_loading(s->cache);
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
		pid_jit_free((struct pid_jit *)(uintptr_t)val);
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

static uint32_t name_anon(struct symbolizer *s, int pid, const struct procmap *map, uint64_t addr,
			  struct buf *name)
{
	const char *sym = perfmap_name(s, pid, addr);

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
