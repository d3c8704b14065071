/* Hakoniwa's service API (hako_asset_service.h): request / response between assets over PDU
 * channels, with Hakoniwa's names, constants, packet layouts and service file.
 *
 * A service file (Hakoniwa's service.json) lists the services:
 *   {"pduMetaDataSize": 24,
 *    "services": [{"name": "Service/Add", "type": "hako_srv_msgs/AddTwoInts", "maxClients": 2,
 *                  "pduSize": {"server": {"baseSize": 296, "heapSize": 0},
 *                              "client": {"baseSize": 288, "heapSize": 0}}}]}
 * hako_asset_service_initialize creates, for client slot i of each service, the channels
 * (service name, 2i), the requests of that client (pduMetaDataSize + server sizes), and
 * (service name, 2i+1), its responses (pduMetaDataSize + client sizes), as Hakoniwa does, plus
 * one channel (service name, HAKO_SERVICE_CLIENTS_CHANNEL) naming the clients and the server.
 *
 * Packets are PDUs of <type>RequestPacket / <type>ResponsePacket (hako_srv_msgs): the 24-byte
 * meta header, then ServiceRequestHeader / ServiceResponseHeader, then the body. The buffers
 * the get_*_buffer calls return have the meta and the header filled in and the body zeroed;
 * fill the body (hako-msggen's hako/msgs/hako_srv_msgs/<Type>.h structs) and pass the buffer
 * back.
 *
 * One server per service, any number of clients up to maxClients, each in any process of the
 * domain (assets, or processes attached with hako_asset_attach_core). A server serves one
 * request at a time: while it works on one client's request, the other clients' requests wait
 * in their channels (none is lost) and are taken in turn. Timeouts and progress intervals are
 * in world time, as in Hakoniwa.
 *
 * Where hako differs from Hakoniwa (each a fix; docs/hakoniwa-compat.md):
 *   - the server takes requests from every client slot in turn, not only from slot 0 until
 *     it answered it;
 *   - a progress report (status_poll_interval_msec > 0) keeps the request in progress;
 *   - a cancel that reaches the server before it took the request is answered (DONE,
 *     CANCELED), so the client does not wait for ever;
 *   - a client whose server process died gets REQUEST_TIMEOUT at once (and CANCEL_DONE when
 *     it was cancelling), with the reason in hako_asset_last_error;
 *   - a second server of a service in another live process is refused, and a client slot held
 *     by a dead process is given to a new client once no free slot is left;
 *   - hako_asset_service_server_is_canceled returns 1 when cancelled (Hakoniwa's header says
 *     1; its library returns -1).
 *
 * Every call returns as Hakoniwa's: 0 (or an id, an event, a count) on success, -1 on failure;
 * hako_asset_last_error() gives the reason.
 */
#ifndef HAKO_ASSET_SERVICE_H
#define HAKO_ASSET_SERVICE_H

#include "hako/api.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The channel id under the service name of the table of client names and the server. */
#define HAKO_SERVICE_CLIENTS_CHANNEL 1000000
/* Limits: a service name is a channel's robot name (1..127 bytes), a client name 1..64 bytes,
 * maxClients 1..HAKO_SERVICE_MAX_CLIENTS. */
#define HAKO_SERVICE_CLIENT_NAME_MAX 64
#define HAKO_SERVICE_MAX_CLIENTS     4096

/* Read the service file and create the channels of its services (idempotent: every process
 * using a service calls it with the same file). Register or attach first. 0 or -1. */
HAKO_API int hako_asset_service_initialize(const char *service_config_path);

/* The channels of client slot client_id of service_id, (2 * client_id, 2 * client_id + 1),
 * whichever process holds the slot (Hakoniwa's Python binding answers this from its core's
 * service table; its C header has no such call, hako adds it). 0 or -1 (no such service, or
 * client_id not in 0..maxClients-1). */
HAKO_API int hako_asset_service_get_channel_id(int service_id, int client_id,
                                               int *request_channel_id, int *response_channel_id);

/* ========== Server ========== */

/* Serve serviceName from this process (assetName: the asset serving it, NULL for an attached
 * process). The service id (>= 0; the same in every process), or -1. */
HAKO_API int hako_asset_service_server_create(const char *assetName, const char *serviceName);

#define HAKO_SERVICE_SERVER_API_EVENT_NONE     0
#define HAKO_SERVICE_SERVER_API_REQUEST_IN     1
#define HAKO_SERVICE_SERVER_API_REQUEST_CANCEL 2

/* Look for a request (or, while one is in progress, its cancel). An event above, or -1. */
HAKO_API int hako_asset_service_server_poll(int service_id);
/* The client slot of the request in progress (or looked at next). */
HAKO_API int hako_asset_service_server_get_current_client_id(int service_id);
HAKO_API int hako_asset_service_server_get_current_channel_id(int service_id,
                                                              int *request_channel_id,
                                                              int *response_channel_id);

#define HAKO_SERVICE_SERVER_API_STATUS_IDLE      0
#define HAKO_SERVICE_SERVER_API_STATUS_DOING     1
#define HAKO_SERVICE_SERVER_API_STATUS_CANCELING 2

HAKO_API int hako_asset_service_server_status(int service_id, int *status);
/* The request in progress: the whole packet (meta, header, body) and its channel's size. */
HAKO_API int hako_asset_service_server_get_request(int service_id, char **packet,
                                                   size_t *packet_len);

/* Response status and result codes (ServiceResponseHeader.status / result_code). */
#define HAKO_SERVICE_API_STATUS_NONE          0
#define HAKO_SERVICE_API_STATUS_DOING         1
#define HAKO_SERVICE_API_STATUS_CANCELING     2
#define HAKO_SERVICE_API_STATUS_DONE          3
#define HAKO_SERVICE_API_STATUS_ERROR         4
#define HAKO_SERVICE_API_RESULT_CODE_OK       0
#define HAKO_SERVICE_API_RESULT_CODE_ERROR    1
#define HAKO_SERVICE_API_RESULT_CODE_CANCELED 2
#define HAKO_SERVICE_API_RESULT_CODE_INVALID  3
#define HAKO_SERVICE_API_RESULT_CODE_BUSY     4

/* A response packet to fill: meta and header (request id, names, status, progress, result
 * code) written, body zeroed; its length is the response channel's size. */
HAKO_API int hako_asset_service_server_get_response_buffer(int service_id, char **packet,
                                                           size_t *packet_len, int status,
                                                           int result_code);
/* Send the response to the current client; the request is done, the next client's turn. */
HAKO_API int hako_asset_service_server_put_response(int service_id, char *packet,
                                                    size_t packet_len);
/* 1 if the client cancelled the request in progress, 0 if not, -1 on error. */
HAKO_API int hako_asset_service_server_is_canceled(int service_id);
/* The percentage (0..100) the next progress report carries. */
HAKO_API int hako_asset_service_server_set_progress(int service_id, int percentage);

/* ========== Client ========== */

typedef struct {
	int service_id;
	int client_id;
} HakoServiceHandleType;

/* Take a client slot of serviceName under clientName (a name that has a slot gets it back).
 * 0 or -1 (no such service, every slot taken by a live process, ...). */
HAKO_API int hako_asset_service_client_create(const char *assetName, const char *serviceName,
                                              const char *clientName,
                                              HakoServiceHandleType *handle);

#define HAKO_SERVICE_CLIENT_API_EVENT_NONE          0
#define HAKO_SERVICE_CLIENT_API_RESPONSE_IN         1
#define HAKO_SERVICE_CLIENT_API_REQUEST_TIMEOUT     2
#define HAKO_SERVICE_CLIENT_API_REQUEST_CANCEL_DONE 3

/* Look for the response to the request in progress. An event above, or -1. */
HAKO_API int hako_asset_service_client_poll(const HakoServiceHandleType *handle);
/* The channels of the first client of service_id this process created. */
HAKO_API int hako_asset_service_client_get_channel_id(int service_id, int *request_channel_id,
                                                      int *response_channel_id);
HAKO_API int hako_asset_service_client_get_channel_id_by_handle(const HakoServiceHandleType *handle,
                                                                int *request_channel_id,
                                                                int *response_channel_id);

#define HAKO_SERVICE_CLIENT_API_OPCODE_REQUEST 0
#define HAKO_SERVICE_CLIENT_API_OPCODE_CANCEL  1

/* A request packet to fill: meta and header (request id, names, opcode, progress interval in
 * ms, <= 0: no progress reports) written, body zeroed; its length is the request channel's. */
HAKO_API int hako_asset_service_client_get_request_buffer(const HakoServiceHandleType *handle,
                                                          char **packet, size_t *packet_len,
                                                          int opcode, int poll_interval_msec);
/* Send a request (no other in progress). timeout_msec of world time without an answer or a
 * progress report gives REQUEST_TIMEOUT (<= 0: none). */
HAKO_API int hako_asset_service_client_call_request(const HakoServiceHandleType *handle,
                                                    char *packet, size_t packet_len,
                                                    int timeout_msec);
/* The last response received (after RESPONSE_IN or REQUEST_CANCEL_DONE). timeout: unused, as
 * in Hakoniwa. */
HAKO_API int hako_asset_service_client_get_response(const HakoServiceHandleType *handle,
                                                    char **packet, size_t *packet_len, int timeout);
/* Ask the server to cancel the request in progress. */
HAKO_API int hako_asset_service_client_cancel_request(const HakoServiceHandleType *handle);
/* The server's last reported progress (0..100), or -1. */
HAKO_API int hako_asset_service_client_get_progress(const HakoServiceHandleType *handle);

#define HAKO_SERVICE_CLIENT_API_STATE_IDLE      0
#define HAKO_SERVICE_CLIENT_API_STATE_DOING     1
#define HAKO_SERVICE_CLIENT_API_STATE_CANCELING 2

HAKO_API int hako_asset_service_client_status(const HakoServiceHandleType *handle, int *status);

#ifdef __cplusplus
}
#endif
#endif
