/* hako-netlab: nodes as separate machines on one host. Each node has its own network, mount
 * (own /dev/shm, own /proc), pid, IPC and UTS namespaces; the nodes are joined by veth pairs to
 * a bridge in a "switch" namespace. docs/netlab.md. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hako_cli.h"
#include "lab_supervisor.h"
#include "netlab.h"

#define WAIT_MS 10000 /* how long kill, link up and down wait for what they did to show */

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void nap_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
	nanosleep(&ts, NULL);
}

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "hako-netlab: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	return 1;
}

/* The lab and one of its live nodes. */
static int find_node(const char *lab, const char *node, nl_state_t *st, const nl_live_node_t **out)
{
	char why[700];
	if (nl_state_read(lab, st, why, sizeof(why)) != 0) {
		return fail("%s", why);
	}
	const nl_live_node_t *n = nl_state_node(st, node);
	if (n == NULL) {
		fprintf(stderr, "hako-netlab: lab \"%s\" has no node \"%s\" (nodes:", lab, node);
		for (size_t i = 0; i < st->nnodes; i++) {
			fprintf(stderr, " %s", st->nodes[i].name);
		}
		fprintf(stderr, ")\n");
		return 1;
	}
	if (n->dead || !nl_proc_is(n->pid, n->start)) {
		return fail("lab \"%s\": node \"%s\" is not running (killed?)", lab, node);
	}
	*out = n;
	return 0;
}

/* ---- the options and words of the commands ---- */

/* argv[optind...], the words after the options: from min to max of them (max < 0: no limit),
 * else the usage error `need`. -1 to go on, else the exit code (as hako_cli_option_double). */
static int count_words(const hako_cli_command_t *cmd, int argc, int min, int max, const char *need)
{
	int n = argc - optind;
	return n < min || (max >= 0 && n > max) ? hako_cli_usage_error(cmd, "%s", need) : -1;
}

/* A command whose only option is --help ("LAB [NODE] [--] ..." shapes), and the number of its
 * words (count_words). With in_order (exec), the options end at the first word, so that the
 * command a node runs keeps its own. -1 to go on, else the exit code. */
static int parse_words(const hako_cli_command_t *cmd, int argc, char **argv, int min, int max,
                       int in_order, const char *need)
{
	static const struct option longopts[] = {{"help", no_argument, NULL, 'h'},
	                                         {NULL, 0, NULL, 0}};
	int c = getopt_long(argc, argv, in_order ? "+:h" : ":h", longopts, NULL);
	if (c != -1) {
		return hako_cli_common_option(cmd, c, argv);
	}
	return count_words(cmd, argc, min, max, need);
}

/* The options of run, up and check, their words (count_words: the lab file first) and the lab
 * the file describes (nl_lab_free it). -1 to go on, else the exit code. */
struct lab_opts {
	const char *name, *subnet;
	pid_t tie_pid;
	char default_name[NL_NAME_MAX];
};

static int load(const char *file, const struct lab_opts *o, nl_lab_t *lab)
{
	hako_error_t err;
	if (nl_lab_load(file, o->subnet, lab, &err) != 0) {
		char buf[1700];
		fprintf(stderr, "%s\n", hako_error_format(&err, buf, sizeof(buf)));
		return 1;
	}
	return 0;
}

static int parse_lab(const hako_cli_command_t *cmd, int argc, char **argv, int min, int max,
                     const char *need, struct lab_opts *o, nl_lab_t *lab)
{
	static const struct option longopts[] = {{"name", required_argument, NULL, 'n'},
	                                         {"subnet", required_argument, NULL, 's'},
	                                         {"while-pid", required_argument, NULL, 'w'},
	                                         {"help", no_argument, NULL, 'h'},
	                                         {NULL, 0, NULL, 0}};
	int c;
	memset(o, 0, sizeof(*o));
	while ((c = getopt_long(argc, argv, ":n:s:w:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'n': o->name = optarg; break;
		case 's': o->subnet = optarg; break;
		case 'w':
			o->tie_pid = (pid_t)atoi(optarg);
			if (o->tie_pid <= 0) {
				return hako_cli_usage_error(cmd, "--while-pid %s: must be a pid",
				                            optarg);
			}
			break;
		default: return hako_cli_common_option(cmd, c, argv);
		}
	}
	if (o->name == NULL) {
		snprintf(o->default_name, sizeof(o->default_name), "lab-%d", (int)getpid());
		o->name = o->default_name;
	} else if (!nl_name_ok(o->name)) {
		return hako_cli_usage_error(cmd, "--name %s: 1-31 of A-Z a-z 0-9 _ . -", o->name);
	}
	int rc = count_words(cmd, argc, min, max, need);
	if (rc < 0 && load(argv[optind], o, lab) != 0) {
		rc = 1;
	}
	return rc;
}

/* ---- commands ---- */

static int cmd_check(const hako_cli_command_t *cmd, int argc, char **argv)
{
	struct lab_opts o;
	nl_lab_t lab;
	int rc = parse_lab(cmd, argc, argv, 1, 1, "needs one lab file", &o, &lab);
	if (rc >= 0) {
		return rc;
	}
	char ip[16];
	printf("subnet %s\nswitch %s\n", lab.subnet_text, nl_ip_text(lab.sw_ip, ip));
	for (size_t i = 0; i < lab.nnodes; i++) {
		printf("node %s %s/%d\n", lab.nodes[i].name, nl_ip_text(lab.nodes[i].ip, ip),
		       lab.prefix);
	}
	nl_lab_free(&lab);
	return 0;
}

static int cmd_run(const hako_cli_command_t *cmd, int argc, char **argv)
{
	struct lab_opts o;
	nl_lab_t lab;
	int rc = parse_lab(cmd, argc, argv, 2, -1, "needs a lab file and a command (after --)", &o,
	                   &lab);
	if (rc >= 0) {
		return rc;
	}
	nl_sup_options_t so = {.name = o.name,
	                       .labfile = argv[optind],
	                       .lab = &lab,
	                       .cmd = argv + optind + 1,
	                       .ready_fd = -1};
	char why[1024];
	rc = nl_supervise(&so, why, sizeof(why));
	nl_lab_free(&lab);
	if (rc < 0) {
		return fail("%s", why);
	}
	return rc;
}

static int cmd_up(const hako_cli_command_t *cmd, int argc, char **argv)
{
	struct lab_opts o;
	nl_lab_t lab;
	int rc = parse_lab(cmd, argc, argv, 1, 1, "needs one lab file", &o, &lab);
	if (rc >= 0) {
		return rc;
	}
	int ready[2];
	if (pipe(ready) != 0) {
		return fail("pipe: %s", strerror(errno));
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		close(ready[0]);
		setsid();
		nl_sup_options_t so = {.name = o.name,
		                       .labfile = argv[optind],
		                       .lab = &lab,
		                       .ready_fd = ready[1],
		                       .log_to_file = 1,
		                       .tie_pid = o.tie_pid};
		char why[1024];
		if (nl_supervise(&so, why, sizeof(why)) < 0) {
			if (write(ready[1], why, strlen(why)) < 0) {
				_exit(1);
			}
			_exit(1);
		}
		_exit(0);
	}
	close(ready[1]);
	nl_lab_free(&lab);
	if (pid < 0) {
		return fail("fork: %s", strerror(errno));
	}
	char msg[1100];
	ssize_t n = read(ready[0], msg, sizeof(msg) - 1);
	close(ready[0]);
	msg[n > 0 ? n : 0] = '\0';
	if (strcmp(msg, "ok") != 0) {
		waitpid(pid, NULL, 0);
		return fail("%s", n > 0 ? msg : "the supervisor died while making the lab");
	}
	char state[600];
	nl_state_path(o.name, "state", state, sizeof(state));
	printf("%s %s\n", o.name, state);
	return 0;
}

static int cmd_down(const hako_cli_command_t *cmd, int argc, char **argv)
{
	int rc = parse_words(cmd, argc, argv, 1, 1, 0, "needs a lab name");
	if (rc >= 0) {
		return rc;
	}
	const char *name = argv[optind];
	nl_state_t st;
	char why[700], dir[600];
	if (nl_state_read(name, &st, why, sizeof(why)) != 0) {
		return fail("%s", why);
	}
	if (nl_proc_is(st.supervisor, st.supervisor_start)) {
		kill(st.supervisor, SIGTERM);
	}
	/* Gone once its directory is: the supervisor removes it last but one (then the janitor
	 * ends), or the janitor or a sweep does. */
	nl_state_path(name, NULL, dir, sizeof(dir));
	long long until = now_ms() + WAIT_MS;
	while (access(dir, F_OK) == 0) {
		if (!nl_proc_is(st.supervisor, st.supervisor_start)) {
			int root = nl_root_lock();
			nl_sweep(0);
			if (root >= 0) {
				close(root);
			}
			break;
		}
		if (now_ms() > until) {
			return fail("lab \"%s\": still there after %d ms", name, WAIT_MS);
		}
		nap_ms(10);
	}
	return 0;
}

static pid_t exec_child;

static void pass_signal(int sig)
{
	if (exec_child > 0) {
		kill(exec_child, sig);
	}
}

/* exec's end once it has entered a node's namespaces (see cmd_exec). */
static _Noreturn void exec_exit(int rc)
{
	fflush(NULL);
	_exit(rc);
}

static int cmd_exec(const hako_cli_command_t *cmd, int argc, char **argv)
{
	int rc = parse_words(cmd, argc, argv, 3, -1, 1, "needs a lab, a node and a command");
	if (rc >= 0) {
		return rc;
	}
	const char *lab = argv[optind], *node = argv[optind + 1];
	char **command = argv + optind + 2;
	if (strcmp(command[0], "--") == 0) {
		command++;
	}
	if (command[0] == NULL) {
		return hako_cli_usage_error(cmd, "needs a command after --");
	}
	nl_state_t st;
	const nl_live_node_t *n;
	if (find_node(lab, node, &st, &n) != 0) {
		return 1;
	}
	/* From here on this process may be in the node's pid namespace (for its children), and it
	 * ends with _exit: exit handlers that start a process of their own, such as LeakSanitizer's
	 * tracer, would find it in another pid namespace and wait for it forever. */
	char why[512];
	if (nl_enter(n->pid, why, sizeof(why)) != 0) {
		fail("lab \"%s\", node \"%s\": %s", lab, node, why);
		exec_exit(1);
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = pass_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	exec_child = fork();
	if (exec_child == 0) {
		setenv("HAKO_NETLAB", lab, 1);
		setenv("HAKO_NETLAB_NODE", node, 1);
		execvp(command[0], command);
		fprintf(stderr, "hako-netlab: %s: %s\n", command[0], strerror(errno));
		_exit(127);
	}
	if (exec_child < 0) {
		fail("fork: %s", strerror(errno));
		exec_exit(1);
	}
	int status;
	while (waitpid(exec_child, &status, 0) < 0) {
		if (errno != EINTR) {
			fail("waitpid: %s", strerror(errno));
			exec_exit(1);
		}
	}
	exec_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
}

static int cmd_kill(const hako_cli_command_t *cmd, int argc, char **argv)
{
	int rc = parse_words(cmd, argc, argv, 2, 2, 0, "needs a lab and a node");
	if (rc >= 0) {
		return rc;
	}
	nl_state_t st;
	const nl_live_node_t *n;
	if (find_node(argv[optind], argv[optind + 1], &st, &n) != 0) {
		return 1;
	}
	unsigned long long ino = nl_ns_inode(n->pid, "pid");
	int before = nl_ns_count("pid", ino);
	/* The init of a pid namespace: its death is every process's in it. */
	if (kill(n->pid, SIGKILL) != 0) {
		return fail("kill %d: %s", (int)n->pid, strerror(errno));
	}
	long long until = now_ms() + WAIT_MS;
	int left;
	while ((left = nl_ns_count("pid", ino)) > 0) {
		if (now_ms() > until) {
			return fail("node \"%s\": %d processes still alive after %d ms", n->name,
			            left, WAIT_MS);
		}
		nap_ms(5);
	}
	printf("node %s killed: %d processes\n", n->name, before);
	return 0;
}

/* The bridge port's operational state ("UP", "DOWN", "LOWERLAYERDOWN", ...) into buf. */
static int port_state(pid_t sw, const char *port, char *buf, size_t len)
{
	char *const argv[] = {"ip", "-o", "link", "show", "dev", (char *)port, NULL};
	char out[2048];
	if (nl_run_in(sw, argv, NULL, out, sizeof(out), 1) != 0) {
		return -1;
	}
	const char *p = strstr(out, " state ");
	if (p == NULL || sscanf(p + 7, "%15s", buf) != 1 || len < 16) {
		return -1;
	}
	return 0;
}

static int cmd_link(const hako_cli_command_t *cmd, int argc, char **argv)
{
	const char *need = "needs a lab, a node and down or up";
	int rc = parse_words(cmd, argc, argv, 3, 3, 0, need);
	if (rc >= 0) {
		return rc;
	}
	const char *lab = argv[optind], *node = argv[optind + 1], *how = argv[optind + 2];
	if (strcmp(how, "down") != 0 && strcmp(how, "up") != 0) {
		return hako_cli_usage_error(cmd, "%s", need);
	}
	nl_state_t st;
	const nl_live_node_t *n, *sw;
	if (find_node(lab, node, &st, &n) != 0 || find_node(lab, NL_SWITCH, &st, &sw) != 0) {
		return 1;
	}
	if (n == sw) {
		return fail("the switch has no link of its own; take a node's down");
	}
	char *const set[] = {"ip", "link", "set", "dev", (char *)n->port, (char *)how, NULL};
	if (nl_run_in(sw->pid, set, NULL, NULL, 0, 0) != 0) {
		return fail("lab \"%s\": ip link set %s %s failed", lab, n->port, how);
	}
	/* Up is up once the port forwards again (the bridge has no STP: at once). */
	const char *want = strcmp(how, "up") == 0 ? "UP" : "DOWN";
	char state[16] = "";
	long long until = now_ms() + WAIT_MS;
	while (port_state(sw->pid, n->port, state, sizeof(state)) != 0 ||
	       strcmp(state, want) != 0) {
		if (now_ms() > until) {
			return fail("node \"%s\": its link is %s, not %s, after %d ms", node, state,
			            want, WAIT_MS);
		}
		nap_ms(5);
	}
	return 0;
}

static int status_one(const char *lab)
{
	nl_state_t st;
	char why[700];
	if (nl_state_read(lab, &st, why, sizeof(why)) != 0) {
		return fail("%s", why);
	}
	int alive = nl_proc_is(st.supervisor, st.supervisor_start);
	printf("lab %s: supervisor %d%s, subnet %s, netem %s\n", st.name, (int)st.supervisor,
	       alive ? "" : " (gone: a leftover, 'hako-netlab sweep' removes it)", st.subnet,
	       st.netem ? "yes" : "no (delay, loss and cuts: hako-relay on the switch)");
	printf("%-16s %-8s %-20s %-6s %-6s %s\n", "NODE", "PID", "ADDRESS", "PORT", "NODE", "LINK");
	const nl_live_node_t *sw = nl_state_node(&st, NL_SWITCH);
	int sw_up = sw != NULL && !sw->dead && nl_proc_is(sw->pid, sw->start);
	for (size_t i = 0; i < st.nnodes; i++) {
		const nl_live_node_t *n = &st.nodes[i];
		int up = !n->dead && nl_proc_is(n->pid, n->start);
		char link[16] = "-";
		if (sw_up && up && n != sw &&
		    port_state(sw->pid, n->port, link, sizeof(link)) != 0) {
			snprintf(link, sizeof(link), "?");
		}
		printf("%-16s %-8d %-20s %-6s %-6s %s\n", n->name, (int)n->pid, n->cidr, n->port,
		       up ? "up" : "dead", link);
	}
	return 0;
}

static int cmd_status(const hako_cli_command_t *cmd, int argc, char **argv)
{
	int rc = parse_words(cmd, argc, argv, 0, 1, 0, "takes at most one lab name");
	if (rc >= 0) {
		return rc;
	}
	if (argc - optind == 1) {
		return status_one(argv[optind]);
	}
	DIR *d = opendir(nl_state_root());
	int any = 0;
	struct dirent *e;
	while (d != NULL && (e = readdir(d)) != NULL) {
		nl_state_t st;
		char why[700];
		if (e->d_name[0] == '.' || nl_state_read(e->d_name, &st, why, sizeof(why)) != 0) {
			continue;
		}
		if (!any) {
			printf("%-32s %-8s %-6s %s\n", "LAB", "PID", "NODES", "SUBNET");
		}
		any = 1;
		printf("%-32s %-8d %-6zu %s%s\n", st.name, (int)st.supervisor, st.nnodes - 1,
		       st.subnet,
		       nl_proc_is(st.supervisor, st.supervisor_start) ? "" : " (leftover)");
	}
	if (d != NULL) {
		closedir(d);
	}
	if (!any) {
		printf("no labs\n");
	}
	return 0;
}

static int cmd_sweep(const hako_cli_command_t *cmd, int argc, char **argv)
{
	int rc = parse_words(cmd, argc, argv, 0, 0, 0, "takes no arguments");
	if (rc >= 0) {
		return rc;
	}
	int root = nl_root_lock();
	if (root < 0) {
		return fail("%s: %s", nl_state_root(), strerror(errno));
	}
	int n = nl_sweep(1);
	close(root);
	printf("%d leftover lab(s) removed\n", n);
	return 0;
}

/* Can this process make a node? Namespaces, a veth pair, a bridge, the ip command. */
static int cmd_probe(const hako_cli_command_t *cmd, int argc, char **argv)
{
	int rc = parse_words(cmd, argc, argv, 0, -1, 0, "");
	if (rc >= 0) {
		return rc;
	}
	/* Set by CI's sanitizer run: there the processes of a lab hang now and then (a test
	 * timed out); the lab tests run in the plain and the clang builds. */
	const char *skip = getenv("HAKO_NETLAB_SKIP");
	if (skip != NULL && skip[0] != '\0') {
		return fail("no lab here: %s (HAKO_NETLAB_SKIP)", skip);
	}
	if (geteuid() != 0) {
		return fail(
		    "cannot make a lab: not root (euid %d); hako-netlab needs CAP_SYS_ADMIN "
		    "and CAP_NET_ADMIN",
		    (int)geteuid());
	}
	int life[2];
	if (pipe2(life, O_CLOEXEC) != 0) {
		return fail("pipe: %s", strerror(errno));
	}
	char why[512];
	pid_t pid = nl_holder_start("probe", life, why, sizeof(why));
	if (pid < 0) {
		return fail("cannot make a lab: %s", why);
	}
	char *const argv_ip[] = {"ip", "-batch", "-", NULL};
	int r = nl_run_in(pid, argv_ip, NULL, NULL, 0, 1);
	char *const argv_ln[] = {"ip",   "link", "add",  "p0", "type",
	                         "veth", "peer", "name", "p1", NULL};
	char *const argv_br[] = {"ip", "link", "add", "b0", "type", "bridge", NULL};
	int veth = r == 0 ? nl_run_in(pid, argv_ln, NULL, NULL, 0, 1) : -1;
	int br = r == 0 ? nl_run_in(pid, argv_br, NULL, NULL, 0, 1) : -1;
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(life[0]);
	close(life[1]);
	if (r != 0) {
		return fail("cannot make a lab: the ip command (iproute2) %s",
		            r == 127 ? "is missing" : "fails");
	}
	if (veth != 0 || br != 0) {
		return fail("cannot make a lab: the kernel refuses %s",
		            veth != 0 ? "veth pairs" : "bridges");
	}
	printf("ok: namespaces, veth pairs and bridges can be made\n");
	return 0;
}

static const hako_cli_command_t commands[] = {
    {"run", "[--name NAME] [--subnet CIDR] LABFILE -- CMD...",
     "make a lab, run a command on the host, take the lab down",
     "Make the lab LABFILE describes, run CMD on the host with HAKO_NETLAB (the lab's name), "
     "HAKO_NETLAB_STATE (its state file), HAKO_NETLAB_SWITCH (the switch's address) and "
     "HAKO_NETLAB_EXE set, then take the lab down, whatever way CMD ends. Exits with CMD's "
     "status. CMD gets SIGTERM if the lab's supervisor dies.",
     "  -n, --name NAME       the lab's name (default lab-PID)\n"
     "  -s, --subnet CIDR     number the nodes .11, .12, ... in CIDR, not as the file says\n",
     cmd_run},
    {"up", "[--name NAME] [--subnet CIDR] [--while-pid PID] LABFILE",
     "make a lab that stays until 'down'",
     "Make the lab LABFILE describes, kept by a supervisor in the background; print its name "
     "and state file once it is up. Its log: /run/hako-netlab/NAME/log.",
     "  -n, --name NAME       the lab's name (default lab-PID)\n"
     "  -w, --while-pid PID   also take the lab down when process PID ends (a test's shell)\n"
     "  -s, --subnet CIDR     number the nodes .11, .12, ... in CIDR, not as the file says\n",
     cmd_up},
    {"down", "NAME", "take a lab down",
     "Stop the lab's supervisor and wait until the lab is gone: every node's processes, "
     "namespaces, links and /dev/shm.",
     "", cmd_down},
    {"exec", "NAME NODE [--] CMD...", "run a command in a node",
     "Run CMD in every namespace of NODE (\"switch\": the switch's), in the current folder, "
     "with HAKO_NETLAB and HAKO_NETLAB_NODE set; exit with its status.",
     "", cmd_exec},
    {"kill", "NAME NODE", "kill every process of a node at once",
     "Kill the node's holder, the init of its pid namespace, so that the kernel kills every "
     "process in it at once; wait until none is left and print how many there were. The node "
     "stays dead: its link and /dev/shm are gone.",
     "", cmd_kill},
    {"link", "NAME NODE down|up", "partition a node from the lab, or heal it",
     "Take the node's port on the bridge down (nothing goes in or out; its connections stay "
     "open) or up again; wait until the port is in that state.",
     "", cmd_link},
    {"status", "[NAME]", "the labs, or one lab's nodes and links",
     "Without NAME, every lab (a leftover is marked); with NAME, each node's holder, address, "
     "bridge port, whether it runs and its link's state.",
     "", cmd_status},
    {"sweep", "", "remove what crashed labs left",
     "Remove the state of every lab whose supervisor is gone (run and up do this first).", "",
     cmd_sweep},
    {"probe", "", "can a lab be made here? (exit 1 with the reason if not)",
     "Make a node, a veth pair and a bridge, and remove them: exit 0, or 1 with the reason "
     "(not root, namespaces refused, no iproute2).",
     "", cmd_probe},
    {"check", "[--subnet CIDR] LABFILE", "load a lab file and print its nodes",
     "Load and check a lab file; print the subnet, the switch's address and every node's.",
     "  -s, --subnet CIDR     number the nodes .11, .12, ... in CIDR, not as the file says\n",
     cmd_check},
    {"help", "[command]", "help of hako-netlab or of a command",
     "Show the help of hako-netlab or of one command.", "", hako_cli_help},
};

static void tool_usage(FILE *out)
{
	fprintf(out, "usage: hako-netlab <command> [options]\n\n"
	             "Nodes as separate machines on one host: each in its own network, mount (own\n"
	             "/dev/shm), pid, IPC and UTS namespaces, joined by a bridge. Needs root.\n\n"
	             "commands:\n");
	hako_cli_list_commands(out, 8);
	fprintf(out, "\noptions:\n"
	             "  -h, --help            show this help\n"
	             "  -V, --version         print the version\n\n"
	             "'hako-netlab <command> --help' describes a command. docs/netlab.md.\n");
}

int main(int argc, char **argv)
{
	static const hako_cli_t cli = {
	    .prog = "hako-netlab",
	    .version = HAKO_VERSION,
	    .commands = commands,
	    .ncommands = sizeof(commands) / sizeof(commands[0]),
	    .common_options = "  -h, --help            show this help\n",
	    .wrap_width = 80,
	    .usage = tool_usage,
	};
	return hako_cli_main(&cli, argc, argv);
}
