/* A context-switch-heavy pair of processes: a parent and its child pass
 * one byte back and forth over two pipes N times (default 200,000), each
 * blocking in read() until the other writes, so every round trip is at
 * least two blocks and two wake-ups.  With CPU given, both processes are
 * pinned to that CPU: every block is then a switch straight to the other
 * process (no idle in between), so a round trip is exactly two context
 * switches and its cost does not depend on how fast an idle CPU wakes.
 * Prints the wall seconds the round trips took and the CPU seconds (user
 * + system) both processes used.  bench/run times it with and without
 * profd's off-CPU tracing (sched_switch).  usage: pingpong [N [CPU]] */
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void bounce(int in, int out, long n, int first)
{
	char c = 'x';
	long i;

	for (i = 0; i < n; i++) {
		if (first && write(out, &c, 1) != 1)
			exit(1);
		if (read(in, &c, 1) != 1)
			exit(1);
		if (!first && write(out, &c, 1) != 1)
			exit(1);
	}
}

static double tv_s(struct timeval tv)
{
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

/* User + system time of this process and its reaped child.  The kernel
 * scales the tick-sampled split to the exact time on CPU, so the sum is
 * exact. */
static double cpu_seconds(void)
{
	struct rusage self, kids;

	getrusage(RUSAGE_SELF, &self);
	getrusage(RUSAGE_CHILDREN, &kids);
	return tv_s(self.ru_utime) + tv_s(self.ru_stime) + tv_s(kids.ru_utime) +
	       tv_s(kids.ru_stime);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 200000;
	int a[2], b[2], status = 0;
	struct timespec t0, t1;
	double c0;
	pid_t child;

	if (argc > 2) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(atoi(argv[2]), &set);
		if (sched_setaffinity(0, sizeof(set), &set)) /* the child inherits it */
			return 1;
	}
	if (pipe(a) || pipe(b))
		return 1;
	c0 = cpu_seconds();
	clock_gettime(CLOCK_MONOTONIC, &t0);
	child = fork();
	if (child < 0)
		return 1;
	if (child == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive a killed parent */
		bounce(a[0], b[1], n, 0);
		_exit(0);
	}
	bounce(b[0], a[1], n, 1);
	waitpid(child, &status, 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("%.6f s for %ld round trips, %.6f s CPU\n",
	       (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9, n,
	       cpu_seconds() - c0);
	return status != 0;
}
