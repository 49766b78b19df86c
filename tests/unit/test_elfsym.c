/* elfsym: symbols, segments, build-id and separate debug files of ELF
 * files compiled at test time, plus corrupt and hostile files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <time.h>

#include "demangle.h"
#include "elfsym.h"
#include "procmaps.h"
#include "symtest.h"

static const char lib_src[] =
	"int lib_counter = 42;\n"
	"__thread int lib_tls;\n"
	"static int gamma_local(int x) { return x * 3 + lib_counter; }\n"
	"int alpha(int x) { return gamma_local(x) + 1; }\n"
	"int beta(int x) { int i, s = 0; for (i = 0; i < x; i++) s += alpha(i) ^ i; return s; }\n"
	"__asm__(\".text\\n.globl zsize_fn\\n.type zsize_fn,@function\\n"
	"zsize_fn:\\n\\tnop\\n\\tnop\\n\\tnop\\n\\tret\\n\");\n"
	"void cxx_named(void) __asm__(\"_ZN5outer5innerEv\");\n"
	"void cxx_named(void) { lib_counter++; }\n"
	"int after_zsize(void) { return lib_tls; }\n";

static const char prog_src[] =
	"int prog_counter;\n"
	"int prog_work(int x) { return x * 7 + prog_counter; }\n"
	"int main(int argc, char **argv) { (void)argv; return prog_work(argc) & 1; }\n";

static char D[PATH_MAX]; /* this test's scratch directory */

static const char *path_of(const char *name)
{
	static char bufs[4][PATH_MAX + 256];
	static int i;
	char *p = bufs[i++ % 4];

	snprintf(p, sizeof(bufs[0]), "%s/%s", D, name);
	return p;
}

static int build_all(void **state)
{
	const char *cc = symtest_cc();
	char bid[200], bid_dir[PATH_MAX + 64];

	(void)state;
	if (symtest_write_str(path_of("lib.c"), lib_src) || symtest_write_str(path_of("prog.c"), prog_src))
		return -1;
	if (symtest_sh("cd '%s' && %s -O0 -fno-pie -no-pie -Wl,--build-id -o nonpie prog.c && "
		       "%s -O0 -fPIE -pie -Wl,--build-id -o pie prog.c && "
		       "%s -O0 -fPIC -shared -Wl,--build-id -o libt.so lib.c && "
		       "%s -O0 -fPIC -shared -Wl,--build-id=none -o libdl.so lib.c",
		       D, cc, cc, cc, cc))
		return -1;
	/* Build-id debug file under root1. */
	if (!symtest_build_id(path_of("libt.so"), bid, sizeof(bid)) || strlen(bid) < 4)
		return -1;
	snprintf(bid_dir, sizeof(bid_dir), "root1/usr/lib/debug/.build-id/%.2s", bid);
	if (symtest_sh("cd '%s' && mkdir -p root1/usr/lib %s && cp libt.so root1/usr/lib/libbid.so && "
		       "objcopy --only-keep-debug libt.so %s/%s.debug && "
		       "strip --strip-all root1/usr/lib/libbid.so",
		       D, bid_dir, bid_dir, bid + 2))
		return -1;
	/* Debuglink file: next to the lib, in .debug/, under /usr/lib/debug. */
	if (symtest_sh("cd '%s' && objcopy --only-keep-debug libdl.so libdl.so.debug && "
		       "strip --strip-all -o libdl.stripped libdl.so && "
		       "objcopy --add-gnu-debuglink=libdl.so.debug libdl.stripped && "
		       "for r in rootA rootB rootC rootBad rootNone; do mkdir -p $r/opt/app && "
		       "cp libdl.stripped $r/opt/app/libdl.so; done && "
		       "cp libdl.so.debug rootA/opt/app/ && "
		       "mkdir -p rootB/opt/app/.debug && cp libdl.so.debug rootB/opt/app/.debug/ && "
		       "mkdir -p rootC/usr/lib/debug/opt/app && cp libdl.so.debug rootC/usr/lib/debug/opt/app/ && "
		       "cp libdl.so.debug rootBad/opt/app/ && printf x >> rootBad/opt/app/libdl.so.debug",
		       D))
		return -1;
	return 0;
}

static void expect_sym(const struct elfsym *e, uint64_t vaddr, const char *name, uint64_t off)
{
	uint64_t got = ~0ull;
	const char *s = elfsym_lookup(e, vaddr, &got);

	if (!s || strcmp(s, name) || got != off)
		fail_msg("lookup 0x%" PRIx64 ": got %s+0x%" PRIx64 ", want %s+0x%" PRIx64, vaddr,
			 s ? s : "(null)", got, name, off);
}

/* Every symbol named here must resolve at its nm address, middle and
 * last byte; the byte after a sized symbol must not be it. */
static void expect_nm_syms(const struct elfsym *e, const char *nm_file, const char *const *names)
{
	for (; *names; names++) {
		uint64_t addr, size;
		const char *s;

		if (!symtest_nm(nm_file, *names, &addr, &size))
			fail_msg("nm has no %s in %s", *names, nm_file);
		expect_sym(e, addr, *names, 0);
		if (!size)
			continue;
		expect_sym(e, addr + size / 2, *names, size / 2);
		expect_sym(e, addr + size - 1, *names, size - 1);
		s = elfsym_lookup(e, addr + size, NULL);
		assert_true(!s || strcmp(s, *names));
	}
}

static void expect_build_id(const struct elfsym *e, const char *file)
{
	char want[200], got[200] = "";
	const uint8_t *id;
	size_t len, i;

	assert_true(symtest_build_id(file, want, sizeof(want)));
	id = elfsym_build_id(e, &len);
	assert_non_null(id);
	for (i = 0; i < len; i++)
		sprintf(got + 2 * i, "%02x", id[i]);
	assert_string_equal(got, want);
}

/* Each PT_LOAD maps its file range to its vaddr range; a function's
 * file offset comes back as its nm address. */
static void expect_segments(const struct elfsym *e, const char *file, const char *func, bool non_pie)
{
	struct symtest_load loads[16];
	uint64_t addr, size, v;
	int n = symtest_loads(file, loads, 16), i;
	bool found = false;

	assert_true(n >= 2);
	assert_true(symtest_nm(file, func, &addr, &size));
	for (i = 0; i < n; i++) {
		const struct symtest_load *l = &loads[i];

		assert_int_equal(elfsym_offset_to_vaddr(e, l->off + l->filesz / 2, &v), 0);
		assert_int_equal(v, l->vaddr + l->filesz / 2);
		if (addr >= l->vaddr && addr < l->vaddr + l->filesz) {
			assert_true(l->exec);
			assert_int_equal(elfsym_offset_to_vaddr(e, addr - l->vaddr + l->off, &v), 0);
			assert_int_equal(v, addr);
			expect_sym(e, v, func, 0);
			if (non_pie)
				assert_true(l->vaddr >= 0x400000 && l->vaddr != l->off);
			found = true;
		}
	}
	assert_true(found);
	assert_int_equal(elfsym_offset_to_vaddr(e, 1ull << 40, &v), -ENOENT);
}

static void test_non_pie(void **state)
{
	static const char *const names[] = { "prog_work", "main", NULL };
	struct elfsym *e = elfsym_open(path_of("nonpie"), "");

	(void)state;
	assert_non_null(e);
	expect_nm_syms(e, path_of("nonpie"), names);
	expect_segments(e, path_of("nonpie"), "prog_work", true);
	expect_build_id(e, path_of("nonpie"));
	elfsym_free(e);
}

static void test_pie(void **state)
{
	static const char *const names[] = { "prog_work", "main", NULL };
	struct elfsym *e = elfsym_open(path_of("pie"), NULL);

	(void)state;
	assert_non_null(e);
	expect_nm_syms(e, path_of("pie"), names);
	expect_segments(e, path_of("pie"), "prog_work", false);
	expect_build_id(e, path_of("pie"));
	elfsym_free(e);
}

static void test_shared_lib(void **state)
{
	static const char *const names[] = { "alpha", "beta", "gamma_local", "zsize_fn",
					     "_ZN5outer5innerEv", "after_zsize", NULL };
	uint64_t addr, size, v, sz;
	struct elfsym *e = elfsym_open(path_of("libt.so"), "");

	(void)state;
	assert_non_null(e);
	expect_nm_syms(e, path_of("libt.so"), names);
	expect_segments(e, path_of("libt.so"), "beta", false);
	expect_build_id(e, path_of("libt.so"));
	assert_false(elfsym_has_debug_file(e));
	assert_true(elfsym_nsyms(e) >= 6);

	/* Zero-size zsize_fn runs up to the next symbol. */
	assert_true(symtest_nm(path_of("libt.so"), "zsize_fn", &addr, &size));
	assert_int_equal(size, 0);
	expect_sym(e, addr + 3, "zsize_fn", 3);

	/* By name: functions, data and TLS. */
	assert_true(symtest_nm(path_of("libt.so"), "lib_counter", &addr, &size));
	assert_int_equal(elfsym_lookup_symbol(e, "lib_counter", &v, &sz), 0);
	assert_int_equal(v, addr);
	assert_int_equal(sz, 4);
	assert_true(symtest_nm(path_of("libt.so"), "lib_tls", &addr, &size));
	assert_int_equal(elfsym_lookup_symbol(e, "lib_tls", &v, &sz), 0);
	assert_int_equal(v, addr);
	assert_true(symtest_nm(path_of("libt.so"), "beta", &addr, &size));
	assert_int_equal(elfsym_lookup_symbol(e, "beta", &v, &sz), 0);
	assert_int_equal(v, addr);
	assert_int_equal(sz, size);
	assert_int_equal(elfsym_lookup_symbol(e, "no_such_symbol", &v, &sz), -ENOENT);
	elfsym_free(e);
	elfsym_free(NULL);
}

static void test_debug_by_build_id(void **state)
{
	static const char *const names[] = { "alpha", "beta", "gamma_local", "zsize_fn", NULL };
	char root[PATH_MAX + 16];
	struct elfsym *e;
	uint64_t addr, size;

	(void)state;
	snprintf(root, sizeof(root), "%s/root1", D);
	/* Stripped, without the root: only .dynsym, no static function. */
	e = elfsym_open(path_of("root1/usr/lib/libbid.so"), "");
	assert_non_null(e);
	assert_true(symtest_nm(path_of("libt.so"), "gamma_local", &addr, &size));
	assert_null(elfsym_lookup(e, addr, NULL));
	elfsym_free(e);

	e = elfsym_open("/usr/lib/libbid.so", root);
	assert_non_null(e);
	assert_true(elfsym_has_debug_file(e));
	expect_nm_syms(e, path_of("libt.so"), names);
	expect_build_id(e, path_of("libt.so"));
	elfsym_free(e);
}

/* A debug file handed over by its fd (fetched from debuginfod): used
 * when its build-id is the file's; another file's is ignored.  The file
 * says whether it still lacks one (worth a fetch). */
static void test_debug_given_fd(void **state)
{
	static const char *const names[] = { "alpha", "beta", "gamma_local", "zsize_fn", NULL };
	char dbg[2 * PATH_MAX], bid[200];
	struct elfsym *e;
	uint64_t addr, size;
	int fd, dfd, other;

	(void)state;
	assert_true(symtest_build_id(path_of("libt.so"), bid, sizeof(bid)));
	snprintf(dbg, sizeof(dbg), "%s/root1/usr/lib/debug/.build-id/%.2s/%s.debug", D, bid, bid + 2);
	fd = open(path_of("root1/usr/lib/libbid.so"), O_RDONLY);
	dfd = open(dbg, O_RDONLY);
	other = open(path_of("libdl.so.debug"), O_RDONLY); /* no build-id, another file */
	assert_true(fd >= 0 && dfd >= 0 && other >= 0);
	assert_true(symtest_nm(path_of("libt.so"), "gamma_local", &addr, &size));

	e = elfsym_open_fd(fd, NULL, NULL); /* the host's /usr/lib/debug has not its file */
	assert_non_null(e);
	assert_true(elfsym_lacks_debug(e));
	assert_null(elfsym_lookup(e, addr, NULL));
	elfsym_free(e);

	e = elfsym_open_fd_debug(fd, NULL, "", dfd);
	assert_non_null(e);
	assert_true(elfsym_has_debug_file(e));
	assert_false(elfsym_lacks_debug(e));
	expect_nm_syms(e, path_of("libt.so"), names);
	elfsym_free(e);

	e = elfsym_open_fd_debug(fd, NULL, "", other);
	assert_non_null(e);
	assert_false(elfsym_has_debug_file(e));
	assert_null(elfsym_lookup(e, addr, NULL));
	elfsym_free(e);
	/* The fds stay the caller's, open. */
	assert_true(fcntl(dfd, F_GETFD) >= 0);
	close(fd);
	close(dfd);
	close(other);
}

static void test_debug_by_debuglink(void **state)
{
	static const char *const names[] = { "alpha", "beta", "gamma_local", NULL };
	static const char *const roots[] = { "rootA", "rootB", "rootC" };
	char root[PATH_MAX + 16];
	struct elfsym *e;
	uint64_t addr, size;
	size_t len;

	(void)state;
	assert_true(symtest_nm(path_of("libdl.so"), "gamma_local", &addr, &size));
	for (size_t i = 0; i < 3; i++) {
		snprintf(root, sizeof(root), "%s/%s", D, roots[i]);
		e = elfsym_open("/opt/app/libdl.so", root);
		assert_non_null(e);
		assert_true(elfsym_has_debug_file(e));
		expect_nm_syms(e, path_of("libdl.so"), names);
		assert_null(elfsym_build_id(e, &len));
		assert_int_equal(len, 0);
		elfsym_free(e);
	}
	/* CRC mismatch, or no debug file: dynamic symbols only. */
	snprintf(root, sizeof(root), "%s/rootBad", D);
	e = elfsym_open("/opt/app/libdl.so", root);
	assert_non_null(e);
	assert_false(elfsym_has_debug_file(e));
	assert_null(elfsym_lookup(e, addr, NULL));
	expect_nm_syms(e, path_of("libdl.so"), (const char *const[]){ "alpha", NULL });
	elfsym_free(e);
	snprintf(root, sizeof(root), "%s/rootNone", D);
	e = elfsym_open("/opt/app/libdl.so", root);
	assert_non_null(e);
	assert_false(elfsym_has_debug_file(e));
	elfsym_free(e);
}

/* An absolute symlink inside the root resolves inside the root. */
static void test_root_symlink_contained(void **state)
{
	char bid[200], root[PATH_MAX + 16];
	struct elfsym *e;

	(void)state;
	assert_true(symtest_build_id(path_of("libt.so"), bid, sizeof(bid)));
	assert_int_equal(symtest_sh("cd '%s' && rm -rf rootesc && mkdir -p rootesc/usr/lib "
				    "rootesc/usr/lib/debug/.build-id/%.2s && "
				    "cp root1/usr/lib/libbid.so rootesc/usr/lib/ && "
				    "ln -s '%s/root1/usr/lib/debug/.build-id/%.2s/%s.debug' "
				    "rootesc/usr/lib/debug/.build-id/%.2s/%s.debug",
				    D, bid, D, bid, bid + 2, bid, bid + 2),
			 0);
	snprintf(root, sizeof(root), "%s/rootesc", D);
	e = elfsym_open("/usr/lib/libbid.so", root);
	assert_non_null(e);
	assert_false(elfsym_has_debug_file(e));
	elfsym_free(e);
}

static void test_vdso_image(void **state)
{
	uint64_t ehdr = getauxval(AT_SYSINFO_EHDR), v, sz;
	const struct procmap *m;
	struct procmaps self;
	struct elfsym *e;
	uint64_t off;
	const char *s;

	(void)state;
	if (!ehdr)
		skip();
	assert_int_equal(procmaps_read(getpid(), &self), 0);
	m = procmaps_find(&self, ehdr);
	assert_non_null(m);
	assert_string_equal(m->path, "[vdso]");
	e = elfsym_open_mem((const void *)(uintptr_t)ehdr, m->end - ehdr);
	procmaps_free(&self);
	assert_non_null(e);
	assert_int_equal(elfsym_lookup_symbol(e, "__vdso_clock_gettime", &v, &sz), 0);
	s = elfsym_lookup(e, v + 1, &off);
	assert_non_null(s);
	assert_non_null(strstr(s, "clock_gettime"));
	assert_int_equal(off, 1);
	elfsym_free(e);
}

static void test_demangle(void **state)
{
	char *s;

	(void)state;
	s = demangle("_ZN5outer5innerEv");
	assert_string_equal(s, "outer::inner()");
	free(s);
	s = demangle("_ZNSt6vectorIiSaIiEE9push_backERKi");
	assert_string_equal(s, "std::vector<int, std::allocator<int> >::push_back(int const&)");
	free(s);
	assert_null(demangle("main"));
	assert_null(demangle("_Z"));
	assert_null(demangle("_Zgarbage!"));
	assert_null(demangle(""));
	assert_null(demangle(NULL));
}

/* f(a, pair<a,a>, pair<pair<a,a>,pair<a,a>>, ...): every level doubles
 * through two back-references, so n levels print ~2^(n/2) times more
 * than they take.  Left mangled, at once, and counted. */
static void test_demangle_exponential(void **state)
{
	static const char b36[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
	char sym[1024] = "_Z1fSt4pairI1aS0_E", *s;
	uint64_t before = demangle_refused();
	struct timespec t0, t1;
	int k;

	(void)state;
	for (k = 1; k <= 60; k++) {
		char ref[8];

		if (k - 1 < 36)
			snprintf(ref, sizeof(ref), "%c", b36[k - 1]);
		else
			snprintf(ref, sizeof(ref), "%c%c", b36[(k - 1) / 36], b36[(k - 1) % 36]);
		snprintf(sym + strlen(sym), sizeof(sym) - strlen(sym), "S_IS%s_S%s_E", ref, ref);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_null(demangle(sym));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_true(t1.tv_sec - t0.tv_sec < 1);
	assert_int_equal(demangle_refused(), before + 1);
	/* Three levels are a fine name. */
	sym[strlen("_Z1fSt4pairI1aS0_E") + 3 * 10] = 0;
	s = demangle(sym);
	assert_non_null(s);
	assert_true(strstr(s, "f(std::pair<a, a>, std::pair<a, a>, std::pair<std::pair<a, a>, ") ==
		    s);
	free(s);
	/* A long real one. */
	s = demangle(
	    "_ZNSt8_Rb_treeINSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEESt4pairIKS5_"
	    "St6vectorIS5_SaIS5_EEESt10_Select1stISB_ESt4lessIS5_ESaISB_EE8_M_eraseEPSt13_"
	    "Rb_tree_nodeISB_E");
	assert_non_null(s);
	free(s);
	assert_int_equal(demangle_refused(), before + 1);
}

/* ---- hostile input ---- */

static char *read_whole(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *data;
	long n;

	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	data = malloc((size_t)n);
	assert_int_equal(fread(data, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return data;
}

/* Opening must fail cleanly, or succeed with usable lookups. */
static void poke(const char *path)
{
	struct elfsym *e = elfsym_open(path, "");
	uint64_t v, s;
	size_t len;

	if (!e)
		return;
	for (uint64_t a = 0; a < 0x10000; a += 0x40)
		elfsym_lookup(e, a, &v);
	elfsym_offset_to_vaddr(e, 0x1000, &v);
	elfsym_lookup_symbol(e, "alpha", &v, &s);
	elfsym_build_id(e, &len);
	elfsym_free(e);
}

static void expect_rejected(const void *data, size_t len)
{
	const char *p = path_of("bad.elf");

	assert_int_equal(symtest_write(p, data, len), 0);
	errno = 0;
	assert_null(elfsym_open(p, ""));
	assert_int_equal(errno, EINVAL);
}

static void test_not_elf(void **state)
{
	char junk[65536];
	unsigned seed = 7;

	(void)state;
	errno = 0;
	assert_null(elfsym_open(path_of("missing"), ""));
	assert_int_equal(errno, ENOENT);
	expect_rejected("", 0);
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (char)rand_r(&seed);
	expect_rejected(junk, sizeof(junk));
	memcpy(junk, ELFMAG, SELFMAG);
	junk[EI_CLASS] = ELFCLASS64;
	junk[EI_DATA] = ELFDATA2LSB;
	junk[EI_VERSION] = EV_CURRENT;
	for (int i = 0; i < 50; i++) {
		for (size_t j = 16; j < 256; j++)
			junk[j] = (char)rand_r(&seed);
		assert_int_equal(symtest_write(path_of("junk.elf"), junk, sizeof(junk)), 0);
		poke(path_of("junk.elf"));
	}
	/* Directories and FIFOs are not ELF files, and must not block. */
	assert_null(elfsym_open(D, ""));
	assert_int_equal(mkfifo(path_of("fifo"), 0600), 0);
	assert_null(elfsym_open(path_of("fifo"), ""));
}

static void test_truncated(void **state)
{
	size_t len;
	char *lib = read_whole(path_of("libt.so"), &len);

	(void)state;
	expect_rejected(lib, 16);
	expect_rejected(lib, sizeof(Elf64_Ehdr));
	expect_rejected(lib, len / 2);
	expect_rejected(lib, len - 1);
	free(lib);
}

static void test_absurd_headers(void **state)
{
	size_t len;
	char *lib = read_whole(path_of("libt.so"), &len), *copy = malloc(len);
	Elf64_Ehdr *eh = (Elf64_Ehdr *)copy;
	Elf64_Shdr *sh0;

	(void)state;
	memcpy(copy, lib, len);
	eh->e_shnum = 0xffff;
	expect_rejected(copy, len);

	memcpy(copy, lib, len);
	sh0 = (Elf64_Shdr *)(copy + eh->e_shoff);
	eh->e_shnum = 0; /* extended numbering, absurd count */
	sh0->sh_size = 0xffffffffu;
	expect_rejected(copy, len);

	memcpy(copy, lib, len);
	eh->e_phnum = 0xfff0;
	expect_rejected(copy, len);

	memcpy(copy, lib, len);
	eh->e_shoff = UINT64_MAX - 10;
	expect_rejected(copy, len);

	memcpy(copy, lib, len);
	eh->e_shentsize = 1;
	expect_rejected(copy, len);

	memcpy(copy, lib, len);
	eh->e_shstrndx = eh->e_shnum + 3;
	expect_rejected(copy, len);
	free(copy);
	free(lib);
}

/* Section headers pointing far outside the file: the sections are
 * skipped (or the file refused), nothing is allocated for them. */
static void test_absurd_sections(void **state)
{
	size_t len;
	char *lib = read_whole(path_of("libt.so"), &len), *copy = malloc(len);
	Elf64_Ehdr *eh = (Elf64_Ehdr *)copy;

	(void)state;
	for (int field = 0; field < 4; field++) {
		memcpy(copy, lib, len);
		for (int i = 1; i < eh->e_shnum; i++) {
			Elf64_Shdr *sh = (Elf64_Shdr *)(copy + eh->e_shoff) + i;

			if (sh->sh_type != SHT_SYMTAB && sh->sh_type != SHT_DYNSYM &&
			    sh->sh_type != SHT_STRTAB && sh->sh_type != SHT_NOTE)
				continue;
			if (field == 0)
				sh->sh_size = 0x7fffffffffffull;
			else if (field == 1)
				sh->sh_offset = UINT64_MAX - 8;
			else if (field == 2)
				sh->sh_link = 0xfffff;
			else
				sh->sh_entsize = 3;
		}
		assert_int_equal(symtest_write(path_of("sect.elf"), copy, len), 0);
		poke(path_of("sect.elf"));
	}
	free(copy);
	free(lib);
}

/* Random byte flips all over a real library: never a crash. */
static void test_mutations(void **state)
{
	size_t len;
	char *lib = read_whole(path_of("libt.so"), &len), *copy = malloc(len);
	unsigned seed = 12345;

	(void)state;
	for (int iter = 0; iter < 400; iter++) {
		memcpy(copy, lib, len);
		for (int k = 0; k < 8; k++) {
			size_t pos = (size_t)rand_r(&seed) % len;

			/* Half the flips hit the headers, where it hurts. */
			if (k & 1)
				pos = pos % 128;
			copy[pos] = (char)rand_r(&seed);
		}
		assert_int_equal(symtest_write(path_of("mut.elf"), copy, len), 0);
		poke(path_of("mut.elf"));
	}
	free(copy);
	free(lib);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_non_pie),
		cmocka_unit_test(test_pie),
		cmocka_unit_test(test_shared_lib),
		cmocka_unit_test(test_debug_by_build_id),
		cmocka_unit_test(test_debug_by_debuglink),
		cmocka_unit_test(test_debug_given_fd),
		cmocka_unit_test(test_root_symlink_contained),
		cmocka_unit_test(test_vdso_image),
		cmocka_unit_test(test_demangle),
		cmocka_unit_test(test_demangle_exponential),
		cmocka_unit_test(test_not_elf),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_absurd_headers),
		cmocka_unit_test(test_absurd_sections),
		cmocka_unit_test(test_mutations),
	};
	const char *dir = symtest_setup("elfsym");

	if (!dir)
		return 1;
	snprintf(D, sizeof(D), "%s", dir);
	return cmocka_run_group_tests(tests, build_all, NULL);
}
