/* A mapping-heavy loop: N times (default 200,000) mmap 64 KiB of
 * anonymous memory and munmap it through the C library, then print the
 * CPU seconds it took (user and system, steadier than wall time on a
 * shared machine).  bench/run times it with and without profd --mmap: the
 * worst case for the C library uprobes, each call one event.
 * usage: mmap_loop [N] */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 200000, i;
	struct timespec t0, t1;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
	for (i = 0; i < n; i++) {
		void *p = mmap(NULL, 64 << 10, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			       -1, 0);

		if (p == MAP_FAILED) {
			perror("mmap");
			return 1;
		}
		munmap(p, 64 << 10);
	}
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
	printf("%.6f CPU s for %ld mmap+munmap pairs\n",
	       (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9, n);
	return 0;
}
