/* procfile: opening files a profiled process names, against the attacks
 * its owner can mount: a symlink swapped under a mapped library, a FIFO
 * where a library was, an absolute symlink out of a container's root, no
 * openat2 at all, a mapping split after maps was read, 1 TB sparse files as executable and as the
 * .gnu_debuglink target, and an .eh_frame of a million tiny entries. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "elffile.h"
#include "elfsym.h"
#include "rootfs.h"
#include "scratch.h"
#include "symcache.h"
#include "unwind_table.h"

#define TB (1ull << 40)
#define GB (1ull << 30)

static int setup(void **state)
{
	(void)state;
	return scratch_setup("test_procfile");
}

static int teardown(void **state)
{
	return scratch_teardown(state);
}

static const char *at(const char *rel)
{
	static char bufs[4][1024];
	static int i;
	char *p = bufs[i++ % 4];

	snprintf(p, sizeof(bufs[0]), "%s/%s", dir, rel);
	return p;
}

static void write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A child mapping dir/lib/libswap.so executable until its stdin closes;
 * *m gets that mapping from its real /proc/PID/maps. */
static pid_t map_library(struct procmaps *maps, const struct procmap **m, int *keep)
{
	int in[2], out[2];
	pid_t pid;
	char c;
	size_t i;

	assert_int_equal(pipe(in), 0);
	assert_int_equal(pipe(out), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int fd = open(at("lib/libswap.so"), O_RDONLY);
		void *p = fd < 0 ? MAP_FAILED
				 : mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);

		if (p == MAP_FAILED || write(out[1], "r", 1) != 1)
			_exit(1);
		close(in[1]);
		while (read(in[0], &c, 1) > 0)
			;
		_exit(0);
	}
	close(in[0]);
	close(out[1]);
	assert_int_equal(read(out[0], &c, 1), 1);
	close(out[0]);
	*keep = in[1];
	assert_int_equal(procmaps_read(pid, maps), 0);
	*m = NULL;
	for (i = 0; i < maps->n; i++)
		if (!strcmp(maps->maps[i].path, at("lib/libswap.so")))
			*m = &maps->maps[i];
	assert_non_null(*m);
	return pid;
}

/* The library a process maps is replaced by a symlink to a file the
 * process's owner may not read (here dir/secret): whatever the path now
 * names, the open gives the mapped file or an error, never the target. */
static void test_symlink_swapped_under_mapped_library(void **state)
{
	const struct procmap *m;
	struct procmaps maps;
	char fake_root[600], link_target[600];
	struct stat st;
	int keep, fd;
	pid_t pid;

	(void)state;
	assert_int_equal(mkdir(at("lib"), 0755), 0);
	write_file(at("lib/libswap.so"), "the mapped library\n");
	write_file(at("secret"), "root's secret\n");
	pid = map_library(&maps, &m, &keep);
	assert_int_equal(unlink(at("lib/libswap.so")), 0);
	assert_int_equal(symlink(at("secret"), at("lib/libswap.so")), 0);

	/* Through the real /proc: map_files (root), else the path with its
	 * identity checked. */
	fd = procfile_open_mapped("/proc", pid, m);
	if (fd >= 0) {
		assert_int_equal(fstat(fd, &st), 0);
		assert_int_equal(st.st_ino, m->inode);
		close(fd);
	} else {
		assert_int_equal(fd, -ESTALE);
	}
	/* By path alone (a proc root without map_files): refused. */
	assert_int_equal(mkdir(at("proc"), 0755), 0);
	snprintf(fake_root, sizeof(fake_root), "proc/%d", (int)pid);
	assert_int_equal(mkdir(at(fake_root), 0755), 0);
	snprintf(link_target, sizeof(link_target), "/proc/%d/root", (int)pid);
	snprintf(fake_root, sizeof(fake_root), "proc/%d/root", (int)pid);
	assert_int_equal(symlink(link_target, at(fake_root)), 0);
	assert_int_equal(procfile_open_mapped(at("proc"), pid, m), -ESTALE);

	close(keep);
	waitpid(pid, NULL, 0);
	procmaps_free(&maps);
}

/* The range read from maps is split before the open (the dynamic loader
 * maps a library whole, then its segments over it; a report at dlopen
 * races that): the file is found again where the process maps it now,
 * not by its path, which here names another file. */
static void test_mapping_split_after_maps_read(void **state)
{
	int in[2], out[2], fd;
	const struct procmap *m = NULL;
	struct procmaps maps;
	struct stat st;
	size_t i;
	pid_t pid;
	char c;

	(void)state;
	if (geteuid() != 0)
		skip(); /* map_files needs CAP_SYS_ADMIN */
	assert_int_equal(mkdir(at("lib"), 0755), 0);
	write_file(at("lib/libswap.so"), "the mapped library\n");
	write_file(at("secret"), "root's secret\n");
	assert_int_equal(pipe(in), 0);
	assert_int_equal(pipe(out), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		long page = sysconf(_SC_PAGESIZE);
		int lib = open(at("lib/libswap.so"), O_RDONLY);
		char *p = lib < 0 ? MAP_FAILED
				  : mmap(NULL, 2 * page, PROT_READ | PROT_EXEC, MAP_PRIVATE, lib, 0);

		close(in[1]);
		close(out[0]);
		/* Mapped whole; told to go on, split in two as a loader does. */
		if (p == MAP_FAILED || write(out[1], "r", 1) != 1 || read(in[0], &c, 1) != 1 ||
		    mprotect(p + page, page, PROT_READ) || write(out[1], "s", 1) != 1)
			_exit(1);
		while (read(in[0], &c, 1) > 0)
			;
		_exit(0);
	}
	close(in[0]);
	close(out[1]);
	assert_int_equal(read(out[0], &c, 1), 1);
	assert_int_equal(procmaps_read(pid, &maps), 0);
	for (i = 0; i < maps.n; i++)
		if (!strcmp(maps.maps[i].path, at("lib/libswap.so")))
			m = &maps.maps[i];
	assert_non_null(m);
	assert_int_equal(write(in[1], "s", 1), 1);
	assert_int_equal(read(out[0], &c, 1), 1);
	assert_int_equal(c, 's');
	assert_int_equal(unlink(at("lib/libswap.so")), 0);
	assert_int_equal(symlink(at("secret"), at("lib/libswap.so")), 0);

	fd = procfile_open_mapped("/proc", pid, m);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_ino, m->inode);
	close(fd);

	close(in[1]);
	close(out[0]);
	waitpid(pid, NULL, 0);
	procmaps_free(&maps);
}

/* A container's root: absolute symlinks and ".." resolve inside it. */
static void test_symlink_out_of_root(void **state)
{
	struct procfile_id want;
	struct stat st;
	int fd;

	(void)state;
	write_file(at("secret"), "host file\n");
	assert_int_equal(mkdir(at("ctr"), 0755), 0);
	assert_int_equal(mkdir(at("ctr/lib"), 0755), 0);
	write_file(at("ctr/lib/real.so"), "inside\n");
	assert_int_equal(symlink(at("secret"), at("ctr/lib/abs.so")), 0);
	assert_int_equal(symlink("../../../../../../secret", at("ctr/lib/dotdot.so")), 0);
	assert_int_equal(symlink("/proc/self/root/etc/passwd", at("ctr/lib/magic.so")), 0);
	assert_int_equal(procfile_open(at("ctr"), "/lib/abs.so", NULL), -ENOENT);
	assert_int_equal(procfile_open(at("ctr"), "/lib/dotdot.so", NULL), -ENOENT);
	assert_true(procfile_open(at("ctr"), "/lib/magic.so", NULL) < 0);
	assert_int_equal(rootfs_open(at("ctr"), "/lib/abs.so"), -ENOENT);

	/* Inside the root, the identity decides. */
	assert_int_equal(stat(at("ctr/lib/real.so"), &st), 0);
	want = (struct procfile_id){major(st.st_dev), minor(st.st_dev), st.st_ino};
	fd = procfile_open(at("ctr"), "/lib/real.so", &want);
	assert_true(fd >= 0);
	close(fd);
	want.inode++;
	assert_int_equal(procfile_open(at("ctr"), "/lib/real.so", &want), -ESTALE);
}

/* A FIFO where the library was: not opened for reading symbols, and
 * never waited on (the open would block forever without O_NONBLOCK). */
static void test_fifo_where_library_was(void **state)
{
	struct procmap m = {.start = 0x400000, .end = 0x401000, .prot = 5};
	struct symcache *c = symcache_new(4);
	struct stat st;
	double t0 = now_s();

	(void)state;
	assert_non_null(c);
	assert_int_equal(mkdir(at("proc"), 0755), 0);
	assert_int_equal(mkdir(at("proc/77"), 0755), 0);
	assert_int_equal(mkdir(at("proc/77/root"), 0755), 0);
	assert_int_equal(mkdir(at("proc/77/root/lib"), 0755), 0);
	assert_int_equal(mkfifo(at("proc/77/root/lib/libgone.so"), 0644), 0);
	assert_int_equal(stat(at("proc/77/root/lib/libgone.so"), &st), 0);
	m.dev_major = major(st.st_dev);
	m.dev_minor = minor(st.st_dev);
	m.inode = st.st_ino;
	m.path = "/lib/libgone.so";
	assert_int_equal(procfile_open(at("proc/77/root"), "/lib/libgone.so", NULL), -EINVAL);
	assert_int_equal(procfile_open_mapped(at("proc"), 77, &m), -EINVAL);
	assert_null(symcache_get(c, at("proc"), 77, &m));
	assert_int_equal(procfile_open(at("proc/77/root"), "/dev/null", NULL), -ENOENT);
	assert_true(now_s() - t0 < 5);
	symcache_free(c);
}

/* Without openat2 (an old kernel, a seccomp filter) the open fails; it
 * never resolves the path by joining strings, which would follow the
 * process's absolute symlinks on the host. */
static void test_no_openat2_fails_closed(void **state)
{
	struct sock_filter filter[] = {
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat2, 0, 1),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {sizeof(filter) / sizeof(filter[0]), filter};
	bool closed;
	int status;
	pid_t pid;

	(void)state;
	assert_int_equal(mkdir(at("ctr"), 0755), 0);
	write_file(at("ctr/real.so"), "inside\n");
	assert_true(procfile_open(at("ctr"), "/real.so", NULL) >= 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
		    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
			_exit(2);
		closed = procfile_open(at("ctr"), "/real.so", NULL) == -ENOSYS &&
			 rootfs_open(at("ctr"), "/real.so") == -ENOSYS;
		_exit(closed ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* ---- 1 TB sparse files ---- */

struct sec {
	const char *name;
	uint32_t type;
	uint64_t off, size, entsize;
	uint32_t link;
};

static void put(int fd, uint64_t off, const void *p, size_t n)
{
	assert_int_equal(pwrite(fd, p, n, (off_t)off), (ssize_t)n);
}

/* An x86-64 ELF with one executable PT_LOAD, the given sections (names
 * in .shstrtab, section 1) and the file stretched to size with a hole. */
static bool write_elf(const char *path, const struct sec *secs, size_t n, uint64_t size)
{
	Elf64_Ehdr eh = {
	    .e_ident = {ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64, ELFDATA2LSB, EV_CURRENT},
	    .e_type = ET_DYN,
	    .e_machine = EM_X86_64,
	    .e_version = EV_CURRENT,
	    .e_phoff = 64,
	    .e_shoff = 0x1000,
	    .e_ehsize = 64,
	    .e_phentsize = sizeof(Elf64_Phdr),
	    .e_phnum = 1,
	    .e_shentsize = sizeof(Elf64_Shdr),
	    .e_shnum = (uint16_t)(n + 2),
	    .e_shstrndx = 1};
	Elf64_Phdr ph = {.p_type = PT_LOAD,
			 .p_flags = PF_R | PF_X,
			 .p_filesz = 0x2000,
			 .p_memsz = 0x2000,
			 .p_align = 0x1000};
	Elf64_Shdr sh[16] = {{0}};
	char names[256] = "";
	size_t i, len = 1;
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);

	assert_true(fd >= 0 && n + 2 <= 16);
	for (i = 0; i < n + 1; i++) {
		const char *name = i ? secs[i - 1].name : ".shstrtab";

		sh[i + 1].sh_name = (uint32_t)len;
		memcpy(names + len, name, strlen(name) + 1);
		len += strlen(name) + 1;
	}
	sh[1].sh_type = SHT_STRTAB;
	sh[1].sh_offset = 0x100;
	sh[1].sh_size = len;
	for (i = 0; i < n; i++) {
		sh[i + 2].sh_type = secs[i].type;
		sh[i + 2].sh_offset = secs[i].off;
		sh[i + 2].sh_size = secs[i].size;
		sh[i + 2].sh_entsize = secs[i].entsize;
		sh[i + 2].sh_link = secs[i].link;
		sh[i + 2].sh_addralign = 1;
	}
	put(fd, 0, &eh, sizeof(eh));
	put(fd, 64, &ph, sizeof(ph));
	put(fd, 0x100, names, len);
	put(fd, 0x1000, sh, (n + 2) * sizeof(sh[0]));
	if (ftruncate(fd, (off_t)size)) {
		close(fd);
		return false;
	}
	close(fd);
	return true;
}

/* The executable itself: .symtab, .strtab, .eh_frame and the .debug
 * sections claim 4 GiB each of a 1 TB hole.  Reading them would cost
 * gigabytes of memory and seconds; each is refused by its cap. */
static void test_sparse_huge_executable(void **state)
{
	const struct sec secs[] = {
	    {".symtab", SHT_SYMTAB, 0x10000, 4 * GB, sizeof(Elf64_Sym), 3},
	    {".strtab", SHT_STRTAB, 0x10000 + 4 * GB, 4 * GB, 0, 0},
	    {".eh_frame", SHT_PROGBITS, 0x10000 + 8 * GB, 4 * GB, 0, 0},
	    {".debug_frame", SHT_PROGBITS, 0x10000 + 12 * GB, 4 * GB, 0, 0},
	    {".debug_info", SHT_PROGBITS, 0x10000 + 16 * GB, 4 * GB, 0, 0},
	};
	struct unwind_table t;
	struct elfsym *es;
	uint64_t refused = elffile_too_big();
	double t0;
	int fd;

	(void)state;
	if (!write_elf(at("huge"), secs, sizeof(secs) / sizeof(secs[0]), TB))
		skip(); /* this file system holds no 1 TB file */
	t0 = now_s();
	es = elfsym_open("/huge", dir);
	assert_non_null(es);
	assert_int_equal(elfsym_nsyms(es), 0);
	elfsym_free(es);
	assert_true(elffile_too_big() > refused);
	refused = elffile_too_big();
	fd = open(at("huge"), O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(unwind_table_build_fd(fd, NULL, &t), 0);
	assert_int_equal(t.nrows, 0);
	unwind_table_free(&t);
	close(fd);
	assert_true(elffile_too_big() >= refused + 2); /* .eh_frame, the .debug set */
	assert_true(now_s() - t0 < 2);
}

/* A stripped file whose .gnu_debuglink names a 1 TB sparse file next to
 * it: the debug file is read whole for its CRC, so without a cap this
 * takes hours. */
static void test_sparse_huge_debuglink_target(void **state)
{
	const struct sec secs[] = {{".gnu_debuglink", SHT_PROGBITS, 0x200, 16, 0, 0}};
	static const char link[16] = "huge.debug\0\0\x12\x34\x56\x78";
	struct elfsym *es;
	uint64_t refused = elffile_too_big();
	double t0;
	int fd;

	(void)state;
	assert_true(write_elf(at("stripped"), secs, 1, 0x2000));
	fd = open(at("stripped"), O_WRONLY);
	assert_true(fd >= 0);
	put(fd, 0x200, link, sizeof(link));
	close(fd);
	fd = open(at("huge.debug"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	if (ftruncate(fd, (off_t)TB)) {
		close(fd);
		skip();
	}
	close(fd);
	t0 = now_s();
	/* "/" of the root dir: the file's path as the process sees it. */
	es = elfsym_open("/stripped", dir);
	assert_non_null(es);
	assert_false(elfsym_has_debug_file(es));
	elfsym_free(es);
	assert_true(elffile_too_big() > refused);
	assert_true(now_s() - t0 < 2);
}

/* An .eh_frame well under the section cap but made of a million and
 * more minimal CIEs: the entry count bounds the work, not the size. */
static void test_many_cfi_entries(void **state)
{
	static const uint8_t cie[16] = {12, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0x78, 16, 0, 0, 0};
	const uint64_t n = UNWIND_TABLE_MAX_CFI_ENTRIES + 1;
	const struct sec secs[] = {{".eh_frame", SHT_PROGBITS, 0x10000, n * sizeof(cie), 0, 0}};
	uint64_t refused = elffile_too_big(), i;
	uint8_t *buf = malloc(n * sizeof(cie));
	struct unwind_table t;
	double t0;
	int fd;

	(void)state;
	assert_non_null(buf);
	for (i = 0; i < n; i++)
		memcpy(buf + i * sizeof(cie), cie, sizeof(cie));
	assert_true(write_elf(at("cies"), secs, 1, 0x10000 + n * sizeof(cie)));
	fd = open(at("cies"), O_RDWR);
	assert_true(fd >= 0);
	put(fd, 0x10000, buf, n * sizeof(cie));
	free(buf);
	t0 = now_s();
	assert_int_equal(unwind_table_build_fd(fd, NULL, &t), -E2BIG);
	close(fd);
	assert_true(elffile_too_big() > refused);
	assert_true(now_s() - t0 < 5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_symlink_swapped_under_mapped_library, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_mapping_split_after_maps_read, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_symlink_out_of_root, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_fifo_where_library_was, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_no_openat2_fails_closed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_sparse_huge_executable, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_sparse_huge_debuglink_target, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_many_cfi_entries, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
