/* A JIT stand-in: copies jit_code (jitcode.c, built with frame pointers)
 * into an anonymous PROT_EXEC mapping, names it in /tmp/perf-PID.map as
 * JITs do, and calls it in a loop through main -> jit_a -> jit_b -> jit_c,
 * built WITHOUT frame pointers (-O2 -fomit-frame-pointer, checked by the
 * test).  A profiler must cross the anonymous frame by its frame pointer
 * and go on with the tables in jit_c.  With "frameless", the code is
 * frameless[] below instead: no frame of its own, and rbp pointing at a
 * fake one on the stack whose return address is no code at all, which a
 * profiler must not report as a caller.  With "late NAME2", the map is
 * written only on SIGUSR1 (its code ran unnamed until then), and SIGUSR2
 * copies the code again, appends NAME2's line (JITs append as they
 * compile) and runs the copy from then on.  With "jitdump", the code is
 * named in /tmp/jit-PID.dump (perf's jitdump format, as CPython's
 * -X perf_jit writes it), mapped as the format asks, and no perf map.
 * With JIT_MEMFD in the environment, the code is in a memfd instead.
 * Writes "ready" on stdout once the map is written (late: once the code
 * runs).  usage: chain SECONDS NAME [frameless | late NAME2 | jitdump] */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
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

/* unsigned long f(unsigned long n): count n down with rbp on a fake
 * frame {saved rbp 0x10, return address 0x20} at the top of the stack. */
static const unsigned char frameless[] = {
    0x48, 0x83, 0xec, 0x28,				  /* sub $0x28,%rsp */
    0x48, 0xc7, 0x04, 0x24, 0x10, 0x00, 0x00, 0x00,	  /* movq $0x10,(%rsp) */
    0x48, 0xc7, 0x44, 0x24, 0x08, 0x20, 0x00, 0x00, 0x00, /* movq $0x20,0x8(%rsp) */
    0x48, 0x89, 0x6c, 0x24, 0x10,			  /* mov %rbp,0x10(%rsp) */
    0x48, 0x89, 0xe5,					  /* mov %rsp,%rbp */
    0x48, 0x83, 0xef, 0x01,				  /* 1: sub $1,%rdi */
    0x75, 0xfa,						  /* jnz 1b */
    0x48, 0x8b, 0x6c, 0x24, 0x10,			  /* mov 0x10(%rsp),%rbp */
    0x48, 0x83, 0xc4, 0x28,				  /* add $0x28,%rsp */
    0x48, 0x89, 0xf8,					  /* mov %rdi,%rax */
    0xc3,						  /* ret */
};

/* With JIT_MEMFD set, the code in a memfd mapped executable (as JITs
 * that keep W^X with two views of one memfd do): a file that is not ELF. */
static void *load_memfd(const unsigned char *src, size_t n)
{
	int fd = memfd_create("jit", 0);
	void *p;

	if (fd < 0 || write(fd, src, n) != (ssize_t)n)
		return NULL;
	p = mmap(NULL, n, PROT_READ | PROT_EXEC, MAP_SHARED, fd, 0);
	close(fd);
	return p == MAP_FAILED ? NULL : p;
}

/* The code copied to a fresh anonymous mapping, then made executable
 * (never writable and executable at once). */
static void *load_code(int fake_frame, size_t *len)
{
	const unsigned char *src = fake_frame ? frameless : __start_jit_text;
	size_t n = fake_frame ? sizeof(frameless) : (size_t)(__stop_jit_text - __start_jit_text);
	void *p;

	if (getenv("JIT_MEMFD")) {
		*len = n;
		return load_memfd(src, n);
	}
	p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	memcpy(p, src, n);
	if (mprotect(p, n, PROT_READ | PROT_EXEC))
		return NULL;
	*len = n;
	return p;
}

/* /tmp/jit-PID.dump: the header and one code load record naming code;
 * then mapped (read-only, executable), which is how perf and profd find a
 * jitdump wherever it is.  0, or -1. */
static int write_jitdump(const void *code, size_t len, const char *name)
{
	struct {
		uint32_t magic, version, size, mach, pad, pid;
		uint64_t time, flags;
	} h = { 0x4A695444, 1, sizeof(h), 0, 0, (uint32_t)getpid(), 0, 0 };
	struct {
		uint32_t id, size;
		uint64_t time;
		uint32_t pid, tid;
		uint64_t vma, addr, len, index;
	} r = { 0, 0, 0, h.pid, h.pid, (uintptr_t)code, (uintptr_t)code, len, 0 };
	char path[64];
	FILE *f;

	r.size = (uint32_t)(sizeof(r) + strlen(name) + 1 + len);
	snprintf(path, sizeof(path), "/tmp/jit-%d.dump", (int)getpid());
	f = fopen(path, "w+");
	if (!f || fwrite(&h, sizeof(h), 1, f) != 1 || fwrite(&r, sizeof(r), 1, f) != 1 ||
	    fwrite(name, strlen(name) + 1, 1, f) != 1 || fwrite(code, len, 1, f) != 1 || fflush(f))
		return -1;
	/* A noexec /tmp refuses the executable mapping: the file is still
	 * found there. */
	if (mmap(NULL, sizeof(h), PROT_READ | PROT_EXEC, MAP_PRIVATE, fileno(f), 0) == MAP_FAILED)
		mmap(NULL, sizeof(h), PROT_READ, MAP_PRIVATE, fileno(f), 0);
	return fclose(f) ? -1 : 0;
}

static volatile sig_atomic_t map_asked, grow_asked;

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		map_asked = 1;
	else
		grow_asked = 1;
}

/* One line more in the perf map: 0, or -1. */
static int name_code(const char *path, const void *code, size_t len, const char *name)
{
	FILE *f = fopen(path, "a");

	if (!f || fprintf(f, "%lx %zx %s\n", (unsigned long)code, len, name) < 0)
		return -1;
	return fclose(f) ? -1 : 0;
}

int main(int argc, char **argv)
{
	int late = argc > 4 && !strcmp(argv[3], "late");
	int jitdump = argc > 3 && !strcmp(argv[3], "jitdump");
	char path[64];
	size_t len;
	void *code;
	time_t end;

	if (argc < 3 || !(code = load_code(argc > 3 && !strcmp(argv[3], "frameless"), &len)))
		return 1;
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	unlink(path);
	if (late) {
		signal(SIGUSR1, on_signal);
		signal(SIGUSR2, on_signal);
	} else if (jitdump ? write_jitdump(code, len, argv[2]) : name_code(path, code, len, argv[2])) {
		return 1;
	}
	jit = (unsigned long (*)(unsigned long))code;
	printf("ready\n");
	fflush(stdout);
	end = time(NULL) + atoi(argv[1]);
	while (time(NULL) < end) {
		jit_a();
		if (map_asked == 1) {
			map_asked = 2;
			if (name_code(path, code, len, argv[2]))
				return 1;
		}
		if (grow_asked == 1) {
			grow_asked = 2;
			if (!(code = load_code(0, &len)) || name_code(path, code, len, argv[4]))
				return 1;
			jit = (unsigned long (*)(unsigned long))code;
		}
	}
	unlink(path);
	if (jitdump) {
		snprintf(path, sizeof(path), "/tmp/jit-%d.dump", (int)getpid());
		unlink(path);
	}
	return 0;
}
