// The bindings' conversions: the importer's columns (``array.array``) in as
// vectors and rows, rows back out as (start, items) pairs.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "bindings/python_handles.h"
#include "engine/index.h"

namespace slcore_python {

namespace nb = nanobind;

using Ids = std::vector<int32_t>;
using Flags = std::vector<uint8_t>;

inline slcore::Rows rows(Ids start, Ids items) {
  slcore::Rows r;
  r.start = std::move(start);
  r.items = std::move(items);
  return r;
}

// A column the importer filled (an ``array.array`` of the given type code),
// copied in one go through the buffer protocol rather than item by item.
template <class T>
std::vector<T> column(nb::handle h, char code, const char* what) {
  const slcore_python::ArrayView<T> view(h, code, what);
  return std::vector<T>(view.data(), view.data() + view.size());
}

inline Ids ids(nb::handle h, const char* what) { return column<int32_t>(h, 'i', what); }
inline Flags flags(nb::handle h, const char* what) { return column<uint8_t>(h, 'B', what); }
inline slcore::Rows id_rows(nb::handle start, nb::handle items, const char* what) {
  return rows(ids(start, what), ids(items, what));
}

// A per-rule fact, per instruction.
template <class T>
std::vector<T> per_instruction(const std::vector<T>& by_rule, const Ids& rule_of, const char* what) {
  std::vector<T> out(rule_of.size());
  for (size_t i = 0; i < rule_of.size(); ++i) {
    if (rule_of[i] < 0 || static_cast<size_t>(rule_of[i]) >= by_rule.size()) {
      throw std::invalid_argument(std::string(what) + ": an instruction's rule is out of range");
    }
    out[i] = by_rule[rule_of[i]];
  }
  return out;
}

inline nb::object rows_pair(const slcore::Rows& r) { return nb::make_tuple(nb::cast(r.start), nb::cast(r.items)); }

// A vector's items as bytes, for Python to hold as an ``array.array``
// (``graph.packed_array``): 4 or 8 bytes an item, where a list of ints costs
// ~40 (a pointer and an int object) -- what large per-value answers kept for
// the whole run come back as.
template <class T>
nb::bytes packed(const std::vector<T>& v) {
  return nb::bytes(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

// Rows as (start, items) bytes of int32 (see ``packed``).
inline nb::object packed_rows(const slcore::Rows& r) { return nb::make_tuple(packed(r.start), packed(r.items)); }

}  // namespace slcore_python
