/* sockperm: who may connect to profd's control socket.  The socket is
 * mode 0660, group "profd", when that group exists: its members (and
 * root) may connect, and SO_PEERCRED still limits each to its own
 * processes.  Without the group it is 0600, root only, said in a log
 * line; never 0666.  Call it right after bind(). */
#ifndef PROFD_SOCKPERM_H
#define PROFD_SOCKPERM_H

#define SOCKPERM_GROUP "profd"

/* sockperm_apply(path, SOCKPERM_GROUP). */
int control_socket_perms(const char *path);

/* Returns 0 when the socket at path is 0660 and group's, or 0600 when no
 * such group exists.  When the group cannot be looked up or given to the
 * socket, leaves it 0600 (root only: fail closed) and returns -errno.
 * -ENOTSOCK if path is not a socket (a symlink is not followed). */
int sockperm_apply(const char *path, const char *group);

#endif
