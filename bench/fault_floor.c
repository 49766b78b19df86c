/* fault_floor: what the kernel's page-fault count costs each fault, with
 * no BPF program at all: the floor of `profd --memory`, which opens one
 * PERF_COUNT_SW_PAGE_FAULTS event per CPU and has the kernel count every
 * fault in it (memory.bpf.h).  Here the same events, with a period so
 * long they never overflow, are switched on and off between rounds of
 * touching fresh anonymous memory page by page, in one process pinned to
 * one CPU, so both conditions run interleaved under the same load.
 * Prints the median CPU time per fault off and on, and the difference as
 * a share of a program that makes 1 GB/s resident.  Needs root (or
 * CAP_PERFMON).
 * usage: fault_floor [ROUNDS [MIB]] */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "floor.h"

#define MAX_CPUS 1024

/* CPU ns per fault of making mib MiB resident, page by page. */
static double touch_round(size_t mib)
{
	size_t len = mib << 20, page = (size_t)sysconf(_SC_PAGESIZE), i;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t t0;

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	madvise(p, len, MADV_NOHUGEPAGE); /* one fault per page, as measured */
	t0 = floor_cpu_ns();
	for (i = 0; i < len; i += page)
		p[i] = 1;
	t0 = floor_cpu_ns() - t0;
	munmap(p, len);
	return (double)t0 / (double)(len / page);
}

static int open_events(int *fds, int ncpu)
{
	struct perf_event_attr a;
	int c;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_PAGE_FAULTS;
	a.sample_period = 1ull << 62; /* counted, never sampled */
	a.disabled = 1;
	for (c = 0; c < ncpu; c++) {
		fds[c] = (int)syscall(SYS_perf_event_open, &a, -1, c, -1, PERF_FLAG_FD_CLOEXEC);
		if (fds[c] < 0 && errno != ENODEV) { /* ENODEV: CPU offline */
			fprintf(stderr, "fault_floor: perf_event_open on CPU %d: %s\n", c,
				strerror(errno));
			return -1;
		}
	}
	return 0;
}

static void set_events(const int *fds, int ncpu, unsigned long req)
{
	int c;

	for (c = 0; c < ncpu; c++)
		if (fds[c] >= 0 && ioctl(fds[c], req, 0)) {
			perror("fault_floor: switching the count");
			exit(1); /* a round under the wrong condition would spoil the result */
		}
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 15, ncpu = (int)sysconf(_SC_NPROCESSORS_CONF), r;
	size_t mib = argc > 2 ? (size_t)atol(argv[2]) : 256;
	static int fds[MAX_CPUS];
	double *off, *on, moff, mon;
	cpu_set_t set;

	if (rounds < 1 || mib < 1 || ncpu < 1 || ncpu > MAX_CPUS) {
		fprintf(stderr, "usage: fault_floor [ROUNDS [MIB]]\n");
		return 2;
	}
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		perror("fault_floor: pinning to CPU 0 (going on unpinned)");
	if (open_events(fds, ncpu))
		return 1;
	off = calloc((size_t)rounds, sizeof(*off));
	on = calloc((size_t)rounds, sizeof(*on));
	if (!off || !on)
		return 1;
	touch_round(mib); /* warm: page tables, the allocator */
	for (r = 0; r < rounds; r++) {
		/* Alternate which goes first: a drift in the machine's load
		 * falls on both. */
		int first_on = r & 1;

		set_events(fds, ncpu, first_on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE);
		(first_on ? on : off)[r] = touch_round(mib);
		set_events(fds, ncpu, first_on ? PERF_EVENT_IOC_DISABLE : PERF_EVENT_IOC_ENABLE);
		(first_on ? off : on)[r] = touch_round(mib);
	}
	set_events(fds, ncpu, PERF_EVENT_IOC_DISABLE);
	moff = floor_median(off, rounds);
	mon = floor_median(on, rounds);
	/* 1 GB/s of 4 KiB pages is 244,141 faults a second. */
	printf("fault_floor: %d rounds of %zu MiB: CPU per fault %.0f ns without the count, %.0f ns "
	       "with it (+%.0f ns, +%.1f%%); at 1 GB/s the count alone costs %.2f%% of a CPU\n",
	       rounds, mib, moff, mon, mon - moff, 100.0 * (mon / moff - 1),
	       100.0 * (mon - moff) * 244141.0 / 1e9);
	return 0;
}
