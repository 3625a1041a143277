// The CPython extension module hipvec._hipvec (plain C API): converts
// between Python objects and the C interface in hipvec.h.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <vector>

#include "hipvec.h"

static PyObject *scale(PyObject *, PyObject *args) {
    PyObject *seq_obj;
    float factor;
    if (!PyArg_ParseTuple(args, "Of:scale", &seq_obj, &factor)) {
        return nullptr;
    }
    PyObject *seq = PySequence_Fast(seq_obj, "scale() expects a sequence of numbers");
    if (seq == nullptr) {
        return nullptr;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    std::vector<float> values(static_cast<size_t>(n));
    for (Py_ssize_t i = 0; i < n; ++i) {
        double v = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(seq, i));
        if (v == -1.0 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return nullptr;
        }
        values[static_cast<size_t>(i)] = static_cast<float>(v);
    }
    Py_DECREF(seq);
    char err[256] = "";
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = hipvec_scale(values.data(), values.size(), factor, err, sizeof err);
    Py_END_ALLOW_THREADS
    if (status != 0) {
        PyErr_SetString(PyExc_RuntimeError, err);
        return nullptr;
    }
    PyObject *out = PyList_New(n);
    if (out == nullptr) {
        return nullptr;
    }
    for (Py_ssize_t i = 0; i < n; ++i) {
        PyList_SET_ITEM(out, i, PyFloat_FromDouble(values[static_cast<size_t>(i)]));
    }
    return out;
}

static PyObject *device_count(PyObject *, PyObject *) {
    int count = 0;
    char err[256] = "";
    if (hipvec_device_count(&count, err, sizeof err) != 0) {
        PyErr_SetString(PyExc_RuntimeError, err);
        return nullptr;
    }
    return PyLong_FromLong(count);
}

static PyObject *built_archs(PyObject *, PyObject *) { return PyUnicode_FromString(hipvec_built_archs()); }

static PyObject *math_version(PyObject *, PyObject *) { return PyUnicode_FromString(hipvec_math_version()); }

static PyMethodDef methods[] = {
    {"scale", scale, METH_VARARGS, "scale(values, factor) -> list: multiply on the GPU"},
    {"device_count", device_count, METH_NOARGS, "number of visible HIP devices (0 without a GPU)"},
    {"built_archs", built_archs, METH_NOARGS, "the ;-separated GPU targets compiled in"},
    {"math_version", math_version, METH_NOARGS, "libhipvecmath's version"},
    {nullptr, nullptr, 0, nullptr},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_hipvec", "HIP kernels for hipvec", -1, methods,
    nullptr, nullptr, nullptr, nullptr,
};

PyMODINIT_FUNC PyInit__hipvec(void) { return PyModule_Create(&module); }
