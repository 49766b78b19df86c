/* history_schema.c: the file's schema, one migration per version, and
 * every statement the history module runs (prepared once at open). */
#include "history_int.h"

/* Sample rows are keyed (proc, series, bucket, stack, tid) in a WITHOUT
 * ROWID table: the key is the table, so there is no second copy in an
 * index, and every query and deletion is a range of that key.  A series
 * is a profile type at one bucket width, so a query knows exactly how
 * long each stored bucket lasts even if --bucket changed between runs;
 * a row holds its bucket's number in the series (start / width), four
 * bytes where nanoseconds take eight (an eighth of a row).
 * Frame names and stacks are looked up by a stable 64-bit hash and
 * compared in full; their last_ns (the newest bucket using them, kept
 * within history_opts.mark_every_ns) lets a prune drop unused ones
 * without reading the samples.
 * Version 2: a native frame's binary (path and build-id) is part of its
 * identity.  Paths are long and shared by thousands of frames, so they
 * live once in modules and a frame holds an id (0, no module, takes no
 * space in a row); v1 rows read the column's default, nothing is
 * rewritten.  frames.hash stays hash(kind, name), so v1 rows still match
 * and module is compared alongside name.
 * Version 3: each process's resident set over time, a point per bucket
 * while it ran (pruned with the samples: by age, and with its process).
 * Version 4: each process's workload (service, unit, container ...), so
 * an exited one is still known by its service after a restart; rows of
 * v3 read '' (unknown) and are filled when their process writes again. */
const char *const hist_migrations[HIST_SCHEMA_VERSION + 1] = {
	[1] = "CREATE TABLE meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;"
	      "INSERT INTO meta VALUES('sample_rows', 0), ('samples', 0);"
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
	      " PRIMARY KEY(proc, series, bucket, stack, tid)) WITHOUT ROWID;",
	[2] = "CREATE TABLE modules(id INTEGER PRIMARY KEY, path TEXT NOT NULL,"
	      " build_id TEXT NOT NULL, UNIQUE(path, build_id));"
	      "ALTER TABLE frames ADD COLUMN module INTEGER NOT NULL DEFAULT 0;",
	[3] = "CREATE TABLE rss(proc INTEGER NOT NULL, t INTEGER NOT NULL,"
	      " bytes INTEGER NOT NULL, PRIMARY KEY(proc, t)) WITHOUT ROWID;",
	[4] = "ALTER TABLE procs ADD COLUMN service TEXT NOT NULL DEFAULT '';"
	      "ALTER TABLE procs ADD COLUMN unit TEXT NOT NULL DEFAULT '';"
	      "ALTER TABLE procs ADD COLUMN runtime TEXT NOT NULL DEFAULT '';"
	      "ALTER TABLE procs ADD COLUMN container TEXT NOT NULL DEFAULT '';"
	      "ALTER TABLE procs ADD COLUMN pod TEXT NOT NULL DEFAULT '';"
	      "ALTER TABLE procs ADD COLUMN qos TEXT NOT NULL DEFAULT '';"
	      "ALTER TABLE procs ADD COLUMN script TEXT NOT NULL DEFAULT '';"
	      "ALTER TABLE procs ADD COLUMN cgroup TEXT NOT NULL DEFAULT '';",
	/* a distributed job's members, found again after a restart */
	[5] = "ALTER TABLE procs ADD COLUMN rank TEXT NOT NULL DEFAULT '';"
	      "ALTER TABLE procs ADD COLUMN local_rank TEXT NOT NULL DEFAULT '';"
	      "ALTER TABLE procs ADD COLUMN world_size TEXT NOT NULL DEFAULT '';"
	      "ALTER TABLE procs ADD COLUMN job TEXT NOT NULL DEFAULT '';"
	      "ALTER TABLE procs ADD COLUMN ppid INTEGER NOT NULL DEFAULT 0;",
};

const char *const hist_sql[HS_NSTMT] = {
	[HS_BEGIN] = "BEGIN IMMEDIATE",
	[HS_BEGIN_READ] = "BEGIN",
	[HS_COMMIT] = "COMMIT",
	[HS_ROLLBACK] = "ROLLBACK",
	[HS_META_GET] = "SELECT value FROM meta WHERE key = ?1",
	[HS_META_ADD] = "UPDATE meta SET value = value + ?2 WHERE key = ?1",
	[HS_FRAME_FIND] = "SELECT id, last_ns, kind, name, module FROM frames WHERE hash = ?1",
	[HS_FRAME_INSERT] = "INSERT INTO frames(hash, name, last_ns, kind, module)"
			    " VALUES(?1, ?2, ?3, ?4, ?5)",
	[HS_FRAME_TOUCH] = "UPDATE frames SET last_ns = ?2 WHERE id = ?1",
	[HS_FRAME_GET] = "SELECT f.kind, f.name, m.path, m.build_id FROM frames f"
			 " LEFT JOIN modules m ON m.id = f.module WHERE f.id = ?1",
	[HS_MODULE_FIND] = "SELECT id FROM modules WHERE path = ?1 AND build_id = ?2",
	[HS_MODULE_INSERT] = "INSERT INTO modules(path, build_id) VALUES(?1, ?2)",
	[HS_STACK_FIND] = "SELECT id, last_ns, frames FROM stacks WHERE hash = ?1",
	[HS_STACK_INSERT] = "INSERT INTO stacks(hash, frames, last_ns) VALUES(?1, ?2, ?3)",
	[HS_STACK_TOUCH] = "UPDATE stacks SET last_ns = ?2 WHERE id = ?1",
	[HS_STACK_GET] = "SELECT frames FROM stacks WHERE id = ?1",
	/* A workload field read as '' (not known yet, or a v3 row) keeps
	 * what the row has; a known one replaces it (a cgroup move). */
	[HS_PROC_UPSERT] =
		"INSERT INTO procs(pid, start_time, uid, comm, exe, first_ns, last_ns, exited_ns,"
		" service, unit, runtime, container, pod, qos, script, cgroup,"
		" rank, local_rank, world_size, job, ppid)"
		" VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16,"
		" ?17, ?18, ?19, ?20, ?21)"
		" ON CONFLICT(pid, start_time) DO UPDATE SET"
		" uid = excluded.uid,"
		" comm = CASE WHEN excluded.comm <> '' THEN excluded.comm ELSE comm END,"
		" exe = CASE WHEN excluded.exe <> '' THEN excluded.exe ELSE exe END,"
		" first_ns = CASE WHEN first_ns = 0 OR (excluded.first_ns <> 0 AND"
		" excluded.first_ns < first_ns) THEN excluded.first_ns ELSE first_ns END,"
		" last_ns = max(last_ns, excluded.last_ns),"
		" exited_ns = max(exited_ns, excluded.exited_ns),"
		" service = CASE WHEN excluded.service <> '' THEN excluded.service ELSE service END,"
		" unit = CASE WHEN excluded.cgroup <> '' THEN excluded.unit ELSE unit END,"
		" runtime = CASE WHEN excluded.cgroup <> '' THEN excluded.runtime ELSE runtime END,"
		" container = CASE WHEN excluded.cgroup <> '' THEN excluded.container"
		" ELSE container END,"
		" pod = CASE WHEN excluded.cgroup <> '' THEN excluded.pod ELSE pod END,"
		" qos = CASE WHEN excluded.cgroup <> '' THEN excluded.qos ELSE qos END,"
		" script = CASE WHEN excluded.service <> '' THEN excluded.script ELSE script END,"
		" cgroup = CASE WHEN excluded.cgroup <> '' THEN excluded.cgroup ELSE cgroup END,"
		" rank = CASE WHEN excluded.rank <> '' THEN excluded.rank ELSE rank END,"
		" local_rank = CASE WHEN excluded.local_rank <> '' THEN excluded.local_rank"
		" ELSE local_rank END,"
		" world_size = CASE WHEN excluded.world_size <> '' THEN excluded.world_size"
		" ELSE world_size END,"
		" job = CASE WHEN excluded.job <> '' THEN excluded.job ELSE job END,"
		" ppid = CASE WHEN excluded.ppid <> 0 THEN excluded.ppid ELSE ppid END"
		" RETURNING id",
	/* procs.samples adds up every type's weights, so nothing here reads
	 * it (list wants each type in its unit: HS_PROC_TOTALS); it is kept
	 * up to date for an older profd opening the same file. */
	[HS_PROC_SAMPLES] = "UPDATE procs SET samples = samples + ?2 WHERE id = ?1",
	[HS_PROC_BY_PID] = "SELECT id, pid, comm, uid, start_time FROM procs WHERE pid = ?1",
	[HS_PROC_ALL] = "SELECT id, pid, comm, uid, start_time FROM procs",
	[HS_PROC_LIST] = "SELECT pid, uid, start_time, comm, exe, first_ns, last_ns, exited_ns,"
			 " id, service, unit, runtime, container, pod, qos, script, cgroup,"
			 " rank, local_rank, world_size, job, ppid"
			 " FROM procs WHERE last_ns >= ?1 ORDER BY last_ns DESC",
	[HS_SERIES_FIND] = "SELECT id FROM series WHERE type = ?1 AND bucket_ns = ?2",
	[HS_SERIES_INSERT] = "INSERT INTO series(type, bucket_ns) VALUES(?1, ?2)",
	[HS_SERIES_BY_TYPE] = "SELECT id, bucket_ns FROM series WHERE type = ?1",
	[HS_SERIES_ALL] = "SELECT id, bucket_ns FROM series",
	[HS_SAMPLE_INSERT] = "INSERT OR IGNORE INTO samples(proc, series, bucket, stack, tid,"
			     " thread_frame, count) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)",
	[HS_SAMPLE_UPDATE] = "UPDATE samples SET count = count + ?6 WHERE proc = ?1 AND"
			     " series = ?2 AND bucket = ?3 AND stack = ?4 AND tid = ?5",
	[HS_SAMPLE_RANGE] = "SELECT stack, tid, thread_frame, count FROM samples WHERE"
			    " proc = ?1 AND series = ?2 AND bucket >= ?3 AND bucket < ?4",
	[HS_PRUNE_COUNT] = "SELECT count(*), coalesce(sum(count), 0) FROM samples WHERE"
			   " proc = ?1 AND series = ?2 AND bucket < ?3",
	[HS_PRUNE_DELETE] = "DELETE FROM samples WHERE proc = ?1 AND series = ?2 AND"
			    " bucket < ?3",
	[HS_PRUNE_PROC_SAMPLES] = "UPDATE procs SET samples = max(samples - ?2, 0) WHERE id = ?1",
	[HS_MIN_BUCKET] = "SELECT min(bucket) FROM samples WHERE proc = ?1 AND series = ?2",
	[HS_MAX_BUCKET] = "SELECT max(bucket) FROM samples WHERE proc = ?1 AND series = ?2",
	[HS_PROCS_EMPTY] = "DELETE FROM procs WHERE NOT EXISTS"
			   " (SELECT 1 FROM samples WHERE proc = procs.id)",
	[HS_STACKS_UNUSED] = "DELETE FROM stacks WHERE last_ns < ?1",
	[HS_FRAMES_UNUSED] = "DELETE FROM frames WHERE last_ns < ?1",
	/* One pass over frames (the subquery is built once), no index kept. */
	[HS_MODULES_UNUSED] = "DELETE FROM modules WHERE id NOT IN (SELECT module FROM frames)",
	[HS_PAGE_COUNT] = "PRAGMA page_count",
	[HS_FREELIST] = "PRAGMA freelist_count",
	[HS_INCR_VACUUM] = "PRAGMA incremental_vacuum",
	[HS_COUNT_TABLES] = "SELECT (SELECT count(*) FROM stacks), (SELECT count(*) FROM frames),"
			    " (SELECT count(*) FROM procs), (SELECT count(*) FROM modules)",
	[HS_RSS_INSERT] = "INSERT OR REPLACE INTO rss(proc, t, bytes) VALUES(?1, ?2, ?3)",
	[HS_RSS_OF_PROC] = "SELECT t, bytes FROM rss WHERE proc = ?1 ORDER BY t DESC LIMIT ?2",
	[HS_RSS_UNUSED] = "DELETE FROM rss WHERE t < ?1 OR proc NOT IN (SELECT id FROM procs)",
	/* One range of the samples key (the process's rows), summed by type. */
	[HS_PROC_TOTALS] = "SELECT se.type, sum(sa.count) FROM series se JOIN samples sa"
			   " ON sa.proc = ?1 AND sa.series = se.id GROUP BY se.type",
};
