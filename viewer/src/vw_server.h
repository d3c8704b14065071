/* The server of hako-viewer: HTTP for the static page, WebSocket for the state stream, the
 * commands and Hakoniwa's v2 PDU frames (docs/viewer.md). */
#ifndef HAKO_VW_SERVER_H
#define HAKO_VW_SERVER_H

#include <signal.h>
#include <stddef.h>

#include "viewer.h"

#define VW_ALLOW_MAX 32 /* names --allow-host may add */

typedef struct vw_server_config {
	const char *bind; /* address to listen on, "127.0.0.1" by default */
	/* Host names (or addresses) a request's Host may name besides loopback's and the bind's
	 * (--allow-host): at most VW_ALLOW_MAX, without a port. */
	const char *const *allow_hosts;
	int nallow_hosts;
	int port;              /* 0: any free port (vw_server_port says which) */
	const char *www;       /* the static folder */
	const char *token;     /* what start / stop / reset and PDU writes need */
	int rate_hz;           /* samples per second, 1..100 */
	size_t max_message;    /* bytes a client message may have */
	int max_sessions;      /* WebSocket sessions at once */
	size_t session_budget; /* bytes a second one session may be sent at most */
	/* Origins (scheme://host[:port]) of Foxglove apps that may open a Foxglove session from
	 * a browser (--foxglove-origin), besides the viewer's own page. */
	const char *const *fox_origins;
	int nfox_origins;
	int foxglove_rate_hz;  /* messages a second per channel and Foxglove session at most */
	double cpu_max;        /* fraction of a core the viewer may use before it samples slower */
	vw_sampler_t *sampler; /* borrowed */
} vw_server_config_t;

typedef struct vw_server vw_server_t;

int vw_server_create(const vw_server_config_t *cfg, vw_server_t **out, char *why, size_t len);
int vw_server_port(const vw_server_t *v);
/* Serve until *stop is set (a signal handler sets it). */
void vw_server_run(vw_server_t *v, volatile sig_atomic_t *stop);
void vw_server_destroy(vw_server_t *v);

#endif
