/* The hako._pdu module: the registry's types by name, pdudef files, PDUs of the process-default
 * domain's channels as dicts, and the calls of the compatible C API hakopy lacks (attach
 * without an asset, unregister, the code of the last error) that the hako package needs.
 *
 * One type registry per process ($HAKO_MSG_PATH, then the built-in packages), made on first
 * use and kept: the MsgType objects point into it. Every call holds the GIL throughout, so a
 * channel found in the default domain cannot be closed under it by another Python thread. */
#include "_pdu.h"

#include <stdio.h>
#include <stdlib.h>

#include "hako/hako_asset.h"
#include "hako/pdu.h"
#include "hako/pdudef.h"

static hako_msg_registry_t *registry;
static PyObject *hako_error; /* hako.HakoError */

static hako_msg_registry_t *get_registry(void)
{
	if (registry == NULL) {
		int r = hako_msg_registry_create(&registry);
		if (r != 0) {
			registry = NULL;
			PyErr_Format(PyExc_RuntimeError, "the PDU type registry: %s",
			             hako_strerror(r));
		}
	}
	return registry;
}

/* ---- types ---- */

static PyObject *py_msg_type(PyObject *self, PyObject *args)
{
	(void)self;
	const char *name;
	if (!PyArg_ParseTuple(args, "s:msg_type", &name)) {
		return NULL;
	}
	hako_msg_registry_t *reg = get_registry();
	if (reg == NULL) {
		return NULL;
	}
	const hako_msg_type_t *t;
	hako_error_t err;
	hako_error_clear(&err);
	int r = hako_msg_registry_get(reg, name, &t, &err);
	if (r != 0) {
		char msg[1700];
		hako_error_format(&err, msg, sizeof(msg));
		PyErr_Format(r == HAKO_ENOENT ? PyExc_LookupError : PyExc_ValueError, "%s", msg);
		return NULL;
	}
	return hakopdu_msgtype_of(t);
}

static PyObject *py_add_msg_path(PyObject *self, PyObject *args)
{
	(void)self;
	PyObject *dir;
	if (!PyArg_ParseTuple(args, "O&:add_msg_path", PyUnicode_FSConverter, &dir)) {
		return NULL;
	}
	hako_msg_registry_t *reg = get_registry();
	int r = reg != NULL ? hako_msg_registry_add_path(reg, PyBytes_AS_STRING(dir)) : 0;
	if (reg != NULL && r != 0) {
		PyErr_Format(PyExc_ValueError, "add_msg_path(%s): %s", PyBytes_AS_STRING(dir),
		             hako_strerror(r));
	}
	Py_DECREF(dir);
	if (reg == NULL || r != 0) {
		return NULL;
	}
	Py_RETURN_NONE;
}

static PyObject *py_type_names(PyObject *self, PyObject *args)
{
	(void)self;
	(void)args;
	hako_msg_registry_t *reg = get_registry();
	if (reg == NULL) {
		return NULL;
	}
	char **names = NULL;
	size_t count = 0;
	int r = hako_msg_registry_list(reg, &names, &count);
	if (r != 0) {
		PyErr_Format(PyExc_RuntimeError, "type_names: %s", hako_strerror(r));
		return NULL;
	}
	PyObject *list = PyList_New((Py_ssize_t)count);
	for (size_t i = 0; list != NULL && i < count; i++) {
		PyObject *s = PyUnicode_FromString(names[i]);
		if (s == NULL) {
			Py_CLEAR(list);
			break;
		}
		PyList_SET_ITEM(list, (Py_ssize_t)i, s);
	}
	hako_msg_names_free(names, count);
	return list;
}

/* ---- bytes ---- */

static PyObject *py_decode(PyObject *self, PyObject *args, PyObject *kwargs)
{
	(void)self;
	static char *kwlist[] = {"type", "data", "bytes_arrays", NULL};
	PyObject *tobj;
	Py_buffer data;
	int bytes_arrays = 0;
	if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Oy*|$p:decode", kwlist, &tobj, &data,
	                                 &bytes_arrays)) {
		return NULL;
	}
	const hako_msg_type_t *t = hakopdu_msgtype_get(tobj);
	PyObject *r =
	    t != NULL ? hakopdu_decode(t, data.buf, (size_t)data.len, bytes_arrays) : NULL;
	PyBuffer_Release(&data);
	return r;
}

static PyObject *py_zero(PyObject *self, PyObject *args, PyObject *kwargs)
{
	(void)self;
	static char *kwlist[] = {"type", "bytes_arrays", NULL};
	PyObject *tobj;
	int bytes_arrays = 0;
	if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$p:zero", kwlist, &tobj, &bytes_arrays)) {
		return NULL;
	}
	const hako_msg_type_t *t = hakopdu_msgtype_get(tobj);
	return t != NULL ? hakopdu_zero(t, bytes_arrays) : NULL;
}

static PyObject *too_big(const hako_msg_type_t *t, size_t needed, const char *where)
{
	if (needed == SIZE_MAX) {
		return PyErr_Format(PyExc_ValueError, "this %s PDU would pass %d bytes%s",
		                    t->full_name, INT32_MAX, where);
	}
	return PyErr_Format(PyExc_ValueError, "this %s PDU needs %zu bytes%s", t->full_name, needed,
	                    where);
}

static PyObject *py_encode(PyObject *self, PyObject *args)
{
	(void)self;
	PyObject *tobj, *value;
	if (!PyArg_ParseTuple(args, "OO:encode", &tobj, &value)) {
		return NULL;
	}
	const hako_msg_type_t *t = hakopdu_msgtype_get(tobj);
	if (t == NULL) {
		return NULL;
	}
	/* exact for a fixed type; one more pass, into the bytes object, for larger values */
	size_t cap = hako_msg_pdu_fixed_size(t) + (t->has_varray ? 4096 : 0);
	void *buf = PyMem_Malloc(cap);
	if (buf == NULL) {
		return PyErr_NoMemory();
	}
	size_t len = 0;
	int r = hakopdu_encode(t, value, buf, cap, &len);
	PyObject *out = NULL;
	if (r == 0) {
		out = PyBytes_FromStringAndSize(buf, (Py_ssize_t)len);
	} else if (r == 1 && len == SIZE_MAX) {
		too_big(t, len, "");
	} else if (r == 1) {
		size_t again = 0;
		out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)len);
		if (out != NULL &&
		    (r = hakopdu_encode(t, value, PyBytes_AS_STRING(out), len, &again)) != 0) {
			if (r == 1) { /* a value that grew between the passes */
				PyErr_Format(PyExc_ValueError, "the %s value changed while encoded",
				             t->full_name);
			}
			Py_CLEAR(out);
		}
	}
	PyMem_Free(buf);
	return out;
}

/* ---- channels of the default domain ---- */

/* The channel (robot, channel_id) of the domain this process registered or attached to. */
static int channel_of(const char *who, const char *robot, int channel, hako_channel_t **ch)
{
	hako_domain_t *dom = hako_asset_domain();
	if (dom == NULL) {
		PyErr_Format(
		    hako_error,
		    "%s(%s, %d): not in a domain: register an asset (hako.Asset) or attach "
		    "(hako.attach) first",
		    who, robot, channel);
		return -1;
	}
	int r = hako_channel_lookup(dom, robot, channel, ch);
	if (r != 0) {
		PyErr_Format(hako_error, "%s(%s, %d): %s in domain '%s'", who, robot, channel,
		             r == HAKO_ENOENT ? "no such channel" : hako_strerror(r),
		             hako_domain_name(dom));
		return -1;
	}
	return 0;
}

static PyObject *py_read(PyObject *self, PyObject *args, PyObject *kwargs)
{
	(void)self;
	static char *kwlist[] = {"type", "robot", "channel_id", "bytes_arrays", NULL};
	PyObject *tobj;
	const char *robot;
	int channel;
	int bytes_arrays = 0;
	if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Osi|$p:read", kwlist, &tobj, &robot,
	                                 &channel, &bytes_arrays)) {
		return NULL;
	}
	const hako_msg_type_t *t = hakopdu_msgtype_get(tobj);
	hako_channel_t *ch;
	if (t == NULL || channel_of("read", robot, channel, &ch) != 0) {
		return NULL;
	}
	size_t cap = hako_channel_size(ch);
	void *buf = PyMem_Malloc(cap > 0 ? cap : 1);
	if (buf == NULL) {
		return PyErr_NoMemory();
	}
	size_t len = 0;
	int r = hako_channel_read(ch, buf, cap, &len, NULL);
	PyObject *out = NULL;
	if (r != 0) {
		PyErr_Format(hako_error, "read(%s, %d): %s", robot, channel, hako_strerror(r));
	} else if (len == 0) {
		out = hakopdu_zero(t, bytes_arrays); /* never written */
	} else {
		out = hakopdu_decode(t, buf, len, bytes_arrays);
	}
	PyMem_Free(buf);
	return out;
}

static PyObject *py_write(PyObject *self, PyObject *args)
{
	(void)self;
	PyObject *tobj, *value;
	const char *robot;
	int channel;
	if (!PyArg_ParseTuple(args, "OsiO:write", &tobj, &robot, &channel, &value)) {
		return NULL;
	}
	const hako_msg_type_t *t = hakopdu_msgtype_get(tobj);
	hako_channel_t *ch;
	if (t == NULL || channel_of("write", robot, channel, &ch) != 0) {
		return NULL;
	}
	size_t cap = hako_channel_size(ch);
	void *buf = PyMem_Malloc(cap > 0 ? cap : 1);
	if (buf == NULL) {
		return PyErr_NoMemory();
	}
	size_t len = 0;
	int r = hakopdu_encode(t, value, buf, cap, &len);
	if (r == 1) {
		char where[200];
		snprintf(where, sizeof(where), "; channel (%s, %d) has %zu", robot, channel, cap);
		too_big(t, len, where);
	}
	/* Encoding ran Python code (__index__, __float__): find the channel again, in case
	 * it unregistered the asset. */
	if (r == 0 && channel_of("write", robot, channel, &ch) == 0) {
		int w = hako_channel_write(ch, buf, len);
		if (w != 0) {
			PyErr_Format(hako_error, "write(%s, %d): %s", robot, channel,
			             hako_strerror(w));
		}
	}
	PyMem_Free(buf);
	if (PyErr_Occurred()) {
		return NULL;
	}
	return PyLong_FromSize_t(len);
}

/* ---- pdudef ---- */

static PyObject *py_load_pdudef(PyObject *self, PyObject *args)
{
	(void)self;
	PyObject *path;
	if (!PyArg_ParseTuple(args, "O&:load_pdudef", PyUnicode_FSConverter, &path)) {
		return NULL;
	}
	hako_pdudef_t *def = NULL;
	hako_error_t err;
	hako_error_clear(&err);
	int r = hako_pdudef_load(PyBytes_AS_STRING(path), &def, &err);
	Py_DECREF(path);
	if (r != 0) {
		char msg[1700];
		hako_error_format(&err, msg, sizeof(msg));
		PyErr_Format(r == HAKO_ENOENT ? PyExc_FileNotFoundError
		             : r == HAKO_EIO  ? PyExc_OSError
		                              : PyExc_ValueError,
		             "%s", msg);
		return NULL;
	}
	PyObject *list = PyList_New(0);
	for (size_t i = 0; list != NULL && i < def->robot_count; i++) {
		const hako_pdudef_robot_t *rb = &def->robots[i];
		for (size_t j = 0; j < rb->pdu_count; j++) {
			const hako_pdudef_pdu_t *p = &rb->pdus[j];
			PyObject *item = Py_BuildValue("(sssiI)", rb->name, p->name, p->type,
			                               (int)p->channel_id, (unsigned)p->pdu_size);
			if (item == NULL || PyList_Append(list, item) != 0) {
				Py_XDECREF(item);
				Py_CLEAR(list);
				break;
			}
			Py_DECREF(item);
		}
	}
	hako_pdudef_free(def);
	return list;
}

/* ---- the compatible API's calls hakopy lacks ---- */

static PyObject *py_attach(PyObject *self, PyObject *args)
{
	(void)self;
	(void)args;
	if (hako_asset_attach_core() != 0) {
		const char *msg = NULL;
		hako_asset_last_error(&msg);
		PyErr_SetString(hako_error, msg != NULL ? msg : "attach failed");
		return NULL;
	}
	Py_RETURN_NONE;
}

static PyObject *py_unregister(PyObject *self, PyObject *args)
{
	(void)self;
	(void)args;
	hako_asset_unregister();
	Py_RETURN_NONE;
}

static PyObject *py_attached(PyObject *self, PyObject *args)
{
	(void)self;
	(void)args;
	return PyBool_FromLong(hako_asset_domain() != NULL);
}

static PyObject *py_registered(PyObject *self, PyObject *args)
{
	(void)self;
	(void)args;
	return PyBool_FromLong(hako_asset_member() != NULL);
}

static PyObject *py_last_error_code(PyObject *self, PyObject *args)
{
	(void)self;
	(void)args;
	return PyLong_FromLong(hako_asset_last_error(NULL));
}

static PyMethodDef methods[] = {
    {"msg_type", py_msg_type, METH_VARARGS,
     "msg_type(name) -> MsgType: the type \"pkg/Type\" from $HAKO_MSG_PATH or the built-in "
     "packages (LookupError if none has it, ValueError for a malformed .msg)."},
    {"add_msg_path", py_add_msg_path, METH_VARARGS,
     "add_msg_path(dir) -> None: search dir first for types not loaded yet."},
    {"type_names", py_type_names, METH_NOARGS,
     "type_names() -> list[str]: every type the search path and the built-ins provide."},
    {"decode", (PyCFunction)(void (*)(void))py_decode, METH_VARARGS | METH_KEYWORDS,
     "decode(type, data, *, bytes_arrays=False) -> dict: a PDU's bytes as a dict."},
    {"encode", py_encode, METH_VARARGS, "encode(type, value) -> bytes: a dict as PDU bytes."},
    {"zero", (PyCFunction)(void (*)(void))py_zero, METH_VARARGS | METH_KEYWORDS,
     "zero(type, *, bytes_arrays=False) -> dict: the type's zero value."},
    {"read", (PyCFunction)(void (*)(void))py_read, METH_VARARGS | METH_KEYWORDS,
     "read(type, robot, channel_id, *, bytes_arrays=False) -> dict: the channel's latest PDU."},
    {"write", py_write, METH_VARARGS,
     "write(type, robot, channel_id, value) -> int: encode value and write it to the channel; "
     "the PDU's size."},
    {"load_pdudef", py_load_pdudef, METH_VARARGS,
     "load_pdudef(path) -> list[(robot, name, type, channel_id, pdu_size)]"},
    {"attach", py_attach, METH_NOARGS,
     "attach() -> None: join the domain HAKO_DOMAIN without an asset (a no-op when in it)."},
    {"unregister", py_unregister, METH_NOARGS,
     "unregister() -> None: the asset leaves the domain and the process detaches."},
    {"attached", py_attached, METH_NOARGS, "attached() -> bool: the process is in a domain."},
    {"registered", py_registered, METH_NOARGS,
     "registered() -> bool: the process has a registered asset."},
    {"last_error_code", py_last_error_code, METH_NOARGS,
     "last_error_code() -> int: the HAKO_E* code of this thread's last failed compat call."},
    {NULL, NULL, 0, NULL},
};

/* Single-phase: one registry and one default domain per process, as under hakopy. */
static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    "hako._pdu",
    "PDUs as dicts through hako's type registry (the C half of hako.pdu).",
    -1,
    methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__pdu(void)
{
	PyObject *m = PyModule_Create(&module);
	if (m == NULL) {
		return NULL;
	}
	if (hako_error == NULL) {
		hako_error = PyErr_NewExceptionWithDoc(
		    "hako.HakoError",
		    "A call of hako failed; the message is the reason the C API gave "
		    "(hakopy.last_error()).",
		    PyExc_RuntimeError, NULL);
	}
	if (hako_error == NULL || PyModule_AddObjectRef(m, "HakoError", hako_error) != 0 ||
	    PyModule_AddIntConstant(m, "HAKO_EINTR", HAKO_EINTR) != 0 ||
	    hakopdu_types_init(m) != 0) {
		Py_DECREF(m);
		return NULL;
	}
	return m;
}
