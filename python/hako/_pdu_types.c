/* The Python face of the registry's types: MsgType (one object per loaded type, read-only) and
 * its Field records, and the interned field names the codec uses as dict keys. */
#include "_pdu.h"

#include <structmember.h>

typedef struct {
	PyObject ob_base;
	const hako_msg_type_t *t;
	PyObject *fields; /* tuple of Field, made on first use */
} msgtype_t;

static PyTypeObject *msgtype_class;
static PyTypeObject *field_class;
static PyObject *msgtypes; /* dict: type address -> MsgType */
static PyObject *keys;     /* dict: type address -> tuple of interned field names */

static PyStructSequence_Field field_members[] = {
    {"name", "the field's name"},
    {"kind", "bool, byte, char, int8 .. uint64, float32, float64, string or struct"},
    {"form", "single, array (T[N]) or varray (T[])"},
    {"length", "N of a fixed array T[N], else 0"},
    {"type", "the MsgType of a struct field, else None"},
    {"offset", "bytes from the start of the enclosing struct"},
    {"size", "bytes in the struct: one element, N of them, or 8 for a varray"},
    {NULL, NULL},
};

static PyStructSequence_Desc field_desc = {
    "hako._pdu.Field",
    "A field of a PDU type, in .msg order.",
    field_members,
    7,
};

static const char *form_name(hako_msg_form_t form)
{
	switch (form) {
	case HAKO_MSG_ARRAY: return "array";
	case HAKO_MSG_VARRAY: return "varray";
	default: return "single";
	}
}

static PyObject *make_field(const hako_msg_field_t *f)
{
	PyObject *nested = Py_None;
	Py_INCREF(nested);
	if (f->kind == HAKO_MSG_STRUCT) {
		Py_DECREF(nested);
		if ((nested = hakopdu_msgtype_of(f->type)) == NULL) {
			return NULL;
		}
	}
	PyObject *r = PyStructSequence_New(field_class);
	if (r == NULL) {
		Py_DECREF(nested);
		return NULL;
	}
	PyObject *items[7] = {
	    PyUnicode_FromString(f->name),
	    PyUnicode_FromString(hako_msg_kind_name(f->kind)),
	    PyUnicode_FromString(form_name(f->form)),
	    PyLong_FromUnsignedLong(f->count),
	    nested,
	    PyLong_FromUnsignedLong(f->offset),
	    PyLong_FromUnsignedLong(f->size),
	};
	int ok = 1;
	for (int i = 0; i < 7; i++) {
		ok = ok && items[i] != NULL;
		PyStructSequence_SET_ITEM(r, i, items[i] != NULL ? items[i] : Py_NewRef(Py_None));
	}
	if (!ok) {
		Py_DECREF(r);
		return NULL;
	}
	return r;
}

static PyObject *mt_name(PyObject *self, void *c)
{
	(void)c;
	return PyUnicode_FromString(((msgtype_t *)self)->t->full_name);
}

static PyObject *mt_path(PyObject *self, void *c)
{
	(void)c;
	return PyUnicode_FromString(((msgtype_t *)self)->t->path);
}

static PyObject *mt_size(PyObject *self, void *c)
{
	(void)c;
	return PyLong_FromUnsignedLong(((msgtype_t *)self)->t->size);
}

static PyObject *mt_fixed_size(PyObject *self, void *c)
{
	(void)c;
	return PyLong_FromUnsignedLong(hako_msg_pdu_fixed_size(((msgtype_t *)self)->t));
}

static PyObject *mt_has_varray(PyObject *self, void *c)
{
	(void)c;
	return PyBool_FromLong(((msgtype_t *)self)->t->has_varray);
}

static PyObject *mt_fields(PyObject *self, void *c)
{
	(void)c;
	msgtype_t *m = (msgtype_t *)self;
	if (m->fields == NULL) {
		PyObject *tup = PyTuple_New((Py_ssize_t)m->t->field_count);
		if (tup == NULL) {
			return NULL;
		}
		for (size_t i = 0; i < m->t->field_count; i++) {
			PyObject *f = make_field(&m->t->fields[i]);
			if (f == NULL) {
				Py_DECREF(tup);
				return NULL;
			}
			PyTuple_SET_ITEM(tup, (Py_ssize_t)i, f);
		}
		m->fields = tup;
	}
	return Py_NewRef(m->fields);
}

static PyObject *mt_repr(PyObject *self)
{
	return PyUnicode_FromFormat("<hako MsgType %s>", ((msgtype_t *)self)->t->full_name);
}

static void mt_dealloc(PyObject *self)
{
	Py_XDECREF(((msgtype_t *)self)->fields);
	Py_TYPE(self)->tp_free(self);
}

static PyGetSetDef mt_getset[] = {
    {"name", mt_name, NULL, "\"pkg/Type\"", NULL},
    {"path", mt_path, NULL, "the .msg file it came from (\"<builtin>/pkg/Type.msg\")", NULL},
    {"size", mt_size, NULL, "bytes of the base struct (the C struct, tail padding included)", NULL},
    {"fixed_size", mt_fixed_size, NULL,
     "bytes of a PDU of this type with every variable array empty (24 + base rounded to 8)", NULL},
    {"has_varray", mt_has_varray, NULL, "a field at any depth is a variable array", NULL},
    {"fields", mt_fields, NULL, "the fields in .msg order, as Field records", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

/* A static type: PyType_Slot's void * cannot hold a function pointer in ISO C. */
/* clang-format off */
static PyTypeObject msgtype_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "hako._pdu.MsgType",
    .tp_basicsize = sizeof(msgtype_t),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .tp_doc = "A PDU type of the registry (hako.pdu.msg_type).",
    .tp_getset = mt_getset,
    .tp_repr = mt_repr,
    .tp_dealloc = mt_dealloc,
};
/* clang-format on */

int hakopdu_types_init(PyObject *module)
{
	msgtypes = PyDict_New();
	keys = PyDict_New();
	if (msgtypes == NULL || keys == NULL) {
		return -1;
	}
	if (PyType_Ready(&msgtype_type) != 0) {
		return -1;
	}
	msgtype_class = &msgtype_type;
	field_class = PyStructSequence_NewType(&field_desc);
	if (field_class == NULL) {
		return -1;
	}
	if (PyModule_AddObjectRef(module, "MsgType", (PyObject *)msgtype_class) != 0 ||
	    PyModule_AddObjectRef(module, "Field", (PyObject *)field_class) != 0) {
		return -1;
	}
	return 0;
}

PyObject *hakopdu_msgtype_of(const hako_msg_type_t *t)
{
	PyObject *key = PyLong_FromVoidPtr((void *)t);
	if (key == NULL) {
		return NULL;
	}
	PyObject *m = PyDict_GetItemWithError(msgtypes, key); /* borrowed */
	if (m != NULL || PyErr_Occurred()) {
		Py_DECREF(key);
		return Py_XNewRef(m);
	}
	msgtype_t *n = PyObject_New(msgtype_t, msgtype_class);
	if (n == NULL) {
		Py_DECREF(key);
		return NULL;
	}
	n->t = t;
	n->fields = NULL;
	int r = PyDict_SetItem(msgtypes, key, (PyObject *)n);
	Py_DECREF(key);
	if (r != 0) {
		Py_DECREF(n);
		return NULL;
	}
	return (PyObject *)n;
}

const hako_msg_type_t *hakopdu_msgtype_get(PyObject *obj)
{
	if (!PyObject_TypeCheck(obj, msgtype_class)) {
		PyErr_Format(PyExc_TypeError, "expected a hako MsgType, not %s",
		             Py_TYPE(obj)->tp_name);
		return NULL;
	}
	return ((msgtype_t *)obj)->t;
}

PyObject *hakopdu_keys(const hako_msg_type_t *t)
{
	PyObject *key = PyLong_FromVoidPtr((void *)t);
	if (key == NULL) {
		return NULL;
	}
	PyObject *tup = PyDict_GetItemWithError(keys, key); /* borrowed, kept by the dict */
	if (tup != NULL || PyErr_Occurred()) {
		Py_DECREF(key);
		return tup;
	}
	tup = PyTuple_New((Py_ssize_t)t->field_count);
	for (size_t i = 0; tup != NULL && i < t->field_count; i++) {
		PyObject *s = PyUnicode_InternFromString(t->fields[i].name);
		if (s == NULL) {
			Py_CLEAR(tup);
			break;
		}
		PyTuple_SET_ITEM(tup, (Py_ssize_t)i, s);
	}
	int r = tup != NULL ? PyDict_SetItem(keys, key, tup) : -1;
	Py_DECREF(key);
	Py_XDECREF(tup); /* the dict keeps it */
	return r == 0 ? tup : NULL;
}
