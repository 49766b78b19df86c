/* launch: start the command profctl records (`profctl record -- CMD`),
 * held before exec until the caller releases it, as the user who ran
 * profctl (under sudo: SUDO_UID/SUDO_GID and that user's groups), so its
 * profile starts with its first instruction and its files are its own. */
#ifndef PROFCTL_LAUNCH_H
#define PROFCTL_LAUNCH_H

#include <stdbool.h>
#include <sys/types.h>

struct launch {
	pid_t pid;
	int go_fd;  /* write end: one byte lets the child exec */
	int err_fd; /* read end: the child's errno if it could not exec */
};

/* Fork the child, which waits.  0 or -errno. */
int launch_held(char *const argv[], struct launch *l);
/* Let it exec: 0 once it runs CMD, or -errno (CMD not found, the user
 * could not be taken on), after which the child is reaped. */
int launch_release(struct launch *l);
/* Whether it ended: 1 with *code its exit status as a shell gives it
 * (128 + signal), 0 while it runs, -errno.  wait: block until it ends. */
int launch_poll(struct launch *l, bool wait, int *code);
/* Kill and reap a child that was never released. */
void launch_abort(struct launch *l);

#endif
