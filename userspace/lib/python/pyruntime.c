#include "pyruntime.h"

#include <errno.h>
#include <gelf.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arch.h"
#include "elffile.h"
#include "hashmap.h"
#include "log.h"
#include "pyasync.h"
#include "pymem.h"
#include "rootfs.h"

#define MAX_SYMS (4u << 20) /* bound on symbols scanned per table */

/* What we need from the ELF file of a candidate module. */
struct pyelf {
	uint64_t runtime_value, runtime_size;
	uint64_t version_value; /* Py_Version */
	uint64_t tls_value;	/* _Py_tss_tstate */
	uint64_t tls_memsz;
	uint64_t asyncio_vaddr; /* .AsyncioDebug's sh_addr (3.14+) */
	uint64_t pthread_size_value; /* _thread_db_sizeof_pthread (glibc) */
	bool has_runtime, has_version, has_tls, has_asyncio, has_pthread_size;
	GElf_Phdr loads[16];
	size_t nloads;
};

/* A file-backed mapping from /proc/PID/maps. */
struct pymap {
	uint64_t start, end, offset, inode;
	uint32_t dev_major, dev_minor;
	char path[PATH_MAX];
};

/* Copy with truncation, always terminated. */
static void copy_str(char *dst, size_t size, const char *src)
{
	size_t n = strnlen(src, size - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

int pyruntime_version_from_name(const char *name, int *minor)
{
	const char *base = strrchr(name, '/');
	const char *p;
	char *end;
	long v;

	base = base ? base + 1 : name;
	if (!strncmp(base, "libpython", 9))
		p = base + 9;
	else if (!strncmp(base, "python", 6))
		p = base + 6;
	else
		return -ENOENT;
	if (strncmp(p, "3.", 2))
		return -ENOENT;
	v = strtol(p + 2, &end, 10);
	if (end == p + 2 || v < 0 || v > 99)
		return -ENOENT;
	/* "3.11", "3.11.so...", "3.9d.so" all end the number here. */
	if (*end && *end != '.' && *end != 'd' && *end != 'm' && *end != 't')
		return -ENOENT;
	*minor = (int)v;
	return 0;
}

static void note_symbol(struct pyelf *pe, const char *name, const GElf_Sym *sym)
{
	if (sym->st_shndx == SHN_UNDEF)
		return;
	if (!strcmp(name, "_PyRuntime") && !pe->has_runtime) {
		pe->runtime_value = sym->st_value;
		pe->runtime_size = sym->st_size;
		pe->has_runtime = true;
	} else if (!strcmp(name, "Py_Version") && !pe->has_version) {
		pe->version_value = sym->st_value;
		pe->has_version = true;
	} else if (!strcmp(name, "_thread_db_sizeof_pthread") && sym->st_size == 4 &&
		   !pe->has_pthread_size) {
		pe->pthread_size_value = sym->st_value;
		pe->has_pthread_size = true;
	} else if (!strcmp(name, "_Py_tss_tstate") && GELF_ST_TYPE(sym->st_info) == STT_TLS &&
		   !pe->has_tls) {
		pe->tls_value = sym->st_value;
		pe->has_tls = true;
	}
}

static void scan_symtab(struct elffile *f, Elf_Scn *scn, struct pyelf *pe)
{
	GElf_Shdr sh;
	Elf_Data *data = elffile_section_data(f, scn, &sh), *strs;
	size_t i, n;

	/* elffile checked the section against the file and the size caps. */
	if (!data || sh.sh_entsize != sizeof(Elf64_Sym))
		return;
	strs = elffile_strtab(f, sh.sh_link);
	if (!strs)
		return;
	n = data->d_size / sizeof(Elf64_Sym);
	if (n > MAX_SYMS)
		n = MAX_SYMS;
	for (i = 0; i < n; i++) {
		GElf_Sym sym;
		const char *name;

		if (!gelf_getsym(data, (int)i, &sym) || !sym.st_name)
			continue;
		name = elffile_data_str(strs, sym.st_name);
		if (name && (name[0] == '_' || name[0] == 'P'))
			note_symbol(pe, name, &sym);
	}
}

static int scan_elf(struct elffile *f, struct pyelf *pe)
{
	Elf *elf = f->elf;
	Elf_Scn *scn = NULL;
	size_t i;

	if (gelf_getclass(elf) != ELFCLASS64)
		return -EINVAL;
	/* .dynsym first: a stripped module still has the exported names. */
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_DYNSYM)
			scan_symtab(f, scn, pe);
	}
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB)
			scan_symtab(f, scn, pe);
	}
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS || !sh.sh_addr)
			continue;
		name = elf_strptr(elf, f->shstrndx, sh.sh_name);
		if (name && !strcmp(name, ".AsyncioDebug")) {
			pe->asyncio_vaddr = sh.sh_addr;
			pe->has_asyncio = true;
		}
	}
	for (i = 0; i < f->phnum && i < 256; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph))
			continue;
		if (ph.p_type == PT_LOAD && pe->nloads < 16)
			pe->loads[pe->nloads++] = ph;
		else if (ph.p_type == PT_TLS)
			pe->tls_memsz = ph.p_memsz;
	}
	return 0;
}

/* What scan_elf found, per file identity: every process of a program
 * (and every exec of a compiler in a build) asks about the same few
 * files, so each is parsed once.  Bounded: cleared when full. */
#define ELF_CACHE_MAX 1024
static struct hashmap elf_cache; /* identity -> struct pyelf * (NULL: not ELF) */
/* The ingest worker detects runtimes, a control thread asks for asyncio
 * sections (profctl stacks --async). */
static pthread_mutex_t elf_cache_mu = PTHREAD_MUTEX_INITIALIZER;

static uint64_t file_identity(const struct stat *st)
{
	uint64_t h = hash64_mix(st->st_dev) ^ st->st_ino;

	h = hash64_mix(h ^ (uint64_t)st->st_size);
	return hash64_mix(h ^ ((uint64_t)st->st_mtim.tv_sec * 1000000000ull + st->st_mtim.tv_nsec));
}

static void elf_cache_clear(void)
{
	uint64_t v;
	size_t it = 0;

	while (hashmap_next(&elf_cache, &it, NULL, &v))
		free((void *)(uintptr_t)v);
	hashmap_free(&elf_cache);
}

static int elf_cache_get(const struct stat *st, struct pyelf *pe)
{
	uint64_t v;
	int err = 0;

	pthread_mutex_lock(&elf_cache_mu);
	if (!hashmap_get(&elf_cache, file_identity(st), &v))
		err = -ENOENT;
	else if (!v)
		err = -EINVAL;
	else
		*pe = *(const struct pyelf *)(uintptr_t)v;
	pthread_mutex_unlock(&elf_cache_mu);
	return err;
}

static void elf_cache_put(const struct stat *st, const struct pyelf *pe, int err)
{
	struct pyelf *copy = NULL;

	if (!err) {
		copy = malloc(sizeof(*copy));
		if (!copy)
			return;
		*copy = *pe;
	}
	pthread_mutex_lock(&elf_cache_mu);
	if (elf_cache.len >= ELF_CACHE_MAX)
		elf_cache_clear();
	if (hashmap_put(&elf_cache, file_identity(st), (uint64_t)(uintptr_t)copy))
		free(copy);
	pthread_mutex_unlock(&elf_cache_mu);
}

static int read_elf(int pid, const struct pymap *m, struct pyelf *pe)
{
	struct procmap pm = {
	    .start = m->start,
	    .end = m->end,
	    .offset = m->offset,
	    .inode = m->inode,
	    .dev_major = m->dev_major,
	    .dev_minor = m->dev_minor,
	    .path = (char *)m->path,
	};
	struct elffile f;
	struct stat st;
	int fd, err;

	memset(pe, 0, sizeof(*pe));
	fd = procfile_open_mapped("/proc", pid, &pm);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st)) {
		close(fd);
		return -EINVAL;
	}
	err = elf_cache_get(&st, pe);
	if (err != -ENOENT) {
		close(fd);
		return err;
	}
	/* elffile, not a plain libelf mmap: the owner of the file can
	 * truncate it under us, which must be a read error, not SIGBUS. */
	err = elffile_open_fd(&f, fd);
	if (!err) {
		err = scan_elf(&f, pe);
		elffile_close(&f);
	}
	close(fd);
	elf_cache_put(&st, pe, err);
	return err;
}

/* Load bias from one mapping: the PT_LOAD it maps, aligned down to the
 * running kernel's page (4, 16 or 64 KiB on arm64). */
static int load_bias(const struct pyelf *pe, const struct pymap *m, uint64_t *bias)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t mask = ~((uint64_t)(page > 0 ? page : 4096) - 1);
	size_t i;

	for (i = 0; i < pe->nloads; i++) {
		const GElf_Phdr *ph = &pe->loads[i];

		if ((ph->p_offset & mask) == m->offset) {
			*bias = m->start - (ph->p_vaddr & mask);
			return 0;
		}
	}
	return -ENOENT;
}

static bool is_candidate(const char *path, const char *exe)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	if (!strncmp(base, "libpython3", 10) && strstr(base, ".so"))
		return true;
	return exe[0] && !strcmp(path, exe);
}

static bool parse_maps_line(const char *line, struct pymap *m)
{
	unsigned long long start, end, off, ino;
	unsigned int maj, min;
	int pos = 0;

	if (sscanf(line, "%llx-%llx %*s %llx %x:%x %llu %n", &start, &end, &off, &maj, &min, &ino,
		   &pos) < 6 ||
	    !pos || line[pos] != '/')
		return false;
	m->start = start;
	m->end = end;
	m->offset = off;
	m->inode = ino;
	m->dev_major = maj;
	m->dev_minor = min;
	copy_str(m->path, sizeof(m->path), line + pos);
	m->path[strcspn(m->path, "\n")] = '\0';
	return true;
}

/* The first file pid maps whose path want_path accepts (with arg) and
 * whose ELF, read once per file, want_elf accepts: *found and *pe.
 * -ESRCH when the process is gone, -ENOENT when no file is. */
static int find_mapped_elf(int pid, bool (*want_path)(const char *path, const char *arg),
			   const char *arg, bool (*want_elf)(const struct pyelf *pe, const struct pymap *m),
			   struct pymap *found, struct pyelf *pe)
{
	char p[64], line[PATH_MAX + 128], last[PATH_MAX] = "";
	FILE *f;
	int err = -ENOENT;

	snprintf(p, sizeof(p), "/proc/%d/maps", pid);
	f = fopen(p, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	while (err && fgets(line, sizeof(line), f)) {
		struct pymap m;

		if (!parse_maps_line(line, &m) || !want_path(m.path, arg) || !strcmp(m.path, last))
			continue;
		copy_str(last, sizeof(last), m.path);
		if (read_elf(pid, &m, pe) || !want_elf(pe, &m))
			continue;
		*found = m;
		err = 0;
	}
	fclose(f);
	return err;
}

static bool has_runtime(const struct pyelf *pe, const struct pymap *m)
{
	(void)m;
	return pe->has_runtime;
}

/* Scan maps for the first candidate module defining _PyRuntime. */
static int find_module(int pid, const char *exe, struct pymap *found, struct pyelf *pe)
{
	return find_mapped_elf(pid, is_candidate, exe, has_runtime, found, pe);
}

/* The C library, or (glibc before 2.34) its libpthread. */
bool pyruntime_is_libc(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strncmp(base, "libc.so.", 8) || !strncmp(base, "libc-2.", 7) ||
	       !strncmp(base, "libpthread", 10);
}

static bool is_libc(const char *path, const char *arg)
{
	(void)arg;
	return pyruntime_is_libc(path);
}

static bool has_pthread_size(const struct pyelf *pe, const struct pymap *m)
{
	uint64_t bias;

	return pe->has_pthread_size && !load_bias(pe, m, &bias);
}

bool pyruntime_needs_pthread_size(const struct pyruntime *rt)
{
	return ARCH_PTHREAD_BELOW_TP && rt->off.tstate_native_thread_id == PYOFF_NONE &&
	       !rt->off.pthread_below_tp;
}

/* sizeof(struct pthread) of the process's glibc: 3.9 and 3.10 name a
 * thread by pthread_self(), which on arm64 lies that far below the thread
 * pointer (profd_pyoffsets.pthread_below_tp).  glibc keeps the size for
 * libthread_db as _thread_db_sizeof_pthread: in libc.so.6's .dynsym from
 * 2.34 on, in libpthread's .symtab before (Debian leaves it unstripped).
 * Read from the process's memory; 0 where it cannot be had (also while
 * the C library is not mapped yet: at exec, the interpreter is found
 * before its libraries are loaded, ingest_recheck_python asks again). */
static uint32_t pthread_size(int pid)
{
	struct pymap m;
	struct pyelf pe;
	uint32_t size = 0;
	uint64_t bias;

	if (find_mapped_elf(pid, is_libc, NULL, has_pthread_size, &m, &pe) ||
	    load_bias(&pe, &m, &bias) ||
	    pymem_read(pid, bias + pe.pthread_size_value, &size, sizeof(size)))
		return 0;
	/* A sane descriptor: a few hundred bytes to a few KiB, aligned. */
	return size >= 256 && size <= 16384 && !(size & 15) ? size : 0;
}

/* The _asyncio extension (3.14: lib-dynload/_asyncio.cpython-314-*.so)
 * or the interpreter itself (3.15 builds _asyncio in). */
static bool may_hold_asyncio(const char *path, const char *runtime_path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strncmp(base, "_asyncio.", 9) || !strncmp(base, "libpython3", 10) ||
	       !strcmp(path, runtime_path);
}

static bool has_asyncio(const struct pyelf *pe, const struct pymap *m)
{
	uint64_t bias;

	return pe->has_asyncio && !load_bias(pe, m, &bias);
}

int pyruntime_asyncio_debug(const struct pyruntime *rt, uint64_t *addr)
{
	struct pymap m;
	struct pyelf pe;
	uint64_t bias;
	int err;

	err = find_mapped_elf(rt->pid, may_hold_asyncio, rt->path, has_asyncio, &m, &pe);
	if (!err)
		err = load_bias(&pe, &m, &bias);
	if (!err)
		*addr = bias + pe.asyncio_vaddr;
	return err;
}

/* The version when _PyRuntime carries no _Py_DebugOffsets (<= 3.12). */
static int guess_version(int pid, const struct pymap *m, const char *exe, const struct pyelf *pe,
			 uint64_t bias, int *minor)
{
	uint32_t hex;

	if (pe->has_version && !pymem_read_u32(pid, bias + pe->version_value, &hex) &&
	    (hex >> 24) == 3) {
		*minor = (int)(hex >> 16) & 0xff;
		return 0;
	}
	if (!pyruntime_version_from_name(m->path, minor) ||
	    !pyruntime_version_from_name(exe, minor))
		return 0;
	/* Last resort for a renamed static 3.9/3.10: their _PyRuntime sizes
	 * differ (x86_64, release builds). */
	if (pe->runtime_size == 656 || pe->runtime_size == 672) {
		*minor = pe->runtime_size == 656 ? 9 : 10;
		log_info("pyruntime: pid %d: guessing 3.%d from the size of _PyRuntime", pid,
			 *minor);
		return 0;
	}
	return -ENOENT;
}

static int pick_offsets(struct pyruntime *out, const struct pymap *m, const char *exe,
			const struct pyelf *pe)
{
	uint8_t head[PYOFF_DEBUG_READ_SIZE];
	const struct profd_pyoffsets *table;
	uint64_t hex;
	int err, minor;

	err = pymem_read(out->pid, out->runtime_addr, head, sizeof(head));
	if (err)
		return err;
	if (pyoffsets_has_debug(head, sizeof(head), &hex)) {
		err = pyoffsets_from_debug(head, sizeof(head), &out->off);
		if (err)
			return err;
		out->major = (int)(hex >> 24) & 0xff;
		out->minor = (int)(hex >> 16) & 0xff;
		return 0;
	}
	if (guess_version(out->pid, m, exe, pe, out->load_bias, &minor)) {
		log_warn("pyruntime: pid %d: cannot tell the version of %s", out->pid, m->path);
		return -EPROTONOSUPPORT;
	}
	table = pyoffsets_builtin(3, minor);
	if (!table) {
		log_info("pyruntime: pid %d: Python 3.%d is not supported", out->pid, minor);
		return -EPROTONOSUPPORT;
	}
	out->major = 3;
	out->minor = minor;
	out->off = *table;
	return 0;
}

int pyruntime_detect(int pid, struct pyruntime *out)
{
	char p[64], exe[PATH_MAX] = "";
	struct pymap m;
	struct pyelf pe;
	ssize_t n;
	int err;

	memset(out, 0, sizeof(*out));
	out->pid = pid;
	snprintf(p, sizeof(p), "/proc/%d/exe", pid);
	n = readlink(p, exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	err = find_module(pid, exe, &m, &pe);
	if (err)
		return err;
	if (load_bias(&pe, &m, &out->load_bias)) {
		log_warn("pyruntime: pid %d: no PT_LOAD matches %s", pid, m.path);
		return -ENOENT;
	}
	out->runtime_addr = out->load_bias + pe.runtime_value;
	out->tls_tstate_off = pe.has_tls ? pe.tls_value : PYRUNTIME_NO_TLS;
	out->tls_block_size = pe.tls_memsz;
	copy_str(out->path, sizeof(out->path), m.path);
	err = pick_offsets(out, &m, exe, &pe);
	if (err)
		return err;
	if (pyruntime_needs_pthread_size(out))
		out->off.pthread_below_tp = pthread_size(pid);
	log_debug("pyruntime: pid %d: Python %d.%d in %s, _PyRuntime at %#llx", pid, out->major,
		  out->minor, out->path, (unsigned long long)out->runtime_addr);
	return 0;
}

struct pyruntime *pyruntime_find(int pid)
{
	struct pyruntime *rt = calloc(1, sizeof(*rt));
	int err;

	if (!rt)
		return NULL;
	err = pyruntime_detect(pid, rt);
	if (!err) {
		/* 3.15 has _asyncio built in; 3.14 once it is imported (a
		 * later maps reload asks again). */
		if (rt->minor >= 14)
			pyasync_layout_read(rt, &rt->async);
		return rt;
	}
	if (err != -ENOENT)
		log_info("python: pid %d: %s", pid, strerror(-err));
	free(rt);
	return NULL;
}
