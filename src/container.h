/* container.h: reaching a process that lives in other namespaces (a container)
 * from outside: the pid it knows itself by, its root, its network namespace,
 * and a copy of the agent placed where it can load it. */
#ifndef MEMWATCH_CONTAINER_H
#define MEMWATCH_CONTAINER_H

#include <stdbool.h>
#include <sys/socket.h>
#include <sys/types.h>

struct snapshot;

/* Whether pid's namespace of that kind ("mnt", "net", "pid", "user",
 * "cgroup") is another than ours. False when it cannot be told. */
bool container_ns_differs(int pid, const char *kind);

/* Whether pid's root directory is another than ours (chroot, pivot_root). */
bool container_other_root(int pid);

/* The agent as the process is to load it. */
struct container_agent {
	char *path;       /* the path to give the process's dlopen (caller frees) */
	char *copy;       /* a copy placed in its root, seen from here; NULL: none */
	char *copy_dir;   /* the directory made for it */
	bool copied;      /* a copy was made (it may be removed already) */
};

/* Whether pid sees the agent file agent_abs (absolute) at that same path. */
bool container_agent_visible(int pid, const char *agent_abs);

/* Make the agent file agent_abs (absolute) loadable by pid: the same file when
 * the process sees it at that path, else a copy in a writable, executable
 * place of its root (/tmp, /var/tmp, /dev/shm), owned by uid:gid. Also checks
 * that the agent's libraries resolve inside that root. 0, or -1 with *cause
 * and *hint (the fix; caller frees both); -EACCES with *cause when we may not
 * look into its root (no ptrace permission: the caller explains it). */
int container_place_agent(int pid, const char *agent_abs, uid_t uid, gid_t gid,
			  struct container_agent *ca, char **cause, char **hint);

/* Remove the copy, once dlopen has mapped it (or failed). */
void container_agent_remove(struct container_agent *ca);
/* Remove the copy if still there, and free ca. */
void container_agent_release(struct container_agent *ca);

/* Whether we may enter pid's network namespace (when it is another), as
 * container_connect will: checked before anything is loaded into it. 0, or -1
 * with *cause and *hint (caller frees). */
int container_check_reach(int pid, char **cause, char **hint);
/* The fix when entering it is not permitted (container_connect's -EPERM). */
#define CONTAINER_HINT_NETNS "run memwatch as root with CAP_SYS_ADMIN (docker run --cap-add " \
	"SYS_ADMIN), or inside the process's network namespace (nsenter --net)"

/* Connect a Unix stream socket (SOCK_CLOEXEC, send and receive timeouts of
 * timeout_ms) to sa, an abstract name in pid's network namespace, where its
 * agent listens. For a process in other namespaces this is done by a
 * short-lived thread that enters its network namespace (setns affects that
 * thread only; the socket keeps the namespace it was made in) and, when the
 * process has its own user namespace, takes its owner's uid for the connect,
 * as the agent accepts only its own user or root. The connected fd, or
 * -errno: from connect (no *cause: the caller words it), or from a step
 * before it (with *cause). */
int container_connect(int pid, const struct sockaddr *sa, socklen_t salen, int timeout_ms,
		      char **cause);

/* The same for sa, a Unix socket bound to a path (HotSpot's attach socket,
 * /proc/PID/root/tmp/.java_pidNSPID): connected as the process's owner when
 * it has its own user namespace and we are root (the JVM accepts a peer with
 * its own effective uid and gid, or root as its namespace sees it), without
 * entering its network namespace. The fd or -errno, as container_connect. */
int container_connect_path(int pid, const struct sockaddr *sa, socklen_t salen, int timeout_ms,
			   char **cause);

/* Accessors for libunwind-ptrace (unw_accessors_t, for unw_create_addr_space)
 * that find unwind tables through /proc/PID/map_files, so the stacks of a
 * process in another root, or whose files were deleted or replaced since it
 * mapped them, unwind with its own files, not the files its paths name here. One process at a time (memwatch attaches to one at a
 * time). In container-unwind.c, which needs libunwind-ptrace. */
struct unw_accessors;
struct unw_accessors *container_unwind_accessors(int pid);

/* The modules of a snapshot whose files are not ours at the paths it records
 * (container-files.c). */
struct their_files {
	size_t nembed;           /* how many modules are pointed at the process's files */
	bool *embed;             /* per module: pointed there, its symbols to embed
				  * (NULL or all false when nembed is 0) */
	char **recorded;         /* per module: the path as recorded, when changed */
	char *unreadable;        /* the modules that cannot be read at all and why,
				  * for a warning; NULL: none */
	char *debug_dir;         /* the process's own debug directory
				  * (/proc/PID/root/usr/lib/debug), where the
				  * debug info of the files pointed at may be;
				  * NULL: none */
};

/* For each module of s (a snapshot of pid taken now) that frames of s are
 * in and whose file at the path recorded here is not the file the process
 * mapped (another mount namespace or root, a file replaced or deleted since;
 * told by the device and inode of /proc/PID/map_files, else those
 * /proc/PID/maps gives, else by build-id), point its path at the process's
 * own file, /proc/PID/root/PATH when that is it, else
 * /proc/PID/map_files/LO-HI, and flag it in tf->embed, so that
 * symbolize_embed(s, tf->embed, &tf->debug_dir, ...) names its frames while
 * the process lives, with the debug info its root holds. A module that is the same file here is left alone: it is read when
 * reported. Put the paths back with container_files_restore, which also
 * frees what tf holds. */
void container_files_point(struct snapshot *s, int pid, struct their_files *tf);
void container_files_restore(struct snapshot *s, struct their_files *tf);

#endif
