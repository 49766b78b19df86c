/* history and its file: a file of schema 1 upgrades in place and its
 * frames still match; a garbage, foreign or newer file is moved aside
 * and a fresh one works; pages damaged under a good header fail a read
 * cleanly and the next flush starts over; a state directory we may not
 * write gives a clear error; a full disk fails the flush whole and pruning
 * makes room again.  Never a crash. */
#include "histtest.h"

#include <dirent.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <sys/wait.h>

/* Only for files named history.db.corrupt-*: the path moved aside. */
static int find_aside(char *out, size_t size)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int n = 0;

	while (d && (de = readdir(d)))
		if (!strncmp(de->d_name, "history.db.corrupt-", 19) &&
		    !strstr(de->d_name, "-wal")) {
			snprintf(out, size, "%s/%s", dir, de->d_name);
			n++;
		}
	if (d)
		closedir(d);
	return n;
}

static void write_file(const char *name, const char *data)
{
	char path[600];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(data, f);
	fclose(f);
}

static void fresh_file_works(void)
{
	struct history *h = open_hist(NULL);
	struct history_stats st;

	write_fixture(h);
	assert_int_equal(window(h, 0, 0), 39);
	assert_int_equal(history_stats(h, &st), 0);
	history_close(h);
}

static void test_garbage_file(void **state)
{
	char aside[600], buf[64] = { 0 };
	struct history *h;
	FILE *f;

	(void)state;
	write_file("history.db", "this is not a database, just some garbage bytes\n"
				 "and more garbage to fill a page or two...........\n");
	h = open_hist(NULL);
	history_close(h);
	assert_int_equal(find_aside(aside, sizeof(aside)), 1);
	f = fopen(aside, "r");
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	assert_string_equal(buf, "this is not a database, just some garbage bytes\n");
	fresh_file_works();
}

static void make_sqlite(const char *sql)
{
	char path[600];
	sqlite3 *db;

	snprintf(path, sizeof(path), "%s/history.db", dir);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
}

static void test_foreign_and_newer_file(void **state)
{
	char aside[600];
	struct history *h;

	(void)state;
	make_sqlite("CREATE TABLE notes(x TEXT); INSERT INTO notes VALUES('keep me')");
	fresh_file_works();
	assert_int_equal(find_aside(aside, sizeof(aside)), 1);
	unlink(aside);

	/* Written by a newer profd: kept aside, not upgraded or destroyed. */
	h = open_hist(NULL);
	history_close(h);
	make_sqlite("PRAGMA user_version = 99");
	h = open_hist(NULL);
	history_close(h);
	assert_int_equal(find_aside(aside, sizeof(aside)), 1);
	fresh_file_works();
}

/* Schema 1 as profd wrote it, with one sample: memcpy (native) in pid
 * 100's thread "t", 5 samples in bucket T0.  The hashes are
 * hist_hash(name, len, kind + 1) and hist_hash(frame ids, 4 * depth,
 * depth): literal, so a change to the stored hash fails here. */
static const char v1_file[] =
	"PRAGMA application_id = 1886547814; PRAGMA user_version = 1;"
	"CREATE TABLE meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;"
	"INSERT INTO meta VALUES('sample_rows', 1), ('samples', 5);"
	"CREATE TABLE frames(id INTEGER PRIMARY KEY, kind INTEGER NOT NULL,"
	" hash INTEGER NOT NULL, name TEXT NOT NULL, last_ns INTEGER NOT NULL);"
	"CREATE INDEX frames_hash ON frames(hash);"
	"CREATE TABLE stacks(id INTEGER PRIMARY KEY, hash INTEGER NOT NULL,"
	" frames BLOB NOT NULL, last_ns INTEGER NOT NULL);"
	"CREATE INDEX stacks_hash ON stacks(hash);"
	"CREATE TABLE procs(id INTEGER PRIMARY KEY, pid INTEGER NOT NULL,"
	" start_time INTEGER NOT NULL, uid INTEGER NOT NULL, comm TEXT NOT NULL,"
	" exe TEXT NOT NULL, first_ns INTEGER NOT NULL, last_ns INTEGER NOT NULL,"
	" exited_ns INTEGER NOT NULL, samples INTEGER NOT NULL DEFAULT 0,"
	" UNIQUE(pid, start_time));"
	"CREATE TABLE series(id INTEGER PRIMARY KEY, type TEXT NOT NULL,"
	" bucket_ns INTEGER NOT NULL, UNIQUE(type, bucket_ns));"
	"CREATE TABLE samples(proc INTEGER NOT NULL, series INTEGER NOT NULL,"
	" bucket INTEGER NOT NULL, stack INTEGER NOT NULL, tid INTEGER NOT NULL,"
	" thread_frame INTEGER NOT NULL, count INTEGER NOT NULL,"
	" PRIMARY KEY(proc, series, bucket, stack, tid)) WITHOUT ROWID;"
	"INSERT INTO frames VALUES(1, 2, 9210858354310909438, 'memcpy', 1700000000000000000);"
	"INSERT INTO frames VALUES(2, 4, 8583258049317904129, 't', 1700000000000000000);"
	"INSERT INTO stacks VALUES(1, -3799130603110704810, x'01000000', 1700000000000000000);"
	"INSERT INTO procs VALUES(1, 100, 1000, 0, 'python3', '/usr/bin/python3.11',"
	" 1700000000000000000, 1700000000000000000, 0, 5);"
	"INSERT INTO series VALUES(1, 'cpu', 10000000000);"
	"INSERT INTO samples VALUES(1, 1, 170000000, 1, 100, 2, 5);";

static int64_t file_int(const char *sql)
{
	char path[600];
	sqlite3_stmt *s;
	sqlite3 *db;
	int64_t v;

	snprintf(path, sizeof(path), "%s/history.db", dir);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(s), SQLITE_ROW);
	v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	sqlite3_close(db);
	return v;
}

/* Upgraded in place (not moved aside): the old frame reads back in no
 * module, and writing it again finds the old rows; the same name in a
 * binary is a new frame. */
static void test_upgrade_v1(void **state)
{
	static const uint32_t kind[] = { FRAME_NATIVE };
	static const char *const name[] = { "memcpy" };
	static const struct ss_module libc = { "/usr/lib/libc.so.6", "abcdef" };
	static const struct ss_module *const in_libc[] = { &libc };
	const struct history_row r = ROW(T0, 100, "t", kind, name, 1);
	struct history_stats st;
	struct stackset *ss;
	struct history *h;
	char aside[600];

	(void)state;
	make_sqlite(v1_file);
	h = open_hist(NULL);
	assert_int_equal(find_aside(aside, sizeof(aside)), 0);
	ss = query(h, &(struct history_query){ 0 });
	assert_int_equal(ss->nstacks, 1);
	assert_int_equal(count_of(ss, "memcpy"), 5);
	assert_int_equal(ss->frames[ss->stacks[0].frames[0]].module, 0);
	assert_int_equal(ss->nmodules, 0);
	stackset_free(ss);

	assert_int_equal(history_begin(h), 0);
	add(h, &proc_a, r);
	assert_int_equal(history_add_in(h, &proc_a, &r, in_libc), 0);
	assert_int_equal(history_commit(h), 0);
	assert_int_equal(history_stats(h, &st), 0);
	assert_int_equal(st.frames, 3); /* memcpy, "t", memcpy in libc */
	assert_int_equal(st.stacks, 2);
	assert_int_equal(st.modules, 1);
	assert_int_equal(st.samples, 7);
	ss = query(h, &(struct history_query){ 0 });
	assert_int_equal(count_of(ss, "memcpy"), 7);
	assert_int_equal(ss->nstacks, 2);
	stackset_free(ss);
	history_close(h);
	assert_int_equal(file_int("PRAGMA user_version"), 5);
	assert_int_equal(file_int("SELECT count(*) FROM frames WHERE module = 0"), 2);
}

/* The service history_procs() hands for pid 100. */
static int grab_service(const struct history_proc *p, void *ctx)
{
	char *out = ctx;

	if (p->pid == 100)
		snprintf(out, 64, "%s|%s|%s|%s|%s|%u", p->ident[HISTORY_ID_SERVICE],
			 p->ident[HISTORY_ID_UNIT], p->ident[HISTORY_ID_CGROUP],
			 p->ident[HISTORY_ID_RANK], p->ident[HISTORY_ID_JOB], p->ppid);
	return 0;
}

/* An old file's processes gain workload columns (a job's rank and id,
 * the parent), read '' or 0 (unknown); a write that knows the workload
 * fills them, one that does not (read not back yet) keeps them, and the
 * next open finds them. */
static void test_upgrade_workload(void **state)
{
	static const uint32_t kind[] = { FRAME_NATIVE };
	static const char *const name[] = { "memcpy" };
	const struct history_row r = ROW(T0, 100, "t", kind, name, 1);
	struct history_proc known = proc_a;
	char got[64] = "";
	struct history *h;

	(void)state;
	make_sqlite(v1_file);
	h = open_hist(NULL);
	assert_int_equal(history_procs(h, 0, NULL, grab_service, got), 0);
	assert_string_equal(got, "|||||0");
	known.ppid = 77;
	known.ident[HISTORY_ID_RANK] = "3";
	known.ident[HISTORY_ID_JOB] = "slurm:42.0";
	known.ident[HISTORY_ID_SERVICE] = "myapp";
	known.ident[HISTORY_ID_UNIT] = "myapp.service";
	known.ident[HISTORY_ID_CGROUP] = "/system.slice/myapp.service";
	assert_int_equal(history_begin(h), 0);
	add(h, &known, r);
	assert_int_equal(history_commit(h), 0);
	assert_int_equal(history_begin(h), 0);
	add(h, &proc_a, (struct history_row)ROW(T0 + W, 100, "t", kind, name, 1));
	assert_int_equal(history_commit(h), 0);
	history_close(h);
	h = open_hist(NULL);
	assert_int_equal(history_procs(h, 0, NULL, grab_service, got), 0);
	assert_string_equal(got, "myapp|myapp.service|/system.slice/myapp.service|3|slurm:42.0|77");
	history_close(h);
}

/* Pages after the header overwritten: the file opens, the first read
 * fails cleanly, and the next flush starts a fresh file. */
static void test_corrupt_pages(void **state)
{
	char path[600], junk[4096], aside[600];
	struct stackset *ss;
	struct history *h = open_hist(NULL);
	off_t size, off;
	int fd, rc;

	(void)state;
	write_fixture(h);
	history_close(h);
	snprintf(path, sizeof(path), "%s/history.db", dir);
	fd = open(path, O_WRONLY);
	assert_true(fd >= 0);
	size = lseek(fd, 0, SEEK_END);
	memset(junk, 0xa5, sizeof(junk));
	for (off = 4096; off < size; off += 4096)
		assert_int_equal(pwrite(fd, junk, sizeof(junk), off), sizeof(junk));
	close(fd);

	h = history_open(dir, NULL);
	assert_non_null(h);
	ss = stackset_new();
	rc = history_query(h, &(struct history_query){ 0 }, ss);
	if (rc == 0) /* corruption seen at open already: a fresh file */
		assert_int_equal(ss->total, 0);
	else
		assert_int_equal(rc, -EUCLEAN);
	stackset_free(ss);
	write_fixture(h);
	assert_int_equal(window(h, 0, 0), 39);
	history_close(h);
	assert_int_equal(find_aside(aside, sizeof(aside)), 1);
}

/* A stack or frame row gone (a bug, or hand editing): the counts stay,
 * under a placeholder, and the file is not thrown away. */
static void test_dangling_ids(void **state)
{
	struct history *h = open_hist(NULL);
	struct stackset *ss;

	(void)state;
	write_fixture(h);
	history_close(h);
	make_sqlite("DELETE FROM stacks WHERE id = (SELECT min(id) FROM stacks);"
		    "DELETE FROM frames WHERE name = 'compute'");
	h = open_hist(NULL);
	ss = query(h, &(struct history_query){ 0 });
	assert_int_equal(ss->total, 39);
	assert_int_equal(count_of(ss, "[missing from history]"), 8);
	assert_int_equal(count_of(ss, "_start;[missing from history]"), 24);
	stackset_free(ss);
	history_close(h);
}

/* Run as an unprivileged user when root (root writes anywhere). */
static int open_as_nobody(const char *state_dir)
{
	struct history *h;
	pid_t pid = fork();
	int status;

	if (pid == 0) {
		if (geteuid() == 0 && (setgid(65534) || setuid(65534)))
			_exit(99);
		h = history_open(state_dir, NULL);
		_exit(h ? 0 : errno);
	}
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static void test_readonly_dir(void **state)
{
	char ro[300], sub[320], file[320];

	(void)state;
	snprintf(ro, sizeof(ro), "%s/ro", dir);
	assert_int_equal(mkdir(ro, 0555), 0);
	assert_int_equal(chmod(dir, 0755), 0);
	assert_int_equal(open_as_nobody(ro), EACCES);
	snprintf(sub, sizeof(sub), "%s/state", ro);
	assert_int_equal(open_as_nobody(sub), EACCES);
	snprintf(file, sizeof(file), "%s/plainfile", dir);
	write_file("plainfile", "x");
	assert_null(history_open(file, NULL));
	assert_int_equal(errno, ENOTDIR);
}

/* A hard cap stands in for a full disk: writes fail with -ENOSPC, the
 * flush rolls back whole, and after pruning writing works again. */
static void test_disk_full(void **state)
{
	struct history_opts o = { .hard_max_bytes = 256 * 1024 };
	struct history *h = open_hist(&o);
	uint64_t b = T0, committed = 0, total;
	int i, err = 0;

	(void)state;
	for (i = 0; i < 1000 && !err; i++) {
		assert_int_equal(history_begin(h), 0);
		add(h, &proc_a, (struct history_row)ROW(b, 100, "t", k1, n1, 1));
		for (int j = 0; j < 200 && !err; j++) {
			char name[32];
			const char *np[1] = { name };
			const uint32_t kinds[1] = { FRAME_NATIVE };

			snprintf(name, sizeof(name), "f%d_%d", i, j);
			err = history_add(h, &proc_a, &(struct history_row){
				.bucket_ns = b, .tid = 1, .depth = 1, .kinds = kinds,
				.names = np, .count = 1 });
		}
		if (!err)
			err = history_commit(h);
		else
			assert_int_equal(history_commit(h), err);
		if (!err)
			committed += 201;
		b += W;
	}
	assert_int_equal(err, -ENOSPC);
	total = window(h, 0, 0);
	assert_int_equal(total, committed);
	assert_int_equal(history_prune(h, 0, 128 * 1024, NULL), 0);
	assert_int_equal(history_begin(h), 0);
	add(h, &proc_a, (struct history_row)ROW(b, 100, "t", k1, n1, 1));
	assert_int_equal(history_commit(h), 0);
	assert_int_equal(window(h, b, 0), 1);
	history_close(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		HISTTEST(test_garbage_file),
		HISTTEST(test_foreign_and_newer_file),
		HISTTEST(test_upgrade_v1),
		HISTTEST(test_upgrade_workload),
		HISTTEST(test_corrupt_pages),
		HISTTEST(test_dangling_ids),
		HISTTEST(test_readonly_dir),
		HISTTEST(test_disk_full),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
