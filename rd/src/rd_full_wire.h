/* Private to hako_rd: RD-Full's messages, carried as the body of the conductor's extension
 * messages (hako/conductor_ext.h, id HAKO_RD_FULL_EXT_ID). One layout for all six kinds,
 * little-endian: kind, pad, eu, seq, status, epoch, curr, next, to, from_stored, result, pad,
 * commit, release (56 bytes), and for a reply its reason (NUL-terminated) after them. Every
 * body is checked (length, kind, ranges, reason terminated) before a field is used: it came
 * from the network. */
#ifndef HAKOI_RD_FULL_WIRE_H
#define HAKOI_RD_FULL_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define HAKOI_RDF_FIXED  56u
#define HAKOI_RDF_REASON 192u
#define HAKOI_RDF_MAX    (HAKOI_RDF_FIXED + HAKOI_RDF_REASON)

typedef enum hakoi_rdf_kind {
	HAKOI_RDF_REQUEST = 1,   /* any -> server: move eu to node `to` */
	HAKOI_RDF_REPLY = 2,     /* server -> asker: result, reason */
	HAKOI_RDF_STATE = 3,     /* server -> client: the authority's state of an EU */
	HAKOI_RDF_ACK = 4,       /* client -> server: state `seq` is in its domain */
	HAKOI_RDF_CONTEXT = 5,   /* both ways, + the second part: a context PDU */
	HAKOI_RDF_ACTIVATED = 6, /* client -> server: it activated eu at epoch */
} hakoi_rdf_kind_t;

typedef struct hakoi_rdf_msg {
	uint8_t kind;
	uint32_t eu;
	uint32_t seq;
	uint32_t status;
	int32_t epoch; /* -1: none (CONTEXT: keep the PDU's) */
	uint32_t curr;
	uint32_t next;
	uint32_t to;
	uint32_t from_stored;
	int32_t result;                /* REPLY: 0 or a HAKO_E* code */
	int64_t commit;                /* STATE, REPLY: the commit point, -1 none */
	int64_t release;               /* CONTEXT: the release time to write, -1: keep the PDU's */
	char reason[HAKOI_RDF_REASON]; /* REPLY */
} hakoi_rdf_msg_t;

/* A message with every field "none": kind k, epoch, commit and release -1. */
void hakoi_rdf_init(hakoi_rdf_msg_t *m, uint8_t kind);
/* Encode m into buf (HAKOI_RDF_MAX bytes): the body's length. */
size_t hakoi_rdf_encode(const hakoi_rdf_msg_t *m, uint8_t *buf);
/* 0, or HAKO_EPROTO with why. */
int hakoi_rdf_decode(const void *body, size_t len, hakoi_rdf_msg_t *m, char *why, size_t why_len);

#endif
