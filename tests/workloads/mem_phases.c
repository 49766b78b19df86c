/* mem_phases: memory made resident in two known phases, for the memory
 * profile's time windows.  It waits for the file GO, then grow_early
 * touches 4 MiB of fresh memory every 100 ms for 3 s, it rests 3 s, and
 * grow_late does the same; each phase's end is marked by a line in the
 * truth file ("early BYTES" / "late BYTES", the bytes it touched).  Then it
 * sleeps until killed.  The page-touching loops sit in the two functions
 * themselves, so their code is the faulting one.
 * usage: mem_phases TRUTH_FILE GO */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define STEP (4L << 20)
#define STEPS 30

static void *fresh(void)
{
	void *p = mmap(NULL, STEP, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	return p;
}

static void nap(void)
{
	struct timespec ts = { 0, 100 * 1000 * 1000 };

	nanosleep(&ts, NULL);
}

__attribute__((noinline)) long grow_early(void)
{
	for (int s = 0; s < STEPS; s++) {
		volatile char *p = fresh();

		for (long i = 0; i < STEP; i += 4096)
			p[i] = 1;
		nap();
	}
	return STEPS * STEP;
}

__attribute__((noinline)) long grow_late(void)
{
	for (int s = 0; s < STEPS; s++) {
		volatile char *p = fresh();

		for (long i = 0; i < STEP; i += 4096)
			p[i] = 2;
		nap();
	}
	return STEPS * STEP;
}

static void mark(const char *path, const char *what, long bytes)
{
	FILE *f = fopen(path, "a");

	if (!f) {
		perror(path);
		exit(1);
	}
	fprintf(f, "%s %ld\n", what, bytes);
	fclose(f);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: mem_phases TRUTH_FILE GO\n");
		return 2;
	}
	while (access(argv[2], F_OK))
		nap();
	mark(argv[1], "early", grow_early());
	sleep(3);
	mark(argv[1], "late", grow_late());
	for (;;)
		pause();
}
