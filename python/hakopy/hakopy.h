/* hakopy: Hakoniwa's Python module (hakoniwa-core-pro's `hakopy`) on hako's Hakoniwa-compatible
 * C API (hako/hako_asset.h, hako/hako_asset_service.h, hako/hako_conductor.h). What the module's
 * files share; private to the module.
 *
 * One asset per process, as the C API it wraps: the callbacks and the failure state are the
 * module's globals. Files: hakopy.c (the module, its constants, the failure state and
 * last_error), hakopy_asset.c (register, start, time, PDUs, events, conductor),
 * hakopy_service.c (the service calls).
 */
#ifndef HAKOPY_H
#define HAKOPY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* The functions each file adds to the module's method table. */
extern PyMethodDef hakopy_asset_methods[];
extern PyMethodDef hakopy_service_methods[];

/* Remember, for hakopy.last_error(), the reason the C API gave for the call that just failed in
 * this thread (hako_asset_last_error). */
void hakopy_note_failure(void);
/* Where Hakoniwa's binding raises (the C call `who` failed): RuntimeError "<who> failed:
 * <reason>", the reason kept as by hakopy_note_failure. Returns NULL. */
PyObject *hakopy_raise_failure(const char *who);
/* Remember a reason of the module's own. */
void hakopy_set_failure(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A Python callback run by the C API (the asset callbacks, a data receive callback) raised: the
 * exception is set and the GIL held. Prints the traceback, stops the asset (is_force_stop says
 * so from now on) and, unless the exception is the user's own way out (SystemExit,
 * KeyboardInterrupt) while the run is not in progress, puts the domain in Error with a reason
 * naming the asset and the exception. SystemExit and KeyboardInterrupt are kept and raised again
 * by the call that ran the callback (start, usleep). where: "on_simulation_step", ... */
void hakopy_callback_failed(const char *where);

/* start() ends with a KeyboardInterrupt (or SystemExit) a signal handler raised outside the
 * callbacks, which the program may catch and live on: the asset leaves the domain, failing it
 * (naming the asset) if the run was in progress, so nothing waits for it. GIL held. */
void hakopy_start_interrupted(void);

/* The is_force_stop of the C API's blocking calls, run without the GIL: 1 once a callback
 * failed or a signal handler raised (Ctrl-C), looked at every 50 ms of wall time. */
int hakopy_is_force_stop(void);
/* Before a blocking call: forget the stop of an earlier call. */
void hakopy_stop_clear(void);
/* After a blocking call, with the GIL: 1 if a callback of it failed (the asset was stopped). */
int hakopy_failed(void);
/* After a blocking call, with the GIL: if a SystemExit or KeyboardInterrupt was kept, set it
 * as the current exception and return 1. */
int hakopy_raise_kept(void);

/* A result as Python's True / False. */
static inline PyObject *hakopy_bool(int ok)
{
	if (ok) {
		Py_RETURN_TRUE;
	}
	Py_RETURN_FALSE;
}

/* The result of a C call returning 0 on success: True, or False with the reason kept for
 * hakopy.last_error(). */
static inline PyObject *hakopy_result(int r)
{
	if (r != 0) {
		hakopy_note_failure();
	}
	return hakopy_bool(r == 0);
}

#endif
