#include "debuginfod.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "filekind.h"
#include "log.h"

/* libdebuginfod's API (elfutils' debuginfod.h), declared here so that
 * building needs no -dev package: stable since elfutils 0.178. */
typedef struct debuginfod_client debuginfod_client;
struct client_api {
	debuginfod_client *(*begin)(void);
	int (*find_debuginfo)(debuginfod_client *c, const unsigned char *id, int len, char **path);
	void (*end)(debuginfod_client *c);
	void (*set_progressfn)(debuginfod_client *c, int (*fn)(debuginfod_client *, long, long));
};

static struct client_api api;
static bool on;
static int cancelled; /* atomic: debuginfod_cancel() */

/* Called by the client while it waits on the network (done and total
 * bytes, total <= 0 while unknown): non-zero ends the fetch, so a daemon
 * stopping never waits out a slow download, and a file past the size
 * bound stops downloading.  The bound is kept here and not given to the
 * library as DEBUGINFOD_MAXSIZE: elfutils 0.188 then writes a line to
 * its verbose fd, -1 when unset, and glibc 2.36's dprintf leaks its 8 KiB
 * buffer on every such call (one a fetch). */
static int progress(debuginfod_client *c, long done, long total)
{
	(void)c;
	if (done > DEBUGINFOD_MAX_BYTES || total > DEBUGINFOD_MAX_BYTES)
		return 1;
	return __atomic_load_n(&cancelled, __ATOMIC_RELAXED);
}

/* The cache's policy, in the files the library reads it from
 * (debuginfod_find_debuginfo(3), CACHE): its defaults, written by profd
 * once so that the library never writes them itself (glibc 2.36's
 * dprintf, which it uses for that, leaks its buffer). */
static const char *const cache_policy[][2] = {
	{ "cache_clean_interval_s", "86400" }, /* clean once a day */
	{ "max_unused_age_s", "604800" },      /* files unused for a week go */
	{ "cache_miss_s", "600" },             /* a miss is asked again after 10 min */
};

static void write_cache_policy(const char *cache_dir)
{
	int dir = open(cache_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	size_t i;

	if (dir < 0)
		return;
	for (i = 0; i < sizeof(cache_policy) / sizeof(cache_policy[0]); i++) {
		int fd = openat(dir, cache_policy[i][0], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

		if (fd < 0)
			continue; /* there already */
		if (write(fd, cache_policy[i][1], strlen(cache_policy[i][1])) < 0)
			log_debug("debuginfod: %s: %s", cache_policy[i][0], strerror(errno));
		close(fd);
	}
	close(dir);
}

/* Whether cache_dir (made here if absent) is a folder of ours that only
 * we write: the library downloads into it as root and, cleaning it,
 * deletes what it has not used for a week, so a symbolic link there (to
 * someone's folder) or a folder others can write must not be taken.
 * 0, or -errno with one line saying what is in the way. */
static int cache_dir_ours(const char *cache_dir)
{
	struct stat st;

	if (mkdir(cache_dir, 0700) && errno != EEXIST) {
		log_warn("debuginfod: cannot make the cache %s: %s: debug files are not fetched",
			 cache_dir, strerror(errno));
		return -errno;
	}
	if (lstat(cache_dir, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode)) {
		log_warn("debuginfod: the cache %s is %s, not a folder: not used, not replaced; "
			 "debug files are not fetched",
			 cache_dir, filekind_name(st.st_mode));
		return -ENOTDIR;
	}
	if (st.st_uid != geteuid() || (st.st_mode & 022)) {
		log_warn("debuginfod: the cache %s is owned by uid %u, mode %03o: not used "
			 "(it must be profd's own, writable by it alone); debug files are not fetched",
			 cache_dir, (unsigned)st.st_uid, (unsigned)(st.st_mode & 0777));
		return -EPERM;
	}
	return 0;
}

/* The library reads its limits from the environment: ours where the
 * user set none.  Its own cache default is $HOME/.cache (root's home,
 * under a service): ours is cache_dir, once it is found to be ours. */
static int default_env(const char *cache_dir)
{
	setenv("DEBUGINFOD_MAXTIME", DEBUGINFOD_DEFAULT_MAXTIME, 0);
	setenv("DEBUGINFOD_TIMEOUT", DEBUGINFOD_DEFAULT_TIMEOUT, 0);
	if (!cache_dir || getenv("DEBUGINFOD_CACHE_PATH"))
		return 0; /* the user's choice */
	if (cache_dir_ours(cache_dir))
		return -EPERM;
	write_cache_policy(cache_dir);
	setenv("DEBUGINFOD_CACHE_PATH", cache_dir, 0);
	return 0;
}

static int load_api(void)
{
	void *lib = dlopen("libdebuginfod.so.1", RTLD_NOW | RTLD_LOCAL);

	if (!lib)
		return -ENOENT;
	api.begin = (debuginfod_client * (*)(void)) dlsym(lib, "debuginfod_begin");
	api.find_debuginfo = (int (*)(debuginfod_client *, const unsigned char *, int, char **))dlsym(
		lib, "debuginfod_find_debuginfo");
	api.end = (void (*)(debuginfod_client *))dlsym(lib, "debuginfod_end");
	api.set_progressfn = (void (*)(debuginfod_client *, int (*)(debuginfod_client *, long, long)))
		dlsym(lib, "debuginfod_set_progressfn");
	if (!api.begin || !api.find_debuginfo || !api.end || !api.set_progressfn) {
		dlclose(lib);
		return -ENOSYS;
	}
	return 0; /* kept loaded for the daemon's life */
}

int debuginfod_init(const char *cache_dir)
{
	const char *urls = getenv("DEBUGINFOD_URLS");
	int err;

	if (!urls || !*urls)
		return 0;
	err = load_api();
	if (err) {
		log_warn("debuginfod: DEBUGINFOD_URLS is set, but %s: debug files are not fetched",
			 err == -ENOENT ? "libdebuginfod.so.1 (elfutils) is not installed"
					: "libdebuginfod.so.1 lacks the functions profd calls");
		return err;
	}
	if (default_env(cache_dir))
		return -EPERM;
	on = true;
	return 1;
}

bool debuginfod_on(void)
{
	return on;
}

int debuginfod_fetch(const uint8_t *id, size_t len)
{
	debuginfod_client *c;
	int fd;

	if (!on)
		return -ENOSYS;
	if (!len || len > 64)
		return -EINVAL;
	if (__atomic_load_n(&cancelled, __ATOMIC_RELAXED))
		return -ECANCELED;
	c = api.begin();
	if (!c)
		return -ENOMEM;
	api.set_progressfn(c, progress);
	fd = api.find_debuginfo(c, id, (int)len, NULL);
	api.end(c);
	return fd; /* or -errno */
}

void debuginfod_cancel(void)
{
	__atomic_store_n(&cancelled, 1, __ATOMIC_RELAXED);
}
