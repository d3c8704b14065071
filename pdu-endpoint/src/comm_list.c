/* The comms an endpoint can have: each one a table (ep_comm.h) defined in its comm_<name>.c. A
 * new protocol is one more line here. The order is the one "protocol" errors list them in. */
#include <string.h>

#include "ep_comm.h"

const hakoi_comm_t *const hakoi_comms[] = {
    &hakoi_comm_tcp,
    &hakoi_comm_udp,
    &hakoi_comm_shm,
    &hakoi_comm_ws,
    &hakoi_comm_storage,
    &hakoi_comm_mqtt,
    NULL,
};

const hakoi_comm_t *hakoi_comm_find(const char *name)
{
	for (size_t i = 0; name != NULL && hakoi_comms[i] != NULL; i++) {
		if (strcmp(hakoi_comms[i]->name, name) == 0) {
			return hakoi_comms[i];
		}
	}
	return NULL;
}

const hakoi_comm_t *hakoi_comm_of(hako_comm_protocol_t protocol)
{
	for (size_t i = 0; hakoi_comms[i] != NULL; i++) {
		if (hakoi_comms[i]->protocol == protocol) {
			return hakoi_comms[i];
		}
	}
	return NULL;
}

const char *hako_comm_protocol_name(const hako_comm_config_t *cc)
{
	const hakoi_comm_t *c = cc != NULL ? hakoi_comm_of(cc->protocol) : NULL;
	return c != NULL ? c->name : "";
}
