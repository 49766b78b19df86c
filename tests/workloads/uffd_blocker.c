/* uffd_blocker: a process whose memory never answers a read.  It looks
 * like a CPython to profd (a _PyRuntime symbol, the first thing read of a
 * Python), but those pages are a userfaultfd range that nobody serves:
 * a read of them from outside (process_vm_readv) waits in the page fault
 * until this process exits.  As a FUSE file whose server never answers
 * would, or any user's userfaultfd where the kernel lets them.
 * Prints "ready" once registered, then sleeps argv[1] seconds (60).
 * Needs root (or vm.unprivileged_userfaultfd=1): exits 77 otherwise. */
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define RUNTIME_SIZE (16 * 4096)

__attribute__((aligned(65536))) char _PyRuntime[RUNTIME_SIZE];

int main(int argc, char **argv)
{
	struct uffdio_api api = {.api = UFFD_API};
	struct uffdio_register reg = {
	    .range = {.start = (unsigned long)_PyRuntime, .len = RUNTIME_SIZE},
	    .mode = UFFDIO_REGISTER_MODE_MISSING,
	};
	int seconds = argc > 1 ? atoi(argv[1]) : 60;
	int uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC);

	if (uffd < 0) {
		perror("userfaultfd");
		return 77;
	}
	if (ioctl(uffd, UFFDIO_API, &api)) {
		perror("UFFDIO_API");
		return 1;
	}
	/* Anonymous pages, never touched: every one is missing.  Mapped
	 * unreadable until registered: profd may read _PyRuntime at any
	 * moment after exec, and a read between the mmap and the register
	 * would map the zero page there, which no fault ever asks for. */
	if (mmap(_PyRuntime, RUNTIME_SIZE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
		 -1, 0) == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	if (ioctl(uffd, UFFDIO_REGISTER, &reg)) {
		perror("UFFDIO_REGISTER");
		return 1;
	}
	if (mprotect(_PyRuntime, RUNTIME_SIZE, PROT_READ | PROT_WRITE)) {
		perror("mprotect");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	sleep((unsigned int)seconds);
	return 0;
}
