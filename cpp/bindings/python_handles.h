// What the bindings' files share when they read MLIR's objects from Python:
// the pointer inside a ``_CAPIPtr`` capsule, and tuples of C API pointers as
// Python ints (the import walk's identities).
#pragma once

#include <nanobind/nanobind.h>

#include <cstdint>
#include <functional>
#include <string>

namespace slcore_python {

// A capsule's pointer (the bindings' ``_CAPIPtr``), whatever the capsule's name.
inline void* capsule_pointer(nanobind::handle capsule, const char* what) {
  void* p = PyCapsule_IsValid(capsule.ptr(), PyCapsule_GetName(capsule.ptr()))
                ? PyCapsule_GetPointer(capsule.ptr(), PyCapsule_GetName(capsule.ptr()))
                : nullptr;
  if (p == nullptr) {
    PyErr_Clear();
    throw nanobind::type_error((std::string(what) + ": expected an MLIR _CAPIPtr capsule").c_str());
  }
  return p;
}

// A tuple of Python ints, one per pointer.
inline nanobind::object pointer_tuple(intptr_t n, const std::function<void*(intptr_t)>& at) {
  PyObject* t = PyTuple_New(n);
  if (t == nullptr) throw nanobind::python_error();
  for (intptr_t i = 0; i < n; ++i) {
    PyObject* v = PyLong_FromVoidPtr(at(i));
    if (v == nullptr) {
      Py_DECREF(t);
      throw nanobind::python_error();
    }
    PyTuple_SET_ITEM(t, i, v);
  }
  return nanobind::steal(t);
}

// An ``array.array`` of type code `code` read in place through the buffer
// protocol, for as long as the view lives (the array must not be resized).
template <class T>
class ArrayView {
 public:
  ArrayView(nanobind::handle a, char code, const char* what) {
    if (PyObject_GetBuffer(a.ptr(), &view_, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) != 0) {
      PyErr_Clear();
      throw nanobind::type_error((std::string(what) + ": expected an array('" + code + "')").c_str());
    }
    if (view_.itemsize != static_cast<Py_ssize_t>(sizeof(T)) || view_.format == nullptr || view_.format[0] != code ||
        view_.format[1] != 0) {
      PyBuffer_Release(&view_);
      throw nanobind::type_error((std::string(what) + ": expected an array('" + code + "')").c_str());
    }
  }
  ~ArrayView() { PyBuffer_Release(&view_); }
  ArrayView(const ArrayView&) = delete;
  ArrayView& operator=(const ArrayView&) = delete;
  size_t size() const { return static_cast<size_t>(view_.len) / sizeof(T); }
  const T* data() const { return static_cast<const T*>(view_.buf); }
  T operator[](size_t i) const { return data()[i]; }

 private:
  Py_buffer view_;
};

}  // namespace slcore_python
