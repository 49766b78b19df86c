/* A stand-in for libnccl.so.2 with the real entry point names, for
 * tests/e2e/test_jobs.sh: no GPU, each collective "succeeds" after a
 * known sleep (an enqueue on a real one), so its time is known. */
#include <stddef.h>
#include <time.h>

typedef int ncclResult_t;

static ncclResult_t after_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts))
		;
	return 0;
}

ncclResult_t ncclCommInitRank(void **comm, int nranks, const void *id, int rank)
{
	(void)nranks, (void)id, (void)rank;
	*comm = (void *)comm;
	return 0;
}

ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, int type, int op,
			   void *comm, void *stream)
{
	(void)send, (void)recv, (void)count, (void)type, (void)op, (void)comm, (void)stream;
	return after_ms(20);
}

ncclResult_t ncclBroadcast(const void *send, void *recv, size_t count, int type, int root,
			   void *comm, void *stream)
{
	(void)send, (void)recv, (void)count, (void)type, (void)root, (void)comm, (void)stream;
	return after_ms(5);
}

ncclResult_t ncclGroupEnd(void)
{
	return after_ms(1);
}
