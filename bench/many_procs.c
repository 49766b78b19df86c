/* many_procs.c: N processes that each run for a moment (so a sampler sees
 * them at least once) and then sleep until killed.  bench/many_procs.py
 * builds and runs it.  usage: many_procs N SPIN_MS */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void spin(double ms)
{
	double end = now_ms() + ms;
	volatile unsigned long x = 0;

	while (now_ms() < end)
		x++;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 10000, i;
	double ms = argc > 2 ? atof(argv[2]) : 5;

	setpgid(0, 0); /* the bench kills the whole group */
	for (i = 0; i < n; i++) {
		pid_t pid = fork();

		if (pid < 0) {
			perror("many_procs: fork");
			break;
		}
		if (pid == 0) {
			spin(ms);
			for (;;)
				pause();
		}
	}
	printf("%d\n", i);
	fflush(stdout);
	for (;;)
		pause();
}
