/* The control plane's keys and ZAP handler (auth.h); key generation (hako_conductor_keygen). */
#define _GNU_SOURCE
#include "auth.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include "hako/log.h"
#include "hakoi/file.h"

#define ZAP_ENDPOINT "inproc://zeromq.zap.01"
#define KEY_FILE_MAX 1024

/* "<dir>/<id><ext>" into out. */
static int key_path(char *out, size_t size, const char *dir, const char *id, const char *ext)
{
	int n = snprintf(out, size, "%s/%s%s", dir, id, ext);
	return n < 0 || (size_t)n >= size ? -1 : 0;
}

/* The value of the line "<tag> <z85>" of a key file into out (41 bytes). 0 or -1. */
static int key_line(const char *text, const char *tag, char *out)
{
	size_t tl = strlen(tag);
	for (const char *l = text; l != NULL && *l != '\0';
	     l = strchr(l, '\n'), l = l ? l + 1 : l) {
		if (strncmp(l, tag, tl) != 0 || l[tl] != ' ') {
			continue;
		}
		const char *v = l + tl + 1;
		size_t n = strcspn(v, " \t\r\n");
		uint8_t bin[32];
		if (n != HAKOI_Z85_KEY - 1) {
			return -1;
		}
		memcpy(out, v, n);
		out[n] = '\0';
		return zmq_z85_decode(bin, out) != NULL ? 0 : -1;
	}
	return -1;
}

static int fail_key(hako_error_t *err, const hako_conductor_config_t *cfg, const char *path,
                    const char *what)
{
	return hako_error_set(err, HAKO_ECONFIG, path, 0, 0,
	                      "%s: make the federation's keys with `hako-conductor keygen` and "
	                      "its conductor files (docs/conductor.md), or set \"auth\": \"none\" "
	                      "in %s for a federation on loopback only",
	                      what, cfg->path);
}

/* Read a key file (at most KEY_FILE_MAX bytes). secret: it must not be readable by others. */
static int read_key_file(const hako_conductor_config_t *cfg, const char *path, int secret,
                         char *text, hako_error_t *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		char what[160];
		snprintf(what, sizeof(what), "cannot read the %s key: %s",
		         secret ? "node's own" : "peer's public", strerror(errno));
		return fail_key(err, cfg, path, what);
	}
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return fail_key(err, cfg, path, "not a regular file");
	}
	if (secret && (st.st_mode & 077) != 0) {
		close(fd);
		return hako_error_set(err, HAKO_EPERM, path, 0, 0,
		                      "the node's secret key is readable by other users (mode "
		                      "%03o): chmod 600 %s",
		                      (unsigned)(st.st_mode & 0777), path);
	}
	ssize_t n = read(fd, text, KEY_FILE_MAX - 1);
	close(fd);
	if (n < 0) {
		return fail_key(err, cfg, path, strerror(errno));
	}
	text[n] = '\0';
	return 0;
}

/* A peer's public key from "<dir>/<id>.pub" into k. */
static int load_public(const hako_conductor_config_t *cfg, const char *id, struct hakoi_auth_key *k,
                       char *z85, hako_error_t *err)
{
	char path[HAKO_CONDUCTOR_PATH_MAX + HAKO_CONDUCTOR_ID_MAX + 8];
	char text[KEY_FILE_MAX], pub[HAKOI_Z85_KEY];
	if (key_path(path, sizeof(path), cfg->keys_dir, id, ".pub") != 0) {
		return hako_error_set(err, HAKO_ENAMETOOLONG, cfg->path, 0, 0, "keys_dir too long");
	}
	int r = read_key_file(cfg, path, 0, text, err);
	if (r != 0) {
		return r;
	}
	if (key_line(text, "public", pub) != 0) {
		return fail_key(err, cfg, path, "no line \"public <40 characters of Z85>\"");
	}
	if (k != NULL) {
		snprintf(k->id, sizeof(k->id), "%s", id);
		zmq_z85_decode(k->key, pub);
	}
	if (z85 != NULL) {
		memcpy(z85, pub, HAKOI_Z85_KEY);
	}
	return 0;
}

int hakoi_auth_load(const hako_conductor_config_t *cfg, hakoi_auth_t *a, hako_error_t *err)
{
	memset(a, 0, sizeof(*a));
	snprintf(a->node_id, sizeof(a->node_id), "%s", cfg->node_id);
	a->server = cfg->role == HAKO_CONDUCTOR_SERVER;
	if (cfg->auth == HAKO_CONDUCTOR_AUTH_NONE) {
		return 0;
	}
	if (!zmq_has("curve")) {
		return hako_error_set(err, HAKO_ENOTSUP, cfg->path, 0, 0,
		                      "this libzmq has no CURVE security: the control plane cannot "
		                      "be authenticated (\"auth\": \"none\" runs without it)");
	}
	a->on = 1;
	char path[HAKO_CONDUCTOR_PATH_MAX + HAKO_CONDUCTOR_ID_MAX + 8];
	char text[KEY_FILE_MAX];
	if (key_path(path, sizeof(path), cfg->keys_dir, cfg->node_id, ".key") != 0) {
		return hako_error_set(err, HAKO_ENAMETOOLONG, cfg->path, 0, 0, "keys_dir too long");
	}
	int r = read_key_file(cfg, path, 1, text, err);
	if (r != 0) {
		return r;
	}
	char derived[HAKOI_Z85_KEY];
	if (key_line(text, "public", a->public_key) != 0 ||
	    key_line(text, "secret", a->secret_key) != 0 ||
	    zmq_curve_public(derived, a->secret_key) != 0 || strcmp(derived, a->public_key) != 0) {
		memset(text, 0, sizeof(text));
		return fail_key(err, cfg, path,
		                "not a key pair (lines \"public <z85>\" and \"secret <z85>\" of "
		                "one pair)");
	}
	memset(text, 0, sizeof(text));
	if (cfg->role == HAKO_CONDUCTOR_CLIENT) {
		return load_public(cfg, cfg->server_id, NULL, a->server_key, err);
	}
	memcpy(a->server_key, a->public_key, HAKOI_Z85_KEY);
	a->keys = calloc(cfg->client_count + 1, sizeof(*a->keys));
	if (a->keys == NULL) {
		return hako_error_set(err, HAKO_ENOMEM, cfg->path, 0, 0, "out of memory");
	}
	for (size_t i = 0; i < cfg->client_count; i++) {
		if ((r = load_public(cfg, cfg->clients[i], &a->keys[i], NULL, err)) != 0) {
			hakoi_auth_close(a);
			return r;
		}
	}
	a->nkeys = cfg->client_count;
	snprintf(a->keys[a->nkeys].id, sizeof(a->keys[a->nkeys].id), "%s", cfg->node_id);
	zmq_z85_decode(a->keys[a->nkeys].key, a->public_key);
	a->nkeys++;
	return 0;
}

int hakoi_auth_zap_open(hakoi_auth_t *a, void *zctx)
{
	if (!a->on) {
		return 0;
	}
	a->zap = zmq_socket(zctx, ZMQ_REP);
	int zero = 0;
	if (a->zap == NULL) {
		return -1;
	}
	zmq_setsockopt(a->zap, ZMQ_LINGER, &zero, sizeof(zero));
	return zmq_bind(a->zap, ZAP_ENDPOINT);
}

/* Receive one part into buf (cut to size, NUL-terminated); its length or -1. *more: more parts
 * follow. */
static int recv_part(void *s, char *buf, size_t size, int flags, int *more)
{
	zmq_msg_t m;
	zmq_msg_init(&m);
	if (zmq_msg_recv(&m, s, flags) < 0) {
		zmq_msg_close(&m);
		return -1;
	}
	size_t n = zmq_msg_size(&m);
	size_t c = n < size - 1 ? n : size - 1;
	memcpy(buf, zmq_msg_data(&m), c);
	buf[c] = '\0';
	*more = zmq_msg_more(&m);
	zmq_msg_close(&m);
	return (int)n;
}

static void log_refusal(hakoi_auth_t *a, const char *address, const char *why)
{
	a->refused++;
	for (size_t i = 0; i < sizeof(a->logged) / sizeof(a->logged[0]); i++) {
		if (strncmp(a->logged[i], address, sizeof(a->logged[i]) - 1) == 0) {
			return;
		}
	}
	snprintf(a->logged[a->next_logged], sizeof(a->logged[0]), "%.63s", address);
	a->next_logged = (a->next_logged + 1) % (sizeof(a->logged) / sizeof(a->logged[0]));
	HAKO_WARN("conductor %s: refused a connection from %s: %s (further ones from there are "
	          "counted, not logged)",
	          a->node_id, address, why);
}

/* One ZAP request: version, request id, domain, address, routing id, mechanism, credentials. */
static int zap_one(hakoi_auth_t *a)
{
	char part[7][128];
	int len[7], more = 1, n = 0;
	for (; n < 7 && more; n++) {
		len[n] =
		    recv_part(a->zap, part[n], sizeof(part[n]), n == 0 ? ZMQ_DONTWAIT : 0, &more);
		if (len[n] < 0) {
			if (n == 0) {
				return 0;
			}
			break;
		}
	}
	while (more) { /* more credentials than a CURVE request has */
		char skip[8];
		if (recv_part(a->zap, skip, sizeof(skip), 0, &more) < 0) {
			break;
		}
	}
	const char *status = "400", *text = "no such key", *user = "";
	if (n < 7 || strcmp(part[0], "1.0") != 0) {
		text = "a malformed ZAP request";
	} else if (strcmp(part[5], "CURVE") != 0 || len[6] != 32) {
		text = "not CURVE";
	} else {
		for (size_t i = 0; i < a->nkeys; i++) {
			if (memcmp(a->keys[i].key, part[6], 32) == 0) {
				status = "200";
				text = "OK";
				user = a->keys[i].id;
				break;
			}
		}
	}
	if (strcmp(status, "200") != 0) {
		char z85[HAKOI_Z85_KEY] = "?";
		if (n == 7 && len[6] == 32) {
			zmq_z85_encode(z85, (const uint8_t *)part[6], 32);
		}
		char why[128];
		snprintf(why, sizeof(why), "%s (key %s is no node's of this federation)", text,
		         z85);
		log_refusal(a, n >= 4 ? part[3] : "?", why);
	}
	/* The reply: version, request id, status code and text, user id, metadata. */
	zmq_send(a->zap, "1.0", 3, ZMQ_SNDMORE);
	zmq_send(a->zap, n >= 2 ? part[1] : "", n >= 2 ? (size_t)len[1] : 0, ZMQ_SNDMORE);
	zmq_send(a->zap, status, 3, ZMQ_SNDMORE);
	zmq_send(a->zap, text, strlen(text), ZMQ_SNDMORE);
	zmq_send(a->zap, user, strlen(user), ZMQ_SNDMORE);
	zmq_send(a->zap, "", 0, 0);
	return 1;
}

void hakoi_auth_zap_serve(hakoi_auth_t *a)
{
	if (a->zap == NULL) {
		return;
	}
	while (zap_one(a)) {
	}
}

int hakoi_auth_server_socket(const hakoi_auth_t *a, void *s)
{
	if (!a->on) {
		return 0;
	}
	int one = 1;
	if (zmq_setsockopt(s, ZMQ_CURVE_SERVER, &one, sizeof(one)) != 0 ||
	    zmq_setsockopt(s, ZMQ_CURVE_SECRETKEY, a->secret_key, HAKOI_Z85_KEY) != 0 ||
	    zmq_setsockopt(s, ZMQ_ZAP_DOMAIN, "hako", 4) != 0) {
		return -1;
	}
	return 0;
}

int hakoi_auth_client_socket(const hakoi_auth_t *a, void *s)
{
	if (!a->on) {
		return 0;
	}
	if (zmq_setsockopt(s, ZMQ_CURVE_SERVERKEY, a->server_key, HAKOI_Z85_KEY) != 0 ||
	    zmq_setsockopt(s, ZMQ_CURVE_PUBLICKEY, a->public_key, HAKOI_Z85_KEY) != 0 ||
	    zmq_setsockopt(s, ZMQ_CURVE_SECRETKEY, a->secret_key, HAKOI_Z85_KEY) != 0) {
		return -1;
	}
	return 0;
}

int hakoi_auth_monitor_open(hakoi_auth_t *a, void *zctx, void *s)
{
	if (!a->on) {
		return 0;
	}
	char ep[64];
	snprintf(ep, sizeof(ep), "inproc://hako-auth-monitor-%p", (void *)a);
	if (zmq_socket_monitor(s, ep,
	                       ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
	                           ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
	                           ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) != 0) {
		return -1;
	}
	a->monitor = zmq_socket(zctx, ZMQ_PAIR);
	int zero = 0;
	if (a->monitor == NULL) {
		return -1;
	}
	zmq_setsockopt(a->monitor, ZMQ_LINGER, &zero, sizeof(zero));
	return zmq_connect(a->monitor, ep);
}

/* Once per kind: a peer retries its connection every second or so. */
static void monitor_event(hakoi_auth_t *a, uint16_t event)
{
	int bit = event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH ? 1 : 2;
	if (a->server) {
		a->refused++;
	}
	if (a->monitor_logged & bit) {
		return;
	}
	a->monitor_logged |= bit;
	if (a->server && bit == 2) {
		HAKO_WARN("conductor %s: refused a connection that does not use the federation's "
		          "CURVE keys (a node with \"auth\": \"none\", an old hako, or not a "
		          "conductor; further ones are counted, not logged)",
		          a->node_id);
	} else if (!a->server && bit == 1) {
		HAKO_ERROR("conductor %s: the server refused this node's key: the server's keys "
		           "folder has no or another %s.pub (hako-conductor keygen, "
		           "docs/conductor.md)",
		           a->node_id, a->node_id);
	} else if (!a->server) {
		HAKO_ERROR("conductor %s: no CURVE hand-shake with the server: its key is not the "
		           "one in this node's keys folder, or it runs with \"auth\": \"none\"",
		           a->node_id);
	}
}

void hakoi_auth_monitor_serve(hakoi_auth_t *a)
{
	if (a->monitor == NULL) {
		return;
	}
	for (;;) {
		zmq_msg_t m;
		zmq_msg_init(&m);
		if (zmq_msg_recv(&m, a->monitor, ZMQ_DONTWAIT) < 0) {
			zmq_msg_close(&m);
			return;
		}
		uint16_t event = 0;
		if (zmq_msg_size(&m) >= 2) {
			const uint8_t *d = zmq_msg_data(&m);
			event = (uint16_t)(d[0] | d[1] << 8);
		}
		int more = zmq_msg_more(&m);
		zmq_msg_close(&m);
		while (more) { /* the endpoint's address */
			zmq_msg_init(&m);
			more = zmq_msg_recv(&m, a->monitor, 0) >= 0 && zmq_msg_more(&m);
			zmq_msg_close(&m);
		}
		if (event != 0) {
			monitor_event(a, event);
		}
	}
}

void hakoi_auth_close(hakoi_auth_t *a)
{
	if (a->monitor != NULL) {
		zmq_close(a->monitor);
		a->monitor = NULL;
	}
	if (a->zap != NULL) {
		zmq_close(a->zap);
		a->zap = NULL;
	}
	free(a->keys);
	a->keys = NULL;
	a->nkeys = 0;
	memset(a->secret_key, 0, sizeof(a->secret_key));
}

/* ---- hako_conductor_keygen ---- */

/* Write text to path with mode (created 0600 whatever the umask, then given its mode), through
 * a temporary file renamed into place. */
static int write_key_file(const char *path, const char *text, mode_t mode)
{
	char tmp[HAKO_CONDUCTOR_PATH_MAX + HAKO_CONDUCTOR_ID_MAX + 32];
	snprintf(tmp, sizeof(tmp), "%s.tmp%d", path, (int)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		return -1;
	}
	size_t len = strlen(text);
	int ok = write(fd, text, len) == (ssize_t)len && fchmod(fd, mode) == 0 && fsync(fd) == 0;
	ok = close(fd) == 0 && ok;
	if (!ok || rename(tmp, path) != 0) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

int hako_conductor_keygen(const hako_conductor_config_t *const *cfgs, size_t n, int *created,
                          hako_error_t *err)
{
	hako_error_clear(err);
	if (created != NULL) {
		*created = 0;
	}
	if (cfgs == NULL || n == 0) {
		return hako_error_set(err, HAKO_EINVAL, "", 0, 0, "no conductor file");
	}
	if (!zmq_has("curve")) {
		return hako_error_set(err, HAKO_ENOTSUP, cfgs[0]->path, 0, 0,
		                      "this libzmq has no CURVE security");
	}
	char(*pub)[HAKOI_Z85_KEY] = calloc(n, sizeof(*pub));
	if (pub == NULL) {
		return hako_error_set(err, HAKO_ENOMEM, "", 0, 0, "out of memory");
	}
	int r = 0;
	char path[HAKO_CONDUCTOR_PATH_MAX + HAKO_CONDUCTOR_ID_MAX + 8], text[KEY_FILE_MAX];
	/* Each node's own pair: kept if it is there, made if not. */
	for (size_t i = 0; i < n && r == 0; i++) {
		const hako_conductor_config_t *c = cfgs[i];
		char secret[HAKOI_Z85_KEY];
		if (key_path(path, sizeof(path), c->keys_dir, c->node_id, ".key") != 0 ||
		    hakoi_mkdirs(c->keys_dir, 0700) != 0) {
			r = hako_error_set(err, HAKO_EIO, c->keys_dir, 0, 0,
			                   "cannot make the folder: %s", strerror(errno));
			break;
		}
		if (access(path, F_OK) == 0) {
			if ((r = read_key_file(c, path, 1, text, err)) == 0 &&
			    key_line(text, "public", pub[i]) != 0) {
				r = fail_key(err, c, path,
				             "not a key file (remove it to make a new one)");
			}
			memset(text, 0, sizeof(text));
			continue;
		}
		if (zmq_curve_keypair(pub[i], secret) != 0) {
			r = hako_error_set(err, HAKO_EIO, path, 0, 0, "zmq_curve_keypair: %s",
			                   zmq_strerror(errno));
			break;
		}
		snprintf(text, sizeof(text),
		         "# hako conductor key pair of node %s: keep it secret (mode 0600)\n"
		         "public %s\nsecret %s\n",
		         c->node_id, pub[i], secret);
		memset(secret, 0, sizeof(secret));
		if (write_key_file(path, text, 0600) != 0) {
			r = hako_error_set(err, HAKO_EIO, path, 0, 0, "cannot write: %s",
			                   strerror(errno));
		} else if (created != NULL) {
			(*created)++;
		}
		memset(text, 0, sizeof(text));
	}
	/* Every node's folder gets the public key of every node. */
	for (size_t i = 0; i < n && r == 0; i++) {
		for (size_t j = 0; j < n && r == 0; j++) {
			if (key_path(path, sizeof(path), cfgs[i]->keys_dir, cfgs[j]->node_id,
			             ".pub") != 0) {
				r = hako_error_set(err, HAKO_ENAMETOOLONG, cfgs[i]->path, 0, 0,
				                   "keys_dir too long");
				break;
			}
			snprintf(text, sizeof(text),
			         "# hako conductor public key of node %s\npublic %s\n",
			         cfgs[j]->node_id, pub[j]);
			if (write_key_file(path, text, 0644) != 0) {
				r = hako_error_set(err, HAKO_EIO, path, 0, 0, "cannot write: %s",
				                   strerror(errno));
			}
		}
	}
	free(pub);
	return r;
}
