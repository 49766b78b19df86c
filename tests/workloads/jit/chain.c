/* A JIT stand-in: copies jit_code (jitcode.c, built with frame pointers)
 * into an anonymous PROT_EXEC mapping, names it in /tmp/perf-PID.map as
 * JITs do, and calls it in a loop through main -> jit_a -> jit_b -> jit_c,
 * built WITHOUT frame pointers (-O2 -fomit-frame-pointer, checked by the
 * test).  A profiler must cross the anonymous frame by its frame pointer
 * and go on with the tables in jit_c.  Writes "ready" on stdout once the
 * map is written.  usage: chain SECONDS NAME */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

extern const unsigned char __start_jit_text[], __stop_jit_text[];
static unsigned long (*jit)(unsigned long);
static volatile unsigned long sink;

#define STEP(a, b)                                                                                 \
	__attribute__((noinline)) static void a(void)                                              \
	{                                                                                          \
		b();                                                                               \
		sink++;                                                                            \
	}
__attribute__((noinline)) static void jit_c(void)
{
	sink += jit(200000);
}
STEP(jit_b, jit_c)
STEP(jit_a, jit_b)

/* The code copied to a fresh anonymous mapping, then made executable
 * (never writable and executable at once). */
static void *load_code(size_t *len)
{
	size_t n = (size_t)(__stop_jit_text - __start_jit_text);
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	memcpy(p, __start_jit_text, n);
	if (mprotect(p, n, PROT_READ | PROT_EXEC))
		return NULL;
	*len = n;
	return p;
}

int main(int argc, char **argv)
{
	char path[64];
	size_t len;
	void *code;
	FILE *f;
	time_t end;

	if (argc < 3 || !(code = load_code(&len)))
		return 1;
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	f = fopen(path, "w");
	if (!f || fprintf(f, "%lx %zx %s\n", (unsigned long)code, len, argv[2]) < 0 || fclose(f))
		return 1;
	jit = (unsigned long (*)(unsigned long))code;
	printf("ready\n");
	fflush(stdout);
	end = time(NULL) + atoi(argv[1]);
	while (time(NULL) < end)
		jit_a();
	unlink(path);
	return 0;
}
