/* A context-switch-heavy pair of processes: a parent and its child pass
 * one byte back and forth over two pipes N times (default 200,000), each
 * blocking in read() until the other writes, so every round trip is at
 * least two blocks and two wake-ups.  Prints the wall seconds the round
 * trips took.  bench/run times it with and without profd's off-CPU
 * tracing (sched_switch).  usage: pingpong [N] */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
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

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 200000;
	int a[2], b[2], status = 0;
	struct timespec t0, t1;
	pid_t child;

	if (pipe(a) || pipe(b))
		return 1;
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
	printf("%.6f s for %ld round trips\n",
	       (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9, n);
	return status != 0;
}
