/* perfmap_load.c: read a process's perf map from where it sees /tmp, with
 * the checks that keep a forged one out.  Slow work on another process's
 * files (its /proc entries, a map of up to PERFMAP_MAX_BYTES): the daemon
 * runs it on its worker (symbolizer_set_perfmap_loader). */
#include "perfmap.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "rootfs.h"

/* Where a process writes its map: the pid it sees (its innermost
 * namespace), under its root. */
#define PERFMAP_PATH_FMT "/tmp/perf-%d.map"

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

static bool same_file(const struct perfmap_stamp *s, const struct stat *st)
{
	return (uint64_t)st->st_size == s->size && st->st_ino == s->ino &&
	       st->st_mtim.tv_sec == s->mtime.tv_sec && st->st_mtim.tv_nsec == s->mtime.tv_nsec;
}

void perfmap_load(const char *proc_root, int pid, const struct perfmap_stamp *prev,
		  struct perfmap_loaded *out)
{
	char root[PATH_MAX], path[64], *text;
	struct perfmap_stamp *s = &out->stamp;
	struct stat st;
	size_t len;
	int fd;

	*out = (struct perfmap_loaded){ .stamp = *prev };
	if (!s->nspid)
		read_status(proc_root, pid, s);
	snprintf(root, sizeof(root), "%s/%d/root", proc_root, pid);
	snprintf(path, sizeof(path), PERFMAP_PATH_FMT, s->nspid);
	fd = procfile_open(root, path, NULL);
	if (fd < 0)
		return;
	if (fstat(fd, &st) || same_file(s, &st))
		goto out;
	/* /tmp is everyone's: a map another user planted there would name
	 * this process's code as they like. */
	if (!perfmap_owner_ok(st.st_uid, s->uid)) {
		if (st.st_ino != s->refused_ino)
			log_info("symbolize: ignoring %s of pid %d: owned by uid %u, not by the "
				 "process (uid %d) or root",
				 path, pid, (unsigned)st.st_uid, (int)s->uid);
		s->refused_ino = st.st_ino;
		out->refused = true;
		goto out;
	}
	if (rootfs_read_fd(fd, PERFMAP_MAX_BYTES, &text, &len))
		goto out;
	out->pm = perfmap_parse(text, len);
	free(text);
	if (!out->pm)
		goto out;
	s->size = (uint64_t)st.st_size;
	s->ino = st.st_ino;
	s->mtime = st.st_mtim;
out:
	close(fd);
}
