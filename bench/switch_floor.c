/* switch_floor: attach bpf/switch_floor.bpf.c (a sched_switch program that
 * returns at once) until SIGINT or SIGTERM.  bench/run runs it as one of
 * the conditions of its off-CPU section: the floor of any sched_switch
 * hook, shown next to profd's.  Prints "attached" once the program is in
 * place.  Needs root. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "switch_floor.skel.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int main(void)
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
