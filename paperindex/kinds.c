/* The kinds of a call's arguments, as paperindex.compiled.kinds computes them in Python, in C: a loop
 * compiled ahead of time looks up its export by them on every call, and the Python version took 5 to 9
 * microseconds for a search's two dozen arrays where numba's dispatcher takes one or two.
 *
 * An array's kind is an int: its dtype number, dimensions << 8, the flags numba's types tell apart
 * (C and F contiguous, aligned, writeable) << 16, and 1 << 30 when its byte order is not native. A
 * tuple's kind is the tuple of its items' kinds; anything else's is its type, numpy's int64, float64
 * and bool taken as Python's int, float and bool (numba types them alike).
 */
#define PY_SSIZE_T_CLEAN
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <Python.h>
#include <numpy/arrayobject.h>

#define FLAGS_TOLD_APART (NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_F_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_WRITEABLE)

static PyObject *numpy_int64, *numpy_float64, *numpy_bool;

static PyObject *kind_of(PyObject *value) {
    if (PyArray_CheckExact(value)) {
        PyArrayObject *array = (PyArrayObject *)value;
        long kind = (long)PyArray_TYPE(array) | ((long)PyArray_NDIM(array) << 8) |
                    ((long)(PyArray_FLAGS(array) & FLAGS_TOLD_APART) << 16) |
                    (PyArray_ISNOTSWAPPED(array) ? 0L : (1L << 30));
        return PyLong_FromLong(kind);
    }
    if (PyTuple_CheckExact(value)) {
        Py_ssize_t n = PyTuple_GET_SIZE(value);
        PyObject *kinds = PyTuple_New(n);
        if (kinds == NULL) return NULL;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *kind = kind_of(PyTuple_GET_ITEM(value, i));
            if (kind == NULL) {
                Py_DECREF(kinds);
                return NULL;
            }
            PyTuple_SET_ITEM(kinds, i, kind);
        }
        return kinds;
    }
    PyObject *type = (PyObject *)Py_TYPE(value);
    if (type == numpy_int64) type = (PyObject *)&PyLong_Type;
    else if (type == numpy_float64) type = (PyObject *)&PyFloat_Type;
    else if (type == numpy_bool) type = (PyObject *)&PyBool_Type;
    Py_INCREF(type);
    return type;
}

static PyObject *kinds(PyObject *self, PyObject *arguments) {
    if (!PyTuple_CheckExact(arguments)) {
        PyErr_SetString(PyExc_TypeError, "kinds() takes a tuple");
        return NULL;
    }
    return kind_of(arguments);
}

static PyMethodDef methods[] = {
    {"kinds", kinds, METH_O, "The kinds of a tuple of arguments (paperindex.compiled.kinds)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_paperindex_kinds", NULL, -1, methods};

PyMODINIT_FUNC PyInit__paperindex_kinds(void) {
    import_array();
    PyObject *numpy = PyImport_ImportModule("numpy");
    if (numpy == NULL) return NULL;
    numpy_int64 = PyObject_GetAttrString(numpy, "int64");
    numpy_float64 = PyObject_GetAttrString(numpy, "float64");
    numpy_bool = PyObject_GetAttrString(numpy, "bool_");
    Py_DECREF(numpy);
    if (numpy_int64 == NULL || numpy_float64 == NULL || numpy_bool == NULL) return NULL;
    return PyModule_Create(&module);
}
