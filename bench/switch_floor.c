/* switch_floor: the floor of any sched_switch hook, bpf/switch_floor.bpf.c
 * (a program that returns at once).
 *
 * switch_floor: attach it until SIGINT or SIGTERM.  bench/run runs it as
 * one of the conditions of its off-CPU section, shown next to profd's.
 * Prints "attached" once the program is in place.
 *
 * switch_floor --interleaved [ROUNDS [TRIPS]]: measure it in one process:
 * two threads pinned to CPU 0 pass a byte over pipes TRIPS times a round
 * (every round trip two context switches, no idle), the program attached
 * for every other round, so both conditions run interleaved under the
 * same load: far steadier than comparing separate runs on a noisy VM.
 * Prints the median CPU time per switch without and with the program.
 *
 * Needs root. */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "floor.h"
#include "switch_floor.skel.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int hold(void)
{
	struct switch_floor_bpf *skel;
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	skel = switch_floor_bpf__open_and_load();
	if (!skel || switch_floor_bpf__attach(skel)) {
		fprintf(stderr, "switch_floor: cannot load or attach the program\n");
		switch_floor_bpf__destroy(skel);
		return 1;
	}
	printf("attached\n");
	fflush(stdout);
	while (!stop)
		pause();
	switch_floor_bpf__destroy(skel);
	return 0;
}

struct pinger {
	int in, out;
	long trips;
	int first;
};

static void pin_cpu0(void)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set)) {
		fprintf(stderr, "switch_floor: cannot pin to CPU 0\n");
		exit(1);
	}
}

static void *bounce(void *arg)
{
	const struct pinger *p = arg;
	char c = 'x';
	long i;

	pin_cpu0();
	for (i = 0; i < p->trips; i++) {
		if ((p->first && write(p->out, &c, 1) != 1) || read(p->in, &c, 1) != 1 ||
		    (!p->first && write(p->out, &c, 1) != 1))
			exit(1);
	}
	return NULL;
}

/* CPU ns per context switch of one round of trips round trips. */
static double round_ns(long trips)
{
	int ab[2], ba[2];
	struct pinger a, b;
	pthread_t ta, tb;
	uint64_t t0;

	if (pipe(ab) || pipe(ba))
		exit(1);
	a = (struct pinger){ .in = ba[0], .out = ab[1], .trips = trips, .first = 1 };
	b = (struct pinger){ .in = ab[0], .out = ba[1], .trips = trips, .first = 0 };
	t0 = floor_cpu_ns();
	if (pthread_create(&ta, NULL, bounce, &a) || pthread_create(&tb, NULL, bounce, &b))
		exit(1);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	t0 = floor_cpu_ns() - t0;
	close(ab[0]);
	close(ab[1]);
	close(ba[0]);
	close(ba[1]);
	return (double)t0 / (double)(2 * trips);
}

static int interleaved(int rounds, long trips)
{
	struct switch_floor_bpf *skel = switch_floor_bpf__open_and_load();
	double *off = calloc((size_t)rounds, sizeof(double)), *on = calloc((size_t)rounds, sizeof(double));
	double moff, mon;
	int r;

	if (!skel || !off || !on) {
		fprintf(stderr, "switch_floor: cannot load the program\n");
		return 1;
	}
	round_ns(trips / 4); /* warm */
	for (r = 0; r < rounds; r++) {
		/* Alternate which goes first: a drift in the load falls on both. */
		int k;

		for (k = 0; k < 2; k++) {
			int with = (k == 0) == (r & 1);
			struct bpf_link *l = with ? bpf_program__attach(skel->progs.switch_floor) : NULL;

			if (with && !l) {
				fprintf(stderr, "switch_floor: cannot attach the program\n");
				return 1;
			}
			(with ? on : off)[r] = round_ns(trips);
			bpf_link__destroy(l);
		}
	}
	moff = floor_median(off, rounds);
	mon = floor_median(on, rounds);
	printf("switch_floor: %d rounds of %ld round trips on CPU 0: CPU per switch %.0f ns without "
	       "a sched_switch program, %.0f ns with an empty one (+%.0f ns, +%.1f%%)\n",
	       rounds, trips, moff, mon, mon - moff, 100.0 * (mon / moff - 1));
	switch_floor_bpf__destroy(skel);
	free(off);
	free(on);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--interleaved")) {
		int rounds = argc > 2 ? atoi(argv[2]) : 21;
		long trips = argc > 3 ? atol(argv[3]) : 50000;

		if (rounds < 1 || trips < 4) {
			fprintf(stderr, "usage: switch_floor [--interleaved [ROUNDS [TRIPS]]]\n");
			return 2;
		}
		return interleaved(rounds, trips);
	}
	return hold();
}
