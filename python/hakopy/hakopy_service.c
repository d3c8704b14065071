/* hakopy's service calls (Hakoniwa's asset_service_*): the server by its service id, a client
 * by its handle, the dict {"service_id": int, "client_id": int} asset_service_client_create
 * returns. Packets are bytearrays. Where Hakoniwa's binding returns None or False, so do these,
 * and hakopy.last_error() says why. */
#include "hakopy.h"

#include "hako/hako_asset.h"
#include "hako/hako_asset_service.h"

/* A name argument that may be None (an attached process serves or calls without an asset). */
static int optional_name(PyObject *o, const char *what, const char **out)
{
	*out = NULL;
	if (o == Py_None) {
		return 0;
	}
	if (!PyUnicode_Check(o)) {
		PyErr_Format(PyExc_TypeError, "%s must be a string or None, not %s", what,
		             Py_TYPE(o)->tp_name);
		return -1;
	}
	*out = PyUnicode_AsUTF8(o);
	return *out != NULL ? 0 : -1;
}

static int handle_int(PyObject *dict, const char *key, int *out)
{
	PyObject *v = PyDict_GetItemString(dict, key); /* borrowed */
	if (v == NULL) {
		PyErr_Format(PyExc_KeyError, "Missing '%s' in handle dict", key);
		return -1;
	}
	if (!PyLong_Check(v)) {
		PyErr_Format(PyExc_TypeError, "handle['%s'] must be an int, not %s", key,
		             Py_TYPE(v)->tp_name);
		return -1;
	}
	long x = PyLong_AsLong(v);
	if (x == -1 && PyErr_Occurred()) {
		return -1;
	}
	if (x < INT32_MIN || x > INT32_MAX) {
		PyErr_Format(PyExc_OverflowError, "handle['%s'] = %ld is out of range", key, x);
		return -1;
	}
	*out = (int)x;
	return 0;
}

static int handle_of(PyObject *dict, HakoServiceHandleType *h)
{
	if (handle_int(dict, "service_id", &h->service_id) != 0 ||
	    handle_int(dict, "client_id", &h->client_id) != 0) {
		return -1;
	}
	return 0;
}

/* A bytearray of the packet the C API returned, or None (and the reason kept) when it failed. */
static PyObject *packet_or_none(int r, const char *packet, size_t len)
{
	if (r != 0 || packet == NULL) {
		hakopy_note_failure();
		Py_RETURN_NONE;
	}
	return PyByteArray_FromStringAndSize(packet, (Py_ssize_t)len);
}

static PyObject *py_service_initialize(PyObject *self, PyObject *args)
{
	(void)self;
	const char *path;
	if (!PyArg_ParseTuple(args, "s:service_initialize", &path)) {
		return NULL;
	}
	int r = hako_asset_service_initialize(path);
	return hakopy_result(r);
}

/* ---- Server ---- */

static PyObject *py_server_create(PyObject *self, PyObject *args)
{
	(void)self;
	PyObject *asset_obj;
	const char *asset, *service;
	if (!PyArg_ParseTuple(args, "Os:asset_service_create", &asset_obj, &service) ||
	    optional_name(asset_obj, "asset_name", &asset) != 0) {
		return NULL;
	}
	int id = hako_asset_service_server_create(asset, service);
	if (id < 0) {
		hakopy_note_failure();
		Py_RETURN_NONE;
	}
	return PyLong_FromLong(id);
}

static PyObject *py_server_poll(PyObject *self, PyObject *args)
{
	(void)self;
	int id;
	if (!PyArg_ParseTuple(args, "i:asset_service_server_poll", &id)) {
		return NULL;
	}
	int r = hako_asset_service_server_poll(id);
	if (r < 0) {
		hakopy_note_failure();
	}
	return PyLong_FromLong(r);
}

static PyObject *py_server_current_client_id(PyObject *self, PyObject *args)
{
	(void)self;
	int id;
	if (!PyArg_ParseTuple(args, "i:asset_service_server_get_current_client_id", &id)) {
		return NULL;
	}
	int r = hako_asset_service_server_get_current_client_id(id);
	if (r < 0) {
		hakopy_note_failure();
	}
	return PyLong_FromLong(r);
}

static PyObject *py_server_current_channel_id(PyObject *self, PyObject *args)
{
	(void)self;
	int id, req = 0, res = 0;
	if (!PyArg_ParseTuple(args, "i:asset_service_server_get_current_channel_id", &id)) {
		return NULL;
	}
	if (hako_asset_service_server_get_current_channel_id(id, &req, &res) != 0) {
		return hakopy_raise_failure("asset_service_server_get_current_channel_id");
	}
	return Py_BuildValue("(ii)", req, res);
}

static PyObject *py_server_status(PyObject *self, PyObject *args)
{
	(void)self;
	int id, status = 0;
	if (!PyArg_ParseTuple(args, "i:asset_service_server_status", &id)) {
		return NULL;
	}
	if (hako_asset_service_server_status(id, &status) != 0) {
		return hakopy_raise_failure("asset_service_server_status");
	}
	return PyLong_FromLong(status);
}

static PyObject *py_server_get_request(PyObject *self, PyObject *args)
{
	(void)self;
	int id;
	char *packet = NULL;
	size_t len = 0;
	if (!PyArg_ParseTuple(args, "i:asset_service_server_get_request", &id)) {
		return NULL;
	}
	if (hako_asset_service_server_get_request(id, &packet, &len) != 0 || packet == NULL) {
		return hakopy_raise_failure("asset_service_server_get_request");
	}
	return PyByteArray_FromStringAndSize(packet, (Py_ssize_t)len);
}

static PyObject *py_server_get_response_buffer(PyObject *self, PyObject *args)
{
	(void)self;
	int id, status, result_code;
	char *packet = NULL;
	size_t len = 0;
	if (!PyArg_ParseTuple(args, "iii:asset_service_server_get_response_buffer", &id, &status,
	                      &result_code)) {
		return NULL;
	}
	int r =
	    hako_asset_service_server_get_response_buffer(id, &packet, &len, status, result_code);
	return packet_or_none(r, packet, len);
}

static PyObject *py_server_put_response(PyObject *self, PyObject *args)
{
	(void)self;
	int id;
	Py_buffer packet;
	if (!PyArg_ParseTuple(args, "iy*:asset_service_server_put_response", &id, &packet)) {
		return NULL;
	}
	int r = hako_asset_service_server_put_response(id, packet.buf, (size_t)packet.len);
	PyBuffer_Release(&packet);
	return hakopy_result(r);
}

static PyObject *py_server_is_canceled(PyObject *self, PyObject *args)
{
	(void)self;
	int id;
	if (!PyArg_ParseTuple(args, "i:asset_service_server_is_canceled", &id)) {
		return NULL;
	}
	int r = hako_asset_service_server_is_canceled(id);
	if (r < 0) {
		hakopy_note_failure();
	}
	return hakopy_bool(r == 1);
}

static PyObject *py_server_set_progress(PyObject *self, PyObject *args)
{
	(void)self;
	int id, percentage;
	if (!PyArg_ParseTuple(args, "ii:asset_service_server_set_progress", &id, &percentage)) {
		return NULL;
	}
	int r = hako_asset_service_server_set_progress(id, percentage);
	return hakopy_result(r);
}

/* ---- Client ---- */

static PyObject *py_client_create(PyObject *self, PyObject *args)
{
	(void)self;
	PyObject *asset_obj;
	const char *asset, *service, *client;
	if (!PyArg_ParseTuple(args, "Oss:asset_service_client_create", &asset_obj, &service,
	                      &client) ||
	    optional_name(asset_obj, "asset_name", &asset) != 0) {
		return NULL;
	}
	HakoServiceHandleType h;
	if (hako_asset_service_client_create(asset, service, client, &h) != 0) {
		hakopy_note_failure();
		Py_RETURN_NONE;
	}
	return Py_BuildValue("{s:i,s:i}", "service_id", h.service_id, "client_id", h.client_id);
}

static PyObject *py_client_poll(PyObject *self, PyObject *args)
{
	(void)self;
	PyObject *dict;
	HakoServiceHandleType h;
	if (!PyArg_ParseTuple(args, "O!:asset_service_client_poll", &PyDict_Type, &dict) ||
	    handle_of(dict, &h) != 0) {
		return NULL;
	}
	int r = hako_asset_service_client_poll(&h);
	if (r < 0) {
		hakopy_note_failure();
	}
	return PyLong_FromLong(r);
}

static PyObject *py_client_get_channel_id(PyObject *self, PyObject *args)
{
	(void)self;
	PyObject *dict;
	HakoServiceHandleType h;
	if (!PyArg_ParseTuple(args, "O!:asset_service_client_get_channel_id", &PyDict_Type,
	                      &dict) ||
	    handle_of(dict, &h) != 0) {
		return NULL;
	}
	int req = 0, res = 0;
	if (hako_asset_service_client_get_channel_id_by_handle(&h, &req, &res) != 0) {
		hakopy_note_failure();
		Py_RETURN_NONE;
	}
	return Py_BuildValue("(ii)", req, res);
}

static PyObject *py_client_get_request_buffer(PyObject *self, PyObject *args)
{
	(void)self;
	int opcode, poll_msec;
	PyObject *dict;
	HakoServiceHandleType h;
	if (!PyArg_ParseTuple(args, "O!ii:asset_service_client_get_request_buffer", &PyDict_Type,
	                      &dict, &opcode, &poll_msec) ||
	    handle_of(dict, &h) != 0) {
		return NULL;
	}
	char *packet = NULL;
	size_t len = 0;
	int r = hako_asset_service_client_get_request_buffer(&h, &packet, &len, opcode, poll_msec);
	return packet_or_none(r, packet, len);
}

static PyObject *py_client_call_request(PyObject *self, PyObject *args)
{
	(void)self;
	Py_buffer packet;
	int timeout_msec;
	PyObject *dict;
	HakoServiceHandleType h;
	if (!PyArg_ParseTuple(args, "O!y*i:asset_service_client_call_request", &PyDict_Type, &dict,
	                      &packet, &timeout_msec)) {
		return NULL;
	}
	if (handle_of(dict, &h) != 0) {
		PyBuffer_Release(&packet);
		return NULL;
	}
	if (packet.len <= 0) {
		PyBuffer_Release(&packet);
		PyErr_SetString(PyExc_ValueError, "Invalid packet data");
		return NULL;
	}
	int r = hako_asset_service_client_call_request(&h, packet.buf, (size_t)packet.len,
	                                               timeout_msec);
	PyBuffer_Release(&packet);
	return hakopy_result(r);
}

static PyObject *py_client_get_response(PyObject *self, PyObject *args)
{
	(void)self;
	int timeout;
	PyObject *dict;
	HakoServiceHandleType h;
	if (!PyArg_ParseTuple(args, "O!i:asset_service_client_get_response", &PyDict_Type, &dict,
	                      &timeout) ||
	    handle_of(dict, &h) != 0) {
		return NULL;
	}
	char *packet = NULL;
	size_t len = 0;
	int r = hako_asset_service_client_get_response(&h, &packet, &len, timeout);
	return packet_or_none(r, packet, len);
}

static PyObject *py_client_cancel_request(PyObject *self, PyObject *args)
{
	(void)self;
	PyObject *dict;
	HakoServiceHandleType h;
	if (!PyArg_ParseTuple(args, "O!:asset_service_client_cancel_request", &PyDict_Type,
	                      &dict) ||
	    handle_of(dict, &h) != 0) {
		return NULL;
	}
	int r = hako_asset_service_client_cancel_request(&h);
	return hakopy_result(r);
}

static PyObject *py_client_get_progress(PyObject *self, PyObject *args)
{
	(void)self;
	PyObject *dict;
	HakoServiceHandleType h;
	if (!PyArg_ParseTuple(args, "O!:asset_service_client_get_progress", &PyDict_Type, &dict) ||
	    handle_of(dict, &h) != 0) {
		return NULL;
	}
	int r = hako_asset_service_client_get_progress(&h);
	if (r < 0) {
		hakopy_note_failure();
	}
	return PyLong_FromLong(r);
}

static PyObject *py_client_status(PyObject *self, PyObject *args)
{
	(void)self;
	PyObject *dict;
	HakoServiceHandleType h;
	if (!PyArg_ParseTuple(args, "O!:asset_service_client_status", &PyDict_Type, &dict) ||
	    handle_of(dict, &h) != 0) {
		return NULL;
	}
	int status = 0;
	if (hako_asset_service_client_status(&h, &status) != 0) {
		hakopy_note_failure();
		Py_RETURN_NONE;
	}
	return PyLong_FromLong(status);
}

static PyObject *py_get_channel_id(PyObject *self, PyObject *args)
{
	(void)self;
	int service_id, client_id, req = 0, res = 0;
	if (!PyArg_ParseTuple(args, "ii:asset_service_get_channel_id", &service_id, &client_id)) {
		return NULL;
	}
	if (hako_asset_service_get_channel_id(service_id, client_id, &req, &res) != 0) {
		hakopy_note_failure();
		Py_RETURN_NONE;
	}
	return Py_BuildValue("(ii)", req, res);
}

PyMethodDef hakopy_service_methods[] = {
    {"service_initialize", py_service_initialize, METH_VARARGS,
     "service_initialize(service_config_path) -> bool"},
    {"asset_service_create", py_server_create, METH_VARARGS,
     "asset_service_create(asset_name_or_None, service_name) -> int | None"},
    {"asset_service_server_poll", py_server_poll, METH_VARARGS,
     "asset_service_server_poll(service_id) -> int (an event, -1 on error)"},
    {"asset_service_server_get_current_client_id", py_server_current_client_id, METH_VARARGS,
     "asset_service_server_get_current_client_id(service_id) -> int"},
    {"asset_service_server_get_current_channel_id", py_server_current_channel_id, METH_VARARGS,
     "asset_service_server_get_current_channel_id(service_id) -> (request, response)"},
    {"asset_service_server_status", py_server_status, METH_VARARGS,
     "asset_service_server_status(service_id) -> int"},
    {"asset_service_server_get_request", py_server_get_request, METH_VARARGS,
     "asset_service_server_get_request(service_id) -> bytearray"},
    {"asset_service_server_get_response_buffer", py_server_get_response_buffer, METH_VARARGS,
     "asset_service_server_get_response_buffer(service_id, status, result_code) -> bytearray | "
     "None"},
    {"asset_service_server_put_response", py_server_put_response, METH_VARARGS,
     "asset_service_server_put_response(service_id, packet) -> bool"},
    {"asset_service_server_is_canceled", py_server_is_canceled, METH_VARARGS,
     "asset_service_server_is_canceled(service_id) -> bool (True: the client cancelled)"},
    {"asset_service_server_set_progress", py_server_set_progress, METH_VARARGS,
     "asset_service_server_set_progress(service_id, percentage) -> bool"},
    {"asset_service_client_create", py_client_create, METH_VARARGS,
     "asset_service_client_create(asset_name_or_None, service_name, client_name) -> dict | None"},
    {"asset_service_client_poll", py_client_poll, METH_VARARGS,
     "asset_service_client_poll(handle) -> int (an event, -1 on error)"},
    {"asset_service_client_get_channel_id", py_client_get_channel_id, METH_VARARGS,
     "asset_service_client_get_channel_id(handle) -> (request, response) | None"},
    {"asset_service_client_get_request_buffer", py_client_get_request_buffer, METH_VARARGS,
     "asset_service_client_get_request_buffer(handle, opcode, poll_interval_msec) -> bytearray "
     "| None"},
    {"asset_service_client_call_request", py_client_call_request, METH_VARARGS,
     "asset_service_client_call_request(handle, packet, timeout_msec) -> bool"},
    {"asset_service_client_get_response", py_client_get_response, METH_VARARGS,
     "asset_service_client_get_response(handle, timeout) -> bytearray | None"},
    {"asset_service_client_cancel_request", py_client_cancel_request, METH_VARARGS,
     "asset_service_client_cancel_request(handle) -> bool"},
    {"asset_service_client_get_progress", py_client_get_progress, METH_VARARGS,
     "asset_service_client_get_progress(handle) -> int"},
    {"asset_service_client_status", py_client_status, METH_VARARGS,
     "asset_service_client_status(handle) -> int | None"},
    {"asset_service_get_channel_id", py_get_channel_id, METH_VARARGS,
     "asset_service_get_channel_id(service_id, client_id) -> (request, response) | None"},
    {NULL, NULL, 0, NULL},
};
