/* symtest.h: helpers shared by the symbolization tests (header only:
 * each tests/unit/test_*.c is its own executable).  Test ELF files are
 * compiled at run time with $CC into $PROFD_TEST_TMP/<test>/, and the
 * expected answers come from the binutils (nm, readelf), never from the
 * code under test. */
#ifndef PROFD_TEST_SYMTEST_H
#define PROFD_TEST_SYMTEST_H

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char symtest_dir[PATH_MAX];

/* snprintf into an array, true when it fit. */
#define symtest_fmt(arr, ...) (snprintf((arr), sizeof(arr), __VA_ARGS__) < (int)sizeof(arr))

static inline const char *symtest_cc(void)
{
	const char *cc = getenv("CC");

	return cc && *cc ? cc : "cc";
}

static inline int symtest_mkdirs(const char *path)
{
	char tmp[PATH_MAX], *p;

	if (!symtest_fmt(tmp, "%s", path))
		return -1;
	for (p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0755) && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return mkdir(tmp, 0755) && errno != EEXIST ? -1 : 0;
}

/* A fresh scratch directory for this test executable. */
static inline const char *symtest_setup(const char *name)
{
	const char *base = getenv("PROFD_TEST_TMP");
	char cmd[PATH_MAX + 16];

	if (!base || !*base)
		base = "profd-test-tmp";
	if (!symtest_fmt(symtest_dir, "%s/%s", base, name))
		return NULL;
	if (symtest_dir[0] != '/') {
		char cwd[PATH_MAX / 2];

		if (!getcwd(cwd, sizeof(cwd)) || !symtest_fmt(symtest_dir, "%s/%s/%s", cwd, base, name))
			return NULL;
	}
	if (!symtest_fmt(cmd, "rm -rf '%s'", symtest_dir) || system(cmd) != 0 ||
	    symtest_mkdirs(symtest_dir))
		return NULL;
	return symtest_dir;
}

/* Run a shell command built with printf; returns its exit status. */
static inline int symtest_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline int symtest_sh(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	if (rc < 0 || rc >= (int)sizeof(cmd))
		return -1;
	rc = system(cmd);
	if (rc != 0)
		fprintf(stderr, "symtest: command failed (%d): %s\n", rc, cmd);
	return rc;
}

static inline int symtest_write(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	size_t n;

	if (!f)
		return -1;
	n = fwrite(data, 1, len, f);
	return fclose(f) || n != len ? -1 : 0;
}

static inline int symtest_write_str(const char *path, const char *s)
{
	return symtest_write(path, s, strlen(s));
}

/* A symbol's value and size as nm prints them. */
static inline bool symtest_nm(const char *file, const char *name, uint64_t *addr, uint64_t *size)
{
	char cmd[PATH_MAX + 64], line[1024], sym[512], type;
	unsigned long long a, s;
	bool found = false;
	FILE *p;

	if (!symtest_fmt(cmd, "nm -S --defined-only '%s' 2>/dev/null", file))
		return 0;
	p = popen(cmd, "r");
	if (!p)
		return false;
	while (!found && fgets(line, sizeof(line), p)) {
		if (sscanf(line, "%llx %llx %c %511s", &a, &s, &type, sym) == 4 && !strcmp(sym, name)) {
			*addr = a;
			*size = s;
			found = true;
		} else if (sscanf(line, "%llx %c %511s", &a, &type, sym) == 3 && !strcmp(sym, name)) {
			*addr = a;
			*size = 0;
			found = true;
		}
	}
	pclose(p);
	return found;
}

/* The build-id as readelf -n prints it (lower-case hex). */
static inline bool symtest_build_id(const char *file, char *hex, size_t len)
{
	char cmd[PATH_MAX + 64], line[1024];
	bool found = false;
	FILE *p;

	if (!symtest_fmt(cmd, "readelf -n '%s' 2>/dev/null", file))
		return 0;
	p = popen(cmd, "r");
	if (!p)
		return false;
	while (fgets(line, sizeof(line), p)) {
		char *s = strstr(line, "Build ID: ");

		if (s && !found) {
			if (snprintf(hex, len, "%s", s + 10) >= (int)len)
				break;
			hex[strcspn(hex, " \r\n")] = '\0';
			found = true;
		}
	}
	pclose(p);
	return found;
}

struct symtest_load {
	uint64_t off, vaddr, filesz;
	bool exec;
};

/* PT_LOAD segments as readelf -lW prints them; returns the count. */
static inline int symtest_loads(const char *file, struct symtest_load *out, int max)
{
	char cmd[PATH_MAX + 64], line[1024];
	unsigned long long off, va, pa, fs, ms;
	int n = 0;
	FILE *p;

	if (!symtest_fmt(cmd, "readelf -lW '%s' 2>/dev/null", file))
		return 0;
	p = popen(cmd, "r");
	if (!p)
		return 0;
	while (fgets(line, sizeof(line), p)) {
		if (n < max && sscanf(line, " LOAD %llx %llx %llx %llx %llx", &off, &va, &pa, &fs, &ms) == 5) {
			out[n].off = off;
			out[n].vaddr = va;
			out[n].filesz = fs;
			out[n].exec = strstr(line, " E ") || strstr(line, "RWE") || strstr(line, "R E");
			n++;
		}
	}
	pclose(p);
	return n;
}

#endif
