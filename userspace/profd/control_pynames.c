/* control_pynames.c: `dump --by-thread` roots named as Python names the
 * threads (threading's Thread.name: "MainThread (1234)"), where the
 * sampled name (the OS's, "python3.11 (1234)") is still the thread's;
 * the same for a timeline's tracks (gecko, trace).
 *
 * The names are read from the processes' memory after the profile is
 * built, with no lock held, by the same reader as `profctl stacks`
 * (pynow_read_names: a reader thread and a deadline), for a dump of a few
 * live processes only.  Only threads alive now have a Python name to
 * read; a root is renamed only while the thread's OS name is still the
 * one its samples carry, so that a tid the kernel gave to a newer thread
 * does not lend its name to an older one's samples (mostly: two threads
 * of one process share the OS name before 3.14). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "control.h"
#include "tlset.h"

/* The thread's OS name now is the label's name part. */
static bool comm_still(uint32_t pid, uint32_t tid, const char *name, size_t nlen)
{
	char path[96], comm[64];
	int n;

	snprintf(path, sizeof(path), "/proc/%u/task/%u/comm", pid, tid);
	n = proc_read_small_file(path, comm, sizeof(comm));
	if (n <= 0)
		return false;
	comm[strcspn(comm, "\n")] = '\0';
	return strlen(comm) == nlen && !memcmp(comm, name, nlen);
}

/* The roots of pid's threads that Python names, each with its new frame,
 * into map (old frame id -> new). */
static int name_roots(uint32_t pid, const struct pynow *pn, struct stackset *ss,
		      struct hashmap *map)
{
	size_t i, n = ss->nframes, nlen;
	uint32_t tid;

	for (i = 0; i < n; i++) {
		const struct pynow_thread *t;
		char label[PYNOW_NAME_MAX + 16];
		int64_t id;

		if (ss->frames[i].kind != FRAME_ROOT ||
		    !stackset_root_tid(ss->frames[i].name, &nlen, &tid))
			continue;
		t = pynow_find(pn, tid);
		if (!t || !t->pyname[0] || !comm_still(pid, tid, ss->frames[i].name, nlen))
			continue;
		snprintf(label, sizeof(label), "%s (%u)", t->pyname, tid);
		id = stackset_intern(ss, FRAME_ROOT, label);
		if (id < 0 || hashmap_put(map, i, (uint64_t)id))
			return -ENOMEM;
	}
	return 0;
}

typedef int (*pynames_fn)(uint32_t pid, const struct pynow *pn, void *arg);

/* fn for each of the live processes pids with its threads' names read. */
static int each_named(const uint32_t *pids, size_t n, pynames_fn fn, void *arg)
{
	struct pynow pn;
	size_t i;
	int err = 0;

	if (n > PYNAMES_MAX_PROCS)
		return 0;
	for (i = 0; i < n && !err; i++) {
		err = pynow_read_names(&pn, pids[i]);
		if (!err)
			err = fn(pids[i], &pn, arg);
		pynow_free(&pn);
		if (err == -ESRCH)
			err = 0; /* gone since: its samples keep their names */
	}
	return err;
}

static int roots_of(uint32_t pid, const struct pynow *pn, void *arg)
{
	void **a = arg;

	return name_roots(pid, pn, a[0], a[1]);
}

int control_python_thread_roots(const uint32_t *pids, size_t n, bool process_root,
				struct stackset *ss)
{
	struct hashmap map;
	void *arg[2] = {ss, &map};
	int err;

	hashmap_init(&map);
	err = each_named(pids, n, roots_of, arg);
	/* The thread's root is under the process's where there is one. */
	if (!err && map.len)
		err = stackset_replace_at(ss, process_root ? 1 : 0, &map);
	hashmap_free(&map);
	return err;
}

/* The tracks of pid's threads that Python names. */
static int tracks_of(uint32_t pid, const struct pynow *pn, void *arg)
{
	struct tlset *tl = arg;
	size_t i;

	for (i = 0; i < tl->nthreads; i++) {
		struct tl_thread *th = &tl->threads[i];
		const struct pynow_thread *t = th->pid == pid ? pynow_find(pn, th->tid) : NULL;

		if (!t || !t->pyname[0] || !comm_still(pid, th->tid, th->name, strlen(th->name)))
			continue;
		if (stackset_set_str(&th->pyname, t->pyname))
			return -ENOMEM;
	}
	return 0;
}

int control_python_thread_tracks(const uint32_t *pids, size_t n, struct tlset *tl)
{
	return each_named(pids, n, tracks_of, tl);
}
