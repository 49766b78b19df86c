/* switch_floor: the floor of any sched_switch hook, bpf/switch_floor.bpf.c
 * (a program that returns at once), and what profd's own off-CPU program
 * adds to it.
 *
 * switch_floor: attach it until SIGINT or SIGTERM.  bench/run runs it as
 * one of the conditions of its off-CPU section, shown next to profd's.
 * Prints "attached" once the program is in place.
 *
 * switch_floor --interleaved [ROUNDS [TRIPS [WORK_NS]]]: measure it in one
 * process: two threads pinned to CPU 0 pass a byte over pipes TRIPS times
 * a round (every round trip two context switches, no idle), each first
 * spinning WORK_NS ns of its own CPU time per message it gets (0: none, a
 * pure switch storm; 10000: a server thread doing 10 us of work per
 * request it is handed, still ~65,000 switches a second), in turn with no
 * program, with the empty one and with profd's on_sched_switch
 * (bpf/offcpu.bpf.h, from the object profd ships, loaded alone with
 * off-CPU tracing on and its default settings), so the conditions run
 * interleaved under the same load: far steadier than comparing separate
 * runs on a noisy VM.  Without work the two threads are a context-switch
 * storm, the case profd's program has to make cheap.  Prints the median
 * CPU time per switch of each and the median of each round's own
 * difference.
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

#include <bpf/bpf.h>

#include "floor.h"
#include "sample.skel.h"
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

static uint64_t work_ns; /* CPU time each thread spends per message */

/* The work a message asks for: CPU time, so that it is the same under
 * every condition and only the switches' cost differs. */
static void work(void)
{
	uint64_t t0;

	if (!work_ns)
		return;
	t0 = floor_clock_ns(CLOCK_THREAD_CPUTIME_ID);
	while (floor_clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0 < work_ns)
		;
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
		if (p->first && write(p->out, &c, 1) != 1)
			exit(1);
		if (read(p->in, &c, 1) != 1)
			exit(1);
		work();
		if (!p->first && write(p->out, &c, 1) != 1)
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

/* profd's off-CPU program alone, from profd's object, every other
 * program of it left unloaded. */
static struct sample_bpf *load_offcpu(void)
{
	struct sample_bpf *skel = sample_bpf__open();
	struct bpf_program *p;

	if (!skel)
		return NULL;
	bpf_object__for_each_program(p, skel->obj)
		bpf_program__set_autoload(p, p == skel->progs.on_sched_switch);
	skel->rodata->offcpu_enabled = 1;
	if (sample_bpf__load(skel)) {
		sample_bpf__destroy(skel);
		return NULL;
	}
	return skel;
}

/* The program's own time per run, when kernel.bpf_stats_enabled was on
 * (it costs time of its own: the medians above are measured without). */
static void print_prog_stats(struct bpf_program *p, const char *name)
{
	struct bpf_prog_info info;
	__u32 len = sizeof(info);

	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(bpf_program__fd(p), &info, &len) || !info.run_cnt)
		return;
	printf("  %-26s %6.0f ns of BPF time per run (kernel.bpf_stats_enabled)\n", name,
	       (double)info.run_time_ns / (double)info.run_cnt);
}

enum { COND_NONE, COND_EMPTY, COND_PROFD, NCOND };

static const char *const cond_name[NCOND] = { "no sched_switch program", "an empty one",
					       "profd's off-CPU program" };

/* One round of trips under condition c. */
static int run_cond(int c, struct bpf_program *const progs[NCOND], long trips, double *ns)
{
	struct bpf_link *l = progs[c] ? bpf_program__attach(progs[c]) : NULL;

	if (progs[c] && !l) {
		fprintf(stderr, "switch_floor: cannot attach %s\n", cond_name[c]);
		return -1;
	}
	*ns = round_ns(trips);
	bpf_link__destroy(l);
	return 0;
}

/* Per condition: the median over rounds, and the median of each round's
 * own difference from the round without a program (the steadier figure:
 * a slow round is slow for every condition in it), as a share of the
 * median without a program.  Sorts v. */
static int report(double *const v[NCOND], int rounds, long trips)
{
	double *d = calloc((size_t)rounds, sizeof(double)), none;
	int r, k;

	if (!d)
		return -1;
	memcpy(d, v[COND_NONE], (size_t)rounds * sizeof(double));
	none = floor_median(d, rounds);
	printf("switch_floor: %d rounds of %ld round trips on CPU 0, %llu ns of work per message, "
	       "CPU per switch:\n", rounds, trips, (unsigned long long)work_ns);
	for (k = NCOND - 1; k >= 0; k--) {
		for (r = 0; r < rounds; r++)
			d[r] = v[k][r] - v[COND_NONE][r];
		double dm = floor_median(d, rounds);

		printf("  %-26s median %6.0f ns, paired difference %+5.0f ns (%+5.1f%%)\n",
		       cond_name[k], floor_median(v[k], rounds), dm, 100.0 * dm / none);
	}
	free(d);
	return 0;
}

static int interleaved(int rounds, long trips)
{
	struct switch_floor_bpf *skel = switch_floor_bpf__open_and_load();
	struct sample_bpf *profd = load_offcpu();
	double *v[NCOND] = { NULL };
	int r, k, rc = 1;

	if (!skel || !profd) {
		fprintf(stderr, "switch_floor: cannot load the programs\n");
		goto out;
	}
	struct bpf_program *const progs[NCOND] = { NULL, skel->progs.switch_floor,
						   profd->progs.on_sched_switch };

	for (k = 0; k < NCOND; k++)
		if (!(v[k] = calloc((size_t)rounds, sizeof(double))))
			goto out;
	round_ns(trips / 4); /* warm */
	for (r = 0; r < rounds; r++)
		/* Rotate which goes first: a drift in the load falls on all. */
		for (k = 0; k < NCOND; k++)
			if (run_cond((r + k) % NCOND, progs, trips, &v[(r + k) % NCOND][r]))
				goto out;
	if (report(v, rounds, trips))
		goto out;
	for (k = COND_EMPTY; k < NCOND; k++)
		print_prog_stats(progs[k], cond_name[k]);
	rc = 0;
out:
	for (k = 0; k < NCOND; k++)
		free(v[k]);
	switch_floor_bpf__destroy(skel);
	sample_bpf__destroy(profd);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--interleaved")) {
		int rounds = argc > 2 ? atoi(argv[2]) : 21;
		long trips = argc > 3 ? atol(argv[3]) : 50000;

		work_ns = argc > 4 ? strtoull(argv[4], NULL, 10) : 0;

		if (rounds < 1 || trips < 4) {
			fprintf(stderr, "usage: switch_floor [--interleaved [ROUNDS [TRIPS [WORK_NS]]]]\n");
			return 2;
		}
		return interleaved(rounds, trips);
	}
	return hold();
}
