/* floor.h: what bench/fault_floor.c and bench/switch_floor.c share: both
 * time rounds by the process's CPU clock and report the median of the
 * rounds run with and without the cost they measure. */
#ifndef PROFD_BENCH_FLOOR_H
#define PROFD_BENCH_FLOOR_H

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static inline uint64_t floor_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
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
