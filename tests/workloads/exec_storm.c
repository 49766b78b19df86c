/* exec_storm: short-lived processes for the load test.  WORKERS processes
 * each posix_spawn() /bin/true and reap it, over and over for SECONDS,
 * paced to RATE spawns a second in total (0: as fast as they can).
 * Prints "exec_storm: N processes in S s (R/s)" at the end.
 * usage: exec_storm SECONDS WORKERS RATE */
#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t storm(double end, double interval)
{
	char *const argv[] = {"true", NULL};
	double next = now();
	uint64_t n = 0;
	pid_t pid;

	while (now() < end) {
		if (posix_spawn(&pid, "/bin/true", NULL, NULL, argv, environ) == 0) {
			while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
				;
			n++;
		}
		if (interval > 0) {
			struct timespec ts;

			next += interval;
			if (next > now()) {
				ts.tv_sec = (time_t)next;
				ts.tv_nsec = (long)((next - (double)ts.tv_sec) * 1e9);
				clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
			}
		}
	}
	return n;
}

int main(int argc, char **argv)
{
	double seconds, rate, start, end, interval;
	uint64_t total = 0, n;
	int workers, i, fds[2];

	if (argc != 4) {
		fprintf(stderr, "usage: exec_storm SECONDS WORKERS RATE\n");
		return 2;
	}
	seconds = atof(argv[1]);
	workers = atoi(argv[2]);
	rate = atof(argv[3]);
	if (seconds <= 0 || workers < 1 || workers > 1024 || rate < 0 || pipe(fds)) {
		fprintf(stderr, "exec_storm: bad arguments\n");
		return 2;
	}
	start = now();
	end = start + seconds;
	interval = rate > 0 ? workers / rate : 0;
	for (i = 0; i < workers; i++) {
		pid_t pid = fork();

		if (pid == 0) {
			prctl(PR_SET_PDEATHSIG, SIGTERM); /* the test may kill us */
			n = storm(end, interval);
			_exit(write(fds[1], &n, sizeof(n)) == sizeof(n) ? 0 : 1);
		}
		if (pid < 0) {
			perror("exec_storm: fork");
			return 1;
		}
	}
	close(fds[1]);
	while (read(fds[0], &n, sizeof(n)) == sizeof(n))
		total += n;
	while (wait(NULL) > 0 || errno == EINTR)
		;
	printf("exec_storm: %llu processes in %.1f s (%.0f/s)\n", (unsigned long long)total,
	       now() - start, (double)total / (now() - start));
	return 0;
}
