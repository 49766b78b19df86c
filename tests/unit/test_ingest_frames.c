/* ingest naming frames: an address outside the maps read, a frame's
 * module, the file-wide cache (fileframes.h) serving the same file at
 * another address without a symbolizer look-up, and JIT code named by a
 * perf map written after it ran (ingest_jit.c). */
#include "ingesttest.h"
#include "ingest_int.h"
#include "perfmap.h"

/* Map this test's own text again at a new address, as a loader mapping a
 * library after the maps were read would; returns where victim_leaf is in
 * the new mapping. */
static uint64_t map_text_again(void **region, size_t *len)
{
	uint64_t leaf = (uint64_t)(uintptr_t)&victim_leaf;
	struct procmaps m = { 0 };
	const struct procmap *text;
	uint64_t at;
	int fd;

	assert_int_equal(procmaps_read(getpid(), &m), 0);
	text = procmaps_find(&m, leaf);
	assert_non_null(text);
	fd = open(text->path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	*len = (size_t)(text->end - text->start);
	*region = mmap(NULL, *len, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, (off_t)text->offset);
	assert_true(*region != MAP_FAILED);
	close(fd);
	at = (uint64_t)(uintptr_t)*region + (leaf - text->start);
	procmaps_free(&m);
	return at;
}

/* An address outside the known maps is not cached as [unknown]: once a
 * reload (rate-limited) sees the new mapping, samples get the real name. */
static void test_late_mapping_gets_named(void **state)
{
	struct fixture *f = *state;
	void *region;
	size_t len;
	char *folded;
	uint64_t leaf2;

	/* The samples' clock is set, not read: under a sanitizer the first
	 * sample's symbolization alone can outlast the backoff. */
	f->clock_ns = mono_now();
	prepare_stack(f);
	f->src.st.ips[0] = 0x10; /* never mapped: a reload finds nothing, backs off */
	send_sample(f, f->src.id, PROFD_SAMPLE_USTACK_NEW, 100);
	leaf2 = map_text_again(&region, &len);
	f->src.id++;
	f->src.present = true;
	f->src.st.ips[0] = leaf2 + 2;
	f->clock_ns += 1000000; /* within the backoff: not read again, not named */
	send_sample(f, f->src.id, PROFD_SAMPLE_USTACK_NEW, 100);
	f->src.id++;
	f->src.present = true;
	f->clock_ns += 50 * 1000000; /* past it: read again, named */
	send_sample(f, f->src.id, PROFD_SAMPLE_USTACK_NEW, 100);
	folded = dump_folded(f, 0, 0);
	assert_non_null(strstr(folded, "victim_caller;victim_leaf 1\n"));
	assert_non_null(strstr(folded, "victim_caller;[unknown] 2\n"));
	free(folded);
	munmap(region, len);
}

/* Native frames carry the binary they are in through to a dump. */
static void test_dump_keeps_modules(void **state)
{
	struct fixture *f = *state;
	struct agg_query q = { 0, 0, 0, AGG_CPU, 0 };
	struct stackset *ss = stackset_new();
	const struct ss_module *m;
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	assert_true(n > 0);
	self[n] = '\0';
	prepare_stack(f);
	send_sample(f, f->src.id, PROFD_SAMPLE_USTACK_NEW, 100);
	assert_int_equal(aggregate_dump(&f->agg, proctable_find_live(&f->pt, (uint32_t)getpid()), &q,
					ss), 0);
	assert_int_equal(ss->nstacks, 1);
	assert_int_equal(ss->stacks[0].depth, 2);
	m = stackset_frame_module(ss, ss->stacks[0].frames[1]);
	assert_non_null(m);
	assert_string_equal(m->path, self);
	stackset_free(ss);
}

/* The same file at another address (here this test's text mapped again;
 * in life another process running the same binary, or this one after its
 * maps were read again) is named from the file's cache: no look-up, and
 * the same frames as the first mapping, a return address included (its
 * ip - 1 looked up in both). */
static void test_file_cache_names_other_mapping(void **state)
{
	struct fixture *f = *state;
	uint64_t leaf = (uint64_t)(uintptr_t)&victim_leaf, leaf2, by_file0;
	struct symbolizer_counters c0, c1;
	void *region;
	size_t len;
	char *folded;

	f->clock_ns = mono_now();
	leaf2 = map_text_again(&region, &len); /* before the maps are first read */
	prepare_stack(f);
	send_sample(f, f->src.id, PROFD_SAMPLE_USTACK_NEW, 100);
	symbolizer_stats(f->sym, &c0);
	by_file0 = f->in.c.user_frames_by_file;
	assert_int_equal(by_file0, 0);
	/* Both frames in the second mapping: the caller's return address at
	 * the same offset as in the first. */
	f->src.id++;
	f->src.present = true;
	f->src.st.ips[0] = leaf2 + 2;
	f->src.st.ips[1] = leaf2 + ((uint64_t)(uintptr_t)&victim_caller + 6 - leaf);
	send_sample(f, f->src.id, PROFD_SAMPLE_USTACK_NEW, 100);
	symbolizer_stats(f->sym, &c1);
	assert_int_equal(f->in.c.user_frames_by_file, 2);
	assert_int_equal(c1.lookups, c0.lookups);
	folded = dump_folded(f, 0, 0);
	assert_string_equal(folded, "victim_caller;victim_leaf 2\n");
	free(folded);
	munmap(region, len);
}

/* Anonymous code sampled before its perf map is written: once the map
 * is read (at most a second after a miss), the earlier samples carry its
 * name too, and add up with the later ones. */
static void test_jit_named_after_it_ran(void **state)
{
	struct fixture *f = *state;
	size_t len = 4096;
	char path[64], *folded;
	uint8_t *code = mmap(NULL, len, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	FILE *map;
	int i;

	assert_true(code != MAP_FAILED);
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	unlink(path);
	f->clock_ns = mono_now();
	prepare_stack(f);
	for (i = 0; i < 3; i++) {
		if (i == 2) { /* the map written, and its reading due */
			map = fopen(path, "w");
			assert_non_null(map);
			fprintf(map, "%lx %zx JIT:late_name\n", (unsigned long)(uintptr_t)code, len);
			assert_int_equal(fclose(map), 0);
			usleep(1100 * 1000);
		}
		f->src.id++;
		f->src.present = true;
		f->src.st.ips[0] = (uint64_t)(uintptr_t)code + 0x10 * (uint64_t)(i + 1);
		send_sample(f, f->src.id, PROFD_SAMPLE_USTACK_NEW, 100);
		if (i == 1) {
			folded = dump_folded(f, 0, 0);
			assert_string_equal(folded, "victim_caller;[anon] 2\n");
			free(folded);
		}
	}
	folded = dump_folded(f, 0, 0);
	assert_string_equal(folded, "victim_caller;JIT:late_name 3\n");
	free(folded);
	assert_int_equal(f->in.c.anon_frames_named, 2);
	unlink(path);
	munmap(code, len);
}

/* The perf map loader (the daemon's worker) answers only when told. */
struct slow_loader {
	int pid;
	uint32_t seq;
	struct perfmap_stamp prev;
};

static void slow_load(void *ctx, int pid, uint32_t seq, const struct perfmap_stamp *prev)
{
	struct slow_loader *l = ctx;

	l->pid = pid;
	l->seq = seq;
	l->prev = *prev;
}

/* A sample that waited for its process's perf map longer than samples
 * are held is counted with what it has, and still named when the
 * answer comes (the daemon's worker, busy under --all-processes, left 89
 * of 492 such samples [anon] before this was so). */
static void test_jit_named_when_its_map_is_slow(void **state)
{
	struct fixture *f = *state;
	struct slow_loader sl = { 0 };
	struct symbolizer_perfmap_loader l = { slow_load, &sl };
	struct perfmap_loaded r = { 0 };
	size_t len = 4096;
	char path[64], *folded;
	uint8_t *code = mmap(NULL, len, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	FILE *map;

	assert_true(code != MAP_FAILED);
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	map = fopen(path, "w");
	assert_non_null(map);
	fprintf(map, "%lx %zx JIT:slow_map\n", (unsigned long)(uintptr_t)code, len);
	assert_int_equal(fclose(map), 0);
	symbolizer_set_perfmap_loader(f->sym, &l);
	f->clock_ns = mono_now();
	prepare_stack(f);
	f->src.st.ips[0] = (uint64_t)(uintptr_t)code + 0x10;
	send_sample(f, f->src.id, PROFD_SAMPLE_USTACK_NEW, 100);
	assert_int_equal(sl.pid, getpid()); /* asked, not answered */
	ingest_end_batch(&f->in);
	usleep(350 * 1000); /* past the hold (ingest.c's PENDING_HOLD_NS) */
	ingest_end_batch(&f->in);
	assert_int_equal(ingest_samples_pending(&f->in), 0);
	folded = dump_folded(f, 0, 0);
	assert_string_equal(folded, "victim_caller;[anon] 1\n");
	free(folded);
	perfmap_load("/proc", sl.pid, &sl.prev, &r);
	symbolizer_perfmap_loaded(f->sym, sl.pid, sl.seq, &r);
	f->src.id++;
	f->src.present = true;
	f->src.st.ips[0] = (uint64_t)(uintptr_t)code + 0x20;
	send_sample(f, f->src.id, PROFD_SAMPLE_USTACK_NEW, 100);
	folded = dump_folded(f, 0, 0);
	assert_string_equal(folded, "victim_caller;JIT:slow_map 2\n");
	free(folded);
	unlink(path);
	munmap(code, len);
}

/* Frames of their own are bounded per process, and those of a process
 * gone are made again for another: the dictionary does not grow with
 * each JIT process that comes and goes. */
static void test_jit_frames_bounded_and_reused(void **state)
{
	struct fixture *f = *state;
	struct proc_ingest pi = { 0 }, pi2 = { 0 };
	struct proc p = { .pid = 4242, .ing = &pi }, p2 = { .pid = 4243, .ing = &pi2 };
	struct sym_module mod = { .path = NULL };
	int64_t shared = aggregate_frame(&f->agg, FRAME_UNKNOWN, "[anon]"), id, first = -1;
	size_t frames, i;

	assert_true(shared >= 0);
	for (i = 0; i < 1024; i++) {
		id = ingest_anon_frame(&f->in, &p, 0x1000 + i, FRAME_UNKNOWN, "[anon]", &mod, shared);
		assert_true(id >= 0 && id != shared);
		if (!i)
			first = id;
	}
	assert_int_equal(ingest_anon_frame(&f->in, &p, 0x1000, FRAME_UNKNOWN, "[anon]", &mod,
					   shared), first);
	assert_int_equal(ingest_anon_frame(&f->in, &p, 0x9000, FRAME_UNKNOWN, "[anon]", &mod,
					   shared), shared);
	frames = f->agg.dict->nframes;
	ingest_anon_release(&pi);
	for (i = 0; i < 10; i++) {
		id = ingest_anon_frame(&f->in, &p2, 0x5000 + i, FRAME_UNKNOWN, "[anon]", &mod, shared);
		assert_true(id >= 0 && id != shared);
		assert_string_equal(f->agg.dict->frames[id].name, "[anon]");
	}
	assert_int_equal(f->agg.dict->nframes, frames);
	assert_int_equal(f->in.anon.live, 10);
	ingest_anon_release(&pi2);
	assert_int_equal(f->in.anon.live, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_late_mapping_gets_named, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dump_keeps_modules, setup, teardown),
		cmocka_unit_test_setup_teardown(test_file_cache_names_other_mapping, setup, teardown),
		cmocka_unit_test_setup_teardown(test_jit_named_after_it_ran, setup, teardown),
		cmocka_unit_test_setup_teardown(test_jit_named_when_its_map_is_slow, setup, teardown),
		cmocka_unit_test_setup_teardown(test_jit_frames_bounded_and_reused, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
