/* The labs' state: one directory a lab under /run/hako-netlab ($HAKO_NETLAB_DIR), holding
 *   lock   flock()ed by the lab's supervisor for as long as it lives: a lab whose lock can be
 *          taken is a leftover of a crash
 *   state  what the other commands need, one record a line (docs/netlab.md), written whole
 *          and renamed into place
 *   log    the supervisor's output when it runs in the background (up)
 * and the root's own .lock, held while a lab is made or a leftover swept, so that a sweep never
 * takes a lab being made for a dead one. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "netlab.h"

const char *nl_state_root(void)
{
	const char *d = getenv("HAKO_NETLAB_DIR");
	return d != NULL && d[0] != '\0' ? d : NL_STATE_ROOT;
}

void nl_state_path(const char *lab, const char *file, char *buf, size_t len)
{
	if (file != NULL) {
		snprintf(buf, len, "%s/%s/%s", nl_state_root(), lab, file);
	} else {
		snprintf(buf, len, "%s/%s", nl_state_root(), lab);
	}
}

int nl_state_write(const nl_state_t *st)
{
	char path[600], tmp[620];
	nl_state_path(st->name, "state", path, sizeof(path));
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	if (f == NULL) {
		return -1;
	}
	fprintf(f, "lab %s\nsupervisor %d %llu\nlabfile %s\nsubnet %s\nnetem %s\n", st->name,
	        (int)st->supervisor, st->supervisor_start, st->labfile, st->subnet,
	        st->netem ? "yes" : "no");
	for (size_t i = 0; i < st->nnodes; i++) {
		const nl_live_node_t *n = &st->nodes[i];
		fprintf(f, "node %s %d %llu %s %s %s\n", n->name, (int)n->pid, n->start, n->cidr,
		        n->port, n->dead ? "dead" : "up");
	}
	if (fclose(f) != 0 || rename(tmp, path) != 0) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

int nl_state_read(const char *lab, nl_state_t *st, char *why, size_t whylen)
{
	char path[600], line[1024];
	memset(st, 0, sizeof(*st));
	nl_state_path(lab, "state", path, sizeof(path));
	FILE *f = fopen(path, "r");
	if (f == NULL) {
		snprintf(why, whylen, "no lab \"%s\" (%s: %s)", lab, path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f) != NULL) {
		int pid;
		char key[16], state[16];
		if (sscanf(line, "%15s", key) != 1) {
			continue;
		}
		if (strcmp(key, "lab") == 0) {
			sscanf(line, "lab %31s", st->name);
		} else if (strcmp(key, "subnet") == 0) {
			sscanf(line, "subnet %63s", st->subnet);
		} else if (strcmp(key, "labfile") == 0) {
			sscanf(line, "labfile %511[^\n]", st->labfile);
		} else if (strcmp(key, "supervisor") == 0 &&
		           sscanf(line, "supervisor %d %llu", &pid, &st->supervisor_start) == 2) {
			st->supervisor = pid;
		} else if (strcmp(key, "netem") == 0) {
			st->netem = strncmp(line + 6, "yes", 3) == 0;
		} else if (strcmp(key, "node") == 0 && st->nnodes < NL_MAX_NODES + 1) {
			nl_live_node_t *n = &st->nodes[st->nnodes];
			if (sscanf(line, "node %31s %d %llu %31s %15s %15s", n->name, &pid,
			           &n->start, n->cidr, n->port, state) == 6) {
				n->pid = pid;
				n->dead = strcmp(state, "dead") == 0;
				st->nnodes++;
			}
		}
	}
	fclose(f);
	if (st->supervisor <= 0 || st->nnodes == 0) {
		snprintf(why, whylen, "%s: not a lab's state file", path);
		return -1;
	}
	return 0;
}

const nl_live_node_t *nl_state_node(const nl_state_t *st, const char *name)
{
	for (size_t i = 0; i < st->nnodes; i++) {
		if (strcmp(st->nodes[i].name, name) == 0) {
			return &st->nodes[i];
		}
	}
	return NULL;
}

unsigned long long nl_proc_start(pid_t pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		return 0;
	}
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0) {
		return 0;
	}
	buf[n] = '\0';
	char *p = strrchr(buf, ')'); /* the name may hold spaces and parentheses */
	char state;
	unsigned long long start;
	/* after ")": state(3) ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime
	 * stime cutime cstime priority nice threads itrealvalue starttime(22) */
	if (p == NULL || sscanf(p + 1,
	                        " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d "
	                        "%*d %*d %*d %llu",
	                        &state, &start) != 2) {
		return 0;
	}
	return state == 'Z' || state == 'X' ? 0 : start;
}

int nl_proc_is(pid_t pid, unsigned long long start)
{
	return pid > 0 && start != 0 && nl_proc_start(pid) == start;
}

int nl_root_lock(void)
{
	const char *root = nl_state_root();
	if (mkdir(root, 0755) != 0 && errno != EEXIST) {
		return -1;
	}
	char path[600];
	snprintf(path, sizeof(path), "%s/.lock", root);
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		return -1;
	}
	if (flock(fd, LOCK_EX) != 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

void nl_state_remove(const char *lab)
{
	static const char *const files[] = {"state", "state.tmp", "log", "lock"};
	char path[600];
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		nl_state_path(lab, files[i], path, sizeof(path));
		unlink(path);
	}
	nl_state_path(lab, NULL, path, sizeof(path));
	rmdir(path);
}

/* A lab is a leftover when its lock can be taken: no supervisor holds it. */
static int is_leftover(const char *lab)
{
	char path[600];
	nl_state_path(lab, "lock", path, sizeof(path));
	int fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		return errno == ENOENT; /* a directory without a lock was never finished */
	}
	int free_ = flock(fd, LOCK_EX | LOCK_NB) == 0;
	close(fd);
	return free_;
}

int nl_sweep(int verbose)
{
	DIR *d = opendir(nl_state_root());
	if (d == NULL) {
		return 0;
	}
	int removed = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.' || !is_leftover(e->d_name)) {
			continue;
		}
		/* Its holders died with the supervisor (PR_SET_PDEATHSIG); kill any the kernel did
		 * not get to, by pid and start time so that a reused pid is left alone. */
		nl_state_t st;
		char why[256];
		if (nl_state_read(e->d_name, &st, why, sizeof(why)) == 0) {
			for (size_t i = 0; i < st.nnodes; i++) {
				if (nl_proc_is(st.nodes[i].pid, st.nodes[i].start)) {
					kill(st.nodes[i].pid, SIGKILL);
				}
			}
		}
		nl_state_remove(e->d_name);
		if (verbose) {
			fprintf(stderr, "hako-netlab: removed the leftover of lab \"%s\"\n",
			        e->d_name);
		}
		removed++;
	}
	closedir(d);
	return removed;
}
