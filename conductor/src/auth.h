/* The control plane's authentication: ZeroMQ CURVE (libzmq's own) with a key pair per node.
 *
 * A node's folder holds keys/<id>.key (its own pair, mode 0600) and keys/<peer>.pub for each
 * node it talks to (hako_conductor_keygen writes both). The server's sockets are CURVE servers
 * and answer ZAP (libzmq's authentication hand-shake, on inproc in the node's context): a
 * connection is accepted only with the public key of a node of the federation, and each of its
 * messages carries that node's id as its "User-Id", which the node compares with the id the
 * message claims. A client's sockets are CURVE clients that know the server's public key, so a
 * client talks only to its real server. Everything on the wire is encrypted. */
#ifndef HAKOI_CONDUCTOR_AUTH_H
#define HAKOI_CONDUCTOR_AUTH_H

#include <stdint.h>

#include "hako/conductor.h"

#define HAKOI_Z85_KEY 41 /* a 32-byte key in Z85: 40 characters and a NUL */

struct hakoi_auth_key {
	char id[HAKO_CONDUCTOR_ID_MAX];
	uint8_t key[32];
};

typedef struct hakoi_auth {
	int on; /* 0: "auth": "none" */
	char node_id[HAKO_CONDUCTOR_ID_MAX];
	char public_key[HAKOI_Z85_KEY], secret_key[HAKOI_Z85_KEY];
	char server_key[HAKOI_Z85_KEY]; /* the server's public key */
	/* Server: who may connect (its clients and itself, for a tool run with its file). */
	struct hakoi_auth_key *keys;
	size_t nkeys;
	void *zap;     /* server: the ZAP handler's REP socket */
	void *monitor; /* the control socket's failed hand-shakes (a PAIR) */
	int server;
	int monitor_logged; /* the kinds of failed hand-shake logged (bits) */
	uint64_t refused;
	/* The addresses whose refusal was logged lately (each logged once, not per attempt). */
	char logged[16][64];
	unsigned next_logged;
} hakoi_auth_t;

/* Read the node's keys (cfg->auth on): its own pair, and the public keys of the nodes it talks
 * to. Errors name the file and what to do. */
int hakoi_auth_load(const hako_conductor_config_t *cfg, hakoi_auth_t *a, hako_error_t *err);
/* Server: bind the ZAP handler in zctx (before any CURVE socket of it listens). */
int hakoi_auth_zap_open(hakoi_auth_t *a, void *zctx);
/* Answer every pending ZAP request (main thread, when a->zap is readable). */
void hakoi_auth_zap_serve(hakoi_auth_t *a);
/* Make s a CURVE server (server sockets) or client (sockets to the server). 0 or -1. */
int hakoi_auth_server_socket(const hakoi_auth_t *a, void *s);
int hakoi_auth_client_socket(const hakoi_auth_t *a, void *s);
/* Watch the control socket s for failed hand-shakes: the server counts and logs a peer without
 * the federation's keys, a client says that the server refused its key. */
int hakoi_auth_monitor_open(hakoi_auth_t *a, void *zctx, void *s);
/* Read the monitor's pending events (main thread, when a->monitor is readable). */
void hakoi_auth_monitor_serve(hakoi_auth_t *a);
void hakoi_auth_close(hakoi_auth_t *a);

#endif
