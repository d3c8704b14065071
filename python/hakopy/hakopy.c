/* The hakopy module: its table of functions, its 30 constants, and what happens when a Python
 * callback fails (hakopy.h). */
#include "hakopy.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "hako/hako_asset.h"
#include "hako/hako_asset_service.h"

/* The reason of this thread's last failed call ("" if none yet). */
static _Thread_local char last_message[512];

static atomic_int stop_requested; /* a callback failed or a signal handler raised */
static atomic_int callback_failed_flag;
static hako_time_t last_signal_check;
static PyObject *kept_exception; /* SystemExit / KeyboardInterrupt to raise again */

void hakopy_note_failure(void)
{
	const char *msg = NULL;
	hako_asset_last_error(&msg);
	snprintf(last_message, sizeof(last_message), "%s", msg != NULL ? msg : "");
}

PyObject *hakopy_raise_failure(const char *who)
{
	hakopy_note_failure();
	PyErr_Format(PyExc_RuntimeError, "%s failed: %s", who, last_message);
	return NULL;
}

void hakopy_set_failure(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(last_message, sizeof(last_message), fmt, ap);
	va_end(ap);
}

static void keep_exception(PyObject *exc)
{
	if (kept_exception == NULL) {
		kept_exception = exc; /* the first one wins: it is what the user did */
	} else {
		Py_DECREF(exc);
	}
}

/* "ZeroDivisionError: division by zero", or the type alone. */
static void describe(PyObject *exc, char *out, size_t cap)
{
	const char *type = Py_TYPE(exc)->tp_name;
	PyObject *s = PyObject_Str(exc);
	const char *text = s != NULL ? PyUnicode_AsUTF8(s) : NULL;
	if (text != NULL && text[0] != '\0') {
		snprintf(out, cap, "%s: %s", type, text);
	} else {
		snprintf(out, cap, "%s", type);
	}
	Py_XDECREF(s);
	PyErr_Clear();
}

/* Put the domain in Error, "asset '<name>' failed: <why>", and note it on the asset (only while
 * the run is in progress if only_running). */
static void fail_domain(const char *why, int only_running)
{
	hako_domain_t *dom = hako_asset_domain();
	hako_member_t *m = hako_asset_member();
	if (dom == NULL || m == NULL) {
		return;
	}
	int state = hako_domain_state(dom);
	int running = state == HAKO_STATE_RUNNABLE || state == HAKO_STATE_RUNNING;
	if (only_running && !running) {
		return;
	}
	char reason[320];
	snprintf(reason, sizeof(reason), "asset '%.64s' failed: %.200s", hako_member_name(m), why);
	char note[96];
	snprintf(note, sizeof(note), "failed: %.80s", why);
	hako_member_set_note(m, note);
	hako_domain_fail(dom, reason);
}

void hakopy_start_interrupted(void)
{
	if (kept_exception == NULL || atomic_load(&callback_failed_flag) ||
	    hako_asset_member() == NULL) {
		return;
	}
	char what[300], why[200];
	describe(kept_exception, what, sizeof(what));
	snprintf(why, sizeof(why), "start() interrupted by %.140s", what);
	hakopy_set_failure("asset '%s': %s", hako_member_name(hako_asset_member()), why);
	fail_domain(why, 1);
	hako_asset_unregister();
}

void hakopy_callback_failed(const char *where)
{
	PyObject *type, *value, *tb;
	PyErr_Fetch(&type, &value, &tb);
	PyErr_NormalizeException(&type, &value, &tb);
	if (value == NULL) {
		value = Py_NewRef(Py_None);
	}
	if (tb != NULL) {
		PyException_SetTraceback(value, tb);
	}
	int exiting = PyErr_GivenExceptionMatches(value, PyExc_SystemExit) ||
	              PyErr_GivenExceptionMatches(value, PyExc_KeyboardInterrupt);
	char what[300];
	describe(value, what, sizeof(what));
	const char *asset =
	    hako_asset_member() != NULL ? hako_member_name(hako_asset_member()) : "";
	if (!exiting) {
		fprintf(stderr, "hakopy: asset '%s': %s raised; the asset stops\n", asset, where);
		PyErr_Restore(Py_XNewRef(type), Py_NewRef(value), Py_XNewRef(tb));
		PyErr_Print(); /* the traceback, as Python prints it */
	}
	hakopy_set_failure("asset '%s': %s raised %s", asset, where, what);
	atomic_store(&callback_failed_flag, 1);
	atomic_store(&stop_requested, 1);
	char why[200];
	snprintf(why, sizeof(why), "%s raised %.140s", where, what);
	fail_domain(why, exiting);
	if (exiting) {
		keep_exception(Py_NewRef(value));
	}
	Py_XDECREF(type);
	Py_XDECREF(value);
	Py_XDECREF(tb);
}

int hakopy_is_force_stop(void)
{
	if (atomic_load_explicit(&stop_requested, memory_order_relaxed)) {
		return 1;
	}
	hako_time_t now = hako_now_usec();
	if (now - last_signal_check < 50000) {
		return 0;
	}
	last_signal_check = now;
	/* A signal (Ctrl-C) runs its Python handler only when the interpreter looks: look. */
	PyGILState_STATE g = PyGILState_Ensure();
	if (PyErr_CheckSignals() != 0) {
		PyObject *type, *value, *tb;
		PyErr_Fetch(&type, &value, &tb);
		PyErr_NormalizeException(&type, &value, &tb);
		if (value != NULL && tb != NULL) {
			PyException_SetTraceback(value, tb);
		}
		if (value != NULL) {
			keep_exception(Py_NewRef(value));
		}
		Py_XDECREF(type);
		Py_XDECREF(value);
		Py_XDECREF(tb);
		atomic_store(&stop_requested, 1);
	}
	PyGILState_Release(g);
	return atomic_load(&stop_requested);
}

void hakopy_stop_clear(void)
{
	atomic_store(&stop_requested, 0);
	atomic_store(&callback_failed_flag, 0);
	last_signal_check = 0;
}

int hakopy_failed(void)
{
	return atomic_load(&callback_failed_flag);
}

int hakopy_raise_kept(void)
{
	if (kept_exception == NULL) {
		return 0;
	}
	PyObject *exc = kept_exception;
	kept_exception = NULL;
	PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
	Py_DECREF(exc);
	return 1;
}

static PyObject *py_last_error(PyObject *self, PyObject *args)
{
	(void)self;
	(void)args;
	return PyUnicode_DecodeUTF8(last_message, (Py_ssize_t)strlen(last_message), "replace");
}

static PyMethodDef module_methods[] = {
    {"last_error", py_last_error, METH_NOARGS,
     "last_error() -> str: why this thread's last failed call failed (\"\" if none did)."},
    {NULL, NULL, 0, NULL},
};

/* The 30 constants of Hakoniwa's hakopy, under its names. */
static const struct {
	const char *name;
	int value;
} constants[] = {
    {"HAKO_ASSET_MODEL_PLANT", HAKO_ASSET_MODEL_PLANT},
    {"HAKO_ASSET_MODEL_CONTROLLER", HAKO_ASSET_MODEL_CONTROLLER},
    {"HAKO_SERVICE_SERVER_API_EVENT_NONE", HAKO_SERVICE_SERVER_API_EVENT_NONE},
    {"HAKO_SERVICE_SERVER_API_EVENT_REQUEST_IN", HAKO_SERVICE_SERVER_API_REQUEST_IN},
    {"HAKO_SERVICE_SERVER_API_EVENT_CANCEL", HAKO_SERVICE_SERVER_API_REQUEST_CANCEL},
    {"HAKO_SERVICE_SERVER_API_STATUS_IDLE", HAKO_SERVICE_SERVER_API_STATUS_IDLE},
    {"HAKO_SERVICE_SERVER_API_STATUS_DOING", HAKO_SERVICE_SERVER_API_STATUS_DOING},
    {"HAKO_SERVICE_SERVER_API_STATUS_CANCELING", HAKO_SERVICE_SERVER_API_STATUS_CANCELING},
    {"HAKO_SERVICE_CLIENT_API_EVENT_NONE", HAKO_SERVICE_CLIENT_API_EVENT_NONE},
    {"HAKO_SERVICE_CLIENT_API_EVENT_RESPONSE_IN", HAKO_SERVICE_CLIENT_API_RESPONSE_IN},
    {"HAKO_SERVICE_CLIENT_API_EVENT_REQUEST_TIMEOUT", HAKO_SERVICE_CLIENT_API_REQUEST_TIMEOUT},
    {"HAKO_SERVICE_CLIENT_API_EVENT_REQUEST_CANCEL_DONE",
     HAKO_SERVICE_CLIENT_API_REQUEST_CANCEL_DONE},
    {"HAKO_SERVICE_CLIENT_API_STATE_IDLE", HAKO_SERVICE_CLIENT_API_STATE_IDLE},
    {"HAKO_SERVICE_CLIENT_API_STATE_DOING", HAKO_SERVICE_CLIENT_API_STATE_DOING},
    {"HAKO_SERVICE_CLIENT_API_STATE_CANCELING", HAKO_SERVICE_CLIENT_API_STATE_CANCELING},
    {"HAKO_SERVICE_API_RESULT_CODE_OK", HAKO_SERVICE_API_RESULT_CODE_OK},
    {"HAKO_SERVICE_API_RESULT_CODE_ERROR", HAKO_SERVICE_API_RESULT_CODE_ERROR},
    {"HAKO_SERVICE_API_RESULT_CODE_CANCELED", HAKO_SERVICE_API_RESULT_CODE_CANCELED},
    {"HAKO_SERVICE_API_RESULT_CODE_INVALID", HAKO_SERVICE_API_RESULT_CODE_INVALID},
    {"HAKO_SERVICE_API_RESULT_CODE_BUSY", HAKO_SERVICE_API_RESULT_CODE_BUSY},
    {"HAKO_SERVICE_API_STATUS_NONE", HAKO_SERVICE_API_STATUS_NONE},
    {"HAKO_SERVICE_API_STATUS_DOING", HAKO_SERVICE_API_STATUS_DOING},
    {"HAKO_SERVICE_API_STATUS_CANCELING", HAKO_SERVICE_API_STATUS_CANCELING},
    {"HAKO_SERVICE_API_STATUS_DONE", HAKO_SERVICE_API_STATUS_DONE},
    {"HAKO_SERVICE_API_STATUS_ERROR", HAKO_SERVICE_API_STATUS_ERROR},
    {"HAKO_SERVICE_CLIENT_API_OPCODE_REQUEST", HAKO_SERVICE_CLIENT_API_OPCODE_REQUEST},
    {"HAKO_SERVICE_CLIENT_API_OPCODE_CANCEL", HAKO_SERVICE_CLIENT_API_OPCODE_CANCEL},
    {"HAKO_TRIGGER_EVENT_ID_START", HAKO_TRIGGER_EVENT_ID_START},
    {"HAKO_TRIGGER_EVENT_ID_STOP", HAKO_TRIGGER_EVENT_ID_STOP},
    {"HAKO_TRIGGER_EVENT_ID_RESET", HAKO_TRIGGER_EVENT_ID_RESET},
};

static int add_methods(PyObject *m, PyMethodDef *defs)
{
	PyObject *name = PyModule_GetNameObject(m);
	if (name == NULL) {
		return -1;
	}
	int r = 0;
	for (PyMethodDef *d = defs; r == 0 && d->ml_name != NULL; d++) {
		PyObject *f = PyCFunction_NewEx(d, NULL, name);
		r = f != NULL ? PyModule_AddObject(m, d->ml_name, f) : -1;
		if (r != 0) {
			Py_XDECREF(f);
		}
	}
	Py_DECREF(name);
	return r;
}

/* Single-phase initialisation: the C API under the module has one asset per process, so the
 * module does not claim to support subinterpreters. */
static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    "hakopy",
    "Hakoniwa's hakopy module on hako: register an asset, step it, read and write PDUs,\n"
    "serve and call services. docs/python.md lists each name and what differs.",
    -1,
    module_methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit_hakopy(void)
{
	PyObject *m = PyModule_Create(&module);
	if (m == NULL) {
		return NULL;
	}
	if (add_methods(m, hakopy_asset_methods) != 0 ||
	    add_methods(m, hakopy_service_methods) != 0) {
		Py_DECREF(m);
		return NULL;
	}
	for (size_t i = 0; i < sizeof(constants) / sizeof(constants[0]); i++) {
		if (PyModule_AddIntConstant(m, constants[i].name, constants[i].value) != 0) {
			Py_DECREF(m);
			return NULL;
		}
	}
	return m;
}
