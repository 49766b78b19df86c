/* symbolize: frame names for a real child process (PIE, vdso, anon,
 * return addresses, C++), kernel frames, JIT perf maps, and the file
 * cache (identity, failures, eviction, map_files) on a fake /proc. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>

#include "elfsym.h"
#include "procmaps.h"
#include "perfmap.h"
#include "symbolize.h"
#include "symcache.h"
#include "symload.h"
#include "symtest.h"

static const char child_src[] =
	"#include <stdio.h>\n"
	"#include <sys/mman.h>\n"
	"#include <unistd.h>\n"
	"void *volatile ret_leaf, *volatile ret_park;\n"
	"static void *anon;\n"
	"void known_leaf(void) { ret_leaf = __builtin_return_address(0); }\n"
	"int known_function(int x) { known_leaf(); return x + 1; }\n"
	"void cxx_named(void) __asm__(\"_ZN5outer5innerEv\");\n"
	"void cxx_named(void) { __asm__ volatile(\"\"); }\n"
	"__attribute__((noreturn)) void park(void)\n"
	"{\n"
	"	char c;\n"
	"	ret_park = __builtin_return_address(0);\n"
	"	printf(\"%p %p %p %p %p\\n\", (void *)known_function, ret_leaf,\n"
	"	       (void *)cxx_named, anon, ret_park);\n"
	"	fflush(stdout);\n"
	"	(void)!read(0, &c, 1);\n"
	"	_exit(0);\n"
	"}\n"
	"void ends_with_call(void) { park(); }\n"
	"void after_ends(void) { }\n"
	"int main(void)\n"
	"{\n"
	"	anon = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);\n"
	"	known_function(1);\n"
	"	ends_with_call();\n"
	"}\n";

static const char fake_src[] = "int fake_fn(int x) { return x * 5 + 1; }\n"
			       "int fake_other(int x) { return x - 1; }\n";

static const char ksyms[] = "ffffffff81000000 T _stext\n"
			    "ffffffff81000100 T do_sys_poll\n"
			    "ffffffff81000200 t tcp_sendmsg\t[mymod]\n"
			    "ffffffff81000300 T _etext\n";

#define FAKE_PID 4242
/* The fake process's uid: another user's when we are root (so chown
 * can give its perf map to it), else our own. */
#define FAKE_UID (geteuid() ? geteuid() : 4343u)
#define JIT_BASE 0x7f1000000000ull

static char D[PATH_MAX];
static char kallsyms_path[PATH_MAX + 32], proc_root[PATH_MAX + 32];

static struct {
	pid_t pid;
	int in_fd;
	uint64_t known_function, ret_leaf, cxx_named, anon, ret_park;
	struct procmaps maps;
	uint64_t base; /* where the executable's offset 0 is mapped */
} child = { .pid = -1, .in_fd = -1 };

static const char *path_of(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *path_of(const char *fmt, ...)
{
	static char bufs[4][PATH_MAX + 1024];
	static int i;
	char *p = bufs[i++ % 4], rel[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rel, sizeof(rel), fmt, ap);
	va_end(ap);
	snprintf(p, sizeof(bufs[0]), "%s/%s", D, rel);
	return p;
}

static int start_child(void)
{
	int in[2], out[2];
	char line[512];
	FILE *f;

	if (pipe(in) || pipe(out))
		return -1;
	child.pid = fork();
	if (child.pid < 0)
		return -1;
	if (child.pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		execl(path_of("child"), "child", (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	child.in_fd = in[1];
	f = fdopen(out[0], "r");
	if (!f || !fgets(line, sizeof(line), f))
		return -1;
	fclose(f);
	if (sscanf(line, "%" SCNx64 " %" SCNx64 " %" SCNx64 " %" SCNx64 " %" SCNx64, &child.known_function,
		   &child.ret_leaf, &child.cxx_named, &child.anon, &child.ret_park) != 5)
		return -1;
	if (procmaps_read(child.pid, &child.maps))
		return -1;
	for (size_t i = 0; i < child.maps.n; i++) {
		const struct procmap *m = &child.maps.maps[i];
		const char *slash = strrchr(m->path, '/');

		if (slash && !strcmp(slash, "/child") && m->offset == 0) {
			child.base = m->start;
			break;
		}
	}
	return child.base ? 0 : -1;
}

/* A fake /proc/FAKE_PID: root/opt with two copies of a library and a
 * corrupt one, a status with a namespaced pid, a JIT perf map. */
static int build_fake_proc(void)
{
	const char *root = path_of("proc/%d/root", FAKE_PID);
	char status[256];

	if (symtest_write_str(path_of("fake.c"), fake_src) ||
	    symtest_sh("cd '%s' && %s -O0 -fPIC -shared -o libfake.so fake.c && "
		       "mkdir -p '%s/opt' '%s/tmp' proc/%d/map_files && "
		       "cp libfake.so '%s/opt/libfake.so' && cp libfake.so '%s/opt/libfake2.so' && "
		       "head -c 5000 /dev/urandom > '%s/opt/bad.so'",
		       D, symtest_cc(), root, root, FAKE_PID, root, root, root))
		return -1;
	snprintf(status, sizeof(status),
		 "Name:\tjit\nPid:\t4242\nNSpid:\t4242\t7\nUid:\t%u\t%u\t%u\t%u\n", FAKE_UID,
		 FAKE_UID, FAKE_UID, FAKE_UID);
	if (symtest_write_str(path_of("proc/%d/status", FAKE_PID), status))
		return -1;
	if (symtest_write_str(path_of("proc/%d/root/tmp/perf-7.map", FAKE_PID),
			      "7f1000000000 100 jit_fn_a\n"
			      "0x7f1000000100 0x80 LuaJIT:trace 12\n"
			      "this line is junk\n"))
		return -1;
	/* The process's own map, as a JIT running as FAKE_UID writes it. */
	return chown(path_of("proc/%d/root/tmp/perf-7.map", FAKE_PID), FAKE_UID, (gid_t)-1);
}

static int setup(void **state)
{
	(void)state;
	snprintf(kallsyms_path, sizeof(kallsyms_path), "%s/kallsyms", D);
	snprintf(proc_root, sizeof(proc_root), "%s/proc", D);
	if (symtest_write_str(kallsyms_path, ksyms) || symtest_write_str(path_of("child.c"), child_src) ||
	    build_fake_proc())
		return -1;
	if (symtest_sh("cd '%s' && %s -O0 -fPIE -pie -o child child.c && "
		       "%s -O0 -fno-pie -no-pie -o nonpie child.c && cp nonpie proc/%d/root/opt/",
		       D, symtest_cc(), symtest_cc(), FAKE_PID))
		return -1;
	return start_child();
}

static int teardown(void **state)
{
	(void)state;
	if (child.in_fd >= 0)
		close(child.in_fd);
	if (child.pid > 0)
		waitpid(child.pid, NULL, 0);
	procmaps_free(&child.maps);
	return 0;
}

static struct symbolizer *new_sym(const char *root, size_t max_files)
{
	struct symbolizer_opts o = {
		.max_files = max_files,
		.kallsyms_path = kallsyms_path,
		.proc_root = root,
	};
	struct symbolizer *s = symbolizer_new(&o);

	assert_non_null(s);
	return s;
}

static void expect_user(struct symbolizer *s, int pid, const struct procmaps *m, uint64_t ip, bool ret,
			const char *want, uint32_t want_kind)
{
	struct buf name;
	uint32_t kind = 99;

	buf_init(&name);
	assert_int_equal(symbolizer_user(s, pid, m, ip, ret, &name, &kind, NULL), 0);
	if (strcmp(buf_cstr(&name), want) || kind != want_kind)
		fail_msg("ip 0x%" PRIx64 ": got \"%s\" kind %u, want \"%s\" kind %u", ip, buf_cstr(&name),
			 kind, want, want_kind);
	buf_free(&name);
}

static void test_child_functions(void **state)
{
	struct symbolizer *s = new_sym(NULL, 0);
	struct symbolizer_counters c;

	(void)state;
	expect_user(s, child.pid, &child.maps, child.known_function, false, "known_function", FRAME_NATIVE);
	expect_user(s, child.pid, &child.maps, child.known_function + 4, true, "known_function",
		    FRAME_NATIVE);
	/* The return address into known_function after calling the leaf. */
	expect_user(s, child.pid, &child.maps, child.ret_leaf, true, "known_function", FRAME_NATIVE);
	expect_user(s, child.pid, &child.maps, child.cxx_named, false, "outer::inner()", FRAME_NATIVE);
	symbolizer_stats(s, &c);
	assert_int_equal(c.files_cached, 1); /* one file, parsed once */
	assert_int_equal(c.lookups, 4);
	assert_int_equal(c.misses, 0);
	symbolizer_free(s);
}

/* With a loader set, a new file is never read on the caller's thread: the
 * loader is asked once, the frame is named by offset and flagged as
 * waiting meanwhile, and once the answer is handed back the same frame
 * gets its symbol. */
static void test_loader_reads_elsewhere(void **state)
{
	struct symbolizer *s = new_sym(NULL, 0);
	struct load_req req = { 0 };
	struct symcache_loaded res;
	struct symbolizer_counters c;
	struct buf name;
	uint32_t kind;

	(void)state;
	buf_init(&name);
	symbolizer_set_loader(s, &(struct symcache_loader){ record_load, &req });
	assert_int_equal(symbolizer_user(s, child.pid, &child.maps, child.known_function, false,
					 &name, &kind, NULL), 0);
	assert_true(symbolizer_waiting(s));
	assert_int_equal(kind, FRAME_UNKNOWN);
	assert_int_equal(req.n, 1);
	assert_int_equal(symbolizer_loading(s), 1);
	assert_int_equal(symbolizer_user(s, child.pid, &child.maps, child.known_function + 4, true,
					 &name, &kind, NULL), 0);
	assert_true(symbolizer_waiting(s));
	assert_int_equal(req.n, 1); /* asked once */
	symbolizer_stats(s, &c);
	assert_int_equal(c.files_cached, 0);
	symcache_load("/proc", req.pid, &req.map, &res);
	assert_non_null(res.es);
	symbolizer_file_loaded(s, &req.map, &res);
	assert_int_equal(symbolizer_loading(s), 0);
	buf_free(&name);
	expect_user(s, child.pid, &child.maps, child.known_function, false, "known_function",
		    FRAME_NATIVE);
	assert_false(symbolizer_waiting(s));
	symbolizer_stats(s, &c);
	assert_int_equal(c.files_cached, 1);
	symbolizer_free(s);
}

/* The frame's binary comes back with its build-id, as readelf reads it. */
static void test_module_and_build_id(void **state)
{
	struct symbolizer *s = new_sym(NULL, 0);
	char cmd[PATH_MAX + 64], want[160] = "";
	struct sym_module mod;
	struct buf name;
	uint32_t kind;
	FILE *p;

	(void)state;
	snprintf(cmd, sizeof(cmd), "readelf -n '%s' | sed -n 's/.*Build ID: *//p'", path_of("child"));
	p = popen(cmd, "r");
	assert_non_null(p);
	if (!fgets(want, sizeof(want), p))
		want[0] = '\0';
	pclose(p);
	want[strcspn(want, "\n")] = '\0';
	assert_true(strlen(want) >= 16); /* Debian's gcc links with a build-id */
	buf_init(&name);
	assert_int_equal(symbolizer_user(s, child.pid, &child.maps, child.known_function, false, &name,
					 &kind, &mod), 0);
	assert_non_null(mod.path);
	assert_string_equal(strrchr(mod.path, '/'), "/child");
	assert_string_equal(mod.build_id, want);
	/* Anonymous memory is in no binary. */
	assert_int_equal(symbolizer_user(s, child.pid, &child.maps, child.anon + 16, false, &name,
					 &kind, &mod), 0);
	assert_null(mod.path);
	buf_free(&name);
	symbolizer_free(s);
}

/* ends_with_call's last instruction is the call to the noreturn park:
 * the return address is the first byte after it. */
static void test_call_at_function_end(void **state)
{
	struct symbolizer *s = new_sym(NULL, 0);
	uint64_t addr, size, next, nsize;

	(void)state;
	expect_user(s, child.pid, &child.maps, child.ret_park, true, "ends_with_call", FRAME_NATIVE);
	assert_true(symtest_nm(path_of("child"), "ends_with_call", &addr, &size));
	assert_true(symtest_nm(path_of("child"), "after_ends", &next, &nsize));
	if (child.ret_park - child.base == addr + size && next == addr + size)
		expect_user(s, child.pid, &child.maps, child.ret_park, false, "after_ends", FRAME_NATIVE);
	else
		print_message("layout differs; boundary case not checked\n");
	symbolizer_free(s);
}

static void test_child_unknowns(void **state)
{
	struct symbolizer *s = new_sym(NULL, 0);
	struct symbolizer_counters c;

	(void)state;
	expect_user(s, child.pid, &child.maps, child.anon, false, "[anon]", FRAME_UNKNOWN);
	expect_user(s, child.pid, &child.maps, child.anon + 100, true, "[anon]", FRAME_UNKNOWN);
	expect_user(s, child.pid, &child.maps, 0x10, false, "[unknown]", FRAME_UNKNOWN);
	expect_user(s, child.pid, NULL, child.known_function, false, "[unknown]", FRAME_UNKNOWN);
	/* The ELF header: in the file, covered by no symbol. */
	expect_user(s, child.pid, &child.maps, child.base + 0x10, false, "[child+0x10]", FRAME_UNKNOWN);
	expect_user(s, child.pid, &child.maps, child.base + 0x41, true, "[child+0x40]", FRAME_UNKNOWN);
	symbolizer_stats(s, &c);
	assert_int_equal(c.misses, 6);
	symbolizer_free(s);
}

static void test_child_vdso(void **state)
{
	uint64_t ehdr = getauxval(AT_SYSINFO_EHDR), v, sz, check;
	struct symbolizer *s = new_sym(NULL, 0);
	const struct procmap *vdso = NULL;
	struct procmaps self;
	struct elfsym *e;
	const struct procmap *m;
	struct buf name;
	uint32_t kind;

	(void)state;
	for (size_t i = 0; i < child.maps.n; i++)
		if (!strcmp(child.maps.maps[i].path, "[vdso]"))
			vdso = &child.maps.maps[i];
	if (!ehdr || !vdso)
		skip();
	/* Where clock_gettime is inside the image, found independently. */
	assert_int_equal(procmaps_read(getpid(), &self), 0);
	m = procmaps_find(&self, ehdr);
	e = elfsym_open_mem((const void *)(uintptr_t)ehdr, m->end - m->start);
	procmaps_free(&self);
	assert_non_null(e);
	assert_int_equal(elfsym_lookup_symbol(e, "__vdso_clock_gettime", &v, &sz), 0);
	assert_int_equal(elfsym_offset_to_vaddr(e, v, &check), 0);
	elfsym_free(e);
	if (check != v)
		skip(); /* image offsets differ from vaddrs; not the usual layout */

	buf_init(&name);
	assert_int_equal(symbolizer_user(s, child.pid, &child.maps, vdso->start + v + 2, true, &name, &kind, NULL), 0);
	assert_non_null(strstr(buf_cstr(&name), "clock_gettime"));
	assert_int_equal(kind, FRAME_NATIVE);
	buf_free(&name);
	symbolizer_free(s);
}

static void test_kernel(void **state)
{
	struct symbolizer *s = new_sym(NULL, 0);
	struct symbolizer_counters c;
	struct buf name;
	uint32_t kind = 0;

	(void)state;
	buf_init(&name);
	assert_int_equal(symbolizer_kernel(s, 0xffffffff81000150ull, &name, &kind), 0);
	assert_string_equal(buf_cstr(&name), "do_sys_poll_[k]");
	assert_int_equal(kind, FRAME_KERNEL);
	assert_int_equal(symbolizer_kernel(s, 0xffffffff81000200ull, &name, &kind), 0);
	assert_string_equal(buf_cstr(&name), "tcp_sendmsg_[k]");
	assert_int_equal(symbolizer_kernel(s, 0xffffffff81000300ull, &name, &kind), 0);
	assert_string_equal(buf_cstr(&name), "[unknown]_[k]");
	assert_int_equal(kind, FRAME_KERNEL);
	symbolizer_stats(s, &c);
	assert_int_equal(c.kernel_lookups, 3);
	assert_int_equal(c.kernel_misses, 1);
	assert_int_equal(c.kallsyms_symbols, 3);
	buf_free(&name);
	symbolizer_free(s);
}

/* Hidden kernel addresses: a warning, then unknown kernel frames. */
static void test_kernel_hidden(void **state)
{
	struct symbolizer_opts o = { .kallsyms_path = path_of("kallsyms.hidden") };
	struct symbolizer_counters c;
	struct symbolizer *s;
	struct buf name;
	uint32_t kind;

	(void)state;
	assert_int_equal(symtest_write_str(o.kallsyms_path, "0000000000000000 T _stext\n"), 0);
	s = symbolizer_new(&o);
	assert_non_null(s);
	buf_init(&name);
	assert_int_equal(symbolizer_kernel(s, 0xffffffff81000150ull, &name, &kind), 0);
	assert_string_equal(buf_cstr(&name), "[unknown]_[k]");
	symbolizer_stats(s, &c);
	assert_int_equal(c.kallsyms_symbols, 0);
	buf_free(&name);
	symbolizer_free(s);
	symbolizer_free(NULL);
}

/* maps text mapping all of a fake-root file r-xp at start. */
static void fake_maps(struct procmaps *m, const char *const *paths, const uint64_t *starts,
		      const int64_t *ino_delta, size_t n)
{
	char text[4096] = "";
	size_t len = 0;

	for (size_t i = 0; i < n; i++) {
		struct stat st;

		if (stat(path_of("proc/%d/root%s", FAKE_PID, paths[i]), &st))
			st.st_ino = 999, st.st_dev = 0;
		len += (size_t)snprintf(text + len, sizeof(text) - len,
					"%" PRIx64 "-%" PRIx64 " r-xp 00000000 %02x:%02x %" PRIu64 " %s\n",
					starts[i], starts[i] + 0x10000, major(st.st_dev), minor(st.st_dev),
					(uint64_t)((int64_t)st.st_ino + ino_delta[i]), paths[i]);
	}
	assert_int_equal(procmaps_parse(text, len, m), 0);
}

/* A function's file offset in file (mapped whole at offset 0). */
static uint64_t file_off_of(const char *file, const char *fn)
{
	struct symtest_load loads[16];
	uint64_t addr, size;
	int n = symtest_loads(path_of("%s", file), loads, 16);

	assert_true(symtest_nm(path_of("%s", file), fn, &addr, &size));
	for (int i = 0; i < n; i++)
		if (addr >= loads[i].vaddr && addr < loads[i].vaddr + loads[i].filesz)
			return addr - loads[i].vaddr + loads[i].off;
	fail_msg("%s not in a PT_LOAD", fn);
	return 0;
}

static void test_fake_root_cache(void **state)
{
	static const char *const paths[] = { "/opt/libfake.so", "/opt/libfake2.so", "/opt/bad.so" };
	static const uint64_t starts[] = { 0x10000000, 0x20000000, 0x30000000 };
	static const int64_t same[] = { 0, 0, 0 };
	struct symbolizer *s = new_sym(proc_root, 0);
	uint64_t off = file_off_of("libfake.so", "fake_fn");
	struct symbolizer_counters c;
	struct procmaps m;
	char want[64];

	(void)state;
	fake_maps(&m, paths, starts, same, 3);
	expect_user(s, FAKE_PID, &m, starts[0] + off, false, "fake_fn", FRAME_NATIVE);
	expect_user(s, FAKE_PID, &m, starts[1] + file_off_of("libfake.so", "fake_other"), false, "fake_other", FRAME_NATIVE);
	/* The corrupt file is parsed once, then remembered as bad. */
	expect_user(s, FAKE_PID, &m, starts[2] + 0x10, false, "[bad.so+0x10]", FRAME_UNKNOWN);
	expect_user(s, FAKE_PID, &m, starts[2] + 0x20, false, "[bad.so+0x20]", FRAME_UNKNOWN);
	symbolizer_stats(s, &c);
	assert_int_equal(c.files_cached, 2);
	assert_int_equal(c.files_failed, 1);
	assert_int_equal(c.parse_failures, 1);
	assert_int_equal(c.open_failures, 0);
	/* A pid with no /proc entry: an error, but nothing cached. */
	snprintf(want, sizeof(want), "[libfake.so+0x%" PRIx64 "]", off);
	procmaps_free(&m);
	symbolizer_free(s);

	s = new_sym(proc_root, 0);
	fake_maps(&m, paths, starts, same, 1);
	expect_user(s, FAKE_PID + 1, &m, starts[0] + off, false, want, FRAME_UNKNOWN);
	symbolizer_stats(s, &c);
	assert_int_equal(c.files_failed, 0);
	assert_int_equal(c.open_failures, 1);
	procmaps_free(&m);
	symbolizer_free(s);
}

/* A non-PIE executable is mapped at its link address: unknown offsets
 * are ELF vaddrs, as addr2line wants them, not file offsets. */
static void test_fake_root_non_pie(void **state)
{
	static const char *const paths[] = { "/opt/nonpie" };
	static const uint64_t starts[] = { 0x400000 };
	static const int64_t same[] = { 0 };
	struct symbolizer *s = new_sym(proc_root, 0);
	uint64_t off = file_off_of("nonpie", "known_function"), addr, size;
	struct procmaps m;

	(void)state;
	assert_true(symtest_nm(path_of("nonpie"), "known_function", &addr, &size));
	assert_int_equal(starts[0] + off, addr);
	fake_maps(&m, paths, starts, same, 1);
	expect_user(s, FAKE_PID, &m, addr, false, "known_function", FRAME_NATIVE);
	expect_user(s, FAKE_PID, &m, 0x400010, false, "[nonpie+0x400010]", FRAME_UNKNOWN);
	procmaps_free(&m);
	symbolizer_free(s);
}

static void test_fake_root_eviction(void **state)
{
	static const char *const paths[] = { "/opt/libfake.so", "/opt/libfake2.so" };
	static const uint64_t starts[] = { 0x10000000, 0x20000000 };
	static const int64_t same[] = { 0, 0 };
	struct symbolizer *s = new_sym(proc_root, 1);
	uint64_t off = file_off_of("libfake.so", "fake_fn");
	struct symbolizer_counters c;
	struct procmaps m;

	(void)state;
	fake_maps(&m, paths, starts, same, 2);
	for (int i = 0; i < 3; i++)
		expect_user(s, FAKE_PID, &m, starts[i & 1] + off, false, "fake_fn", FRAME_NATIVE);
	symbolizer_stats(s, &c);
	assert_int_equal(c.files_cached, 1);
	assert_int_equal(c.evictions, 2);
	procmaps_free(&m);
	symbolizer_free(s);
}

/* The path names another file than the mapping's: only map_files/
 * (here a copy standing in for the kernel's link) may be used. */
static void test_fake_root_identity(void **state)
{
	static const char *const paths[] = { "/opt/libfake.so" };
	static const uint64_t starts[] = { 0x10000000 };
	static const int64_t wrong[] = { 1 };
	struct symbolizer *s = new_sym(proc_root, 0);
	uint64_t off = file_off_of("libfake.so", "fake_fn");
	struct symbolizer_counters c;
	struct procmaps m;
	char want[64];

	(void)state;
	fake_maps(&m, paths, starts, wrong, 1);
	snprintf(want, sizeof(want), "[libfake.so+0x%" PRIx64 "]", off);
	expect_user(s, FAKE_PID, &m, starts[0] + off, false, want, FRAME_UNKNOWN);
	symbolizer_stats(s, &c);
	assert_int_equal(c.open_failures, 1);
	assert_int_equal(c.files_failed, 1);
	symbolizer_free(s);

	assert_int_equal(symtest_sh("cp '%s' '%s/%d/map_files/10000000-10010000'", path_of("libfake.so"),
				    proc_root, FAKE_PID),
			 0);
	s = new_sym(proc_root, 0);
	expect_user(s, FAKE_PID, &m, starts[0] + off, false, "fake_fn", FRAME_NATIVE);
	symbolizer_free(s);
	procmaps_free(&m);
}

static void test_perf_map(void **state)
{
	static const char maps_text[] = "7f1000000000-7f1000010000 r-xp 00000000 00:00 0 \n"
					"7f2000000000-7f2000010000 rw-p 00000000 00:00 0 [heap]\n";
	struct symbolizer *s = new_sym(proc_root, 0);
	struct symbolizer_counters c;
	struct procmaps m;
	FILE *f;

	(void)state;
	assert_int_equal(procmaps_parse(maps_text, strlen(maps_text), &m), 0);
	expect_user(s, FAKE_PID, &m, JIT_BASE + 0x10, false, "jit_fn_a", FRAME_NATIVE);
	expect_user(s, FAKE_PID, &m, JIT_BASE + 0x101, true, "LuaJIT:trace 12", FRAME_NATIVE);
	expect_user(s, FAKE_PID, &m, JIT_BASE + 0x200, false, "[anon]", FRAME_UNKNOWN);
	expect_user(s, FAKE_PID, &m, 0x7f2000000010ull, false, "[heap]", FRAME_UNKNOWN);

	/* The JIT appends: picked up once the re-check interval passed. */
	f = fopen(path_of("proc/%d/root/tmp/perf-7.map", FAKE_PID), "a");
	assert_non_null(f);
	fputs("7f1000000200 40 jit_fn_new\n", f);
	fclose(f);
	usleep(1100 * 1000);
	expect_user(s, FAKE_PID, &m, JIT_BASE + 0x210, false, "jit_fn_new", FRAME_NATIVE);
	symbolizer_stats(s, &c);
	assert_int_equal(c.perfmap_loads, 2);

	symbolizer_forget_pid(s, FAKE_PID);
	expect_user(s, FAKE_PID, &m, JIT_BASE + 0x10, false, "jit_fn_a", FRAME_NATIVE);
	symbolizer_stats(s, &c);
	assert_int_equal(c.perfmap_loads, 3);
	symbolizer_forget_pid(s, 12345); /* unknown pid: no-op */
	procmaps_free(&m);
	symbolizer_free(s);
}

/* /tmp is everyone's: a perf map another user planted for the process
 * is not read (it would name the process's code as that user likes);
 * the process's own and root's are. */
static void test_perf_map_foreign_owner(void **state)
{
	static const char maps_text[] = "7f1000000000-7f1000010000 r-xp 00000000 00:00 0 \n";
	const char *map = path_of("proc/%d/root/tmp/perf-7.map", FAKE_PID);
	struct symbolizer *s = new_sym(proc_root, 0);
	struct symbolizer_counters c;
	struct procmaps m;

	(void)state;
	if (geteuid() != 0)
		skip(); /* giving the file to another user takes root */
	assert_int_equal(procmaps_parse(maps_text, strlen(maps_text), &m), 0);
	assert_int_equal(chown(map, FAKE_UID + 1, (gid_t)-1), 0);
	expect_user(s, FAKE_PID, &m, JIT_BASE + 0x10, false, "[anon]", FRAME_UNKNOWN);
	symbolizer_stats(s, &c);
	assert_int_equal(c.perfmap_loads, 0);
	assert_int_equal(c.perfmap_refused, 1);

	/* Root's map is trusted, as perf does. */
	assert_int_equal(chown(map, 0, (gid_t)-1), 0);
	symbolizer_forget_pid(s, FAKE_PID);
	expect_user(s, FAKE_PID, &m, JIT_BASE + 0x10, false, "jit_fn_a", FRAME_NATIVE);
	/* The process's own again. */
	assert_int_equal(chown(map, FAKE_UID, (gid_t)-1), 0);
	symbolizer_forget_pid(s, FAKE_PID);
	expect_user(s, FAKE_PID, &m, JIT_BASE + 0x10, false, "jit_fn_a", FRAME_NATIVE);
	symbolizer_stats(s, &c);
	assert_int_equal(c.perfmap_loads, 2);
	assert_int_equal(c.perfmap_refused, 1);

	/* A FIFO in its place is not opened (nor waited on). */
	assert_int_equal(rename(map, path_of("perf-7.map.saved")), 0);
	assert_int_equal(mkfifo(map, 0644), 0);
	assert_int_equal(chown(map, FAKE_UID, (gid_t)-1), 0);
	symbolizer_forget_pid(s, FAKE_PID);
	expect_user(s, FAKE_PID, &m, JIT_BASE + 0x10, false, "[anon]", FRAME_UNKNOWN);
	assert_int_equal(unlink(map), 0);
	assert_int_equal(rename(path_of("perf-7.map.saved"), map), 0);
	procmaps_free(&m);
	symbolizer_free(s);
}

/* The daemon reads perf maps on its worker: a due load is asked of the
 * loader (the frame waits meanwhile, nothing read here), its answer
 * names the code; an address in no mapping asks nothing (a map already
 * loaded still names it); an answer to an ask made before the process
 * was forgotten (its exec, or its pid reused) is dropped, even when a
 * new ask is pending. */
struct pm_asked {
	int n, pid;
	uint32_t seq;
	struct perfmap_stamp prev;
};

static void pm_ask(void *ctx, int pid, uint32_t seq, const struct perfmap_stamp *prev)
{
	struct pm_asked *a = ctx;

	a->n++;
	a->pid = pid;
	a->seq = seq;
	a->prev = *prev;
}

static void test_perf_map_loader(void **state)
{
	static const char maps_text[] = "7f1000000000-7f1000010000 r-xp 00000000 00:00 0 \n";
	struct symbolizer *s = new_sym(proc_root, 0);
	struct symbolizer_counters c;
	struct pm_asked a = { 0 };
	struct perfmap_loaded r;
	struct procmaps m;

	(void)state;
	assert_int_equal(procmaps_parse(maps_text, strlen(maps_text), &m), 0);
	symbolizer_set_perfmap_loader(s, &(struct symbolizer_perfmap_loader){ pm_ask, &a });
	expect_user(s, FAKE_PID, &m, 0x7f3000000000ull, false, "[unknown]", FRAME_UNKNOWN);
	assert_int_equal(a.n, 0); /* in no mapping: no JIT's code */
	expect_user(s, FAKE_PID, &m, JIT_BASE + 0x10, false, "[anon]", FRAME_UNKNOWN);
	assert_true(symbolizer_waiting(s));
	assert_int_equal(symbolizer_loading(s), 1);
	assert_int_equal(a.n, 1);
	assert_int_equal(a.pid, FAKE_PID);
	assert_int_equal(a.prev.nspid, 0); /* status not read here */
	expect_user(s, FAKE_PID, &m, JIT_BASE + 0x20, false, "[anon]", FRAME_UNKNOWN);
	assert_int_equal(a.n, 1); /* asked once */

	perfmap_load(proc_root, a.pid, &a.prev, &r); /* what the worker runs */
	assert_int_equal(r.stamp.nspid, 7);
	assert_non_null(r.pm);
	symbolizer_perfmap_loaded(s, FAKE_PID, a.seq, &r);
	assert_null(r.pm);
	assert_int_equal(symbolizer_loading(s), 0);
	expect_user(s, FAKE_PID, &m, JIT_BASE + 0x10, false, "jit_fn_a", FRAME_NATIVE);
	assert_false(symbolizer_waiting(s));
	symbolizer_stats(s, &c);
	assert_int_equal(c.perfmap_loads, 1);
	/* Outside every mapping (a region newer than the maps read): named
	 * from the map loaded, nothing asked. */
	m.maps[0].end = m.maps[0].start + 0x100;
	expect_user(s, FAKE_PID, &m, JIT_BASE + 0x101, true, "LuaJIT:trace 12", FRAME_NATIVE);
	assert_int_equal(a.n, 1);
	m.maps[0].end = m.maps[0].start + 0x10000;

	/* Forgotten (an exec) while its load is out, then asked again: the
	 * first answer is dropped, the second taken. */
	symbolizer_forget_pid(s, FAKE_PID);
	expect_user(s, FAKE_PID, &m, JIT_BASE + 0x10, false, "[anon]", FRAME_UNKNOWN);
	assert_int_equal(a.n, 2);
	{
		struct pm_asked first = a;

		symbolizer_forget_pid(s, FAKE_PID);
		assert_int_equal(symbolizer_loading(s), 0);
		expect_user(s, FAKE_PID, &m, JIT_BASE + 0x10, false, "[anon]", FRAME_UNKNOWN);
		assert_int_equal(a.n, 3);
		perfmap_load(proc_root, first.pid, &first.prev, &r);
		symbolizer_perfmap_loaded(s, FAKE_PID, first.seq, &r);
		assert_null(r.pm);
		assert_int_equal(symbolizer_loading(s), 1);
		symbolizer_stats(s, &c);
		assert_int_equal(c.perfmap_loads, 1);
	}
	perfmap_load(proc_root, a.pid, &a.prev, &r);
	symbolizer_perfmap_loaded(s, FAKE_PID, a.seq, &r);
	assert_int_equal(symbolizer_loading(s), 0);
	expect_user(s, FAKE_PID, &m, JIT_BASE + 0x10, false, "jit_fn_a", FRAME_NATIVE);
	symbolizer_stats(s, &c);
	assert_int_equal(c.perfmap_loads, 2);
	procmaps_free(&m);
	symbolizer_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_child_functions),
		cmocka_unit_test(test_module_and_build_id),
		cmocka_unit_test(test_loader_reads_elsewhere),
		cmocka_unit_test(test_call_at_function_end),
		cmocka_unit_test(test_child_unknowns),
		cmocka_unit_test(test_child_vdso),
		cmocka_unit_test(test_kernel),
		cmocka_unit_test(test_kernel_hidden),
		cmocka_unit_test(test_fake_root_cache),
		cmocka_unit_test(test_fake_root_non_pie),
		cmocka_unit_test(test_fake_root_eviction),
		cmocka_unit_test(test_fake_root_identity),
		cmocka_unit_test(test_perf_map),
		cmocka_unit_test(test_perf_map_foreign_owner),
		cmocka_unit_test(test_perf_map_loader),
	};
	const char *dir = symtest_setup("symbolize");

	if (!dir)
		return 1;
	snprintf(D, sizeof(D), "%s", dir);
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, setup, teardown);
}
