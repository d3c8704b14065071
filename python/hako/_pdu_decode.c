/* PDU bytes -> dict: the type's fields walked over the validated bytes, building the dicts and
 * lists directly. The heap is packed, so every value is read with memcpy. */
#include "_pdu.h"

#include <stdlib.h>
#include <string.h>

#include "hako/pdu.h"

struct dec {
	const uint8_t *pdu;
	size_t len;
	int bytes_arrays;
};

static PyObject *dec_struct(const struct dec *d, const hako_msg_type_t *t, const uint8_t *at);

static PyObject *dec_scalar(hako_msg_kind_t kind, const uint8_t *p)
{
	switch (kind) {
	case HAKO_MSG_BOOL: {
		int32_t v;
		memcpy(&v, p, sizeof(v));
		return PyBool_FromLong(v != 0); /* any nonzero is true, as C reads it */
	}
	case HAKO_MSG_BYTE:
	case HAKO_MSG_CHAR:
	case HAKO_MSG_UINT8: return PyLong_FromLong(p[0]);
	case HAKO_MSG_INT8: return PyLong_FromLong((int8_t)p[0]);
	case HAKO_MSG_INT16: {
		int16_t v;
		memcpy(&v, p, sizeof(v));
		return PyLong_FromLong(v);
	}
	case HAKO_MSG_UINT16: {
		uint16_t v;
		memcpy(&v, p, sizeof(v));
		return PyLong_FromLong(v);
	}
	case HAKO_MSG_INT32: {
		int32_t v;
		memcpy(&v, p, sizeof(v));
		return PyLong_FromLong(v);
	}
	case HAKO_MSG_UINT32: {
		uint32_t v;
		memcpy(&v, p, sizeof(v));
		return PyLong_FromUnsignedLong(v);
	}
	case HAKO_MSG_INT64: {
		int64_t v;
		memcpy(&v, p, sizeof(v));
		return PyLong_FromLongLong(v);
	}
	case HAKO_MSG_UINT64: {
		uint64_t v;
		memcpy(&v, p, sizeof(v));
		return PyLong_FromUnsignedLongLong(v);
	}
	case HAKO_MSG_FLOAT32: {
		float v;
		memcpy(&v, p, sizeof(v));
		return PyFloat_FromDouble(v);
	}
	case HAKO_MSG_FLOAT64: {
		double v;
		memcpy(&v, p, sizeof(v));
		return PyFloat_FromDouble(v);
	}
	case HAKO_MSG_STRING:
		/* Bytes that are not UTF-8 come back as lone surrogates (as the JSON codec
		 * writes them), so any string round-trips byte for byte. */
		return PyUnicode_DecodeUTF8(
		    (const char *)p, (Py_ssize_t)strnlen((const char *)p, HAKO_MSG_STRING_SIZE),
		    "surrogateescape");
	case HAKO_MSG_STRUCT: break;
	}
	PyErr_SetString(PyExc_SystemError, "hako._pdu: a struct read as a scalar");
	return NULL;
}

static int is_byte_kind(hako_msg_kind_t kind)
{
	return kind == HAKO_MSG_UINT8 || kind == HAKO_MSG_BYTE || kind == HAKO_MSG_CHAR;
}

static PyObject *dec_elements(const struct dec *d, const hako_msg_field_t *f, const uint8_t *first,
                              uint32_t count)
{
	if (d->bytes_arrays && is_byte_kind(f->kind)) {
		return PyBytes_FromStringAndSize((const char *)first, (Py_ssize_t)count);
	}
	PyObject *list = PyList_New((Py_ssize_t)count);
	if (list == NULL) {
		return NULL;
	}
	for (uint32_t i = 0; i < count; i++) {
		const uint8_t *p = first + (size_t)i * f->elem_size;
		PyObject *v =
		    f->kind == HAKO_MSG_STRUCT ? dec_struct(d, f->type, p) : dec_scalar(f->kind, p);
		if (v == NULL) {
			Py_DECREF(list);
			return NULL;
		}
		PyList_SET_ITEM(list, (Py_ssize_t)i, v);
	}
	return list;
}

static PyObject *dec_field(const struct dec *d, const hako_msg_field_t *f, const uint8_t *at)
{
	switch (f->form) {
	case HAKO_MSG_SINGLE:
		return f->kind == HAKO_MSG_STRUCT ? dec_struct(d, f->type, at)
		                                  : dec_scalar(f->kind, at);
	case HAKO_MSG_ARRAY: return dec_elements(d, f, at, f->count);
	case HAKO_MSG_VARRAY: {
		uint32_t count;
		const uint8_t *first = hako_pdu_varray(d->pdu, d->len, at, f->elem_size, &count);
		if (first == NULL) { /* validated before: a bug if it comes to this */
			PyErr_Format(PyExc_SystemError,
			             "hako._pdu: %s: variable array out of bounds", f->name);
			return NULL;
		}
		return dec_elements(d, f, first, count);
	}
	}
	PyErr_SetString(PyExc_SystemError, "hako._pdu: unknown field form");
	return NULL;
}

static PyObject *dec_struct(const struct dec *d, const hako_msg_type_t *t, const uint8_t *at)
{
	PyObject *names = hakopdu_keys(t); /* borrowed */
	if (names == NULL) {
		return NULL;
	}
	PyObject *dict = PyDict_New();
	if (dict == NULL) {
		return NULL;
	}
	for (size_t i = 0; i < t->field_count; i++) {
		const hako_msg_field_t *f = &t->fields[i];
		PyObject *v = dec_field(d, f, at + f->offset);
		if (v == NULL ||
		    PyDict_SetItem(dict, PyTuple_GET_ITEM(names, (Py_ssize_t)i), v) != 0) {
			Py_XDECREF(v);
			Py_DECREF(dict);
			return NULL;
		}
		Py_DECREF(v);
	}
	return dict;
}

PyObject *hakopdu_zero(const hako_msg_type_t *t, int bytes_arrays)
{
	uint32_t size = hako_msg_pdu_fixed_size(t);
	uint8_t *buf = malloc(size);
	if (buf == NULL) {
		return PyErr_NoMemory();
	}
	hako_pdu_writer_t w;
	size_t len = 0;
	PyObject *r = NULL;
	if (hako_pdu_writer_init(&w, t, buf, size) == 0 && hako_pdu_writer_finish(&w, &len) == 0) {
		struct dec d = {buf, len, bytes_arrays};
		r = dec_struct(&d, t, buf + HAKO_PDU_META_SIZE);
	} else {
		PyErr_Format(PyExc_ValueError, "%s: no PDU of this type can be made", t->full_name);
	}
	free(buf);
	return r;
}

PyObject *hakopdu_decode(const hako_msg_type_t *t, const void *pdu, size_t len, int bytes_arrays)
{
	if (hako_pdu_classify(pdu, len) == HAKO_PDU_UNINITIALIZED) {
		return hakopdu_zero(t, bytes_arrays);
	}
	hako_error_t err;
	if (hako_pdu_validate(t, pdu, len, &err) != 0) {
		PyErr_Format(PyExc_ValueError, "not a valid %s PDU: %s", t->full_name, err.message);
		return NULL;
	}
	struct dec d = {pdu, len, bytes_arrays};
	return dec_struct(&d, t, (const uint8_t *)pdu + HAKO_PDU_META_SIZE);
}
