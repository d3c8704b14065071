/* dict -> PDU bytes: the type's fields walked over the dict, written with the registry's PDU
 * writer in Hakoniwa's heap order (a variable array of structs first, then each element's own
 * arrays, element by element) - the bytes hako_pdu_from_json makes of the same value.
 *
 * Once the buffer is too small the walk goes on without writing (dst NULL): the writer keeps
 * counting the size needed and every value is still checked, so one pass both validates and
 * sizes. */
#include "_pdu.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "hako/pdu.h"

/* One step of the path to the value being encoded, on the C stack: formatted only for an
 * error. */
typedef struct frame {
	const struct frame *up;
	const char *name; /* a field, or NULL for an element */
	Py_ssize_t index;
} frame_t;

static size_t path_put(const frame_t *f, char *buf, size_t cap)
{
	if (f == NULL) {
		return 0;
	}
	size_t used = path_put(f->up, buf, cap);
	if (used >= cap) {
		return used;
	}
	int n = f->name != NULL
	            ? snprintf(buf + used, cap - used, "%s%s", used > 0 ? "." : "", f->name)
	            : snprintf(buf + used, cap - used, "[%zd]", f->index);
	return n < 0 ? used : used + (size_t)n;
}

/* Raise exc with "<path>: <what>"; returns -1. */
static int fail(PyObject *exc, const frame_t *fr, const char *fmt, ...)
{
	char path[1024] = "";
	path_put(fr, path, sizeof(path));
	va_list ap;
	va_start(ap, fmt);
	PyObject *what = PyUnicode_FromFormatV(fmt, ap);
	va_end(ap);
	if (what != NULL && path[0] != '\0') {
		PyErr_Format(exc, "%s: %U", path, what);
	} else if (what != NULL) {
		PyErr_SetObject(exc, what);
	}
	Py_XDECREF(what);
	return -1;
}

static int is_byte_kind(hako_msg_kind_t kind)
{
	return kind == HAKO_MSG_UINT8 || kind == HAKO_MSG_BYTE || kind == HAKO_MSG_CHAR;
}

/* ---- scalars ---- */

/* The range of an integer kind: 1 and [smin, smax] if signed, 0 and [0, umax] if not. */
static int int_limits(hako_msg_kind_t kind, long long *smin, long long *smax,
                      unsigned long long *umax)
{
	*smin = 0;
	*smax = 0;
	*umax = 0;
	switch (kind) {
	case HAKO_MSG_INT8: *smin = INT8_MIN, *smax = INT8_MAX; return 1;
	case HAKO_MSG_INT16: *smin = INT16_MIN, *smax = INT16_MAX; return 1;
	case HAKO_MSG_INT32: *smin = INT32_MIN, *smax = INT32_MAX; return 1;
	case HAKO_MSG_INT64: *smin = INT64_MIN, *smax = INT64_MAX; return 1;
	case HAKO_MSG_UINT16: *umax = UINT16_MAX; return 0;
	case HAKO_MSG_UINT32: *umax = UINT32_MAX; return 0;
	case HAKO_MSG_UINT64: *umax = UINT64_MAX; return 0;
	default: *umax = UINT8_MAX; return 0; /* uint8, byte, char */
	}
}

static void store_int(hako_msg_kind_t kind, uint8_t *dst, unsigned long long bits)
{
	uint8_t b8 = (uint8_t)bits;
	uint16_t b16 = (uint16_t)bits;
	uint32_t b32 = (uint32_t)bits;
	uint64_t b64 = (uint64_t)bits;
	switch (kind) {
	case HAKO_MSG_INT16:
	case HAKO_MSG_UINT16: memcpy(dst, &b16, sizeof(b16)); break;
	case HAKO_MSG_INT32:
	case HAKO_MSG_UINT32: memcpy(dst, &b32, sizeof(b32)); break;
	case HAKO_MSG_INT64:
	case HAKO_MSG_UINT64: memcpy(dst, &b64, sizeof(b64)); break;
	default: memcpy(dst, &b8, sizeof(b8)); break;
	}
}

static int enc_int(hako_msg_kind_t kind, uint8_t *dst, PyObject *v, const frame_t *fr)
{
	const char *kname = hako_msg_kind_name(kind);
	/* bool is an int to Python, a float converts silently: both are mistakes in a PDU */
	if (PyBool_Check(v) || PyFloat_Check(v) || !PyIndex_Check(v)) {
		return fail(PyExc_TypeError, fr, "must be an int (%s), not %s", kname,
		            Py_TYPE(v)->tp_name);
	}
	PyObject *n = PyNumber_Index(v);
	if (n == NULL) {
		return -1;
	}
	long long smin, smax;
	unsigned long long umax, bits = 0;
	int is_signed = int_limits(kind, &smin, &smax, &umax);
	int overflow = 0;
	long long s = PyLong_AsLongLongAndOverflow(n, &overflow);
	int ok;
	if (s == -1 && PyErr_Occurred()) {
		Py_DECREF(n);
		return -1;
	}
	if (is_signed) {
		ok = overflow == 0 && s >= smin && s <= smax;
		bits = (unsigned long long)s;
	} else if (overflow > 0 && kind == HAKO_MSG_UINT64) {
		bits = PyLong_AsUnsignedLongLong(n); /* above INT64_MAX */
		ok = !(bits == (unsigned long long)-1 && PyErr_Occurred());
		PyErr_Clear();
	} else {
		ok = overflow == 0 && s >= 0 && (unsigned long long)s <= umax;
		bits = (unsigned long long)s;
	}
	if (!ok) {
		fail(PyExc_ValueError, fr, "%R is out of range for %s", n, kname);
		Py_DECREF(n);
		return -1;
	}
	Py_DECREF(n);
	if (dst != NULL) {
		store_int(kind, dst, bits);
	}
	return 0;
}

static int enc_float(hako_msg_kind_t kind, uint8_t *dst, PyObject *v, const frame_t *fr)
{
	const char *kname = hako_msg_kind_name(kind);
	double d;
	if (PyFloat_Check(v)) {
		d = PyFloat_AS_DOUBLE(v);
	} else if (PyBool_Check(v) || PyUnicode_Check(v) || PyBytes_Check(v) ||
	           PyByteArray_Check(v)) {
		return fail(PyExc_TypeError, fr, "must be a number (%s), not %s", kname,
		            Py_TYPE(v)->tp_name);
	} else if (PyLong_Check(v)) {
		d = PyLong_AsDouble(v);
		if (d == -1.0 && PyErr_Occurred()) {
			if (!PyErr_ExceptionMatches(PyExc_OverflowError)) {
				return -1;
			}
			PyErr_Clear();
			return fail(PyExc_ValueError, fr, "%R is out of range for %s", v, kname);
		}
	} else {
		d = PyFloat_AsDouble(v); /* __float__ or __index__: numpy's numbers, Decimal */
		if (d == -1.0 && PyErr_Occurred()) {
			if (!PyErr_ExceptionMatches(PyExc_TypeError)) {
				return -1;
			}
			PyErr_Clear();
			return fail(PyExc_TypeError, fr, "must be a number (%s), not %s", kname,
			            Py_TYPE(v)->tp_name);
		}
	}
	if (kind == HAKO_MSG_FLOAT32) {
		/* IEEE conversion (Annex F): too large a finite value becomes inf */
		float f = (float)d;
		if (isfinite(d) && isinf(f)) {
			return fail(PyExc_ValueError, fr, "%R is out of range for float32", v);
		}
		if (dst != NULL) {
			memcpy(dst, &f, sizeof(f));
		}
	} else if (dst != NULL) {
		memcpy(dst, &d, sizeof(d));
	}
	return 0;
}

static int enc_string(uint8_t *dst, PyObject *v, const frame_t *fr)
{
	if (!PyUnicode_Check(v)) {
		return fail(PyExc_TypeError, fr, "must be a str, not %s", Py_TYPE(v)->tp_name);
	}
	PyObject *tmp = NULL;
	Py_ssize_t n;
	const char *s = PyUnicode_AsUTF8AndSize(v, &n);
	if (s == NULL) {
		/* lone surrogates: bytes that were not UTF-8 when read, written back as they were
		 */
		if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) {
			return -1;
		}
		PyErr_Clear();
		tmp = PyUnicode_AsEncodedString(v, "utf-8", "surrogateescape");
		if (tmp == NULL) {
			PyErr_Clear();
			return fail(PyExc_ValueError, fr, "cannot be written as UTF-8");
		}
		s = PyBytes_AS_STRING(tmp);
		n = PyBytes_GET_SIZE(tmp);
	}
	int r = 0;
	if (n >= HAKO_MSG_STRING_SIZE) {
		r = fail(PyExc_ValueError, fr, "is %zd bytes long in UTF-8; the limit is %d", n,
		         HAKO_MSG_STRING_SIZE - 1);
	} else if (memchr(s, '\0', (size_t)n) != NULL) {
		r = fail(PyExc_ValueError, fr, "contains a NUL character");
	} else if (dst != NULL) {
		memcpy(dst, s, (size_t)n); /* the rest of the slot is zero already */
	}
	Py_XDECREF(tmp);
	return r;
}

static int enc_scalar(hako_msg_kind_t kind, uint8_t *dst, PyObject *v, const frame_t *fr)
{
	switch (kind) {
	case HAKO_MSG_BOOL:
		if (!PyBool_Check(v)) {
			return fail(PyExc_TypeError, fr, "must be a bool, not %s",
			            Py_TYPE(v)->tp_name);
		}
		if (dst != NULL) {
			int32_t b = v == Py_True;
			memcpy(dst, &b, sizeof(b));
		}
		return 0;
	case HAKO_MSG_FLOAT32:
	case HAKO_MSG_FLOAT64: return enc_float(kind, dst, v, fr);
	case HAKO_MSG_STRING: return enc_string(dst, v, fr);
	case HAKO_MSG_STRUCT:
		PyErr_SetString(PyExc_SystemError, "hako._pdu: a struct written as a scalar");
		return -1;
	default: return enc_int(kind, dst, v, fr);
	}
}

/* ---- arrays and structs ---- */

struct enc {
	hako_pdu_writer_t w;
};

static int enc_struct(struct enc *e, const hako_msg_type_t *t, uint8_t *at, PyObject *value,
                      const frame_t *fr);

/* uint8[] / byte[] / char[] given as bytes, bytearray or memoryview. */
static int enc_bytes(struct enc *e, const hako_msg_field_t *f, uint8_t *at, PyObject *v,
                     const frame_t *fr)
{
	Py_buffer b;
	if (PyObject_GetBuffer(v, &b, PyBUF_SIMPLE) != 0) {
		return -1;
	}
	int r = 0;
	if (f->form == HAKO_MSG_ARRAY) {
		if (b.len != (Py_ssize_t)f->count) {
			r = fail(PyExc_ValueError, fr, "must have %u elements, not %zd", f->count,
			         b.len);
		} else if (at != NULL) {
			memcpy(at, b.buf, (size_t)b.len);
		}
	} else if (b.len > INT32_MAX) {
		r = fail(PyExc_ValueError, fr, "has %zd elements; the limit is %d", b.len,
		         INT32_MAX);
	} else {
		uint8_t *p = hako_pdu_writer_varray(&e->w, at, (uint32_t)b.len, 1);
		if (p != NULL && b.len > 0) {
			memcpy(p, b.buf, (size_t)b.len);
		}
	}
	PyBuffer_Release(&b);
	return r;
}

static int enc_array(struct enc *e, const hako_msg_field_t *f, uint8_t *at, PyObject *v,
                     const frame_t *fr)
{
	if (is_byte_kind(f->kind) &&
	    (PyBytes_Check(v) || PyByteArray_Check(v) || PyMemoryView_Check(v))) {
		return enc_bytes(e, f, at, v, fr);
	}
	int is_list = PyList_Check(v);
	if (!is_list && !PyTuple_Check(v)) {
		return fail(PyExc_TypeError, fr, "must be a list%s, not %s",
		            is_byte_kind(f->kind) ? " or bytes" : "", Py_TYPE(v)->tp_name);
	}
	Py_ssize_t n = is_list ? PyList_GET_SIZE(v) : PyTuple_GET_SIZE(v);
	uint8_t *first = at;
	if (f->form == HAKO_MSG_ARRAY) {
		if (n != (Py_ssize_t)f->count) {
			return fail(PyExc_ValueError, fr, "must have %u elements, not %zd",
			            f->count, n);
		}
	} else if (n > INT32_MAX) {
		return fail(PyExc_ValueError, fr, "has %zd elements; the limit is %d", n,
		            INT32_MAX);
	} else {
		/* NULL once the buffer is full (or was already): go on checking */
		first = hako_pdu_writer_varray(&e->w, at, (uint32_t)n, f->elem_size);
	}
	for (Py_ssize_t i = 0; i < n; i++) {
		frame_t el = {fr, NULL, i};
		/* an element's __index__ or __float__ may change the list: never read past it */
		if (is_list && i >= PyList_GET_SIZE(v)) {
			return fail(PyExc_ValueError, &el, "the list changed size while encoded");
		}
		PyObject *item = is_list ? PyList_GET_ITEM(v, i) : PyTuple_GET_ITEM(v, i);
		uint8_t *p = first != NULL ? first + (size_t)i * f->elem_size : NULL;
		Py_INCREF(item);
		int r = f->kind == HAKO_MSG_STRUCT ? enc_struct(e, f->type, p, item, &el)
		                                   : enc_scalar(f->kind, p, item, &el);
		Py_DECREF(item);
		if (r != 0) {
			return -1;
		}
	}
	return 0;
}

static int enc_field(struct enc *e, const hako_msg_field_t *f, uint8_t *at, PyObject *v,
                     const frame_t *fr)
{
	if (f->form != HAKO_MSG_SINGLE) {
		return enc_array(e, f, at, v, fr);
	}
	return f->kind == HAKO_MSG_STRUCT ? enc_struct(e, f->type, at, v, fr)
	                                  : enc_scalar(f->kind, at, v, fr);
}

/* The dict has a key that is no field of t: raise for the first such key. 0 if none (the dict
 * changed while encoded). */
static int unknown_field(const hako_msg_type_t *t, PyObject *names, PyObject *value,
                         const frame_t *fr)
{
	Py_ssize_t pos = 0;
	PyObject *k, *v;
	while (PyDict_Next(value, &pos, &k, &v)) {
		if (!PyUnicode_Check(k)) {
			return fail(PyExc_TypeError, fr, "field names are str, not %s (%R)",
			            Py_TYPE(k)->tp_name, k);
		}
		int known = PySequence_Contains(names, k);
		if (known < 0) {
			return -1;
		}
		if (!known) {
			const char *name = PyUnicode_AsUTF8(k);
			if (name == NULL) {
				PyErr_Clear();
				name = "?";
			}
			frame_t kf = {fr, name, 0};
			return fail(PyExc_ValueError, &kf, "unknown field (%s has no such field)",
			            t->full_name);
		}
	}
	return 0;
}

static int enc_struct(struct enc *e, const hako_msg_type_t *t, uint8_t *at, PyObject *value,
                      const frame_t *fr)
{
	if (!PyDict_Check(value)) {
		return fail(PyExc_TypeError, fr, "must be a dict (%s), not %s", t->full_name,
		            Py_TYPE(value)->tp_name);
	}
	PyObject *names = hakopdu_keys(t); /* borrowed */
	if (names == NULL) {
		return -1;
	}
	Py_ssize_t found = 0;
	for (size_t i = 0; i < t->field_count; i++) {
		const hako_msg_field_t *f = &t->fields[i];
		PyObject *v =
		    PyDict_GetItemWithError(value, PyTuple_GET_ITEM(names, (Py_ssize_t)i));
		if (v == NULL) {
			if (PyErr_Occurred()) {
				return -1;
			}
			continue; /* missing: zero, as the writer left it */
		}
		found++;
		frame_t ff = {fr, f->name, 0};
		Py_INCREF(v);
		int r = enc_field(e, f, at != NULL ? at + f->offset : NULL, v, &ff);
		Py_DECREF(v);
		if (r != 0) {
			return -1;
		}
	}
	if (found != PyDict_GET_SIZE(value)) {
		return unknown_field(t, names, value, fr);
	}
	return 0;
}

int hakopdu_encode(const hako_msg_type_t *t, PyObject *value, void *buf, size_t cap, size_t *len)
{
	*len = 0;
	if (!PyDict_Check(value)) {
		PyErr_Format(PyExc_TypeError, "a %s PDU is given as a dict, not %s", t->full_name,
		             Py_TYPE(value)->tp_name);
		return -1;
	}
	struct enc e;
	hako_pdu_writer_init(&e.w, t, buf, cap);
	uint8_t *base = e.w.error == 0 ? (uint8_t *)buf + HAKO_PDU_META_SIZE : NULL;
	if (enc_struct(&e, t, base, value, NULL) != 0) {
		return -1;
	}
	int r = hako_pdu_writer_finish(&e.w, len);
	if (r == 0) {
		return 0;
	}
	if (r == HAKO_ETOOBIG) {
		return 1;
	}
	PyErr_Format(PyExc_SystemError, "hako._pdu: the PDU writer failed (%s)", hako_strerror(r));
	return -1;
}
