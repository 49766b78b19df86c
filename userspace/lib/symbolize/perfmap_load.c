/* perfmap_load.c: read a process's perf map from where it sees /tmp, and
 * its jitdump, with the checks that keep a forged one out.  Slow work on another process's
 * files (its /proc entries, a map of up to PERFMAP_MAX_BYTES): the daemon
 * runs it on its worker (symbolizer_set_perfmap_loader). */
#include "perfmap.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jitdump.h"
#include "log.h"
#include "rootfs.h"

/* Where a process writes its map: the pid it sees (its innermost
 * namespace), under its root. */
#define PERFMAP_PATH_FMT "/tmp/perf-%d.map"
#define JITDUMP_PATH_FMT "/tmp/jit-%d.dump"

/* Number idx (0 first, -1 the last) on the status line starting with
 * key ("\nUid:"), or -1. */
static long status_number(const char *text, const char *key, int idx)
{
	const char *line = strstr(text, key), *p, *end, *num = NULL;
	long v;
	int i = 0;

	if (!line)
		return -1;
	p = line + strlen(key);
	end = p + strcspn(p, "\n");
	for (; (p = strpbrk(p, "0123456789")) && p < end; p += strspn(p, "0123456789"), i++) {
		num = p;
		if (i == idx)
			break;
	}
	if (!num || (idx >= 0 && i != idx))
		return -1;
	v = strtol(num, NULL, 10);
	return v >= 0 && v <= INT_MAX ? v : -1;
}

/* From /proc/PID/status: the innermost-namespace pid (else pid) and the
 * effective uid (else -1: then only root's perf maps are read). */
static void read_status(const char *proc_root, int pid, struct perfmap_stamp *st)
{
	char path[PATH_MAX], *text;
	size_t len;
	long v;

	st->nspid = pid;
	st->uid = (uid_t)-1;
	snprintf(path, sizeof(path), "%s/%d/status", proc_root, pid);
	if (rootfs_read_file(NULL, path, 1 << 16, &text, &len))
		return;
	v = status_number(text, "\nNSpid:", -1);
	if (v > 0)
		st->nspid = (int)v;
	v = status_number(text, "\nUid:", 1); /* real, effective, saved, fs */
	if (v >= 0)
		st->uid = (uid_t)v;
	free(text);
}

static bool same_file(const struct perfmap_file *f, const struct stat *st)
{
	return (uint64_t)st->st_size == f->size && st->st_ino == f->ino &&
	       st->st_mtim.tv_sec == f->mtime.tv_sec && st->st_mtim.tv_nsec == f->mtime.tv_nsec;
}

static void stamp_file(struct perfmap_file *f, const struct stat *st)
{
	f->size = (uint64_t)st->st_size;
	f->ino = st->st_ino;
	f->mtime = st->st_mtim;
}

/* The jitdump pid maps (a JIT maps it so that perf finds it, wherever it
 * is: the JVM's agent writes under ~/.debug/jit), else /tmp's: an fd or
 * -errno. */
static int open_jitdump(const char *proc_root, int pid, const char *root, int nspid)
{
	char path[PATH_MAX], name[32], *text, *line, *save = NULL;
	size_t len, nlen;
	int fd = -ENOENT;

	nlen = (size_t)snprintf(name, sizeof(name), "/jit-%d.dump", nspid);
	snprintf(path, sizeof(path), "%s/%d/maps", proc_root, pid);
	if (!rootfs_read_file(NULL, path, 64u << 20, &text, &len)) {
		for (line = strtok_r(text, "\n", &save); line && fd < 0;
		     line = strtok_r(NULL, "\n", &save)) {
			char *file = strchr(line, '/');
			size_t flen = file ? strlen(file) : 0;

			if (flen > nlen && !strcmp(file + flen - nlen, name))
				fd = procfile_open_mapped_path(proc_root, pid, file);
		}
		free(text);
	}
	if (fd >= 0)
		return fd;
	snprintf(path, sizeof(path), JITDUMP_PATH_FMT, nspid);
	return procfile_open(root, path, NULL);
}

/* fd's file, what it is, may name this process's code: its owner is
 * the process's or root (/tmp is everyone's: a map another user planted
 * there would name the code as they like). */
static bool owner_checked(int fd, struct stat *st, const char *what, int pid,
			  const struct perfmap_stamp *s, struct perfmap_file *f, bool *refused)
{
	if (fd < 0 || fstat(fd, st))
		return false;
	if (perfmap_owner_ok(st->st_uid, s->uid))
		return true;
	if (st->st_ino != f->refused_ino)
		log_info("symbolize: ignoring the %s of pid %d: owned by uid %u, not by the "
			 "process (uid %d) or root",
			 what, pid, (unsigned)st->st_uid, (int)s->uid);
	f->refused_ino = st->st_ino;
	*refused = true;
	return false;
}

/* The perf map's lines into pm. */
static int add_map(struct perfmap *pm, int fd)
{
	char *text;
	size_t len;
	int err = rootfs_read_fd(fd, PERFMAP_MAX_BYTES, &text, &len);

	if (err)
		return err;
	err = perfmap_add_text(pm, text, len);
	free(text);
	return err;
}

void perfmap_load(const char *proc_root, int pid, const struct perfmap_stamp *prev,
		  struct perfmap_loaded *out)
{
	char root[PATH_MAX], path[64];
	struct perfmap_stamp *s = &out->stamp;
	struct jitdump_counts jc;
	struct stat mst, dst;
	bool map, dump;
	int mfd, dfd;

	*out = (struct perfmap_loaded){ .stamp = *prev };
	if (!s->nspid)
		read_status(proc_root, pid, s);
	snprintf(root, sizeof(root), "%s/%d/root", proc_root, pid);
	snprintf(path, sizeof(path), PERFMAP_PATH_FMT, s->nspid);
	mfd = procfile_open(root, path, NULL);
	dfd = open_jitdump(proc_root, pid, root, s->nspid);
	map = owner_checked(mfd, &mst, "perf map", pid, s, &s->map, &out->refused);
	dump = owner_checked(dfd, &dst, "jitdump", pid, s, &s->dump, &out->refused);
	if ((!map && !dump) || ((!map || same_file(&s->map, &mst)) &&
				(!dump || same_file(&s->dump, &dst))))
		goto out; /* nothing, or nothing new */
	out->pm = perfmap_new();
	if (!out->pm)
		goto out;
	if (map && !add_map(out->pm, mfd))
		stamp_file(&s->map, &mst);
	if (dump && jitdump_read(dfd, (uint64_t)dst.st_size, (uint32_t)s->nspid,
				 JITDUMP_MAX_RECORDS, out->pm, &jc) != -ENOMEM)
		stamp_file(&s->dump, &dst);
	perfmap_finish(out->pm);
out:
	if (mfd >= 0)
		close(mfd);
	if (dfd >= 0)
		close(dfd);
}
