/* hako-endpoint: open an endpoint file from the shell and look at what it receives (probe), send
 * PDUs given as JSON or hex (send), validate endpoint and container files (check), and watch the
 * statistics (stats).
 *
 * Exit codes: 0 success, 1 failure (message on stderr), 2 usage error.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hako/domain.h"
#include "hako/endpoint.h"
#include "hako/error.h"
#include "hako/msg.h"
#include "hako/pdu.h"
#include "hako/pdudef.h"
#include "hako_cli.h"

#ifndef HAKO_VERSION
#define HAKO_VERSION "unknown"
#endif

#define HEX_PREVIEW      64
#define POLL_USEC        100000 /* signals and deadlines are looked at this often */
#define FIRST_BUF        65536
#define FLUSH_WAIT_USEC  5000000
#define DEFAULT_WAIT_SEC 5.0

static volatile sig_atomic_t got_stop; /* SIGINT / SIGTERM */
static volatile sig_atomic_t got_usr1; /* SIGUSR1: print the statistics */
static const char *opt_domain;         /* --domain, for shm comms */
static hako_domain_t *shm_domain;      /* opened for --domain */

static void install_signals(void)
{
	hako_cli_catch_stop(&got_stop, 0);
	hako_cli_catch_signal(SIGUSR1, &got_usr1, 0);
	signal(SIGPIPE, SIG_IGN);
}

static void errf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void errf(const char *fmt, ...)
{
	va_list ap;
	fputs("hako-endpoint: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void sleep_usec(hako_time_t usec)
{
	struct timespec ts = {(time_t)(usec / 1000000), (long)(usec % 1000000) * 1000};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR && !got_stop) {
	}
}

/* ---- usage ---- */

static const char common_options[] = "  -h, --help            show this help\n";

/* --node-map F: the library's loader reads HAKO_NODE_IP_MAP (docs/endpoint.md), so the option
 * sets it for this process; -1 (go on) or the usage error's exit code. */
static int set_node_map(const hako_cli_command_t *cmd, const char *path)
{
	if (path[0] == '\0') {
		return hako_cli_usage_error(cmd, "--node-map: give a file");
	}
	if (setenv("HAKO_NODE_IP_MAP", path, 1) != 0) {
		return hako_cli_usage_error(cmd, "--node-map: %s", strerror(errno));
	}
	return -1;
}

static int parse_u64(const hako_cli_command_t *cmd, const char *opt, const char *s, uint64_t min,
                     uint64_t *out)
{
	int64_t v;
	if (hako_cli_parse_i64(s, (int64_t)min, INT64_MAX, &v) != 0) {
		return hako_cli_usage_error(cmd, "%s: '%s' is not an integer >= %" PRIu64, opt, s,
		                            min);
	}
	*out = (uint64_t)v;
	return -1;
}

static int parse_sec(const hako_cli_command_t *cmd, const char *opt, const char *s, double *out)
{
	double v;
	if (hako_cli_parse_double(s, 0.0, 1e9, &v) != 0 || v == 0.0) {
		return hako_cli_usage_error(cmd, "%s: '%s' is not a number of seconds > 0", opt, s);
	}
	*out = v;
	return -1;
}

/* ---- opening ---- */

static void print_error(const hako_error_t *err, int code)
{
	char msg[1200];
	if (err->message[0] != '\0') {
		hako_error_format(err, msg, sizeof(msg));
	} else {
		snprintf(msg, sizeof(msg), "%s", hako_strerror(code));
	}
	errf("%s", msg);
}

/* Open and start the endpoint of path; an shm comm uses --domain when given. */
static int open_endpoint(const char *path, hako_endpoint_t **out)
{
	hako_error_t err;
	hako_error_clear(&err);
	int r = hako_endpoint_open(path, out, &err);
	if (r != 0) {
		print_error(&err, r);
		return 1;
	}
	if (opt_domain != NULL) {
		r = hako_domain_open(opt_domain, &shm_domain);
		if (r != 0) {
			errf("cannot open domain '%s': %s", opt_domain, hako_strerror(r));
			goto fail;
		}
		hako_endpoint_set_domain(*out, shm_domain);
	}
	hako_error_clear(&err);
	r = hako_endpoint_start(*out, &err);
	if (r != 0) {
		if (err.message[0] == '\0') {
			errf("%s: cannot start endpoint '%s': %s", path, hako_endpoint_name(*out),
			     hako_strerror(r));
		} else {
			print_error(&err, r);
		}
		goto fail;
	}
	/* With port 0 in the file, this is how a user (or a test) learns the port. */
	uint16_t port = hako_endpoint_local_port(*out);
	if (port != 0) {
		fprintf(stderr, "hako-endpoint: endpoint '%s' listens on port %u\n",
		        hako_endpoint_name(*out), (unsigned)port);
	}
	return 0;
fail:
	hako_endpoint_close(*out);
	*out = NULL;
	hako_domain_close(shm_domain);
	shm_domain = NULL;
	return 1;
}

static void close_endpoint(hako_endpoint_t *ep)
{
	hako_endpoint_close(ep);
	hako_domain_close(shm_domain);
	shm_domain = NULL;
}

static void format_stats(const hako_endpoint_t *ep, char *buf, size_t len)
{
	hako_endpoint_stats_t s;
	hako_endpoint_get_stats(ep, &s);
	snprintf(buf, len,
	         "frames_in=%" PRIu64 " bytes_in=%" PRIu64 " frames_out=%" PRIu64
	         " bytes_out=%" PRIu64 " send_dropped=%" PRIu64 " recv_dropped=%" PRIu64
	         " recv_ignored=%" PRIu64 " rejected=%" PRIu64 " accepted=%" PRIu64
	         " connects=%" PRIu64 " reconnects=%" PRIu64 " disconnects=%" PRIu64 " peers=%u",
	         s.frames_in, s.bytes_in, s.frames_out, s.bytes_out, s.send_dropped, s.recv_dropped,
	         s.recv_ignored, s.rejected, s.accepted, s.connects, s.reconnects, s.disconnects,
	         (unsigned)s.peers);
}

/* The statistics on stderr (probe, send: stdout carries the data). */
static void stats_to_stderr(const hako_endpoint_t *ep)
{
	char line[600];
	format_stats(ep, line, sizeof(line));
	fprintf(stderr, "hako-endpoint: %s: %s\n", hako_endpoint_name(ep), line);
}

/* tcp, websocket: a peer; mqtt: the broker. */
static int is_connected_comm(const hako_endpoint_t *ep)
{
	const hako_endpoint_config_t *cfg = hako_endpoint_config(ep);
	return cfg->comm != NULL && (cfg->comm->protocol == HAKO_COMM_TCP ||
	                             cfg->comm->protocol == HAKO_COMM_WEBSOCKET ||
	                             cfg->comm->protocol == HAKO_COMM_MQTT);
}

/* ---- probe ---- */

static void json_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\') {
			fprintf(out, "\\%c", c);
		} else if (c < 0x20) {
			fprintf(out, "\\u%04x", c);
		} else {
			fputc(c, out);
		}
	}
	fputc('"', out);
}

static void hex_string(FILE *out, const uint8_t *p, size_t n)
{
	fputc('"', out);
	for (size_t i = 0; i < n; i++) {
		fprintf(out, "%02x", p[i]);
	}
	fputc('"', out);
}

/* The PDU as one-line JSON when the pdudef gives its type and it decodes, else NULL with why
 * it does not (a hex dump alone would leave the user guessing, as hako-cmd pdu's note says). */
static char *decode_pdu(const hako_endpoint_config_t *cfg, hako_msg_registry_t *reg,
                        const hako_pdudef_pdu_t *pdu, const uint8_t *buf, size_t len, char *why,
                        size_t wlen)
{
	const hako_msg_type_t *type;
	hako_error_t err;
	char *json = NULL;
	if (cfg->pdudef == NULL) {
		snprintf(why, wlen, "no type: the endpoint has no pdudef");
		return NULL;
	}
	if (pdu == NULL) {
		snprintf(why, wlen, "no type: %s has no such PDU", cfg->pdudef->path);
		return NULL;
	}
	if (pdu->type[0] == '\0') {
		snprintf(why, wlen, "no type: %s gives none for this PDU", cfg->pdudef->path);
		return NULL;
	}
	if (reg == NULL) {
		snprintf(why, wlen, "no PDU types: out of memory");
		return NULL;
	}
	hako_error_clear(&err);
	if (hako_msg_registry_get(reg, pdu->type, &type, &err) != 0) {
		snprintf(why, wlen, "type %s: %s", pdu->type, err.message);
		return NULL;
	}
	if (hako_pdu_to_json(type, buf, len, 0, &json, &err) != 0) {
		snprintf(why, wlen, "not a valid %s PDU: %s", pdu->type, err.message);
		return NULL;
	}
	return json;
}

static void print_pdu(const hako_endpoint_t *ep, hako_msg_registry_t *reg, int raw,
                      const hako_pdu_key_t *key, const uint8_t *buf, size_t len)
{
	const hako_endpoint_config_t *cfg = hako_endpoint_config(ep);
	const hako_pdudef_pdu_t *pdu =
	    cfg->pdudef != NULL ? hako_pdudef_find_channel(cfg->pdudef, key->robot, key->channel_id)
	                        : NULL;
	char why[1200] = "";
	char *json = raw ? NULL : decode_pdu(cfg, reg, pdu, buf, len, why, sizeof(why));
	fputs("{\"robot\":", stdout);
	json_string(stdout, key->robot);
	printf(",\"channel_id\":%" PRId32 ",\"pdu\":", key->channel_id);
	if (pdu != NULL) {
		json_string(stdout, pdu->name);
	} else {
		fputs("null", stdout);
	}
	printf(",\"bytes\":%zu,", len);
	if (json != NULL) {
		printf("\"data\":%s}\n", json);
	} else {
		fputs("\"hex\":", stdout);
		hex_string(stdout, buf, raw || len < HEX_PREVIEW ? len : HEX_PREVIEW);
		if (why[0] != '\0') {
			fputs(",\"note\":", stdout);
			json_string(stdout, why);
		}
		fputs("}\n", stdout);
	}
	fflush(stdout);
	free(json);
}

static int cmd_probe(const hako_cli_command_t *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {{"count", required_argument, NULL, 'n'},
	                                         {"timeout", required_argument, NULL, 't'},
	                                         {"domain", required_argument, NULL, 'd'},
	                                         {"raw", no_argument, NULL, 'r'},
	                                         {"node-map", required_argument, NULL, 'm'},
	                                         {"help", no_argument, NULL, 'h'},
	                                         {NULL, 0, NULL, 0}};
	uint64_t count = 0;
	double timeout = 0;
	int raw = 0, c, r;
	while ((c = getopt_long(argc, argv, ":hn:t:d:m:", longopts, NULL)) != -1) {
		switch (c) {
		case 'n': r = parse_u64(cmd, "--count", optarg, 1, &count); break;
		case 't': r = parse_sec(cmd, "--timeout", optarg, &timeout); break;
		case 'd':
			opt_domain = optarg;
			r = -1;
			break;
		case 'r':
			raw = 1;
			r = -1;
			break;
		case 'm': r = set_node_map(cmd, optarg); break;
		default: r = hako_cli_common_option(cmd, c, argv); break;
		}
		if (r >= 0) {
			return r;
		}
	}
	if (argc - optind != 1) {
		return hako_cli_usage_error(cmd, "need one <endpoint.json>");
	}
	hako_endpoint_t *ep = NULL;
	hako_msg_registry_t *reg = NULL;
	size_t cap = FIRST_BUF;
	uint8_t *buf = malloc(cap);
	if (buf == NULL) {
		errf("out of memory");
		return 1;
	}
	if (open_endpoint(argv[optind], &ep) != 0) {
		free(buf);
		return 1;
	}
	if (!raw && hako_endpoint_config(ep)->pdudef != NULL) {
		/* Without a registry the PDUs print as hex: not an error. */
		if (hako_msg_registry_create(&reg) != 0) {
			reg = NULL;
		}
	}
	hako_time_t deadline = timeout > 0 ? hako_now_usec() + (hako_time_t)(timeout * 1e6) : -1;
	uint64_t got = 0;
	int rc = 0;
	while (!got_stop && (count == 0 || got < count)) {
		if (got_usr1) {
			got_usr1 = 0;
			stats_to_stderr(ep);
		}
		hako_pdu_key_t key;
		size_t len = 0;
		r = hako_endpoint_recv_next(ep, &key, buf, cap, &len);
		if (r == HAKO_ETOOBIG) {
			uint8_t *nbuf = realloc(buf, len);
			if (nbuf == NULL) {
				errf("out of memory for a PDU of %zu bytes", len);
				rc = 1;
				break;
			}
			buf = nbuf;
			cap = len;
			continue;
		}
		if (r == 0) {
			print_pdu(ep, reg, raw, &key, buf, len);
			got++;
			continue;
		}
		if (r != HAKO_EAGAIN) {
			errf("%s: receive failed: %s", argv[optind], hako_strerror(r));
			rc = 1;
			break;
		}
		hako_time_t now = hako_now_usec();
		if (deadline >= 0 && now >= deadline) {
			if (count > 0) {
				errf("%s: got %" PRIu64 " of %" PRIu64 " PDUs within %g s",
				     argv[optind], got, count, timeout);
				rc = 1;
			}
			break;
		}
		hako_time_t slice = POLL_USEC;
		if (deadline >= 0 && deadline - now < slice) {
			slice = deadline - now;
		}
		/* shm poll comms deliver here; the others from their own threads. */
		if (hako_endpoint_process_recv_events(ep) <= 0) {
			hako_endpoint_wait(ep, slice);
		}
	}
	stats_to_stderr(ep);
	close_endpoint(ep);
	hako_msg_registry_destroy(reg);
	free(buf);
	return rc;
}

/* ---- send ---- */

/* The whole file (or stdin for "-"), NUL-terminated, or NULL. */
static char *read_file(const char *path, size_t *len)
{
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
	if (f == NULL) {
		return NULL;
	}
	size_t cap = 4096, used = 0, n;
	char *buf = malloc(cap);
	while (buf != NULL && (n = fread(buf + used, 1, cap - used - 1, f)) > 0) {
		used += n;
		if (cap - used < 2) {
			char *nbuf = realloc(buf, cap * 2);
			if (nbuf == NULL) {
				free(buf);
			}
			buf = nbuf;
			cap *= 2;
		}
	}
	if (buf != NULL && ferror(f)) {
		free(buf);
		buf = NULL;
	}
	if (f != stdin) {
		fclose(f);
	}
	if (buf != NULL) {
		buf[used] = '\0';
		*len = used;
	}
	return buf;
}

static int hex_value(char c)
{
	if (c >= '0' && c <= '9') {
		return c - '0';
	}
	if (c >= 'a' && c <= 'f') {
		return c - 'a' + 10;
	}
	if (c >= 'A' && c <= 'F') {
		return c - 'A' + 10;
	}
	return -1;
}

/* Hex digits (spaces allowed between bytes) to bytes. 0, or -1 with why. */
static int parse_hex(const char *s, uint8_t **out, size_t *len, char *why, size_t wlen)
{
	size_t n = 0;
	uint8_t *buf = malloc(strlen(s) / 2 + 1);
	if (buf == NULL) {
		snprintf(why, wlen, "out of memory");
		return -1;
	}
	for (size_t i = 0; s[i] != '\0';) {
		if (s[i] == ' ' || s[i] == ':') {
			i++;
			continue;
		}
		int hi = hex_value(s[i]), lo = hi < 0 ? -1 : hex_value(s[i + 1]);
		if (hi < 0 || lo < 0) {
			snprintf(why, wlen, "--hex: '%c' at offset %zu is not a hex digit pair",
			         hi < 0 ? s[i] : s[i + 1], hi < 0 ? i : i + 1);
			free(buf);
			return -1;
		}
		buf[n++] = (uint8_t)(hi << 4 | lo);
		i += 2;
	}
	*out = buf;
	*len = n;
	return 0;
}

/* The PDU of JSON text for (robot, name), by the pdudef's type. 0, or 1 after an error line. */
static int encode_json(const hako_endpoint_t *ep, const char *robot, const char *name,
                       const char *text, size_t text_len, uint8_t **out, size_t *len)
{
	const hako_endpoint_config_t *cfg = hako_endpoint_config(ep);
	const hako_pdudef_pdu_t *pdu = hako_pdudef_find(cfg->pdudef, robot, name);
	hako_msg_registry_t *reg = NULL;
	const hako_msg_type_t *type;
	hako_error_t err;
	char msg[1200];
	int rc = 1;
	*out = NULL;
	if (pdu->type[0] == '\0') {
		errf("%s: PDU %s/%s has no type: use --hex", cfg->pdudef->path, robot, name);
		return 1;
	}
	int r = hako_msg_registry_create(&reg);
	if (r != 0) {
		errf("cannot create the type registry: %s", hako_strerror(r));
		return 1;
	}
	hako_error_clear(&err);
	r = hako_msg_registry_get(reg, pdu->type, &type, &err);
	if (r != 0) {
		if (err.message[0] != '\0') {
			errf("%s", hako_error_format(&err, msg, sizeof(msg)));
		} else {
			errf("type %s of %s/%s: %s", pdu->type, robot, name, hako_strerror(r));
		}
		goto out;
	}
	/* A sizing pass first: a PDU with arrays may be larger than the pdudef's size. */
	hako_error_clear(&err);
	r = hako_pdu_from_json(type, text, text_len, NULL, 0, len, &err);
	if (r == HAKO_ETOOBIG && *len != SIZE_MAX) {
		*out = malloc(*len);
		if (*out == NULL) {
			errf("out of memory");
			goto out;
		}
		r = hako_pdu_from_json(type, text, text_len, *out, *len, len, &err);
	}
	if (r != 0) {
		errf("JSON for %s (%s/%s): %s", pdu->type, robot, name,
		     err.message[0] != '\0' ? hako_error_format(&err, msg, sizeof(msg))
		                            : hako_strerror(r));
		free(*out);
		*out = NULL;
		goto out;
	}
	rc = 0;
out:
	hako_msg_registry_destroy(reg);
	return rc;
}

/* Wait for at least one connected peer (tcp, websocket; mqtt: the broker). 0, or 1 after an error
 * line. */
static int wait_peer(hako_endpoint_t *ep, const char *path, double wait_sec)
{
	if (!is_connected_comm(ep)) {
		return 0;
	}
	hako_time_t deadline = hako_now_usec() + (hako_time_t)(wait_sec * 1e6);
	hako_endpoint_stats_t s;
	for (;;) {
		hako_endpoint_get_stats(ep, &s);
		if (s.peers > 0) {
			return 0;
		}
		if (got_stop) {
			errf("%s: interrupted while waiting for a peer", path);
			return 1;
		}
		if (got_usr1) {
			got_usr1 = 0;
			stats_to_stderr(ep);
		}
		if (hako_now_usec() >= deadline) {
			errf("%s: no peer connected to endpoint '%s' within %g s", path,
			     hako_endpoint_name(ep), wait_sec);
			return 1;
		}
		sleep_usec(10000);
	}
}

/* Let the comm write what is queued before the endpoint closes: wait until frames_out grew by
 * `sent` (every PDU reached at least one peer's socket) or a peer dropped some. */
static void wait_flushed(hako_endpoint_t *ep, uint64_t out0, uint64_t drop0, uint64_t sent)
{
	if (!is_connected_comm(ep)) {
		return;
	}
	hako_time_t deadline = hako_now_usec() + FLUSH_WAIT_USEC;
	hako_endpoint_stats_t s;
	for (;;) {
		hako_endpoint_get_stats(ep, &s);
		if (s.frames_out - out0 >= sent || s.send_dropped != drop0 || s.peers == 0 ||
		    hako_now_usec() >= deadline || got_stop) {
			return;
		}
		sleep_usec(1000);
	}
}

static int cmd_send(const hako_cli_command_t *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {{"json", required_argument, NULL, 'j'},
	                                         {"json-file", required_argument, NULL, 'f'},
	                                         {"hex", required_argument, NULL, 'x'},
	                                         {"count", required_argument, NULL, 'n'},
	                                         {"interval-ms", required_argument, NULL, 'i'},
	                                         {"wait-peer", required_argument, NULL, 'w'},
	                                         {"domain", required_argument, NULL, 'd'},
	                                         {"node-map", required_argument, NULL, 'm'},
	                                         {"help", no_argument, NULL, 'h'},
	                                         {NULL, 0, NULL, 0}};
	const char *json = NULL, *json_file = NULL, *hex = NULL;
	uint64_t count = 1, interval_ms = 0;
	double wait_sec = DEFAULT_WAIT_SEC;
	int c, r;
	while ((c = getopt_long(argc, argv, ":hj:f:x:n:i:w:d:m:", longopts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = optarg;
			r = -1;
			break;
		case 'f':
			json_file = optarg;
			r = -1;
			break;
		case 'x':
			hex = optarg;
			r = -1;
			break;
		case 'n': r = parse_u64(cmd, "--count", optarg, 1, &count); break;
		case 'i': r = parse_u64(cmd, "--interval-ms", optarg, 0, &interval_ms); break;
		case 'w': r = parse_sec(cmd, "--wait-peer", optarg, &wait_sec); break;
		case 'd':
			opt_domain = optarg;
			r = -1;
			break;
		case 'm': r = set_node_map(cmd, optarg); break;
		default: r = hako_cli_common_option(cmd, c, argv); break;
		}
		if (r >= 0) {
			return r;
		}
	}
	if (argc - optind != 3) {
		return hako_cli_usage_error(cmd, "need <endpoint.json>, <robot> and <pdu-name>");
	}
	if ((json != NULL) + (json_file != NULL) + (hex != NULL) != 1) {
		return hako_cli_usage_error(cmd,
		                            "give exactly one of --json, --json-file and --hex");
	}
	const char *path = argv[optind], *robot = argv[optind + 1], *name = argv[optind + 2];
	hako_endpoint_t *ep = NULL;
	uint8_t *pdu = NULL;
	char *text = NULL;
	size_t len = 0, text_len = 0;
	int rc = 1, sending = 0;
	char why[200];
	if (hex != NULL && parse_hex(hex, &pdu, &len, why, sizeof(why)) != 0) {
		return hako_cli_usage_error(cmd, "%s", why);
	}
	if (json_file != NULL) {
		text = read_file(json_file, &text_len);
		if (text == NULL) {
			errf("%s: cannot read: %s", json_file, strerror(errno));
			free(pdu);
			return 1;
		}
	}
	if (open_endpoint(path, &ep) != 0) {
		goto out;
	}
	hako_pdu_key_t key;
	r = hako_endpoint_resolve(ep, robot, name, &key, NULL);
	if (r != 0) {
		const hako_endpoint_config_t *cfg = hako_endpoint_config(ep);
		if (cfg->pdudef == NULL) {
			errf("%s: endpoint '%s' has no pdu_def_path, so PDU '%s' cannot be looked "
			     "up",
			     path, hako_endpoint_name(ep), name);
		} else {
			errf("%s: no PDU '%s' for robot '%s'", cfg->pdudef->path, name, robot);
		}
		goto out;
	}
	if (pdu == NULL && encode_json(ep, robot, name, text != NULL ? text : json,
	                               text != NULL ? text_len : strlen(json), &pdu, &len) != 0) {
		goto out;
	}
	if (wait_peer(ep, path, wait_sec) != 0) {
		goto out;
	}
	hako_endpoint_stats_t s0;
	hako_endpoint_get_stats(ep, &s0);
	uint64_t sent = 0;
	sending = 1;
	for (; sent < count && !got_stop; sent++) {
		if (sent > 0 && interval_ms > 0) {
			sleep_usec((hako_time_t)interval_ms * 1000);
		}
		if (got_usr1) {
			got_usr1 = 0;
			stats_to_stderr(ep);
		}
		r = hako_endpoint_send(ep, &key, pdu, len);
		if (r != 0) {
			errf("%s: sending %s/%s (%zu bytes) failed: %s", path, robot, name, len,
			     r == HAKO_ENOTCONN ? "no peer is connected" : hako_strerror(r));
			goto out;
		}
	}
	wait_flushed(ep, s0.frames_out, s0.send_dropped, sent);
	if (got_stop && sent < count) {
		errf("%s: interrupted after %" PRIu64 " of %" PRIu64 " PDUs", path, sent, count);
		goto out;
	}
	rc = 0;
out:
	if (sending) {
		stats_to_stderr(ep);
	}
	close_endpoint(ep);
	free(text);
	free(pdu);
	return rc;
}

/* ---- check ---- */

static void print_addr_name(const char *what, const hako_comm_addr_t *a)
{
	if (a->present && a->node[0] != '\0') {
		printf("  %s.address: %s -> %s\n", what, a->node, a->address);
	}
}

/* check -v: the node map an endpoint's comm used and what each node name became. */
static void print_names(const hako_endpoint_config_t *cfg)
{
	const hako_comm_config_t *cc = cfg->comm;
	printf("endpoint %s: comm %s\n", cfg->name, cc != NULL ? cc->path : "none");
	if (cc == NULL) {
		return;
	}
	if (cc->node_map[0] != '\0') {
		printf("  node map: %s (from %s)\n", cc->node_map, cc->node_map_from);
	}
	print_addr_name("local", &cc->local);
	print_addr_name("remote", &cc->remote);
	if (cc->local.node[0] == '\0' && cc->remote.node[0] == '\0') {
		printf("  no node names\n");
	}
}

static int cmd_check(const hako_cli_command_t *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {{"container", required_argument, NULL, 'c'},
	                                         {"node", required_argument, NULL, 'n'},
	                                         {"verbose", no_argument, NULL, 'v'},
	                                         {"node-map", required_argument, NULL, 'm'},
	                                         {"help", no_argument, NULL, 'h'},
	                                         {NULL, 0, NULL, 0}};
	const char *container = NULL, *node = NULL;
	int verbose = 0, c, r;
	while ((c = getopt_long(argc, argv, ":hvc:n:m:", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			container = optarg;
			r = -1;
			break;
		case 'n':
			node = optarg;
			r = -1;
			break;
		case 'v':
			verbose = 1;
			r = -1;
			break;
		case 'm': r = set_node_map(cmd, optarg); break;
		default: r = hako_cli_common_option(cmd, c, argv); break;
		}
		if (r >= 0) {
			return r;
		}
	}
	if ((container != NULL) != (node != NULL)) {
		return hako_cli_usage_error(cmd, "--container and --node go together");
	}
	if (container != NULL ? argc != optind : argc - optind != 1) {
		return hako_cli_usage_error(
		    cmd, container != NULL
		             ? "no <endpoint.json> with --container"
		             : "need one <endpoint.json> (or --container F --node ID)");
	}
	hako_error_t err;
	hako_error_clear(&err);
	hako_endpoint_container_t *ct = NULL;
	hako_endpoint_config_t *cfg = NULL;
	if (container != NULL) {
		r = hako_endpoint_container_load(container, node, &ct, &err);
	} else {
		r = hako_endpoint_config_load(argv[optind], &cfg, &err);
	}
	if (r != 0) {
		/* The bare file:line:column: message line, as compilers print theirs. */
		char msg[1200];
		if (err.message[0] != '\0') {
			fprintf(stderr, "%s\n", hako_error_format(&err, msg, sizeof(msg)));
		} else {
			fprintf(stderr, "%s: %s\n", container != NULL ? container : argv[optind],
			        hako_strerror(r));
		}
		return 1;
	}
	printf("ok\n");
	for (size_t i = 0; verbose && i < (ct != NULL ? ct->count : 1); i++) {
		print_names(ct != NULL ? ct->entries[i].config : cfg);
	}
	hako_endpoint_container_free(ct);
	hako_endpoint_config_free(cfg);
	return 0;
}

/* ---- stats ---- */

static int cmd_stats(const hako_cli_command_t *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"interval", required_argument, NULL, 'i'}, {"count", required_argument, NULL, 'n'},
	    {"domain", required_argument, NULL, 'd'},   {"node-map", required_argument, NULL, 'm'},
	    {"help", no_argument, NULL, 'h'},           {NULL, 0, NULL, 0}};
	double interval = 1.0;
	uint64_t count = 0;
	int c, r;
	while ((c = getopt_long(argc, argv, ":hi:n:d:m:", longopts, NULL)) != -1) {
		switch (c) {
		case 'i': r = parse_sec(cmd, "--interval", optarg, &interval); break;
		case 'n': r = parse_u64(cmd, "--count", optarg, 1, &count); break;
		case 'd':
			opt_domain = optarg;
			r = -1;
			break;
		case 'm': r = set_node_map(cmd, optarg); break;
		default: r = hako_cli_common_option(cmd, c, argv); break;
		}
		if (r >= 0) {
			return r;
		}
	}
	if (argc - optind != 1) {
		return hako_cli_usage_error(cmd, "need one <endpoint.json>");
	}
	hako_endpoint_t *ep = NULL;
	if (open_endpoint(argv[optind], &ep) != 0) {
		return 1;
	}
	uint16_t port = hako_endpoint_local_port(ep);
	if (port != 0) {
		printf("port %u\n", (unsigned)port);
	}
	fflush(stdout);
	/* The cache is drained so a queue does not count its overflow as recv_dropped. */
	size_t cap = FIRST_BUF;
	uint8_t *buf = malloc(cap);
	hako_time_t start = hako_now_usec(), step = (hako_time_t)(interval * 1e6);
	hako_time_t next = start + step;
	uint64_t lines = 0;
	char line[600];
	while (!got_stop && (count == 0 || lines < count)) {
		hako_pdu_key_t key;
		size_t len;
		while (buf != NULL) {
			r = hako_endpoint_recv_next(ep, &key, buf, cap, &len);
			if (r == HAKO_ETOOBIG) {
				uint8_t *nbuf = realloc(buf, len);
				buf = nbuf != NULL ? nbuf : buf;
				cap = nbuf != NULL ? len : cap;
				if (nbuf == NULL) {
					break;
				}
			} else if (r != 0) {
				break;
			}
		}
		hako_endpoint_process_recv_events(ep);
		hako_time_t now = hako_now_usec();
		if (now >= next || got_usr1) {
			got_usr1 = 0;
			format_stats(ep, line, sizeof(line));
			printf("t=%.1f %s\n", (double)(now - start) / 1e6, line);
			fflush(stdout);
			lines += now >= next;
			while (next <= now) {
				next += step;
			}
			continue;
		}
		hako_endpoint_wait(ep, next - now < POLL_USEC ? next - now : POLL_USEC);
	}
	format_stats(ep, line, sizeof(line));
	printf("final %s\n", line);
	fflush(stdout);
	close_endpoint(ep);
	free(buf);
	return 0;
}

/* ---- commands ---- */

#define NODE_MAP_HELP                                                                              \
	"  -m, --node-map F      resolve node names in tcp/udp comm files through the node map "   \
	"F\n"                                                                                      \
	"                        (node-ip-map.json; replaces the files' name_resolver map;\n"      \
	"                        default: $HAKO_NODE_IP_MAP)\n"

static const hako_cli_command_t commands[] = {
    {"probe", "<endpoint.json> [--count N] [--timeout SEC] [--domain NAME] [--raw]",
     "print every PDU an endpoint receives, as JSON lines",
     "Open and start the endpoint and print every PDU it receives, one JSON object per line:\n"
     "{\"robot\", \"channel_id\", \"pdu\" (its name in the pdudef, or null), \"bytes\", and\n"
     "\"data\" (the PDU as JSON when the pdudef gives its type and it decodes) or \"hex\"\n"
     "(its first 64 bytes)}. Stops after N PDUs, after the timeout or on Ctrl-C; the\n"
     "statistics go to stderr at the end and on SIGUSR1.",
     "  -n, --count N         stop after N PDUs (exit 1 if the timeout comes first)\n"
     "  -t, --timeout SEC     stop after SEC seconds\n"
     "  -d, --domain NAME     the domain of an shm comm (default: $HAKO_DOMAIN)\n"
     "  -r, --raw             never decode: \"hex\" holds every byte of the PDU\n" NODE_MAP_HELP,
     cmd_probe},
    {"send",
     "<endpoint.json> ROBOT PDU_NAME (--json JSON | --json-file F | --hex HEX) [--count N] "
     "[--interval-ms M] [--wait-peer SEC] [--domain NAME]",
     "send a PDU given as JSON or hex",
     "Encode JSON as a PDU of the type the pdudef gives (missing fields are zero), or take the\n"
     "bytes of --hex, and send it through the endpoint. A tcp or websocket endpoint first waits\n"
     "for a peer to connect. Exits 0 once every PDU has been handed to a peer.",
     "  -j, --json JSON       the PDU as JSON text\n"
     "  -f, --json-file F     the PDU as JSON in file F ('-': stdin)\n"
     "  -x, --hex HEX         the PDU's bytes as hex digits (spaces allowed)\n"
     "  -n, --count N         send it N times (default 1)\n"
     "  -i, --interval-ms M   pause between two sends (default 0)\n"
     "  -w, --wait-peer SEC   how long to wait for a peer (default 5)\n"
     "  -d, --domain NAME     the domain of an shm comm (default: $HAKO_DOMAIN)\n" NODE_MAP_HELP,
     cmd_send},
    {"check", "<endpoint.json> | --container <container.json> --node ID [-v] [--node-map F]",
     "validate an endpoint or container file",
     "Load and validate an endpoint file and the files it names (cache, comm, pdudef), or the\n"
     "endpoints of one node of a container file. Prints \"ok\", or the error as\n"
     "file:line:column: message on stderr (exit 1). Nothing is opened or bound.",
     "  -c, --container F     a container file\n"
     "  -n, --node ID         the node whose endpoints to check\n"
     "  -v, --verbose         also say, per endpoint, which node map resolved which node\n"
     "                        name to which address\n" NODE_MAP_HELP,
     cmd_check},
    {"stats", "<endpoint.json> [--interval SEC] [--count N] [--domain NAME]",
     "print an endpoint's statistics periodically",
     "Open and start the endpoint and print its statistics every interval, on SIGUSR1 and at\n"
     "exit (Ctrl-C), one line each. What arrives is read and discarded. A server or udp\n"
     "endpoint first prints \"port N\".",
     "  -i, --interval SEC    time between two lines (default 1)\n"
     "  -n, --count N         stop after N lines\n"
     "  -d, --domain NAME     the domain of an shm comm (default: $HAKO_DOMAIN)\n" NODE_MAP_HELP,
     cmd_stats},
    {"help", "[command]", "help of a command", "Show the help of hako-endpoint or of one command.",
     "", hako_cli_help},
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void tool_usage(FILE *out)
{
	fprintf(out, "usage: hako-endpoint <command> [options]\n\n"
	             "Open PDU endpoints (endpoint JSON files: cache + comm + pdudef) from the "
	             "shell.\n\ncommands:\n");
	hako_cli_list_commands(out, 6);
	fprintf(out,
	        "\noptions:\n  -h, --help            show this help\n"
	        "  -V, --version         print the version\n\n"
	        "'hako-endpoint <command> --help' describes a command. Environment: "
	        "HAKO_DOMAIN,\nHAKO_MSG_PATH, HAKO_NODE_IP_MAP, HAKO_LOG=debug|info|warn|error.\n"
	        "Exit codes: 0 ok, 1 runtime or config error, 2 usage error.\n");
}

int main(int argc, char **argv)
{
	static const hako_cli_t cli = {
	    .prog = "hako-endpoint",
	    .version = HAKO_VERSION,
	    .commands = commands,
	    .ncommands = NCOMMANDS,
	    .common_options = common_options,
	    .usage = tool_usage,
	    .before_run = install_signals,
	};
	return hako_cli_main(&cli, argc, argv);
}
