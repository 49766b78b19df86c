/* comm_names.c: the blocking calls of communication libraries that
 * profd probes (enum profd_comm_fn), by the symbol the library exports
 * and the name a frame shows.  MPI's C names are the same in Open MPI
 * and MPICH; c10d's wait is a C++ method, probed by its mangled name. */
#include <stddef.h>
#include <string.h>

#include "gpu.h"

struct comm_fn {
	const char *symbol, *label; /* label NULL: the symbol */
};

#define FN(x) [PROFD_COMM_##x] = { #x, NULL }
static const struct comm_fn comm_fns[PROFD_COMM_FN_MAX] = {
	FN(MPI_Allreduce),
	FN(MPI_Reduce),
	FN(MPI_Bcast),
	FN(MPI_Barrier),
	FN(MPI_Allgather),
	FN(MPI_Allgatherv),
	FN(MPI_Gather),
	FN(MPI_Gatherv),
	FN(MPI_Scatter),
	FN(MPI_Scatterv),
	FN(MPI_Alltoall),
	FN(MPI_Alltoallv),
	FN(MPI_Reduce_scatter),
	FN(MPI_Reduce_scatter_block),
	FN(MPI_Scan),
	FN(MPI_Exscan),
	FN(MPI_Wait),
	FN(MPI_Waitall),
	FN(MPI_Waitany),
	FN(MPI_Waitsome),
	FN(MPI_Recv),
	FN(MPI_Send),
	FN(MPI_Ssend),
	FN(MPI_Sendrecv),
	FN(MPI_Probe),
	/* c10d::Work::wait(std::chrono::milliseconds): every backend's
	 * blocking wait (gloo runs the collective on its own thread) */
	[PROFD_COMM_c10d_Work_wait] = { "_ZN4c10d4Work4waitENSt6chrono8durationIlSt5ratioILl1ELl1000EEEE",
					"c10d::Work::wait" },
	FN(ncclAllReduce),
	FN(ncclBroadcast),
	FN(ncclReduce),
	FN(ncclAllGather),
	FN(ncclReduceScatter),
	FN(ncclSend),
	FN(ncclRecv),
	FN(ncclGroupEnd),
	FN(ncclCommInitRank),
};
#undef FN

const char *gpu_comm_fn_symbol(uint32_t fn)
{
	return fn > PROFD_COMM_NONE && fn < PROFD_COMM_FN_MAX ? comm_fns[fn].symbol : NULL;
}

const char *gpu_comm_fn_label(uint32_t fn)
{
	if (fn <= PROFD_COMM_NONE || fn >= PROFD_COMM_FN_MAX)
		return NULL;
	return comm_fns[fn].label ? comm_fns[fn].label : comm_fns[fn].symbol;
}

/* Frames name a call as the symbolizer found it: MPI libraries export
 * each call twice (MPI_x a weak alias of the profiling interface's
 * PMPI_x, which the symbol table names first), a C++ method demangled
 * with its parameters.  The first letter rules out nearly every frame. */
uint32_t gpu_comm_fn_of_frame(const char *name)
{
	uint32_t fn;

	if (name[0] == 'P' && name[1] == 'M')
		name++;
	if (name[0] != 'M' && name[0] != 'n' && name[0] != 'c')
		return PROFD_COMM_NONE;
	for (fn = PROFD_COMM_NONE + 1; fn < PROFD_COMM_FN_MAX; fn++) {
		const char *label = gpu_comm_fn_label(fn);
		size_t n = strlen(label);

		if (!strncmp(name, label, n) && (name[n] == '\0' || (comm_fns[fn].label && name[n] == '(')))
			return fn;
	}
	return PROFD_COMM_NONE;
}
