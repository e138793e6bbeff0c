// The import walk's list columns packed as int32 bytes (graph.Columns.freeze).
#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "bindings/bind.h"

namespace nb = nanobind;

namespace slcore_python {
namespace {

int32_t int32_of(PyObject* item, const char* what) {
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(item, &overflow);
  if (v == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    throw nb::type_error((std::string(what) + ": expected ints").c_str());
  }
  if (overflow != 0 || v < INT32_MIN || v > INT32_MAX) {
    throw std::invalid_argument(std::string(what) + ": an int out of int32's range");
  }
  return static_cast<int32_t>(v);
}

// The ints of a list or tuple, appended to `out`.
void int32_items(nb::handle seq, std::vector<int32_t>& out, const char* what) {
  PyObject* s = seq.ptr();
  if (!PyList_Check(s) && !PyTuple_Check(s)) throw nb::type_error((std::string(what) + ": expected a list").c_str());
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(s);
  PyObject** items = PySequence_Fast_ITEMS(s);
  out.reserve(out.size() + static_cast<size_t>(n));
  for (Py_ssize_t i = 0; i < n; ++i) out.push_back(int32_of(items[i], what));
}

nb::bytes int32_bytes(const std::vector<int32_t>& v) {
  return nb::bytes(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(int32_t));
}

}  // namespace

void bind_columns(nb::module_& m) {
  // The import walk appends to lists (the cheapest call in Python);
  // Columns.freeze packs them into int32 arrays through these, one pass in C++
  // each where array('i', list) and itertools took ~20 ms at 45k instructions.
  m.def(
      "int32_bytes",
      [](nb::handle list) {
        std::vector<int32_t> out;
        int32_items(list, out, "int32_bytes");
        return int32_bytes(out);
      },
      "A list of ints as int32 bytes (array('i').frombytes).");
  m.def(
      "start_bytes",
      [](nb::handle counts) {
        std::vector<int32_t> n;
        int32_items(counts, n, "start_bytes");
        std::vector<int32_t> start(n.size() + 1, 0);
        int64_t at = 0;
        for (size_t i = 0; i < n.size(); ++i) {
          at += n[i];
          if (n[i] < 0 || at > INT32_MAX) throw std::invalid_argument("start_bytes: a count out of range");
          start[i + 1] = static_cast<int32_t>(at);
        }
        return int32_bytes(start);
      },
      "Per row, where it starts, from the rows' lengths: 0 and their running sums, as int32 bytes.");
  m.def(
      "row_bytes",
      [](nb::handle rows) {
        // Each row is an int (a row of one) or a list or tuple of ints.
        if (!PyList_Check(rows.ptr())) throw nb::type_error("row_bytes: expected a list");
        const Py_ssize_t n = PyList_GET_SIZE(rows.ptr());
        std::vector<int32_t> start(static_cast<size_t>(n) + 1, 0), items;
        items.reserve(static_cast<size_t>(n));
        for (Py_ssize_t i = 0; i < n; ++i) {
          PyObject* row = PyList_GET_ITEM(rows.ptr(), i);
          if (PyLong_Check(row)) {
            items.push_back(int32_of(row, "row_bytes"));
          } else if (PyList_Check(row) || PyTuple_Check(row)) {
            int32_items(row, items, "row_bytes");
          } else {
            throw nb::type_error("row_bytes: a row is neither an int nor a list or tuple of ints");
          }
          if (items.size() > static_cast<size_t>(INT32_MAX)) throw std::invalid_argument("row_bytes: too many items");
          start[static_cast<size_t>(i) + 1] = static_cast<int32_t>(items.size());
        }
        return nb::make_tuple(int32_bytes(start), int32_bytes(items));
      },
      "Rows of ints (an int, or a list or tuple of ints, each) as (start, items) int32 bytes.");
}

}  // namespace slcore_python
