/* A node's namespaces: the holder that keeps them, commands run in them, and counting what
 * lives in them.
 *
 * A holder is pid 1 of its own pid namespace. That is what makes "kill a node" one act: when
 * the init of a pid namespace dies, the kernel kills every other process in it. And the holder
 * dies with the lab's supervisor (PR_SET_PDEATHSIG), so a lab leaves nothing behind even when its
 * supervisor is SIGKILLed: the namespaces die with their last process, and a veth end dies with
 * its network namespace. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "netlab.h"

#define HOLDER_STACK (256 * 1024)
#define NODE_NS      (CLONE_NEWNET | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS)

struct holder_arg {
	const char *hostname;
	int life_rd, life_wr, ready_fd, ready_rd;
};

static void close_from(int lowest, int keep)
{
	for (int fd = lowest; fd < 1024; fd++) {
		if (fd != keep) {
			close(fd);
		}
	}
}

static int set_lo_up(void)
{
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0) {
		return -1;
	}
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	int r = ioctl(s, SIOCGIFFLAGS, &ifr);
	if (r == 0) {
		ifr.ifr_flags |= IFF_UP;
		r = ioctl(s, SIOCSIFFLAGS, &ifr);
	}
	close(s);
	return r;
}

/* The holder's set-up, in its new namespaces: NULL, or what failed. */
static const char *holder_setup(const char *hostname)
{
	/* Nothing mounted here may reach the host's mounts (and the reverse). */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
		return "mount --make-rprivate /";
	}
	if (mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") != 0) {
		return "mount tmpfs /dev/shm";
	}
	/* A /proc of this pid namespace, so that ps, pid files and the core's liveness checks
	 * see the node's processes. */
	if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0) {
		return "mount proc /proc";
	}
	/* /sys of this network namespace (ip and friends read it); not fatal. */
	if (umount2("/sys", MNT_DETACH) == 0) {
		mount("sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY, NULL);
	}
	if (sethostname(hostname, strlen(hostname)) != 0) {
		return "sethostname";
	}
	if (set_lo_up() != 0) {
		return "set lo up";
	}
	return NULL;
}

static void on_sigchld(int sig)
{
	(void)sig;
}

static int holder_main(void *p)
{
	struct holder_arg *a = p;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	prctl(PR_SET_NAME, "hako-netlab-node");
	close(a->ready_rd);
	close(a->life_wr);
	/* The supervisor may have died before PR_SET_PDEATHSIG took: then the pipe only it
	 * writes is at EOF (POLLHUP). */
	struct pollfd pf = {.fd = a->life_rd, .events = POLLIN};
	if (poll(&pf, 1, 0) > 0 && (pf.revents & (POLLHUP | POLLIN)) != 0) {
		_exit(1);
	}
	const char *failed = holder_setup(a->hostname);
	char msg[256];
	int n = failed == NULL ? snprintf(msg, sizeof(msg), "ok")
	                       : snprintf(msg, sizeof(msg), "%s: %s", failed, strerror(errno));
	if (write(a->ready_fd, msg, (size_t)n) < 0 || failed != NULL) {
		_exit(1);
	}
	close_from(0, -1);
	int devnull = open("/dev/null", O_RDWR);
	if (devnull == 0) {
		dup2(0, 1);
		dup2(0, 2);
	}
	/* pid 1 only gets the signals it has a handler for: SIGCHLD needs one to wake us. */
	sigset_t chld, none;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigemptyset(&none);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigchld;
	sigaction(SIGCHLD, &sa, NULL);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	for (;;) {
		while (waitpid(-1, NULL, WNOHANG) > 0) {
		}
		sigsuspend(&none);
	}
	return 0;
}

pid_t nl_holder_start(const char *hostname, const int life[2], char *why, size_t whylen)
{
	int ready[2];
	if (pipe2(ready, O_CLOEXEC) != 0) {
		snprintf(why, whylen, "pipe: %s", strerror(errno));
		return -1;
	}
	char *stack = malloc(HOLDER_STACK);
	if (stack == NULL) {
		snprintf(why, whylen, "out of memory");
		close(ready[0]);
		close(ready[1]);
		return -1;
	}
	struct holder_arg a = {.hostname = hostname,
	                       .life_rd = life[0],
	                       .life_wr = life[1],
	                       .ready_fd = ready[1],
	                       .ready_rd = ready[0]};
	pid_t pid = clone(holder_main, stack + HOLDER_STACK, NODE_NS | SIGCHLD, &a);
	int e = errno;
	close(ready[1]);
	if (pid < 0) {
		snprintf(why, whylen,
		         "cannot create namespaces (clone NEWNET|NEWNS|NEWPID|NEWIPC|NEWUTS): %s%s",
		         strerror(e), e == EPERM ? " (hako-netlab needs root: CAP_SYS_ADMIN)" : "");
		close(ready[0]);
		free(stack);
		return -1;
	}
	char msg[256];
	ssize_t n = read(ready[0], msg, sizeof(msg) - 1);
	close(ready[0]);
	free(stack); /* the child has its own copy of the memory (no CLONE_VM) */
	msg[n > 0 ? n : 0] = '\0';
	if (n <= 0 || strcmp(msg, "ok") != 0) {
		snprintf(why, whylen, "node \"%s\": %s", hostname,
		         n > 0 ? msg : "its holder died while setting up");
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return -1;
	}
	return pid;
}

static int open_ns(pid_t pid, const char *kind)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/ns/%s", (int)pid, kind);
	return open(path, O_RDONLY | O_CLOEXEC);
}

int nl_run_in(pid_t pid, char *const argv[], const char *in_text, char *out, size_t out_len,
              int quiet)
{
	int in[2] = {-1, -1}, res[2] = {-1, -1};
	if (out != NULL && out_len > 0) {
		out[0] = '\0';
	}
	if ((in_text != NULL && pipe2(in, O_CLOEXEC) != 0) ||
	    (out != NULL && pipe2(res, O_CLOEXEC) != 0)) {
		return -1;
	}
	int nsfd = pid > 0 ? open_ns(pid, "net") : -1;
	if (pid > 0 && nsfd < 0) {
		return -1;
	}
	pid_t child = fork();
	if (child < 0) {
		return -1;
	}
	if (child == 0) {
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		int null = open("/dev/null", O_RDWR);
		dup2(in_text != NULL ? in[0] : null, 0);
		dup2(out != NULL ? res[1] : null, 1);
		if (quiet) {
			dup2(null, 2);
		}
		if (nsfd >= 0 && setns(nsfd, CLONE_NEWNET) != 0) {
			fprintf(stderr, "hako-netlab: setns: %s\n", strerror(errno));
			_exit(126);
		}
		execvp(argv[0], argv);
		if (!quiet) {
			fprintf(stderr, "hako-netlab: %s: %s\n", argv[0], strerror(errno));
		}
		_exit(127);
	}
	if (nsfd >= 0) {
		close(nsfd);
	}
	if (in_text != NULL) {
		close(in[0]);
		size_t len = strlen(in_text), off = 0;
		while (off < len) {
			ssize_t w = write(in[1], in_text + off, len - off);
			if (w <= 0) {
				break;
			}
			off += (size_t)w;
		}
		close(in[1]);
	}
	if (out != NULL) {
		close(res[1]);
		size_t off = 0;
		ssize_t r;
		while ((r = read(res[0], out + off, out_len - 1 - off)) > 0) {
			off += (size_t)r;
			if (off == out_len - 1) {
				break;
			}
		}
		out[off] = '\0';
		close(res[0]);
	}
	int status;
	while (waitpid(child, &status, 0) < 0) {
		if (errno != EINTR) {
			return -1;
		}
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int nl_enter(pid_t pid, char *why, size_t whylen)
{
	/* Open them all first: once in the node's mount namespace, /proc is the node's. */
	static const struct {
		const char *kind;
		int flag;
	} order[] = {{"ipc", CLONE_NEWIPC},
	             {"uts", CLONE_NEWUTS},
	             {"net", CLONE_NEWNET},
	             {"pid", CLONE_NEWPID},
	             {"mnt", CLONE_NEWNS}};
	int fds[5];
	char cwd[4096];
	int have_cwd = getcwd(cwd, sizeof(cwd)) != NULL;
	for (size_t i = 0; i < 5; i++) {
		fds[i] = open_ns(pid, order[i].kind);
		if (fds[i] < 0) {
			snprintf(why, whylen, "/proc/%d/ns/%s: %s", (int)pid, order[i].kind,
			         strerror(errno));
			while (i-- > 0) {
				close(fds[i]);
			}
			return -1;
		}
	}
	int r = 0;
	for (size_t i = 0; i < 5; i++) {
		if (r == 0 && setns(fds[i], order[i].flag) != 0) {
			snprintf(why, whylen, "setns %s: %s", order[i].kind, strerror(errno));
			r = -1;
		}
		close(fds[i]);
	}
	if (r == 0 && (!have_cwd || chdir(cwd) != 0)) {
		r = chdir("/") == 0 ? 0 : -1;
	}
	return r;
}

unsigned long long nl_ns_inode(pid_t pid, const char *kind)
{
	char path[64];
	struct stat sb;
	snprintf(path, sizeof(path), "/proc/%d/ns/%s", (int)pid, kind);
	return stat(path, &sb) == 0 ? (unsigned long long)sb.st_ino : 0;
}

int nl_ns_count(const char *kind, unsigned long long ino)
{
	DIR *d = opendir("/proc");
	if (d == NULL) {
		return -1;
	}
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (*end == '\0' && pid > 0 && nl_ns_inode((pid_t)pid, kind) == ino &&
		    nl_proc_start((pid_t)pid) != 0) {
			n++;
		}
	}
	closedir(d);
	return n;
}
