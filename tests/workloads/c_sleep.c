/* A native program blocked for good, for `profctl stacks` on a daemon
 * at its defaults (tests/e2e/test_stacks_native.sh): its stacks are read
 * on request from the user pc and sp of a thread blocked in the kernel.
 *   main thread  main -> nap -> nanosleep (an hour at a time)
 *   "reader"     reader -> wait_pipe -> read of a pipe nobody writes
 *   "fp_reader"  fp_reader -> fp_wait -> read, fp_wait with a frame
 *                pointer: its CFA needs rbp, which read's frame does not
 *                save, so the walk must stop there, cut
 * (on x86-64: arm64's read keeps a frame record, see test_stacks_native)
 * Built without frame pointers (tests/CMakeLists.txt): the walk from a
 * blocked thread has no rbp, so frames must be walked by their CFI.
 * Prints "ready" once both block. */
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static int pipefd[2];

static void nap(void)
{
	struct timespec ts = {.tv_sec = 3600};

	for (;;)
		nanosleep(&ts, NULL); /* the main thread blocks here */
}

static ssize_t wait_pipe(int fd)
{
	char c;

	return read(fd, &c, 1); /* the reader blocks here */
}

static void *reader(void *arg)
{
	(void)arg;
	wait_pipe(pipefd[0]);
	return NULL;
}

/* Its buffer's size known only at run time (a variable-length array):
 * GCC and clang alike then keep rbp as the frame's base, whatever the
 * frame-pointer flags.  A walk without rbp cannot get past it. */
static volatile size_t fp_len = 16;

__attribute__((noinline)) static ssize_t fp_wait(int fd)
{
	size_t n = fp_len;
	char c[n];

	return read(fd, c, n); /* the fp reader blocks here */
}

static void *fp_reader(void *arg)
{
	(void)arg;
	fp_wait(pipefd[0]);
	return NULL;
}

int main(void)
{
	pthread_t t, f;

	if (pipe(pipefd) || pthread_create(&t, NULL, reader, NULL) ||
	    pthread_create(&f, NULL, fp_reader, NULL))
		return 1;
	pthread_setname_np(t, "reader");
	pthread_setname_np(f, "fp_reader");
	usleep(100000);
	printf("ready\n");
	fflush(stdout);
	nap();
	return 0;
}
