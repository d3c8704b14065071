/* hakopy's asset calls: register, start, time, PDUs, data receive events, the conductor. Each
 * returns as Hakoniwa's binding does (True / False, an int, a bytearray); a call that can block
 * (start, usleep, conductor_stop) releases the GIL, and the callbacks it runs take it back. */
#include "hakopy.h"

#include <limits.h>
#include <string.h>

#include "hako/hako_asset.h"
#include "hako/hako_conductor.h"

enum { CB_INITIALIZE, CB_SIMULATION_STEP, CB_MANUAL_TIMING_CONTROL, CB_RESET, CB_COUNT };
static const char *const cb_names[CB_COUNT] = {"on_initialize", "on_simulation_step",
                                               "on_manual_timing_control", "on_reset"};
static PyObject *callbacks[CB_COUNT];
static PyObject *recv_callbacks; /* dict: recv event id -> callable */

/* Run the Python callback `which` from the C API's thread, without the GIL. Its result: an int
 * (None is 0); a callback that raised stops the asset (hakopy_callback_failed). */
static int run_callback(int which)
{
	PyObject *f = callbacks[which];
	if (f == NULL || hakopy_failed()) {
		return hakopy_failed() ? -1 : 0;
	}
	PyGILState_STATE g = PyGILState_Ensure();
	int ret = 0;
	PyObject *r = PyObject_CallFunctionObjArgs(f, Py_None, NULL);
	if (r == NULL) {
		hakopy_callback_failed(cb_names[which]);
		ret = -1;
	} else if (r != Py_None) {
		long v = PyLong_AsLong(r);
		if (v == -1 && PyErr_Occurred()) {
			/* A result that is no int is taken as 0, as a C callback's. */
			PyErr_Clear();
			v = 0;
		}
		ret = (int)v;
	}
	Py_XDECREF(r);
	PyGILState_Release(g);
	return ret;
}

static int on_initialize(hako_asset_context_t *ctx)
{
	(void)ctx;
	return run_callback(CB_INITIALIZE);
}

static int on_simulation_step(hako_asset_context_t *ctx)
{
	(void)ctx;
	return run_callback(CB_SIMULATION_STEP);
}

static int on_manual_timing_control(hako_asset_context_t *ctx)
{
	(void)ctx;
	return run_callback(CB_MANUAL_TIMING_CONTROL);
}

static int on_reset(hako_asset_context_t *ctx)
{
	(void)ctx;
	return run_callback(CB_RESET);
}

static PyObject *py_asset_register(PyObject *self, PyObject *args)
{
	(void)self;
	const char *name, *config_path;
	PyObject *dict;
	long long delta_usec;
	int model;
	if (!PyArg_ParseTuple(args, "ssOLi:asset_register", &name, &config_path, &dict, &delta_usec,
	                      &model)) {
		return NULL;
	}
	if (!PyDict_Check(dict)) {
		PyErr_Format(PyExc_TypeError, "asset_register: callbacks must be a dict, not %s",
		             Py_TYPE(dict)->tp_name);
		return NULL;
	}
	PyObject *found[CB_COUNT] = {NULL};
	for (int i = 0; i < CB_COUNT; i++) {
		PyObject *f = PyDict_GetItemString(dict, cb_names[i]); /* borrowed */
		if (f != NULL && f != Py_None && !PyCallable_Check(f)) {
			PyErr_Format(PyExc_TypeError,
			             "asset_register: callbacks['%s'] is %s, not callable",
			             cb_names[i], Py_TYPE(f)->tp_name);
			return NULL;
		}
		found[i] = f == Py_None ? NULL : f;
	}
	for (int i = 0; i < CB_COUNT; i++) {
		Py_XINCREF(found[i]); /* borrowed from a dict another thread may change */
	}
	/* The C API keeps a copy of these. */
	hako_asset_callbacks_t c_callbacks = {
	    .on_initialize = on_initialize,
	    .on_simulation_step = found[CB_SIMULATION_STEP] != NULL ? on_simulation_step : NULL,
	    .on_manual_timing_control =
	        found[CB_MANUAL_TIMING_CONTROL] != NULL ? on_manual_timing_control : NULL,
	    .on_reset = on_reset,
	};
	int r;
	Py_BEGIN_ALLOW_THREADS;
	r = hako_asset_register(name, config_path, &c_callbacks, (hako_time_t)delta_usec,
	                        (HakoAssetModelType)model);
	Py_END_ALLOW_THREADS;
	if (r != 0) {
		/* A refused register (a second one, no conductor) leaves the registered asset's
		 * callbacks as they were. */
		hakopy_note_failure();
		for (int i = 0; i < CB_COUNT; i++) {
			Py_XDECREF(found[i]);
		}
		return hakopy_bool(0);
	}
	for (int i = 0; i < CB_COUNT; i++) {
		Py_XSETREF(callbacks[i], found[i]);
	}
	return hakopy_bool(1);
}

static PyObject *py_init_for_external(PyObject *self, PyObject *args)
{
	(void)self;
	(void)args;
	int r = hako_initialize_for_external();
	return hakopy_result(r);
}

/* After a blocking call with the GIL back: the asset leaves the domain if a callback failed, and
 * a kept SystemExit / KeyboardInterrupt is raised. */
static PyObject *after_blocking(int r)
{
	if (hakopy_failed() && hako_asset_member() != NULL) {
		hako_asset_unregister(); /* the domain must not wait for a stopped asset */
	}
	hakopy_start_interrupted();
	if (hakopy_raise_kept()) {
		return NULL;
	}
	if (r != 0 && !hakopy_failed()) {
		hakopy_note_failure();
	}
	return hakopy_bool(r == 0);
}

static PyObject *py_start(PyObject *self, PyObject *args)
{
	(void)self;
	if (!PyArg_ParseTuple(args, ":start")) {
		return NULL;
	}
	hakopy_stop_clear();
	int r;
	Py_BEGIN_ALLOW_THREADS;
	r = hako_asset_start_no_wait(hakopy_is_force_stop);
	Py_END_ALLOW_THREADS;
	return after_blocking(r);
}

static PyObject *py_usleep(PyObject *self, PyObject *args)
{
	(void)self;
	long long usec;
	if (!PyArg_ParseTuple(args, "L:usleep", &usec)) {
		return NULL;
	}
	if (hakopy_failed()) {
		hakopy_set_failure("usleep: the asset stopped after a callback raised");
		Py_RETURN_FALSE;
	}
	int r;
	Py_BEGIN_ALLOW_THREADS;
	r = hako_asset_usleep_no_wait((hako_time_t)usec, hakopy_is_force_stop);
	Py_END_ALLOW_THREADS;
	if (hakopy_raise_kept()) {
		return NULL;
	}
	return hakopy_result(r);
}

static PyObject *py_simulation_time(PyObject *self, PyObject *args)
{
	(void)self;
	(void)args;
	return PyLong_FromLongLong(hako_asset_simulation_time());
}

static PyObject *py_asset_current_time(PyObject *self, PyObject *args)
{
	(void)self;
	(void)args;
	return PyLong_FromLongLong(hako_asset_current_time());
}

static PyObject *py_min_asset_time(PyObject *self, PyObject *args)
{
	(void)self;
	(void)args;
	return PyLong_FromLongLong(hako_asset_min_asset_time());
}

static PyObject *py_pdu_create(PyObject *self, PyObject *args)
{
	(void)self;
	const char *robot;
	int channel;
	long long size;
	if (!PyArg_ParseTuple(args, "siL:pdu_create", &robot, &channel, &size)) {
		return NULL;
	}
	if (size <= 0) {
		hakopy_set_failure("pdu_create(%s, %d): size %lld must be > 0", robot, channel,
		                   size);
		Py_RETURN_FALSE;
	}
	int r = hako_asset_pdu_create(robot, channel, (size_t)size);
	return hakopy_result(r);
}

/* The PDU calls are METH_FASTCALL, their arguments read one by one: PyArg_ParseTuple's tuple
 * and format string were 40 % of a call (bench/python_step: pdu_write 102 -> 60 ns, pdu_read
 * 97 -> 62 ns). The errors are those of the formats they replace ("s", "i", "L", "y*"). */
static int arg_count(const char *fn, Py_ssize_t nargs, Py_ssize_t want)
{
	if (nargs == want) {
		return 0;
	}
	PyErr_Format(PyExc_TypeError, "%s() takes exactly %zd arguments (%zd given)", fn, want,
	             nargs);
	return -1;
}

/* robot (str without NUL) and channel id (int). */
static int robot_channel(const char *fn, PyObject *const *args, const char **robot, int *channel)
{
	if (!PyUnicode_Check(args[0])) {
		PyErr_Format(PyExc_TypeError, "%s() argument 1 must be str, not %.50s", fn,
		             Py_TYPE(args[0])->tp_name);
		return -1;
	}
	Py_ssize_t n;
	*robot = PyUnicode_AsUTF8AndSize(args[0], &n);
	if (*robot == NULL) {
		return -1;
	}
	if ((size_t)n != strlen(*robot)) {
		PyErr_SetString(PyExc_ValueError, "embedded null character");
		return -1;
	}
	long c = PyLong_AsLong(args[1]);
	if (c == -1 && PyErr_Occurred()) {
		return -1;
	}
	if (c < INT_MIN || c > INT_MAX) {
		PyErr_SetString(PyExc_OverflowError,
		                c < 0 ? "signed integer is less than minimum"
		                      : "signed integer is greater than maximum");
		return -1;
	}
	*channel = (int)c;
	return 0;
}

static PyObject *py_pdu_read(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	(void)self;
	const char *robot;
	int channel;
	if (arg_count("pdu_read", nargs, 3) != 0 ||
	    robot_channel("pdu_read", args, &robot, &channel) != 0) {
		return NULL;
	}
	long long len = PyLong_AsLongLong(args[2]);
	if (len == -1 && PyErr_Occurred()) {
		return NULL;
	}
	if (len <= 0 || len > PY_SSIZE_T_MAX) {
		hakopy_set_failure("pdu_read(%s, %d): length %lld must be > 0", robot, channel,
		                   len);
		PyErr_Format(PyExc_ValueError, "pdu_read(%s, %d): length %lld must be > 0", robot,
		             channel, len);
		return NULL;
	}
	PyObject *out = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)len);
	if (out == NULL) {
		return NULL;
	}
	int r = hako_asset_pdu_read(robot, channel, PyByteArray_AS_STRING(out), (size_t)len);
	if (r != 0) {
		Py_DECREF(out);
		hakopy_note_failure();
		const char *msg = NULL;
		hako_asset_last_error(&msg);
		PyErr_Format(PyExc_RuntimeError,
		             "hako_asset_pdu_read failed with error code: %d (%s)", r,
		             msg != NULL ? msg : "");
		return NULL;
	}
	return out;
}

static PyObject *py_pdu_write(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	(void)self;
	const char *robot;
	int channel;
	Py_buffer data;
	if (arg_count("pdu_write", nargs, 4) != 0 ||
	    robot_channel("pdu_write", args, &robot, &channel) != 0) {
		return NULL;
	}
	if (PyObject_GetBuffer(args[2], &data, PyBUF_SIMPLE) != 0) {
		return NULL;
	}
	long long len = PyLong_AsLongLong(args[3]);
	if (len == -1 && PyErr_Occurred()) {
		PyBuffer_Release(&data);
		return NULL;
	}
	if (len < 0 || len > data.len) {
		PyErr_Format(PyExc_ValueError,
		             "pdu_write(%s, %d): length %lld is not within the data's %zd bytes",
		             robot, channel, len, data.len);
		PyBuffer_Release(&data);
		return NULL;
	}
	int r = hako_asset_pdu_write(robot, channel, data.buf, (size_t)len);
	PyBuffer_Release(&data);
	return hakopy_result(r);
}

/* The C API's receive callback: runs the Python callable registered for the event, in the
 * stepping thread, without the GIL. */
static void on_recv(int recv_event_id)
{
	if (hakopy_failed()) {
		return;
	}
	PyGILState_STATE g = PyGILState_Ensure();
	PyObject *key = PyLong_FromLong(recv_event_id);
	PyObject *f = key != NULL && recv_callbacks != NULL ? PyDict_GetItem(recv_callbacks, key)
	                                                    : NULL; /* borrowed */
	Py_XDECREF(key);
	if (f != NULL) {
		Py_INCREF(f);
		PyObject *r = PyObject_CallFunction(f, "i", recv_event_id);
		if (r == NULL) {
			hakopy_callback_failed("data receive callback");
		}
		Py_XDECREF(r);
		Py_DECREF(f);
	}
	PyGILState_Release(g);
}

static PyObject *py_register_data_recv_event(PyObject *self, PyObject *args)
{
	(void)self;
	const char *robot;
	int channel;
	PyObject *callback;
	if (!PyArg_ParseTuple(args, "siO:register_data_recv_event", &robot, &channel, &callback)) {
		return NULL;
	}
	if (callback != Py_None && !PyCallable_Check(callback)) {
		PyErr_SetString(PyExc_TypeError, "callback must be callable");
		return NULL;
	}
	int id = -1;
	int r = hako_asset_register_data_recv_event(robot, channel,
	                                            callback != Py_None ? on_recv : NULL, &id);
	if (r != 0) {
		return hakopy_raise_failure("hako_asset_register_data_recv_event");
	}
	if (callback != Py_None) {
		if (recv_callbacks == NULL && (recv_callbacks = PyDict_New()) == NULL) {
			return NULL;
		}
		PyObject *key = PyLong_FromLong(id);
		if (key == NULL || PyDict_SetItem(recv_callbacks, key, callback) != 0) {
			Py_XDECREF(key);
			return NULL;
		}
		Py_DECREF(key);
	}
	return PyLong_FromLong(id);
}

static PyObject *py_check_data_recv_event(PyObject *self, PyObject *args)
{
	(void)self;
	const char *robot;
	int channel;
	if (!PyArg_ParseTuple(args, "si:check_data_recv_event", &robot, &channel)) {
		return NULL;
	}
	int r = hako_asset_check_data_recv_event(robot, channel);
	return hakopy_result(r);
}

static PyObject *py_set_pending(PyObject *self, PyObject *args)
{
	(void)self;
	int id;
	if (!PyArg_ParseTuple(args, "i:set_data_recv_event_pending", &id)) {
		return NULL;
	}
	int r = hako_asset_set_data_recv_event_pending(id);
	return hakopy_result(r);
}

static PyObject *py_set_resume(PyObject *self, PyObject *args)
{
	(void)self;
	int id;
	if (!PyArg_ParseTuple(args, "i:set_data_recv_event_resume", &id)) {
		return NULL;
	}
	int r = hako_asset_set_data_recv_event_resume(id);
	return hakopy_result(r);
}

static PyObject *py_conductor_start(PyObject *self, PyObject *args)
{
	(void)self;
	long long delta, max_delay;
	if (!PyArg_ParseTuple(args, "LL:conductor_start", &delta, &max_delay)) {
		return NULL;
	}
	int r;
	Py_BEGIN_ALLOW_THREADS;
	r = hako_conductor_start((hako_time_t)delta, (hako_time_t)max_delay);
	Py_END_ALLOW_THREADS;
	return hakopy_result(r);
}

static PyObject *py_conductor_stop(PyObject *self, PyObject *args)
{
	(void)self;
	(void)args;
	Py_BEGIN_ALLOW_THREADS;
	hako_conductor_stop();
	Py_END_ALLOW_THREADS;
	Py_RETURN_NONE;
}

static PyObject *py_trigger_event(PyObject *self, PyObject *args)
{
	(void)self;
	int event;
	if (!PyArg_ParseTuple(args, "i:trigger_event", &event)) {
		return NULL;
	}
	int r = hako_trigger_event(event);
	return hakopy_result(r);
}

PyMethodDef hakopy_asset_methods[] = {
    {"asset_register", py_asset_register, METH_VARARGS,
     "asset_register(name, config_path, callbacks, delta_usec, model) -> bool"},
    {"init_for_external", py_init_for_external, METH_NOARGS, "init_for_external() -> bool"},
    {"pdu_create", py_pdu_create, METH_VARARGS, "pdu_create(robot, channel_id, size) -> bool"},
    {"start", py_start, METH_VARARGS, "start() -> bool: run the asset until the simulation stops"},
    {"simulation_time", py_simulation_time, METH_NOARGS, "simulation_time() -> int (usec)"},
    {"asset_current_time", py_asset_current_time, METH_NOARGS,
     "asset_current_time() -> int (usec)"},
    {"min_asset_time", py_min_asset_time, METH_NOARGS, "min_asset_time() -> int (usec)"},
    {"usleep", py_usleep, METH_VARARGS, "usleep(usec) -> bool: advance this asset's clock"},
    {"pdu_read", (PyCFunction)(void (*)(void))py_pdu_read, METH_FASTCALL,
     "pdu_read(robot, channel_id, length) -> bytearray"},
    {"pdu_write", (PyCFunction)(void (*)(void))py_pdu_write, METH_FASTCALL,
     "pdu_write(robot, channel_id, data, length) -> bool"},
    {"register_data_recv_event", py_register_data_recv_event, METH_VARARGS,
     "register_data_recv_event(robot, channel_id, callback_or_None) -> int"},
    {"check_data_recv_event", py_check_data_recv_event, METH_VARARGS,
     "check_data_recv_event(robot, channel_id) -> bool"},
    {"set_data_recv_event_pending", py_set_pending, METH_VARARGS,
     "set_data_recv_event_pending(recv_event_id) -> bool"},
    {"set_data_recv_event_resume", py_set_resume, METH_VARARGS,
     "set_data_recv_event_resume(recv_event_id) -> bool"},
    {"conductor_start", py_conductor_start, METH_VARARGS,
     "conductor_start(delta_usec, max_delay_usec) -> bool"},
    {"conductor_stop", py_conductor_stop, METH_NOARGS, "conductor_stop() -> None"},
    {"trigger_event", py_trigger_event, METH_VARARGS, "trigger_event(event_id) -> bool"},
    {NULL, NULL, 0, NULL},
};
