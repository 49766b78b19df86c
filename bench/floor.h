/* floor.h: what bench/fault_floor.c and bench/switch_floor.c share: both
 * time rounds by the process's CPU clock and report the median of the
 * rounds run with and without the cost they measure. */
#ifndef PROFD_BENCH_FLOOR_H
#define PROFD_BENCH_FLOOR_H

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

/* A CPU clock in ns: the process's (what a round costs), or a thread's. */
static inline uint64_t floor_clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t floor_cpu_ns(void)
{
	return floor_clock_ns(CLOCK_PROCESS_CPUTIME_ID);
}

static inline int floor_cmp(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return (a > b) - (a < b);
}

/* The median of v[0..n) (sorts v). */
static inline double floor_median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), floor_cmp);
	return v[n / 2];
}

#endif
