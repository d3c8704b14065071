/* The time link: a plain stream socket (tcp or a Unix socket) between a client and its server
 * on the time address, read and written by the node's own threads, not by ZeroMQ's I/O thread.
 * It carries the lock-step's hot path: TIME both ways and a client's ordered EXT messages
 * (hako_conductor_ext_send_ordered), batched with the TIME they precede into one write. The
 * rest of the control plane (joins, the lifecycle, extensions' other messages) stays on
 * ZeroMQ.
 *
 * Hand-shake (in the clear, fixed sizes): the client sends HELLO (magic, version, its node id,
 * incarnation and an ephemeral X25519 public key); the server answers WELCOME (magic, version,
 * its incarnation, its ephemeral key and a MAC of both messages). The MAC's key and the session
 * keys come from the static X25519 secret of the two nodes' CURVE key pairs (the ones of the
 * ZeroMQ control plane: only these two nodes can compute it), the ephemeral secret and both
 * messages, so a WELCOME proves the server, and the client's first frame, which only decrypts
 * with the session key, proves the client; a recorded session cannot be replayed. Without
 * authentication ("auth": "none") the static secret is all zero: encrypted against a passive
 * reader, authenticated by nothing, as the rest of the control plane then.
 *
 * Frames after it: a 4-byte little-endian length, then XSalsa20-Poly1305 (crypto_secretbox) of
 * [flags][4-byte length of part 1][part 1][part 2 if flags & 1], a key per direction, the nonce
 * a counter per direction: a frame that is altered, replayed, dropped or reordered does not
 * decrypt and ends the link. Part 1 is a wire.h frame, checked by the node as any other. */
#ifndef HAKOI_CONDUCTOR_LINK_H
#define HAKOI_CONDUCTOR_LINK_H

#include <stddef.h>
#include <stdint.h>

#include "hako/conductor.h"

#define HAKOI_LINK_MAGIC       0x4c544b48u /* "HKTL" */
#define HAKOI_LINK_VERSION     1u
#define HAKOI_LINK_KEY         32u
#define HAKOI_LINK_HELLO_LEN   (4 + 4 + 64 + 8 + 32)
#define HAKOI_LINK_WELCOME_LEN (4 + 4 + 8 + 32 + 32)
#define HAKOI_LINK_MAC         16u /* crypto_secretbox_MACBYTES */
#define HAKOI_LINK_INNER       5u  /* flags + part 1's length */

typedef enum hakoi_link_state {
	HAKOI_LINK_NONE = 0,
	HAKOI_LINK_CONNECTING, /* client: connect() in progress */
	HAKOI_LINK_HELLO,      /* client: HELLO sent; server: waiting for HELLO */
	HAKOI_LINK_CONFIRM,    /* server: WELCOME sent, waiting for the client's first frame */
	HAKOI_LINK_UP,
} hakoi_link_state_t;

typedef struct hakoi_link {
	int fd;
	hakoi_link_state_t state;
	int client; /* this end is the client */
	char peer[64];
	uint64_t peer_incarnation;
	uint8_t statik[HAKOI_LINK_KEY]; /* the static shared secret (hashed), 0 without auth */
	uint8_t eph_pk[32], eph_sk[32];
	uint8_t hello[HAKOI_LINK_HELLO_LEN];
	uint8_t key_tx[HAKOI_LINK_KEY], key_rx[HAKOI_LINK_KEY];
	uint64_t n_tx, n_rx;
	size_t frame_max; /* the largest frame body taken (ciphertext) */
	/* Received bytes not yet taken (reader's thread). */
	uint8_t *rbuf;
	size_t rlen, rcap, rtake; /* rtake: the frame last returned, dropped at the next read */
	/* Bytes not yet written (writers, under the node's send lock). */
	uint8_t *wbuf;
	size_t wlen, wcap;
	int64_t since; /* hako_now_usec when the state was entered */
} hakoi_link_t;

/* A time address as a socket address: tcp://host:port (host "*": any, for a listener) or
 * ipc://path. 0, or -1 with why. */
struct sockaddr_storage;
int hakoi_link_resolve(const char *address, int listener, struct sockaddr_storage *sa,
                       unsigned *salen, char *why, size_t why_len);
/* A listening socket on address (non-blocking): its fd or -1 (errno). */
int hakoi_link_listen(const char *address, char *why, size_t why_len);
/* Close the listener of address (an ipc:// path is removed). */
void hakoi_link_unlisten(int fd, const char *address);

void hakoi_link_init(hakoi_link_t *l, size_t payload_max);
/* Close the socket and forget the session (the buffers are kept for the next one). */
void hakoi_link_close(hakoi_link_t *l);
void hakoi_link_free(hakoi_link_t *l);

/* Client: start connecting to address (non-blocking); statik: the static secret (32 bytes).
 * 0 or -1. */
int hakoi_link_connect(hakoi_link_t *l, const char *address, const uint8_t *statik,
                       const char *node_id, uint64_t incarnation);
/* Server: a connection just accepted. */
void hakoi_link_accepted(hakoi_link_t *l, int fd);

/* The static secret of two nodes from one's Z85 secret key and the other's public key (32
 * bytes); 0 or -1. */
int hakoi_link_static(const char *secret_z85, const uint8_t *peer_public, uint8_t *out);

/* What the reader gets from hakoi_link_read. */
typedef struct hakoi_link_frame {
	const uint8_t *part1;
	size_t len1;
	const uint8_t *part2; /* NULL: none */
	size_t len2;
} hakoi_link_frame_t;

/* Server: the static secret for a HELLO's node id (0), or -1 if it is no peer of this one. */
typedef int (*hakoi_link_key_fn)(void *ctx, const char *id, uint8_t *statik);

/* The reader's step when the socket is readable (or writable while connecting), and after
 * each frame returned: 1 and *f set when a frame is there (valid until the next call), 2 when
 * the hand-shake just completed (the link is up), 0 when nothing more is there now, -1 when
 * the link ended (closed; why says why). The caller holds the node's send lock (the
 * hand-shake writes). The hand-shake happens
 * inside: server_incarnation (server) goes into WELCOME; key_fn finds the client's secret. */
int hakoi_link_read(hakoi_link_t *l, uint64_t own_incarnation, hakoi_link_key_fn key_fn, void *ctx,
                    hakoi_link_frame_t *f, char *why, size_t why_len);

/* Append a frame to the send buffer (the link must be up); 0, or -1 when the buffer is over
 * its bound (the frame is dropped: times are sent again). */
int hakoi_link_queue(hakoi_link_t *l, const void *part1, size_t len1, const void *part2,
                     size_t len2);
/* Write what the buffer holds, as much as the socket takes: 0, or -1 when the link ended. */
int hakoi_link_flush(hakoi_link_t *l);

/* A frame's parts from a decrypted body (what hakoi_link_read does after decryption; the
 * fuzzer's entry): 0 or -1. */
int hakoi_link_parse_inner(const uint8_t *body, size_t len, hakoi_link_frame_t *f);

#endif
