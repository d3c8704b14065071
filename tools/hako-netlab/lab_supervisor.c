/* A lab's supervisor: makes the lab, keeps it, takes it down.
 *
 * The supervisor stays in the host's namespaces. Its children are one holder per node and one
 * for the switch (the bridge and the switch's address, where a relay runs), a janitor, and for
 * `run` the user's command. Nothing of the lab is in the host's network namespace: the bridge
 * and every veth pair are made in the switch's namespace (one end moved into its node's), so a
 * lab that dies, however it dies, takes its links with it, and two labs may use the same
 * subnet.
 *
 * The janitor waits for the supervisor's end (a pipe only the supervisor writes reaches EOF)
 * and removes the state directory if the supervisor could not: after a SIGKILL. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lab_supervisor.h"

struct sup {
	const nl_lab_t *lab;
	nl_state_t st;
	int lock_fd;
	int life[2];
	int sig_fd;
	pid_t janitor;
	pid_t cmd;
	int cmd_status;
};

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "hako-netlab: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* The lab's directory and its lock, under the root's lock (after sweeping leftovers). */
static int make_dir(struct sup *s, char *why, size_t whylen)
{
	int root = nl_root_lock();
	if (root < 0) {
		snprintf(why, whylen, "%s: %s", nl_state_root(), strerror(errno));
		return -1;
	}
	nl_sweep(1);
	char path[600];
	nl_state_path(s->st.name, NULL, path, sizeof(path));
	int r = -1;
	if (mkdir(path, 0755) != 0) {
		snprintf(why, whylen, errno == EEXIST ? "lab \"%s\" exists (%s)" : "%s: %s",
		         errno == EEXIST ? s->st.name : path,
		         errno == EEXIST ? path : strerror(errno));
	} else {
		nl_state_path(s->st.name, "lock", path, sizeof(path));
		s->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (s->lock_fd < 0 || flock(s->lock_fd, LOCK_EX | LOCK_NB) != 0) {
			snprintf(why, whylen, "%s: %s", path, strerror(errno));
			nl_state_remove(s->st.name);
		} else {
			r = 0;
		}
	}
	close(root);
	return r;
}

static void janitor(const char *lab, int life_rd)
{
	setsid();
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (int fd = 3; fd < 1024; fd++) {
		if (fd != life_rd) {
			close(fd);
		}
	}
	char c;
	ssize_t n;
	do {
		n = read(life_rd, &c, 1);
	} while (n < 0 && errno == EINTR);
	/* The supervisor is gone. Its lock is free once it is (taking it waits for that). */
	char path[600];
	nl_state_path(lab, "lock", path, sizeof(path));
	int fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd >= 0 && flock(fd, LOCK_EX) == 0) {
		int root = nl_root_lock();
		nl_state_t st;
		char why[256];
		if (nl_state_read(lab, &st, why, sizeof(why)) == 0) {
			for (size_t i = 0; i < st.nnodes; i++) {
				if (nl_proc_is(st.nodes[i].pid, st.nodes[i].start)) {
					kill(st.nodes[i].pid, SIGKILL);
				}
			}
		}
		nl_state_remove(lab);
		if (root >= 0) {
			close(root);
		}
	}
	_exit(0);
}

static int ip_batch(pid_t ns, const char *what, const char *batch, char *why, size_t whylen)
{
	char *const argv[] = {"ip", "-batch", "-", NULL};
	int r = nl_run_in(ns, argv, batch, NULL, 0, 0);
	if (r != 0) {
		snprintf(why, whylen, "%s: ip -batch failed (%s)", what,
		         r < 0      ? strerror(errno)
		         : r == 127 ? "is iproute2 installed?"
		                    : "see above");
		return -1;
	}
	return 0;
}

/* The bridge and the switch's address, a veth pair a node (its bridge port n<i> in the
 * switch's namespace, eth0 in the node's), each node's address. */
static int wire(struct sup *s, char *why, size_t whylen)
{
	const nl_lab_t *lab = s->lab;
	size_t cap = 256 + lab->nnodes * 256;
	char *b = malloc(cap), ip[16];
	if (b == NULL) {
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	size_t off = (size_t)snprintf(b, cap,
	                              "link add " NL_BRIDGE " type bridge\n"
	                              "link set " NL_BRIDGE " up\n"
	                              "addr add %s/%d dev " NL_BRIDGE "\n",
	                              nl_ip_text(lab->sw_ip, ip), lab->prefix);
	for (size_t i = 0; i < lab->nnodes; i++) {
		const nl_live_node_t *n = &s->st.nodes[i + 1];
		off += (size_t)snprintf(b + off, cap - off,
		                        "link add %s type veth peer name eth0 netns %d\n"
		                        "link set %s master " NL_BRIDGE "\n"
		                        "link set %s up\n",
		                        n->port, (int)n->pid, n->port, n->port);
	}
	int r = ip_batch(s->st.nodes[0].pid, "the switch", b, why, whylen);
	for (size_t i = 0; r == 0 && i < lab->nnodes; i++) {
		const nl_live_node_t *n = &s->st.nodes[i + 1];
		snprintf(b, cap, "addr add %s dev eth0\nlink set eth0 up\n", n->cidr);
		char what[64];
		snprintf(what, sizeof(what), "node \"%s\"", n->name);
		r = ip_batch(n->pid, what, b, why, whylen);
	}
	free(b);
	return r;
}

/* Does the kernel have netem? Try it on the first bridge port of the switch. */
static int probe_netem(const struct sup *s)
{
	if (s->st.nnodes < 2) {
		return 0;
	}
	const char *port = s->st.nodes[1].port;
	char *const add[] = {"tc",   "qdisc", "add",   "dev", (char *)port,
	                     "root", "netem", "delay", "0ms", NULL};
	char *const del[] = {"tc", "qdisc", "del", "dev", (char *)port, "root", NULL};
	if (nl_run_in(s->st.nodes[0].pid, add, NULL, NULL, 0, 1) != 0) {
		return 0;
	}
	nl_run_in(s->st.nodes[0].pid, del, NULL, NULL, 0, 1);
	return 1;
}

static nl_live_node_t *node_of(struct sup *s, pid_t pid)
{
	for (size_t i = 0; i < s->st.nnodes; i++) {
		if (s->st.nodes[i].pid == pid && !s->st.nodes[i].dead) {
			return &s->st.nodes[i];
		}
	}
	return NULL;
}

static int start_holders(struct sup *s, char *why, size_t whylen)
{
	const nl_lab_t *lab = s->lab;
	char ip[16];
	for (size_t i = 0; i <= lab->nnodes; i++) {
		nl_live_node_t *n = &s->st.nodes[i];
		if (i == 0) {
			snprintf(n->name, sizeof(n->name), NL_SWITCH);
			snprintf(n->cidr, sizeof(n->cidr), "%s/%d", nl_ip_text(lab->sw_ip, ip),
			         lab->prefix);
			snprintf(n->port, sizeof(n->port), "-");
		} else {
			snprintf(n->name, sizeof(n->name), "%s", lab->nodes[i - 1].name);
			snprintf(n->cidr, sizeof(n->cidr), "%s/%d",
			         nl_ip_text(lab->nodes[i - 1].ip, ip), lab->prefix);
			snprintf(n->port, sizeof(n->port), "n%u", (unsigned)(i - 1) % 1000u);
		}
		n->pid = nl_holder_start(n->name, s->life, why, whylen);
		if (n->pid < 0) {
			n->pid = 0;
			return -1;
		}
		n->start = nl_proc_start(n->pid);
		s->st.nnodes = i + 1;
	}
	return 0;
}

static void teardown(struct sup *s)
{
	for (size_t i = 0; i < s->st.nnodes; i++) {
		nl_live_node_t *n = &s->st.nodes[i];
		if (n->pid > 0 && !n->dead) {
			kill(n->pid, SIGKILL);
		}
	}
	/* Each holder's death takes its pid namespace's processes with it, before it can be
	 * reaped. */
	for (size_t i = 0; i < s->st.nnodes; i++) {
		nl_live_node_t *n = &s->st.nodes[i];
		if (n->pid > 0 && !n->dead) {
			while (waitpid(n->pid, NULL, 0) < 0 && errno == EINTR) {
			}
			n->dead = 1;
		}
	}
	nl_state_remove(s->st.name);
	if (s->lock_fd >= 0) {
		close(s->lock_fd);
	}
	close(s->life[0]);
	close(s->life[1]);
	if (s->janitor > 0) {
		while (waitpid(s->janitor, NULL, 0) < 0 && errno == EINTR) {
		}
	}
}

static void start_cmd(struct sup *s, char **cmd)
{
	char state[600], sw[16], self[4096];
	nl_state_path(s->st.name, "state", state, sizeof(state));
	nl_ip_text(s->lab->sw_ip, sw);
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	self[n > 0 ? n : 0] = '\0';
	pid_t me = getpid();
	s->cmd = fork();
	if (s->cmd == 0) {
		/* The command lives no longer than its lab. */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != me) {
			_exit(128 + SIGTERM);
		}
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		setenv("HAKO_NETLAB", s->st.name, 1);
		setenv("HAKO_NETLAB_STATE", state, 1);
		setenv("HAKO_NETLAB_SWITCH", sw, 1);
		if (self[0] != '\0') {
			setenv("HAKO_NETLAB_EXE", self, 1);
		}
		execvp(cmd[0], cmd);
		fprintf(stderr, "hako-netlab: %s: %s\n", cmd[0], strerror(errno));
		_exit(127);
	}
	if (s->cmd < 0) {
		say("fork: %s", strerror(errno));
		s->cmd = 0;
		s->cmd_status = 1;
	}
}

/* Until the command ends (run) or a signal ends the lab (up). */
static void keep(struct sup *s, int with_cmd, int tie_fd)
{
	if (with_cmd && s->cmd == 0) {
		return;
	}
	for (;;) {
		struct pollfd pf[2] = {{.fd = s->sig_fd, .events = POLLIN},
		                       {.fd = tie_fd, .events = POLLIN}};
		if (poll(pf, tie_fd >= 0 ? 2 : 1, -1) < 0 && errno != EINTR) {
			return;
		}
		if (tie_fd >= 0 && pf[1].revents != 0) {
			say("lab \"%s\": the process it was tied to ended", s->st.name);
			return;
		}
		if (pf[0].revents == 0) {
			continue;
		}
		struct signalfd_siginfo si;
		ssize_t n = read(s->sig_fd, &si, sizeof(si));
		if (n != (ssize_t)sizeof(si)) {
			if (n < 0 && errno == EINTR) {
				continue;
			}
			return;
		}
		if (si.ssi_signo != SIGCHLD) {
			if (!with_cmd) {
				return;
			}
			/* A terminal's ^C reached the command already (same process group); a kill
			 * of the supervisor is passed on. The lab ends when the command does. */
			if (si.ssi_code == SI_USER && s->cmd > 0) {
				kill(s->cmd, (int)si.ssi_signo);
			}
			continue;
		}
		int status;
		pid_t pid;
		while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
			int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
			nl_live_node_t *node;
			if (pid == s->cmd) {
				s->cmd = 0;
				s->cmd_status = code;
			} else if (pid == s->janitor) {
				s->janitor = 0;
			} else if ((node = node_of(s, pid)) != NULL) {
				node->dead = 1;
				nl_state_write(&s->st);
				say("lab \"%s\": node \"%s\" is gone (%s %d)", s->st.name,
				    node->name, WIFEXITED(status) ? "exit" : "signal",
				    WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
			}
		}
		if (with_cmd && s->cmd == 0) {
			return;
		}
	}
}

int nl_supervise(const nl_sup_options_t *o, char *why, size_t whylen)
{
	struct sup s;
	memset(&s, 0, sizeof(s));
	s.lab = o->lab;
	s.lock_fd = -1;
	s.sig_fd = -1;
	s.life[0] = s.life[1] = -1;
	snprintf(s.st.name, sizeof(s.st.name), "%s", o->name);
	snprintf(s.st.labfile, sizeof(s.st.labfile), "%s", o->labfile);
	snprintf(s.st.subnet, sizeof(s.st.subnet), "%s", o->lab->subnet_text);
	s.st.supervisor = getpid();
	s.st.supervisor_start = nl_proc_start(s.st.supervisor);
	/* A pidfd is readable once its process has ended. */
	int tie_fd = o->tie_pid > 0 ? (int)syscall(SYS_pidfd_open, o->tie_pid, 0) : -1;
	if (o->tie_pid > 0 && tie_fd < 0) {
		snprintf(why, whylen, "--while-pid %d: %s", (int)o->tie_pid, strerror(errno));
		return -1;
	}
	if (make_dir(&s, why, whylen) != 0) {
		if (tie_fd >= 0) {
			close(tie_fd);
		}
		return -1;
	}
	if (o->log_to_file) {
		char path[600];
		nl_state_path(s.st.name, "log", path, sizeof(path));
		int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		int null = open("/dev/null", O_RDONLY);
		if (fd >= 0 && null >= 0) {
			dup2(null, 0);
			dup2(fd, 1);
			dup2(fd, 2);
		}
		close(fd);
		close(null);
	}
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGQUIT);
	sigprocmask(SIG_BLOCK, &set, NULL);
	s.sig_fd = signalfd(-1, &set, SFD_CLOEXEC);
	if (s.sig_fd < 0 || pipe2(s.life, O_CLOEXEC) != 0) {
		snprintf(why, whylen, "signalfd/pipe: %s", strerror(errno));
		nl_state_remove(s.st.name);
		return -1;
	}
	s.janitor = fork();
	if (s.janitor == 0) {
		close(s.life[1]);
		janitor(s.st.name, s.life[0]);
	}
	int r = start_holders(&s, why, whylen);
	if (r == 0) {
		r = wire(&s, why, whylen);
	}
	if (r == 0) {
		s.st.netem = probe_netem(&s);
		if (nl_state_write(&s.st) != 0) {
			snprintf(why, whylen, "cannot write the state of lab \"%s\": %s", s.st.name,
			         strerror(errno));
			r = -1;
		}
	}
	if (r != 0) {
		teardown(&s);
		return -1;
	}
	say("lab \"%s\" up: %zu nodes in %s, switch %s%s", s.st.name, s.lab->nnodes, s.st.subnet,
	    s.lab->switch_text, s.st.netem ? ", netem" : ", no netem (use hako-relay)");
	if (o->ready_fd >= 0) {
		if (write(o->ready_fd, "ok", 2) < 0) {
			say("ready: %s", strerror(errno));
		}
		close(o->ready_fd);
	}
	if (o->cmd != NULL) {
		start_cmd(&s, o->cmd);
	}
	keep(&s, o->cmd != NULL, tie_fd);
	if (tie_fd >= 0) {
		close(tie_fd);
	}
	if (s.cmd > 0) {
		kill(s.cmd, SIGTERM);
	}
	teardown(&s);
	if (s.cmd > 0) {
		int status;
		waitpid(s.cmd, &status, 0);
		s.cmd_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	}
	return o->cmd != NULL ? s.cmd_status : 0;
}
