/* The owner status of every EU of a domain, read from the domain alone (no RD config): each
 * channel that holds a valid status PDU. For whoever looks at a domain from outside, as
 * hako-rd status does when it is given no config. */
#include <stdio.h>
#include <stdlib.h>

#include "hako/log.h"
#include "rd_internal.h"

/* The status PDU in ch (size bytes), decoded into e; nonzero if ch holds none. */
static int read_one(hako_domain_t *dom, const hakoi_rd_types_t *types,
                    const hako_channel_info_t *ci, uint8_t *buf, hako_rd_status_entry_t *e)
{
	hako_channel_t *ch;
	hakoi_rd_status_t st;
	size_t len = 0;
	char why[256];
	if (ci->seq == 0 || hako_channel_lookup(dom, ci->robot, ci->channel_id, &ch) != 0 ||
	    hako_channel_read(ch, buf, ci->size, &len, NULL) != 0 ||
	    hakoi_rd_status_decode(types, buf, len, &st, why, sizeof(why)) != 0) {
		return -1;
	}
	snprintf(e->robot, sizeof(e->robot), "%s", ci->robot);
	e->channel_id = ci->channel_id;
	e->config_hash = st.config_hash;
	e->status = (hako_rd_status_t)st.status;
	e->epoch = st.epoch;
	e->curr_owner = st.curr;
	e->next_owner = st.next;
	return 0;
}

int hako_rd_status_read(hako_domain_t *dom, hako_rd_status_entry_t *out, size_t cap, size_t *count)
{
	if (dom == NULL || count == NULL || (out == NULL && cap > 0)) {
		return HAKO_EINVAL;
	}
	*count = 0;
	hako_msg_registry_t *reg = NULL;
	hakoi_rd_types_t types;
	hako_error_t err;
	int r = hako_msg_registry_create(&reg);
	if (r != 0) {
		return r;
	}
	if ((r = hakoi_rd_types_get(reg, &types, &err)) != 0) {
		char line[600];
		HAKO_ERROR("rd: the status type cannot be used: %s",
		           hako_error_format(&err, line, sizeof(line)));
		hako_msg_registry_destroy(reg);
		return r;
	}
	/* Channels are only ever added: list as many as there are now. */
	int n = 0;
	hako_channel_info_t *chans = NULL;
	uint8_t *buf = NULL;
	uint32_t biggest = 0;
	if ((r = hako_domain_list_channels(dom, NULL, 0, &n)) != 0) {
		goto out;
	}
	if (n > 0 && (chans = calloc((size_t)n, sizeof(*chans))) == NULL) {
		r = HAKO_ENOMEM;
		goto out;
	}
	int listed = n;
	if (n > 0 && (r = hako_domain_list_channels(dom, chans, n, &listed)) != 0) {
		goto out;
	}
	for (int i = 0; i < n; i++) {
		biggest = chans[i].size > biggest ? chans[i].size : biggest;
	}
	if (biggest > 0 && (buf = malloc(biggest)) == NULL) {
		r = HAKO_ENOMEM;
		goto out;
	}
	for (int i = 0; i < n; i++) {
		hako_rd_status_entry_t e;
		if (read_one(dom, &types, &chans[i], buf, &e) == 0) {
			if (*count < cap) {
				out[*count] = e;
			}
			(*count)++;
		}
	}
out:
	free(buf);
	free(chans);
	hako_msg_registry_destroy(reg);
	return r;
}
