/* A 12-deep call chain without frame pointers: main -> c1..c6 ->
 * sort_step -> libc's qsort -> cmp -> lib_entry -> lib_spin in a library
 * loaded with dlopen (lib.c).  Built -O2 -fomit-frame-pointer by
 * tests/e2e/test_native_unwind.sh and bench/run, which check the result
 * has no frame pointers.  usage: chain LIB SECONDS */
#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>
static unsigned long (*lib_entry)(unsigned long);
static volatile unsigned long sink;
#define STEP(a, b) __attribute__((noinline)) static void a(void) { b(); sink++; }
static int cmp(const void *x, const void *y)
{
	sink += lib_entry(2000);
	return *(const int *)x - *(const int *)y;
}
__attribute__((noinline)) static void sort_step(void)
{
	int v[64];
	for (int i = 0; i < 64; i++) v[i] = (i * 37) % 64;
	qsort(v, 64, sizeof(int), cmp);
	sink++;
}
STEP(c6, sort_step) STEP(c5, c6) STEP(c4, c5) STEP(c3, c4) STEP(c2, c3) STEP(c1, c2)
int main(int argc, char **argv)
{
	void *h = dlopen(argv[1], RTLD_NOW);
	time_t end = time(NULL) + atoi(argv[2]);
	if (!h || !(lib_entry = (unsigned long (*)(unsigned long))dlsym(h, "lib_entry")))
		return 1;
	while (time(NULL) < end)
		c1();
	return 0;
}
