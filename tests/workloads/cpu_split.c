/* cpu_split: a known profile.  main -> run_workload -> dispatch, which
 * spends 3/4 of its CPU time in leaf_heavy and 1/4 in leaf_light (the
 * same loop, 3:1 iterations).  Built with frame pointers.
 * usage: cpu_split SECONDS */
#include <alloca.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile uint64_t sink;

/* The alloca makes GCC keep a frame pointer even in this leaf function
 * (GCC 12 drops it from leaves despite -mno-omit-leaf-frame-pointer),
 * so a frame-pointer walk sees spin's caller. */
__attribute__((noinline)) static void spin(uint64_t n)
{
	volatile char *frame = __builtin_alloca(16);
	uint64_t x = sink;

	frame[0] = 0;

	/* Up to a tenth more, varying (rand: libc, no frame of ours):
	 * iterations of one regular length can lock in phase with a regular
	 * sampling clock and skew the split; the expected ratio stays 3:1. */
	n += (uint64_t)rand() % (n / 10);
	for (uint64_t i = 0; i < n; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	sink = x;
}

__attribute__((noinline)) void leaf_heavy(void)
{
	spin(3 * 200000);
}

__attribute__((noinline)) void leaf_light(void)
{
	spin(200000);
}

__attribute__((noinline)) void dispatch(void)
{
	leaf_heavy();
	leaf_light();
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void run_workload(double seconds)
{
	double end = now() + seconds;

	while (now() < end)
		for (int i = 0; i < 16; i++)
			dispatch();
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 5;

	run_workload(seconds);
	printf("%llu\n", (unsigned long long)sink);
	return 0;
}
