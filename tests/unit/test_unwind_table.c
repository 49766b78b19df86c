/* Unit tests for unwind_table (CFI -> rows) and rangealloc.  Test
 * programs are compiled at run time; the expected rows come from
 * binutils' `readelf -wF`, never from libdw, so the two CFI readers check
 * each other. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "clock.h"
#include "rangealloc.h"
#include "symtest.h"
#include "unwind_table.h"

static const char prog_src[] =
    "#include <string.h>\n"
    "#define NI __attribute__((noinline, noclone))\n"
    "volatile long sink;\n"
    "NI long leaf(long n) { return n * 3; }\n"
    "NI long pushes(long a, long b, long c, long d, long e) {\n"
    "	long r = 0;\n"
    "	for (long i = 0; i < a; i++) r += leaf(i * b + c) ^ (d + e * i);\n"
    "	return r + leaf(r);\n"
    "}\n"
    "NI long use(volatile char *p, long n) { return p[n]; }\n"
    "NI long big_frame(long n) { char buf[60000]; memset(buf, (int)n, sizeof(buf)); "
    "return use(buf, n & 1023) + 1; }\n"
    /* alloca plus an over-aligned local: gcc realigns through r10 (DRAP) */
    "NI long realign(long n) { __attribute__((aligned(64))) volatile char a[64]; "
    "char *p = __builtin_alloca(n + 1); p[0] = 1; a[n & 63] = 2; "
    "return use(p, 0) + use(a, 3); }\n"
    "int main(int argc, char **argv) { (void)argv; return (int)(pushes(argc, 2, 3, 4, 5) + "
    "big_frame(argc) + realign(argc)); }\n";

static char dir[PATH_MAX];

static const char *path_of(const char *name)
{
	static char p[4][PATH_MAX];
	static int k;

	k = (k + 1) % 4;
	if (!symtest_fmt(p[k], "%s/%s", dir, name))
		p[k][0] = '\0';
	return p[k];
}

static int setup(void **state)
{
	const char *d = symtest_setup("unwind_table");
	const char *cc = symtest_cc();

	(void)state;
	if (!d)
		return -1;
	snprintf(dir, sizeof(dir), "%s", d);
	if (symtest_write_str(path_of("prog.c"), prog_src))
		return -1;
	return symtest_sh("cd '%s' && %s -O2 -fomit-frame-pointer -o prog prog.c && "
			  "%s -O2 -g -fomit-frame-pointer -fno-asynchronous-unwind-tables "
			  "-fno-unwind-tables -o prog_dbg prog.c",
			  dir, cc, cc);
}

static void build(const char *file, const struct unwind_table_opts *o, struct unwind_table *t)
{
	int fd = open(file, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(unwind_table_build_fd(fd, o, t), 0);
	close(fd);
}

/* One readelf row against the table.  cfa/rbp/ra are readelf's columns
 * ("rsp+16", "c-16", "u"). */
static void check_row(const struct unwind_table *t, uint64_t loc, const char *cfa, const char *rbp,
		      const char *ra, int *checked)
{
	const struct profd_unwind_row *r = unwind_table_lookup(t, loc);
	int off, saved = 0;
	char reg[8];

	assert_non_null(r);
	if (!strcmp(ra, "u")) {
		assert_int_equal(r->cfa_type, PROFD_UNWIND_CFA_END);
	} else if (sscanf(cfa, "%3[rspb]+%d", reg, &off) == 2 && strcmp(ra, "c-8") == 0 &&
		   (!strcmp(rbp, "u") || sscanf(rbp, "c-%d", &saved) == 1)) {
		bool rsp = !strcmp(reg, "rsp");

		if (rsp && off > INT16_MAX) {
			assert_int_equal(r->cfa_type, PROFD_UNWIND_CFA_RSP_X8);
			assert_int_equal(r->cfa_off * 8, off);
		} else {
			assert_int_equal(r->cfa_type,
					 rsp ? PROFD_UNWIND_CFA_RSP : PROFD_UNWIND_CFA_RBP);
			assert_int_equal(r->cfa_off, off);
		}
		assert_int_equal(r->rbp_off * 8, -saved);
	} else {
		/* Expressions and other registers: never a plain rule. */
		assert_true(r->cfa_type != PROFD_UNWIND_CFA_RSP &&
			    r->cfa_type != PROFD_UNWIND_CFA_RBP);
	}
	(*checked)++;
}

/* Every row readelf -wF prints for an FDE, checked; returns how many. */
static int compare_with_readelf(const char *file, const struct unwind_table *t)
{
	char cmd[PATH_MAX + 64], line[1024];
	int col_rbp = -1, col_ra = -1, checked = 0;
	unsigned long long lo = 0, hi = 0;
	bool in_fde = false;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "readelf -wF '%s'", file);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p)) {
		char *tok[16], *save = NULL, *s;
		int n = 0;
		unsigned long long loc;

		if (strstr(line, " CIE"))
			in_fde = false;
		if (strstr(line, " FDE "))
			in_fde = sscanf(strstr(line, "pc=") ? strstr(line, "pc=") : "",
					"pc=%llx..%llx", &lo, &hi) == 2;
		for (s = strtok_r(line, " \t\n", &save); s && n < 16;
		     s = strtok_r(NULL, " \t\n", &save))
			tok[n++] = s;
		if (n && !strcmp(tok[0], "LOC")) {
			col_rbp = col_ra = -1;
			for (int i = 0; i < n; i++) {
				col_rbp = strcmp(tok[i], "rbp") ? col_rbp : i;
				col_ra = strcmp(tok[i], "ra") ? col_ra : i;
			}
			continue;
		}
		/* readelf also prints the state at the FDE's end: not ours. */
		if (!in_fde || n < 3 || strlen(tok[0]) != 16 || sscanf(tok[0], "%llx", &loc) != 1 ||
		    loc < lo || loc >= hi || col_ra < 0 || col_ra >= n || strchr(tok[n - 1], ')'))
			continue;
		check_row(t, loc, tok[1], col_rbp > 0 && col_rbp < n ? tok[col_rbp] : "u",
			  tok[col_ra], &checked);
	}
	pclose(p);
	return checked;
}

static void assert_sorted_with_final_gap(const struct unwind_table *t)
{
	size_t i;

	assert_true(t->nrows > 1);
	for (i = 1; i < t->nrows; i++)
		assert_true(t->rows[i].pc > t->rows[i - 1].pc);
	assert_int_equal(t->rows[t->nrows - 1].cfa_type, PROFD_UNWIND_CFA_GAP);
}

static void test_matches_readelf(void **state)
{
	struct unwind_table t;
	uint64_t addr, size;
	const struct profd_unwind_row *r;
	size_t i;
	bool deref = false;

	(void)state;
	build(path_of("prog"), NULL, &t);
	assert_sorted_with_final_gap(&t);
	assert_true(compare_with_readelf(path_of("prog"), &t) > 20);
	/* A function's first instruction: nothing pushed yet. */
	assert_true(symtest_nm(path_of("prog"), "leaf", &addr, &size));
	r = unwind_table_lookup(&t, addr);
	assert_non_null(r);
	assert_int_equal(r->cfa_type, PROFD_UNWIND_CFA_RSP);
	assert_int_equal(r->cfa_off, 8);
	/* Stack realignment keeps the CFA just below rbp (DRAP). */
	assert_true(symtest_nm(path_of("prog"), "realign", &addr, &size));
	for (i = 0; i < size; i++) {
		r = unwind_table_lookup(&t, addr + i);
		deref |= r && r->cfa_type == PROFD_UNWIND_CFA_RBP_DEREF;
	}
	assert_true(deref);
	/* A frame over 32 KiB. */
	assert_true(symtest_nm(path_of("prog"), "big_frame", &addr, &size));
	for (i = 0, deref = false; i < size; i++) {
		r = unwind_table_lookup(&t, addr + i);
		deref |= r && r->cfa_type == PROFD_UNWIND_CFA_RSP_X8 && r->cfa_off * 8 > 60000;
	}
	assert_true(deref);
	/* Below the first row and past the last there is no rule. */
	assert_null(unwind_table_lookup(&t, t.pc_base - 1));
	r = unwind_table_lookup(&t, t.pc_base + t.rows[t.nrows - 1].pc + 100);
	assert_true(!r || r->cfa_type == PROFD_UNWIND_CFA_GAP);
	unwind_table_free(&t);
}

static void test_debug_frame(void **state)
{
	struct unwind_table t, eh_only;
	struct unwind_table_opts o = {.no_debug_frame = true};

	(void)state;
	build(path_of("prog_dbg"), NULL, &t);
	assert_true(t.stats.fdes_debug >= 4);
	assert_sorted_with_final_gap(&t);
	assert_true(compare_with_readelf(path_of("prog_dbg"), &t) > 10);
	build(path_of("prog_dbg"), &o, &eh_only);
	assert_int_equal(eh_only.stats.fdes_debug, 0);
	assert_true(eh_only.stats.fdes < t.stats.fdes);
	unwind_table_free(&t);
	unwind_table_free(&eh_only);
}

/* Junk, truncated and scribbled files: an error or a table, never a crash
 * (the sanitizer build checks the "never"). */
static void test_hostile(void **state)
{
	static unsigned char junk[65536];
	struct unwind_table t;
	size_t i;
	int fd;

	(void)state;
	srand(7);
	for (i = 0; i < sizeof(junk); i++)
		junk[i] = (unsigned char)rand();
	assert_int_equal(symtest_write(path_of("junk"), junk, sizeof(junk)), 0);
	fd = open(path_of("junk"), O_RDONLY);
	assert_int_equal(unwind_table_build_fd(fd, NULL, &t), -EINVAL);
	close(fd);
	assert_int_equal(unwind_table_build_mem(junk, 10, NULL, &t), -EINVAL);
	assert_int_equal(
	    symtest_sh("cd '%s' && head -c 3000 prog > trunc && cp prog scribbled && "
		       "off=$(readelf -SW prog | awk '$2==\".eh_frame\"{print $5}') && "
		       "head -c 512 junk | dd of=scribbled bs=1 seek=$((0x$off + 24)) "
		       "conv=notrunc status=none",
		       dir),
	    0);
	for (i = 0; i < 2; i++) {
		fd = open(path_of(i ? "scribbled" : "trunc"), O_RDONLY);
		assert_true(fd >= 0);
		if (unwind_table_build_fd(fd, NULL, &t) == 0)
			unwind_table_free(&t);
		close(fd);
	}
}

/* Give the .eh_frame section of file (an ELF64 on this machine) the
 * type lld gives it. */
static void retype_eh_frame(const char *file, uint32_t type)
{
	Elf64_Ehdr eh;
	Elf64_Shdr sh, strs;
	char name[16];
	int fd = open(file, O_RDWR), i, done = 0;

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &eh, sizeof(eh), 0), (ssize_t)sizeof(eh));
	assert_int_equal(
	    pread(fd, &strs, sizeof(strs), (off_t)(eh.e_shoff + eh.e_shstrndx * sizeof(sh))),
	    (ssize_t)sizeof(strs));
	for (i = 1; i < eh.e_shnum; i++) {
		off_t at = (off_t)(eh.e_shoff + (uint64_t)i * sizeof(sh));

		assert_int_equal(pread(fd, &sh, sizeof(sh), at), (ssize_t)sizeof(sh));
		memset(name, 0, sizeof(name));
		assert_true(
		    pread(fd, name, sizeof(name) - 1, (off_t)(strs.sh_offset + sh.sh_name)) > 0);
		if (strcmp(name, ".eh_frame"))
			continue;
		sh.sh_type = type;
		assert_int_equal(pwrite(fd, &sh, sizeof(sh), at), (ssize_t)sizeof(sh));
		done = 1;
	}
	close(fd);
	assert_true(done);
}

/* lld types .eh_frame SHT_X86_64_UNWIND (LLVM, Rust and Chrome builds):
 * the same table as SHT_PROGBITS. */
static void test_x86_64_unwind_section_type(void **state)
{
	struct unwind_table a, b;

	(void)state;
	assert_int_equal(symtest_sh("cd '%s' && cp prog prog_lld", dir), 0);
	retype_eh_frame(path_of("prog_lld"), SHT_X86_64_UNWIND);
	build(path_of("prog"), NULL, &a);
	build(path_of("prog_lld"), NULL, &b);
	assert_true(a.nrows > 0);
	assert_int_equal(b.nrows, a.nrows);
	assert_memory_equal(b.rows, a.rows, unwind_table_bytes(&a));
	unwind_table_free(&a);
	unwind_table_free(&b);
}

/* Whole file into memory (the caller frees). */
static unsigned char *slurp(const char *file, size_t *len)
{
	unsigned char *buf = NULL;
	long n;
	FILE *f = fopen(file, "rb");

	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n > 0);
	rewind(f);
	buf = malloc((size_t)n);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return buf;
}

/* A PLT section whose address plus size wraps around 2^64 and so ends
 * inside the table's range: its rows came out unsorted (found by
 * fuzz_unwind_table), which breaks the BPF side's binary search. */
static void test_plt_wraps(void **state)
{
	static const char *const plts[] = {".plt", ".plt.sec", ".plt.got"};
	struct unwind_table t;
	Elf64_Shdr *sh, *plt = NULL;
	const Elf64_Ehdr *eh;
	unsigned char *img;
	const char *names;
	size_t len, i, j;

	(void)state;
	img = slurp(path_of("prog"), &len);
	eh = (const Elf64_Ehdr *)img;
	sh = (Elf64_Shdr *)(img + eh->e_shoff);
	names = (const char *)img + sh[eh->e_shstrndx].sh_offset;
	for (i = 0; i < eh->e_shnum && !plt; i++)
		for (j = 0; j < 3 && !plt; j++)
			if (!strcmp(names + sh[i].sh_name, plts[j]))
				plt = &sh[i];
	assert_non_null(plt);
	assert_int_equal(unwind_table_build_mem(img, len, NULL, &t), 0);
	plt->sh_addr = UINT64_MAX - 0xfff;
	plt->sh_size = t.pc_base + 0x10 - plt->sh_addr; /* ends just past the first row */
	unwind_table_free(&t);
	assert_int_equal(unwind_table_build_mem(img, len, NULL, &t), 0);
	assert_sorted_with_final_gap(&t);
	unwind_table_free(&t);
	free(img);
}

static void test_rangealloc(void **state)
{
	struct rangealloc a;
	uint32_t s1, s2, s3;

	(void)state;
	assert_int_equal(rangealloc_init(&a, 100), 0);
	assert_int_equal(rangealloc_alloc(&a, 10, &s1), 0);
	assert_int_equal(rangealloc_alloc(&a, 20, &s2), 0);
	assert_int_equal(rangealloc_alloc(&a, 70, &s3), 0);
	assert_int_equal(s1, 0);
	assert_int_equal(s2, 10);
	assert_int_equal(s3, 30);
	assert_int_equal(rangealloc_alloc(&a, 1, &s1), -ENOSPC);
	assert_int_equal(rangealloc_free_tail(&a), 100); /* the last index in use */
	assert_int_equal(rangealloc_free(&a, 0, 10), 0);
	assert_int_equal(rangealloc_free_later(&a, 30, 70, 1000), 0);
	assert_int_equal(rangealloc_largest(&a), 10);
	assert_int_equal(rangealloc_free_tail(&a), 100); /* held back is not free */
	rangealloc_reap(&a, 999);
	assert_int_equal(rangealloc_largest(&a), 10);
	rangealloc_reap(&a, 1000);
	assert_int_equal(rangealloc_largest(&a), 70);
	assert_int_equal(rangealloc_free_tail(&a), 30); /* [10, 30) still in use */
	assert_int_equal(rangealloc_free(&a, 10, 20), 0); /* coalesces all three */
	assert_int_equal(rangealloc_largest(&a), 100);
	assert_int_equal(rangealloc_free_tail(&a), 0);
	assert_int_equal(a.used, 0);
	assert_int_equal(a.nfree, 1);
	/* Held-back spans are waited for, not refused. */
	assert_int_equal(rangealloc_alloc(&a, 100, &s1), 0);
	assert_int_equal(rangealloc_free_later(&a, 0, 100, clock_mono_ns() + 2000000), 0);
	assert_int_equal(rangealloc_alloc(&a, 50, &s1), -ENOSPC);
	assert_int_equal(rangealloc_alloc_wait(&a, 50, &s1, clock_mono_ns), 0);
	assert_true(clock_mono_ns() >= a.held[0].free_at_ns || a.nheld == 0);
	rangealloc_destroy(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_matches_readelf),
	    cmocka_unit_test(test_debug_frame),
	    cmocka_unit_test(test_hostile),
	    cmocka_unit_test(test_x86_64_unwind_section_type),
	    cmocka_unit_test(test_plt_wraps),
	    cmocka_unit_test(test_rangealloc),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
