/* uwtest_workload.h: the C program test_unwind and test_unwind_tables
 * sample: main -> c1 .. c6 -> libc qsort -> cb_compare -> c8 .. c12 ->
 * a leaf in the program, a syscall, or (given a library to dlopen
 * after "ready") lib_entry -> lib_a -> lib_b -> lib_spin; built here
 * with -O2 -fomit-frame-pointer, with frames over 32 KiB and a
 * realigned stack (DRAP) on the way. */
#ifndef PROFD_TEST_UWTEST_WORKLOAD_H
#define PROFD_TEST_UWTEST_WORKLOAD_H

#include "uwtest.h"

static const char workload_main[] =
    "#include <dlfcn.h>\n#include <fcntl.h>\n#include <stdio.h>\n#include <stdlib.h>\n"
    "#include <string.h>\n#include <unistd.h>\n"
    "#define NI __attribute__((noinline, noclone))\n"
    "#define KEEP __asm__ volatile(\"\" ::: \"memory\")\n"
    "typedef long (*lib_fn)(long);\n"
    "static lib_fn lib_entry;\n"
    "static volatile long sink;\n"
    "static int mode, devnull;\n"
    "NI long sys_leaf(long n) { char b = (char)n; for (int i = 0; i < 50; i++) "
    "if (write(devnull, &b, 1) != 1) abort(); KEEP; return b; }\n"
    "NI long spin_exe(long n) { long s = n; for (long i = 0; i < 20000; i++) s = s * 31 + (i ^ n); "
    "sink = s; return s; }\n"
    "NI long c12(long n) { long r = mode == 1 ? lib_entry(n) : mode == 2 ? sys_leaf(n) : "
    "spin_exe(n); KEEP; return r + 12; }\n"
    "NI long c11(long n) { long r = c12(n); KEEP; return r + 11; }\n"
    "NI long c10(long n) { long r = c11(n); KEEP; return r + 10; }\n"
    "NI long c9(long n) { long r = c10(n); KEEP; return r + 9; }\n"
    "NI long c8(long n) { long r = c9(n); KEEP; return r + 8; }\n"
    "NI int cb_compare(const void *a, const void *b) { long x = *(const long *)a, "
    "y = *(const long *)b; sink += c8(x); KEEP; return (x > y) - (x < y); }\n"
    "NI long c6(long n) { long v[16]; for (int i = 0; i < 16; i++) v[i] = (n * 7 + i * 13) % 17; "
    "qsort(v, 16, sizeof(v[0]), cb_compare); KEEP; return v[0] + 6; }\n"
    /* a frame over 32 KiB (CFA = rsp + 8 * n rows), all of it touched */
    "NI long c5(long n) { char big[40000]; memset(big, (int)n, sizeof(big)); KEEP; "
    "long r = c6(n); KEEP; return r + big[(n * 7) % 40000] + 5; }\n"
    /* alloca plus an over-aligned local: gcc realigns the stack through
     * r10 and keeps the CFA below rbp (DRAP) */
    "NI long c4(long n) { __attribute__((aligned(64))) volatile char a[64]; "
    "volatile char *p = __builtin_alloca((n & 15) + 1); p[0] = 1; a[n & 63] = 2; "
    "long r = c5(n); KEEP; return r + a[3] + p[0] + 4; }\n"
    "NI long c3(long n) { long r = c4(n); KEEP; return r + 3; }\n"
    "NI long c2(long n) { long r = c3(n); KEEP; return r + 2; }\n"
    "NI long c1(long n) { long r = c2(n); KEEP; return r + 1; }\n"
    "int main(int argc, char **argv) {\n"
    "	char c;\n"
    "	if (argc > 1) {\n"
    "		if (read(0, &c, 1) != 1) return 1;\n"
    "		void *h = dlopen(argv[1], RTLD_NOW);\n"
    "		if (!h) { fprintf(stderr, \"%s\\n\", dlerror()); return 1; }\n"
    "		lib_entry = (lib_fn)dlsym(h, \"lib_entry\");\n"
    "	}\n"
    "	printf(\"ready\\n\"); fflush(stdout);\n"
    "	devnull = open(\"/dev/null\", O_WRONLY);\n"
    "	for (long i = 0;; i++) { mode = i % 3; if (mode == 1 && !lib_entry) mode = 0; "
    "sink += c1(i); }\n"
    "}\n";

static const char workload_lib[] =
    "#define NI __attribute__((noinline, noclone))\n"
    "#define KEEP __asm__ volatile(\"\" ::: \"memory\")\n"
    "static volatile long sink;\n"
    "NI static long lib_spin(long n) { long s = n; for (long i = 0; i < 20000; i++) "
    "s = s * 37 + (i ^ n); sink = s; return s; }\n"
    "NI static long lib_b(long n) { long r = lib_spin(n); KEEP; return r + 2; }\n"
    "NI static long lib_a(long n) { long r = lib_b(n); KEEP; return r + 3; }\n"
    "long lib_entry(long n) { long r = lib_a(n); KEEP; return r + 4; }\n";

/* Write and build the program and its library in env->tmp: their real
 * paths in mods.  0 or -errno. */
static inline int uw_build_c(const struct uw_env *env, struct uw_modules *mods)
{
	char exe[PATH_MAX], lib[PATH_MAX], cmd[3 * PATH_MAX];

	if (uw_write_file(env->tmp, "uwt_main.c", workload_main) ||
	    uw_write_file(env->tmp, "uwt_lib.c", workload_lib))
		return -EIO;
	snprintf(exe, sizeof(exe), "%s/uwt", env->tmp);
	snprintf(lib, sizeof(lib), "%s/libuwt.so", env->tmp);
	snprintf(cmd, sizeof(cmd),
		 "%s -O2 -fomit-frame-pointer -fPIC -shared -o %s %s/uwt_lib.c && "
		 "%s -O2 -fomit-frame-pointer -o %s %s/uwt_main.c -ldl",
		 env->cc, lib, env->tmp, env->cc, exe, env->tmp);
	if (system(cmd) != 0) {
		fprintf(stderr, "cannot build the C workload: %s\n", cmd);
		return -EIO;
	}
	if (!realpath(exe, mods->exe) || !realpath(lib, mods->lib))
		return -errno;
	return 0;
}

#endif
