/* sdnotify: tell systemd how the service is doing, as sd_notify(3) does,
 * without linking libsystemd: one datagram with "VAR=value" lines to the
 * AF_UNIX socket named by $NOTIFY_SOCKET (a path, or "@name" for the
 * abstract namespace).  With Type=notify, "READY=1" ends start-up;
 * "RELOADING=1", "STOPPING=1" and "STATUS=text" are the others profd
 * uses.  The kernel attaches our credentials, which is how systemd knows
 * the message comes from the main process. */
#ifndef PROFD_SDNOTIFY_H
#define PROFD_SDNOTIFY_H

/* Returns 1 when sent, 0 when not started by systemd ($NOTIFY_SOCKET
 * unset or empty), -errno on failure (nothing is logged: callers decide
 * whether a lost notification matters). */
int sdnotify_send(const char *state);

#endif
