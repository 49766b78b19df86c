/* A system-call-heavy loop of calls nobody traces: getppid() N times
 * (default 5,000,000), then prints the CPU seconds it took (user and
 * system: waiting for a CPU another tenant holds is not counted, so the
 * figure is steadier on a shared machine than wall time).  bench/run
 * times it with and without profd --gpu-device: GPU driver tracing must
 * not tax system calls other than ioctl and poll.  usage: syscall_loop [N] */
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 5000000, i;
	struct timespec t0, t1;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
	for (i = 0; i < n; i++)
		syscall(SYS_getppid); /* the raw call: no libc caching */
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
	printf("%.6f CPU s for %ld getppid calls\n",
	       (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9, n);
	return 0;
}
