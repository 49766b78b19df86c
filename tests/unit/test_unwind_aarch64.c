/* Unit tests for the aarch64 .eh_frame compiler (unwind_cfi_aarch64.c),
 * run on any host: an arm64 shared object is cross-compiled at run time
 * (aarch64-linux-gnu-gcc, with pointer authentication and without frame
 * pointers) and every row binutils' `readelf -wF` prints for it is
 * checked against the table, so the two CFI readers check each other. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "arch.h"
#include "symtest.h"
#include "unwind_table.h"

/* A leaf (x30 never saved), callers saving x30 with or without x29, and a
 * frame too big for a row's return-address slot (a STOP row). */
static const char lib_src[] =
    "#define NI __attribute__((noinline, noclone))\n"
    "NI long leaf(long n) { return n * 3; }\n"
    "NI long mid(long a, long b) { long r = 0; for (long i = 0; i < a; i++) r += leaf(i * b);"
    " return r + leaf(r); }\n"
    "NI long framed(long a) { return mid(a, 1) + 1; }\n"
    "NI long big(long n) { volatile char buf[70000]; buf[n & 1023] = 1;"
    " return mid(buf[n & 7], n) + 1; }\n"
    "long top(long n) { return mid(n, 2) + big(n) + framed(n); }\n";

static char dir[PATH_MAX];

static const char *symtest_fmt_path(const char *d, const char *name)
{
	static char p[PATH_MAX];

	if (!symtest_fmt(p, "%s/%s", d, name))
		p[0] = '\0';
	return p;
}

static int setup(void **state)
{
	const char *d = symtest_setup("unwind_aarch64");

	(void)state;
	if (!d)
		return -1;
	snprintf(dir, sizeof(dir), "%s", d);
	if (symtest_write_str(symtest_fmt_path(dir, "lib.c"), lib_src))
		return -1;
	/* framed() gets a frame record (x29, x30 at CFA-16, CFA-8) by its
	 * own attribute; the rest omit frame pointers. */
	return symtest_sh("cd '%s' && aarch64-linux-gnu-gcc -O2 -fomit-frame-pointer "
			  "-mbranch-protection=standard -shared -fPIC -o lib.so lib.c && "
			  "aarch64-linux-gnu-gcc -O2 -fno-omit-frame-pointer -shared -fPIC "
			  "-o libfp.so lib.c",
			  dir);
}

static void build(const char *name, bool any, struct unwind_table *t, int want)
{
	struct unwind_table_opts o = {.any_machine = any};
	int fd = open(symtest_fmt_path(dir, name), O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(unwind_table_build_fd(fd, &o, t), want);
	close(fd);
}

/* readelf's "c-N" (saved at CFA - N) as a row's 8-byte slot, or 1 when
 * it does not fit one (the row must then be a STOP row). */
static int slot(const char *col)
{
	int n;

	if (sscanf(col, "c-%d", &n) != 1 || n <= 0 || n % 8 || n / 8 > 128)
		return 1;
	return -n / 8;
}

/* One readelf row: CFA "sp+N"/"x29+N", x29 and ra columns ("u": not
 * saved; ra "u" is "still in x30" in a shared object without _start). */
static void check_row(const struct unwind_table *t, unsigned long long loc, const char *cfa,
		      const char *x29, const char *ra, int *stops)
{
	const struct profd_unwind_row *r = unwind_table_lookup(t, loc);
	int off, fp = strcmp(x29, "u") ? slot(x29) : 0, rs = strcmp(ra, "u") ? slot(ra) : 0;
	char reg[8];

	assert_non_null(r);
	if (getenv("DUMP"))
		printf("%llx %s %s %s -> type %u off %d fp %d ra %d\n", loc, cfa, x29, ra,
		       r->cfa_type, r->cfa_off, r->rbp_off, r->ra_off);
	if (fp == 1 || rs == 1 || sscanf(cfa, "%3[spx29]+%d", reg, &off) != 2) {
		assert_int_equal(r->cfa_type, PROFD_UNWIND_CFA_STOP);
		(*stops)++;
		return;
	}
	if (!strcmp(reg, "sp") && off > INT16_MAX) { /* big locals: 8-byte units */
		assert_int_equal(r->cfa_type, PROFD_UNWIND_CFA_RSP_X8);
		assert_int_equal(r->cfa_off * 8, off);
	} else {
		assert_int_equal(r->cfa_type,
				 strcmp(reg, "sp") ? PROFD_UNWIND_CFA_FP : PROFD_UNWIND_CFA_SP);
		assert_int_equal(r->cfa_off, off);
	}
	assert_int_equal(r->rbp_off, fp);
	/* CFA - 8 is every architecture's default slot, 0. */
	assert_int_equal(r->ra_off, !strcmp(ra, "u") ? PROFD_UNWIND_RA_LR : rs == -1 ? 0 : rs);
}

/* Every readelf row, checked; returns how many, *stops the STOP rows. */
static int compare_with_readelf(const char *name, const struct unwind_table *t, int *stops)
{
	char cmd[PATH_MAX + 64], line[1024];
	int col_fp = -1, col_ra = -1, checked = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "readelf -wF '%s'", symtest_fmt_path(dir, name));
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p)) {
		char *tok[16], *save = NULL, *s;
		unsigned long long loc;
		int n = 0, i;

		for (s = strtok_r(line, " \n", &save); s && n < 16;
		     s = strtok_r(NULL, " \n", &save))
			tok[n++] = s;
		if (n >= 2 && !strcmp(tok[0], "LOC")) {
			col_fp = col_ra = -1;
			for (i = 1; i < n; i++) {
				col_fp = strcmp(tok[i], "x29") ? col_fp : i;
				col_ra = strcmp(tok[i], "ra") ? col_ra : i;
			}
			continue;
		}
		if (n < 2 || col_ra < 0 || col_ra >= n || sscanf(tok[0], "%llx", &loc) != 1 ||
		    strlen(tok[0]) != 16 || loc == 0)
			continue;
		check_row(t, loc, tok[1], col_fp > 0 ? tok[col_fp] : "u", tok[col_ra], stops);
		checked++;
	}
	pclose(p);
	return checked;
}

/* Without frame pointers and with pointer authentication: leaves keep the
 * return address in x30, callers save it alone; only the 70 KB frame's
 * slot is out of reach. */
static void test_omit_fp_pac(void **state)
{
	struct unwind_table t;
	int stops = 0, n;

	(void)state;
	build("lib.so", true, &t, 0);
	n = compare_with_readelf("lib.so", &t, &stops);
	printf("lib.so: %d readelf rows checked, %d STOP, %zu table rows\n", n, stops, t.nrows);
	assert_true(n >= 10);
	assert_true(stops >= 1 && stops <= 3);
	unwind_table_free(&t);
}

/* With frame records: x29 and x30 saved as a pair, the CFA from x29. */
static void test_frame_records(void **state)
{
	struct unwind_table t;
	int stops = 0, n, lr = 0, pair = 0;
	size_t i;

	(void)state;
	build("libfp.so", true, &t, 0);
	n = compare_with_readelf("libfp.so", &t, &stops);
	for (i = 0; i < t.nrows; i++) {
		lr += t.rows[i].ra_off == PROFD_UNWIND_RA_LR;
		pair += t.rows[i].rbp_off && t.rows[i].ra_off == t.rows[i].rbp_off + 1;
	}
	printf("libfp.so: %d readelf rows checked, %d STOP, %d in x30, %d frame records\n", n,
	       stops, lr, pair);
	assert_true(n >= 10 && lr > 0 && pair > 0);
	unwind_table_free(&t);
}

/* profd itself builds tables for its own architecture only. */
static void test_foreign_refused(void **state)
{
	struct unwind_table t;

	(void)state;
	if (ARCH_ELF_MACHINE == EM_AARCH64)
		skip();
	build("lib.so", false, &t, -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_omit_fp_pac),
	    cmocka_unit_test(test_frame_records),
	    cmocka_unit_test(test_foreign_refused),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
