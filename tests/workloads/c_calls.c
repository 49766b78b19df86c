/* c_calls: fixed, call-heavy CPU work for overhead benchmarks (a
 * recursive Fibonacci, repeated).  Built with frame pointers.
 * usage: c_calls [REPEATS] -- prints the elapsed seconds. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

__attribute__((noinline)) static unsigned long fib(unsigned n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

int main(int argc, char **argv)
{
	int repeats = argc > 1 ? atoi(argv[1]) : 20;
	volatile unsigned n = 30; /* else clang computes fib(30) once, out of the loop */
	struct timespec a, b;
	unsigned long sum = 0;

	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 0; i < repeats; i++)
		sum += fib(n);
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("%.6f %lu\n", (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9, sum);
	return 0;
}
