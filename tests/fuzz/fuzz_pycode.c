/* libFuzzer target: the Python code-object decoder (pycode_resolve) on a
 * hostile object graph in this process's own memory, read back through
 * process_vm_readv as profd reads a profiled interpreter.  The harness
 * lays out a code object, its type, its strings and its line table in
 * separate pages (a PROT_NONE page after the last) and links them; the
 * input supplies everything else: string lengths, kinds and states, the
 * line table's ob_size and bytes, co_firstlineno, and may leave any link
 * raw.  Input: byte 0 picks the Python version, byte 1 which links stay
 * as the input wrote them (bits 0-5) and the fingerprint the sample is
 * said to carry (bit 6: the code object's own, bit 7: another one, else
 * 0: no check), bytes 2-5 the instruction offset, then 256 bytes per
 * object (code, type, name, qualname, filename, line table; the line
 * table takes the rest). */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "profd_abi.h"
#include "pycode.h"
#include "pyoffsets.h"

enum { R_CODE, R_TYPE, R_TPNAME, R_NAME, R_QUALNAME, R_FILENAME, R_LINES, R_N };

#define PAGE 4096
#define CHUNK 256
#define LINES_PAGES 16 /* the line table's room before the guard page */

static uint8_t *arena;

static uint8_t *region(int r)
{
	return arena + (size_t)r * PAGE;
}

static int setup_arena(void)
{
	size_t len = (size_t)(R_N - 1 + LINES_PAGES + 1) * PAGE;

	arena = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (arena == MAP_FAILED)
		return -1;
	return mprotect(arena + len - PAGE, PAGE, PROT_NONE);
}

static void link_field(uint8_t *obj, uint32_t off, int target, int raw)
{
	uint64_t v = (uint64_t)(uintptr_t)region(target);

	if (off != PYOFF_NONE && off + 8 <= PAGE && !raw)
		memcpy(obj + off, &v, 8);
}

static void lay_out(const struct profd_pyoffsets *o, const uint8_t *data, size_t size, unsigned raw)
{
	size_t r, off = 0;

	memset(arena, 0, (size_t)(R_N - 1 + LINES_PAGES) * PAGE);
	for (r = 0; r < R_N && off < size; r++) {
		size_t n = r == R_LINES ? size - off : CHUNK;

		if (n > size - off)
			n = size - off;
		if (r == R_LINES && n > (size_t)LINES_PAGES * PAGE)
			n = (size_t)LINES_PAGES * PAGE;
		if (r != R_TPNAME)
			memcpy(region((int)r), data + off, n);
		off += n;
	}
	memcpy(region(R_TPNAME), "code", 5);
	link_field(region(R_CODE), o->object_type, R_TYPE, raw & 1);
	link_field(region(R_CODE), o->code_name, R_NAME, raw & 2);
	link_field(region(R_CODE), o->code_qualname, R_QUALNAME, raw & 4);
	link_field(region(R_CODE), o->code_filename, R_FILENAME, raw & 8);
	link_field(region(R_CODE), o->code_linetable, R_LINES, raw & 16);
	link_field(region(R_TYPE), o->type_name, R_TPNAME, raw & 32);
}

static uint64_t code_field(uint32_t off)
{
	uint64_t v = 0;

	if (off != PYOFF_NONE && off + 8 <= PAGE)
		memcpy(&v, region(R_CODE) + off, 8);
	return v;
}

/* The fingerprint the stack walker would read from the code object as
 * laid out (profd_pyfp), or another nonzero one when wrong. */
static uint32_t sample_fp(const struct profd_pyoffsets *o, int wrong)
{
	uint32_t first = 0, fp;

	if (o->code_firstlineno + 4 <= PAGE)
		memcpy(&first, region(R_CODE) + o->code_firstlineno, 4);
	fp = profd_pyfp(code_field(o->code_filename), code_field(o->code_name),
			code_field(o->code_qualname), code_field(o->code_linetable), first);
	if (!wrong)
		return fp;
	return fp ^ 1 ? fp ^ 1 : 2;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const int minors[] = {9, 10, 11, 12, 13};
	const struct profd_pyoffsets *o;
	struct pyruntime rt = {0};
	struct pycode_cache *c;
	struct pycode_frame fr;
	uint32_t fp = 0;
	int err;

	if (size < 6 || (!arena && setup_arena()))
		return 0;
	o = pyoffsets_builtin(3, minors[data[0] % (sizeof(minors) / sizeof(minors[0]))]);
	if (!o)
		return 0;
	rt.pid = getpid();
	rt.major = 3;
	rt.minor = minors[data[0] % (sizeof(minors) / sizeof(minors[0]))];
	rt.off = *o;
	lay_out(o, data + 6, size - 6, data[1]);
	if (data[1] & 0xc0)
		fp = sample_fp(o, data[1] & 0x80);
	c = pycode_cache_new();
	if (!c)
		return 0;
	err = pycode_resolve(c, &rt, (uint64_t)(uintptr_t)region(R_CODE), fp,
			     (int64_t)(int32_t)fuzz_u64(data, size, 2, 4), &fr);
	/* Another fingerprint is never named; its own is never stale. */
	CHECK(!(data[1] & 0x80) || err);
	if (err) {
		CHECK(err == -EINVAL || err == -EFAULT || err == -ESRCH || err == -ENOMEM ||
		      err == -E2BIG || (err == -ESTALE && (data[1] & 0x80)));
	} else {
		CHECK(fr.qualname && fr.filename);
		CHECK(strlen(fr.qualname) <= PYCODE_MAX_STR * 4);
		CHECK(strlen(fr.filename) <= PYCODE_MAX_STR * 4);
	}
	pycode_cache_free(c);
	return 0;
}
