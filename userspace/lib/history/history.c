/* history.c: opening the history file (directory, identity check, schema
 * migrations, moving a bad file aside), helpers every part shares, error
 * reporting and statistics.  The schema and statements are in
 * history_schema.c, writes in history_write.c, reads in history_query.c,
 * retention in history_prune.c. */
#include "history_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "filekind.h"
#include "log.h"

int hist_grow(void **arr, size_t *cap, size_t need, size_t elem)
{
	size_t ncap = *cap ? *cap : 16;
	void *p;

	if (need <= *cap)
		return 0;
	while (ncap < need)
		ncap *= 2;
	p = realloc(*arr, ncap * elem);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}

int hist_errno(sqlite3 *db, int rc)
{
	int sys = db ? sqlite3_system_errno(db) : 0;

	switch (rc & 0xff) {
	case SQLITE_OK:
	case SQLITE_ROW:
	case SQLITE_DONE: return 0;
	case SQLITE_NOMEM: return -ENOMEM;
	case SQLITE_FULL: return -ENOSPC;
	case SQLITE_BUSY:
	case SQLITE_LOCKED: return -EBUSY;
	case SQLITE_READONLY: return -EROFS;
	case SQLITE_PERM:
	case SQLITE_AUTH: return -EACCES;
	case SQLITE_CORRUPT:
	case SQLITE_NOTADB: return -EUCLEAN;
	case SQLITE_TOOBIG: return -E2BIG;
	case SQLITE_CONSTRAINT:
	case SQLITE_MISMATCH:
	case SQLITE_RANGE: return -EINVAL;
	case SQLITE_INTERRUPT: return -EINTR;
	case SQLITE_CANTOPEN:
	case SQLITE_IOERR: return sys > 0 ? -sys : -EIO;
	default: return -EIO;
	}
}

/* Log a failed SQLite call once, count it, and turn it into -errno.  A
 * corrupt file is noted so the next transaction starts a fresh one. */
int hist_fail(struct history *h, int rc, const char *what)
{
	int err = hist_errno(h->db, rc);

	h->s.errors++;
	if (err == -EUCLEAN)
		h->broken = true;
	log_error("history: %s: %s (%s)", what, h->db ? sqlite3_errmsg(h->db) : sqlite3_errstr(rc),
		  h->path);
	return err ? err : -EIO;
}

sqlite3_stmt *hist_stmt(struct history *h, enum hist_stmt which)
{
	sqlite3_stmt *s = h->st[which];

	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	return s;
}

/* Run a statement that returns no rows (its parameters already bound). */
int hist_step_done(struct history *h, enum hist_stmt which, const char *what)
{
	int rc;

	while ((rc = sqlite3_step(h->st[which])) == SQLITE_ROW)
		;
	sqlite3_reset(h->st[which]);
	return rc == SQLITE_DONE ? 0 : hist_fail(h, rc, what);
}

/* First column of the first row, 0 when there is none or it is NULL. */
int hist_get_u64(struct history *h, enum hist_stmt which, uint64_t *out, const char *what)
{
	int rc = sqlite3_step(h->st[which]);

	*out = rc == SQLITE_ROW ? (uint64_t)sqlite3_column_int64(h->st[which], 0) : 0;
	sqlite3_reset(h->st[which]);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : hist_fail(h, rc, what);
}

int hist_meta_add(struct history *h, const char *key, int64_t delta)
{
	sqlite3_stmt *s = hist_stmt(h, HS_META_ADD);

	sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, delta);
	return hist_step_done(h, HS_META_ADD, "updating counters");
}

int hist_file_bytes(struct history *h, uint64_t *used, uint64_t *free_bytes)
{
	uint64_t pages, freep;
	int err;

	err = hist_get_u64(h, HS_PAGE_COUNT, &pages, "reading the page count");
	if (!err)
		err = hist_get_u64(h, HS_FREELIST, &freep, "reading the free list");
	if (err)
		return err;
	*used = pages * (uint64_t)h->page_size;
	if (free_bytes)
		*free_bytes = freep * (uint64_t)h->page_size;
	return 0;
}

/* The state directory (followed if a link: the administrator's choice)
 * is a folder: anything else there is named and left. */
static int state_dir_is_folder(const char *dir)
{
	struct stat st;
	bool link;

	if (lstat(dir, &st))
		return -errno;
	link = S_ISLNK(st.st_mode);
	if (link && stat(dir, &st))
		return -errno;
	if (S_ISDIR(st.st_mode))
		return 0;
	log_error("history: the state directory %s is %s%s, not a folder: not used, not replaced "
		  "(choose another --state-dir)",
		  dir, link ? "a symbolic link to " : "", filekind_name(st.st_mode));
	return -ENOTDIR;
}

static int make_dirs(const char *dir)
{
	char path[4096];
	size_t i, len = strlen(dir);

	if (!len)
		return -EINVAL;
	if (len >= sizeof(path))
		return -ENAMETOOLONG;
	memcpy(path, dir, len + 1);
	for (i = 1; i <= len; i++) {
		if (path[i] != '/' && path[i] != '\0')
			continue;
		path[i] = '\0';
		if (mkdir(path, 0750) && errno != EEXIST)
			return -errno;
		path[i] = dir[i];
	}
	return 0;
}

/* path + suffix in a new string, or NULL. */
static char *path_plus(const char *path, const char *suffix)
{
	char *p;

	return asprintf(&p, "%s%s", path, suffix) < 0 ? NULL : p;
}

/* A name for the file moved aside: history.db.corrupt-<UTC time>[.n]. */
static char *aside_name(const char *path)
{
	char stamp[48];
	time_t now = time(NULL);
	struct tm tm;
	char *p = NULL;
	int n;

	gmtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), ".corrupt-%Y%m%dT%H%M%SZ", &tm);
	for (n = 0; n < 1000; n++) {
		char suffix[64];

		snprintf(suffix, sizeof(suffix), n ? "%s.%d" : "%s", stamp, n);
		free(p);
		p = path_plus(path, suffix);
		if (!p || access(p, F_OK))
			break;
	}
	return p;
}

/* Rename the file (and its WAL) aside for inspection; a stale WAL must
 * never be replayed into the fresh file.  Nothing is removed but the
 * shared-memory index SQLite rebuilds: a file that cannot be renamed
 * stays, and history stays off (-errno). */
static int move_aside(struct history *h)
{
	char *aside = aside_name(h->path), *wal = path_plus(h->path, "-wal");
	char *aside_wal = aside ? path_plus(aside, "-wal") : NULL;
	char *shm = path_plus(h->path, "-shm");
	int err = 0;

	if (!aside || !wal || !aside_wal || !shm)
		err = -ENOMEM;
	else if (rename(h->path, aside) || (rename(wal, aside_wal) && errno != ENOENT))
		err = -errno;
	else if (unlink(shm) && errno != ENOENT)
		err = -errno;
	h->s.resets++;
	if (err)
		log_error("history: cannot move %s aside: %s; running without history (move it "
			  "yourself)", h->path, strerror(-err));
	else
		log_error("history: moved %s aside to %s; starting a fresh history", h->path,
			  aside);
	free(aside);
	free(wal);
	free(aside_wal);
	free(shm);
	return err;
}

static int pragma_int(struct history *h, const char *sql, int64_t *out)
{
	sqlite3_stmt *s;
	int rc = sqlite3_prepare_v2(h->db, sql, -1, &s, NULL);

	if (rc != SQLITE_OK)
		return hist_fail(h, rc, "reading the file header");
	rc = sqlite3_step(s);
	*out = rc == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
	sqlite3_finalize(s);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return hist_fail(h, rc, "reading the file header");
	return 0;
}

static int exec_sql(struct history *h, const char *sql, const char *what)
{
	int rc = sqlite3_exec(h->db, sql, NULL, NULL, NULL);

	return rc == SQLITE_OK ? 0 : hist_fail(h, rc, what);
}

/* Is this our file, someone else's, or a newer profd's?  -EUCLEAN for
 * a file to move aside; *fresh for an empty one. */
static int check_identity(struct history *h, int64_t *version, bool *fresh)
{
	int64_t app, tables;
	int err;

	err = pragma_int(h, "PRAGMA application_id", &app);
	if (!err)
		err = pragma_int(h, "PRAGMA user_version", version);
	if (!err)
		err = pragma_int(h, "SELECT count(*) FROM sqlite_schema", &tables);
	if (err)
		return err;
	*fresh = app == 0 && *version == 0 && tables == 0;
	if (*fresh)
		return 0;
	if (app != HIST_APPLICATION_ID || *version < 1) {
		log_error("history: %s is not a profd history file (application_id 0x%llx, %lld "
			  "tables)", h->path, (unsigned long long)app, (long long)tables);
		return -EUCLEAN;
	}
	if (*version > HIST_SCHEMA_VERSION) {
		log_error("history: %s was written by a newer profd (schema %lld, this one knows "
			  "%d)", h->path, (long long)*version, HIST_SCHEMA_VERSION);
		return -EUCLEAN;
	}
	return 0;
}

static int migrate(struct history *h, int64_t from)
{
	char sql[128];
	int64_t v;
	int err;

	if (from == HIST_SCHEMA_VERSION)
		return 0;
	err = exec_sql(h, "BEGIN IMMEDIATE", "starting the schema upgrade");
	for (v = from + 1; !err && v <= HIST_SCHEMA_VERSION; v++)
		err = exec_sql(h, hist_migrations[v], "upgrading the schema");
	snprintf(sql, sizeof(sql), "PRAGMA application_id = %d; PRAGMA user_version = %d; COMMIT",
		 HIST_APPLICATION_ID, HIST_SCHEMA_VERSION);
	if (!err)
		err = exec_sql(h, sql, "finishing the schema upgrade");
	if (err)
		sqlite3_exec(h->db, "ROLLBACK", NULL, NULL, NULL);
	else if (from)
		log_info("history: %s upgraded from schema %lld to %d", h->path, (long long)from,
			 HIST_SCHEMA_VERSION);
	return err;
}

static int set_wal(struct history *h)
{
	sqlite3_stmt *s;
	int rc = sqlite3_prepare_v2(h->db, "PRAGMA journal_mode = WAL", -1, &s, NULL);
	const unsigned char *mode;

	if (rc != SQLITE_OK)
		return hist_fail(h, rc, "setting WAL mode");
	rc = sqlite3_step(s);
	mode = rc == SQLITE_ROW ? sqlite3_column_text(s, 0) : NULL;
	if (mode && sqlite3_stricmp((const char *)mode, "wal"))
		log_warn("history: %s: WAL mode unavailable, journal mode %s", h->path, mode);
	sqlite3_finalize(s);
	return rc == SQLITE_ROW ? 0 : hist_fail(h, rc, "setting WAL mode");
}

/* WAL: flushes never block readers, and a crash loses at most the last
 * flush (synchronous=NORMAL).  No mmap: a file truncated under us must
 * give an error, not SIGBUS. */
static int configure(struct history *h, bool fresh)
{
	char sql[256];
	int64_t v;
	int err = 0;

	sqlite3_busy_timeout(h->db, h->o.busy_timeout_ms);
	if (fresh)
		err = exec_sql(h, "PRAGMA auto_vacuum = INCREMENTAL", "setting auto_vacuum");
	if (!err)
		err = pragma_int(h, "PRAGMA page_size", &v);
	if (err)
		return err;
	h->page_size = v > 0 ? (uint32_t)v : 4096;
	err = set_wal(h);
	snprintf(sql, sizeof(sql),
		 "PRAGMA synchronous = NORMAL; PRAGMA cache_size = -8192;"
		 " PRAGMA journal_size_limit = %d", 64 << 20);
	if (h->o.hard_max_bytes)
		snprintf(sql + strlen(sql), sizeof(sql) - strlen(sql),
			 "; PRAGMA max_page_count = %llu",
			 (unsigned long long)(h->o.hard_max_bytes / h->page_size));
	if (!err)
		err = exec_sql(h, sql, "configuring the database");
	return err;
}

static int prepare_all(struct history *h)
{
	int i, rc;

	for (i = 0; i < HS_NSTMT; i++) {
		rc = sqlite3_prepare_v3(h->db, hist_sql[i], -1, SQLITE_PREPARE_PERSISTENT,
					&h->st[i], NULL);
		if (rc != SQLITE_OK)
			return hist_fail(h, rc, "preparing statements");
	}
	return 0;
}

static void disconnect(struct history *h)
{
	int i;

	for (i = 0; i < HS_NSTMT; i++) {
		sqlite3_finalize(h->st[i]);
		h->st[i] = NULL;
	}
	sqlite3_close(h->db);
	h->db = NULL;
}

/* What is at path, when it is something SQLite must not open: a FIFO
 * (its reads would block the daemon), a device, a directory, a symbolic
 * link (the file it names may be anyone's). */
static const char *not_regular(const char *path, struct stat *st)
{
	if (lstat(path, st))
		return NULL; /* absent: SQLite creates it */
	return S_ISREG(st->st_mode) ? NULL : filekind_name(st->st_mode);
}

/* The file and the two SQLite keeps beside it are regular files or
 * absent; anything else is refused and left as it is. */
static int check_kinds(struct history *h)
{
	static const char *const suffix[] = {"", "-wal", "-shm"};
	struct stat st;
	size_t i;

	for (i = 0; i < sizeof(suffix) / sizeof(suffix[0]); i++) {
		char *p = path_plus(h->path, suffix[i]);
		const char *what = p ? not_regular(p, &st) : NULL;

		if (!p)
			return -ENOMEM;
		if (what) {
			h->s.errors++;
			log_error("history: %s is %s, not a regular file: not used, not replaced "
				  "(running without history; remove it or choose another --state-dir)",
				  p, what);
			free(p);
			return -EEXIST;
		}
		free(p);
	}
	return 0;
}

/* Creating the file ourselves sets its mode (SQLite gives the WAL the
 * same) and gives a clear error for a directory we may not write. */
static int create_file(struct history *h)
{
	int fd, err = check_kinds(h);

	if (err)
		return err;
	fd = open(h->path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0640);
	if (fd < 0) {
		err = -errno;
		h->s.errors++;
		log_error("history: cannot open %s: %s (is the state directory writable? see "
			  "--state-dir)", h->path, strerror(-err));
		return err;
	}
	close(fd);
	return 0;
}

static int connect_db(struct history *h)
{
	int64_t version = 0;
	bool fresh = false;
	int rc, err;

	err = create_file(h);
	if (err)
		return err;
	rc = sqlite3_open_v2(h->path, &h->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW, NULL);
	if (rc != SQLITE_OK)
		return hist_fail(h, rc, "opening");
	if (sqlite3_db_readonly(h->db, "main") == 1) {
		h->s.errors++;
		log_error("history: %s is read-only", h->path);
		return -EROFS;
	}
	err = check_identity(h, &version, &fresh);
	if (!err)
		err = configure(h, fresh);
	if (!err)
		err = migrate(h, version);
	if (!err)
		err = prepare_all(h);
	return err;
}

static int connect_or_reset(struct history *h)
{
	int err = connect_db(h);

	if (err != -EUCLEAN)
		return err;
	disconnect(h);
	err = move_aside(h);
	if (err)
		return err;
	h->broken = false;
	return connect_db(h);
}

/* Corruption seen while running (or a reconnect that failed before):
 * move a corrupt file aside and start over. */
int hist_recover(struct history *h)
{
	int err;

	hist_txn_reset(h);
	hist_caches_reset(h);
	h->nseries = 0;
	disconnect(h);
	if (h->broken && (err = move_aside(h)))
		return err;
	h->broken = false;
	err = connect_or_reset(h);
	if (err)
		disconnect(h);
	return err;
}

static void set_defaults(struct history_opts *o, const struct history_opts *in)
{
	if (in)
		*o = *in;
	if (!o->bucket_ns)
		o->bucket_ns = 10ull * 1000000000ull;
	if (!o->frame_cache_max)
		o->frame_cache_max = 32768;
	if (!o->stack_cache_max)
		o->stack_cache_max = 32768;
	if (o->busy_timeout_ms <= 0)
		o->busy_timeout_ms = 250;
	if (!o->mark_every_ns)
		o->mark_every_ns = 3600ull * 1000000000ull;
}

struct history *history_open(const char *state_dir, const struct history_opts *o)
{
	struct history *h = calloc(1, sizeof(*h));
	int err = -ENOMEM;

	if (!h)
		goto fail;
	set_defaults(&h->o, o);
	hist_cache_init(&h->frames, h->o.frame_cache_max);
	hist_cache_init(&h->stacks, h->o.stack_cache_max);
	hist_cache_init(&h->modules, h->o.frame_cache_max);
	h->ids_gen = hist_new_gen();
	h->counts_stale = true;
	h->nseries = 0;
	h->dir = strdup(state_dir ? state_dir : HISTORY_DEFAULT_DIR);
	if (!h->dir || asprintf(&h->path, "%s/%s", h->dir, HISTORY_FILE) < 0) {
		h->path = NULL;
		goto fail;
	}
	err = make_dirs(h->dir);
	if (err) {
		log_error("history: cannot create the state directory %s: %s", h->dir,
			  strerror(-err));
		goto fail;
	}
	err = state_dir_is_folder(h->dir);
	if (err)
		goto fail;
	err = connect_or_reset(h);
	if (err)
		goto fail;
	return h;
fail:
	history_close(h);
	errno = -err;
	return NULL;
}

void history_close(struct history *h)
{
	if (!h)
		return;
	if (h->in_txn)
		history_rollback(h);
	hist_txn_reset(h);
	disconnect(h);
	hist_cache_free(&h->frames);
	hist_cache_free(&h->stacks);
	hist_cache_free(&h->modules);
	hashmap_free(&h->txn_index);
	free(h->txprocs);
	free(h->scratch);
	free(h->modkey);
	free(h->dir);
	free(h->path);
	free(h);
}

const char *history_path(const struct history *h)
{
	return h->path;
}

static int read_meta(struct history *h, const char *key, uint64_t *out)
{
	sqlite3_stmt *s = hist_stmt(h, HS_META_GET);

	sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
	return hist_get_u64(h, HS_META_GET, out, "reading counters");
}

/* The row counts into h->s: a scan of each table, so done only when a
 * row was added or ids changed since the last count. */
static int count_tables(struct history *h)
{
	sqlite3_stmt *s = hist_stmt(h, HS_COUNT_TABLES);
	int rc = sqlite3_step(s);

	if (rc == SQLITE_ROW) {
		h->s.stacks = (uint64_t)sqlite3_column_int64(s, 0);
		h->s.frames = (uint64_t)sqlite3_column_int64(s, 1);
		h->s.procs = (uint64_t)sqlite3_column_int64(s, 2);
		h->s.modules = (uint64_t)sqlite3_column_int64(s, 3);
		h->counts_stale = false;
	}
	sqlite3_reset(s);
	return rc == SQLITE_ROW ? 0 : hist_fail(h, rc, "counting rows");
}

int history_stats_light(struct history *h, struct history_stats *out)
{
	char *wal = path_plus(h->path, "-wal");
	struct stat sb;
	int err;

	if (h->db && h->counts_stale && (err = count_tables(h)))
		return err;
	*out = h->s;
	out->wal_bytes = wal && stat(wal, &sb) == 0 ? (uint64_t)sb.st_size : 0;
	free(wal);
	if (!h->db)
		return -EIO;
	err = hist_file_bytes(h, &out->file_bytes, &out->free_bytes);
	if (!err)
		err = read_meta(h, "sample_rows", &out->sample_rows);
	if (!err)
		err = read_meta(h, "samples", &out->samples);
	return err;
}

int history_stats(struct history *h, struct history_stats *out)
{
	h->counts_stale = true;
	return history_stats_light(h, out);
}
