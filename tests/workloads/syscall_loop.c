/* A system-call-heavy loop: N calls (default 5,000,000) of one kind,
 * then prints the CPU seconds they took (user and system: waiting for a
 * CPU another tenant holds is not counted, so the figure is steadier on
 * a shared machine than wall time).  bench/run times it with and without
 * profd --gpu-device: GPU driver tracing must not tax system calls other
 * than ioctl and poll (getppid), and the ioctl and poll modes give what
 * those cost a program that uses no GPU (the uprobe hook traps on each).
 *   getppid: the raw syscall, nobody traces it;
 *   ioctl:   libc's ioctl(FIONREAD) on a pipe;
 *   poll:    libc's poll() of a pipe, timeout 0.
 * usage: syscall_loop [N [getppid|ioctl|poll]] */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static void loop(const char *mode, long n, int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	long i;
	int avail;

	if (strcmp(mode, "ioctl") == 0)
		for (i = 0; i < n; i++)
			ioctl(fd, FIONREAD, &avail);
	else if (strcmp(mode, "poll") == 0)
		for (i = 0; i < n; i++)
			poll(&pfd, 1, 0);
	else
		for (i = 0; i < n; i++)
			syscall(SYS_getppid); /* the raw call: no libc caching */
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 5000000;
	const char *mode = argc > 2 ? argv[2] : "getppid";
	struct timespec t0, t1;
	int p[2];

	if (pipe(p)) {
		perror("pipe");
		return 1;
	}
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
	loop(mode, n, p[0]);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
	printf("%.6f CPU s for %ld %s calls\n",
	       (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9, n, mode);
	return 0;
}
