/* config: profd's configuration file, /etc/profd/profd.conf.
 *
 * The file holds the daemon's long options, one per line, without the
 * dashes:
 *
 *	# a comment
 *	rate = 199
 *	pid = 123
 *	pid = 456            # an option that repeats on the command line repeats here
 *	all-processes = true
 *
 * config_to_argv() turns it into "--rate=199" "--pid=123" ... in front of
 * the command line's own arguments, so main() runs ONE getopt_long pass
 * with its own table over file and command line: the file's values are
 * checked by the same code, and the command line, coming later, wins.
 *
 * Keys must be exact long option names of that table (no abbreviations).
 * Options without an argument take true/yes/on (given once), false/no/off
 * (left out) or a count 0..9 (given that many times, as verbose = 2).
 * '#' starts a comment at the start of a line or after a blank; values
 * cannot contain " #".  Everything is bounded: file size, line length
 * and number of settings.  The file must not be writable by anyone but
 * its owner (root, or the user running profd) and group root: whoever
 * can write it controls a root daemon.
 */
#ifndef PROFD_CONFIG_H
#define PROFD_CONFIG_H

#include <getopt.h>
#include <stddef.h>

#define CONFIG_DEFAULT_PATH "/etc/profd/profd.conf"
#define CONFIG_MAX_BYTES (64 * 1024)
#define CONFIG_MAX_LINE 1024
#define CONFIG_MAX_ENTRIES 256

/* A missing file is an empty configuration (for the default path; a
 * path the user named must exist). */
#define CONFIG_MISSING_OK 0x1u

struct config_argv {
	int argc;
	/* argv[0] (the command line's), the file's "--key[=value]" entries,
	 * then the command line's argv[1..]; NULL-terminated.  The file's
	 * strings are owned here, the command line's are borrowed: both
	 * must outlive whatever getopt's optarg pointers are stored in. */
	char **argv;
	int nfile;	 /* argv[1..nfile] came from the file */
	unsigned *lines; /* lines[i]: file line of argv[i], 1 <= i <= nfile */
	char *path;	 /* the file read (NULL if none was found) */
	char error[512]; /* the last error, as logged */
};

/* Read path (checked against opts, the daemon's getopt_long table) and
 * build *out as described above from it and the command line (argc,
 * argv).  Errors are logged as "config: PATH:LINE: what" and kept in
 * out->error.  Returns 0 or -errno (-EINVAL for a bad file); *out is
 * valid to free either way. */
int config_to_argv(const char *path, const struct option *opts, unsigned flags, int argc,
		   char *const argv[], struct config_argv *out);

/* The line of the file that argv[index] came from, or 0 when it came
 * from the command line: lets main() say where a value it rejected was
 * set. */
unsigned config_argv_line(const struct config_argv *ca, int index);

void config_argv_free(struct config_argv *ca);

/* Find the config option (the table entry whose val is config_val) in
 * a command line with getopt_long's own rules: "--config PATH",
 * "--config=PATH", unique abbreviations, nothing after "--", the last
 * one wins.  argv is not reordered; getopt's optind is left at 0 (a full
 * reset) so the caller's next getopt_long starts afresh.  Returns 1 and
 * sets *path when found, 0 when not, -ENOMEM. */
int config_find_path(int argc, char *const argv[], const char *shortopts,
		     const struct option *opts, int config_val, const char **path);

#endif
