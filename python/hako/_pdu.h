/* hako._pdu: PDUs as Python dicts through the registry's types, without JSON in between, and
 * the few calls of the compatible C API that hakopy does not have. What the module's files
 * share; private to the module.
 *
 * Files: _pdu.c (the module: the type registry, pdudef loading, channel read and write, the
 * asset calls), _pdu_types.c (the MsgType and Field objects and the cached dict keys),
 * _pdu_decode.c (PDU bytes -> dict), _pdu_encode.c (dict -> PDU bytes).
 */
#ifndef HAKO_PYPDU_H
#define HAKO_PYPDU_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stddef.h>

#include "hako/msg.h"

/* ---- _pdu_types.c ---- */

/* Make the MsgType and Field classes; 0, or -1 with an exception. */
int hakopdu_types_init(PyObject *module);
/* The MsgType object of a loaded type (one per type: the same object every time). New
 * reference, NULL with an exception. */
PyObject *hakopdu_msgtype_of(const hako_msg_type_t *t);
/* The type a MsgType object stands for; NULL (TypeError set) if obj is none. */
const hako_msg_type_t *hakopdu_msgtype_get(PyObject *obj);
/* The field names of t as interned strings, in .msg order: a borrowed tuple kept for the life
 * of the process (the registry never unloads a type). NULL with an exception. */
PyObject *hakopdu_keys(const hako_msg_type_t *t);

/* ---- _pdu_decode.c ---- */

/* A dict of the PDU of type t in pdu[0..len): validated first (ValueError naming the field
 * path). A PDU whose meta header is all zeros (a channel never written, or zeroed by a reset)
 * gives the type's zero value. bytes_arrays: uint8[], byte[] and char[] as bytes, not lists. */
PyObject *hakopdu_decode(const hako_msg_type_t *t, const void *pdu, size_t len, int bytes_arrays);
/* The zero value of t: every number 0, bool False, string "", variable arrays empty. */
PyObject *hakopdu_zero(const hako_msg_type_t *t, int bytes_arrays);

/* ---- _pdu_encode.c ---- */

/* Encode `value` (a dict) as a PDU of type t into buf[0..cap). 0 with *len its size; 1 when cap
 * is too small, *len then the size needed (SIZE_MAX past INT32_MAX bytes), the whole value
 * checked all the same; -1 with TypeError / ValueError naming the field path ("points[1].x:
 * ..."). buf NULL and cap 0 ask for the size. The epoch byte is 0. */
int hakopdu_encode(const hako_msg_type_t *t, PyObject *value, void *buf, size_t cap, size_t *len);

#endif
