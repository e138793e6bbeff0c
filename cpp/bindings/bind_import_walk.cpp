// The import walk's half in the core: it reads blocks through MLIR's C API
// (mlir/mlir_capi.h) and writes the rows of the ops that need no Python.
//
// Most ops of a large module (elementwise arithmetic, reshapes, dots,
// transposes, broadcasts) become one instruction row and one value row that
// follow from what the walk has already seen: the op's name, for some one
// attribute MLIR uniques, its operands' ids and its result's type.  Written
// by the Python walk (importer._Importer._walk_ops) they cost ~4 us of
// bytecode each.  OpWalk writes them itself, into the same lists of
// graph.Columns the Python walk appends to, and hands Python only the ops it
// cannot write: the first op of a name (Python decides what the name means and
// tells OpWalk), ops with an attribute value not seen before, more or fewer
// than one result, a type not decoded yet, an operand from an enclosing
// region (a capture), a name Python never registers (calls, copies, region
// ops, tuples), and every block's last op (a terminator, read by Python).
// What it writes is what the Python walk would have written, row for row:
// tests/unit/test_import_identity.py compares the two with the bindings-only
// walk on every input.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "bindings/bind.h"
#include "bindings/python_handles.h"
#include "mlir/mlir_capi.h"

namespace nb = nanobind;

namespace slcore_python {
namespace {

void append(const nb::object& list, PyObject* item) {
  if (PyList_Append(list.ptr(), item) != 0) throw nb::python_error();
}

nb::object new_int(Py_ssize_t v) {
  PyObject* o = PyLong_FromSsize_t(v);
  if (o == nullptr) throw nb::python_error();
  return nb::steal(o);
}

// A list column of graph.Columns, by attribute name; refused unless a list,
// since the walk appends to it with PyList_Append.
nb::object list_column(nb::handle columns, const char* name) {
  nb::object c = columns.attr(name);
  if (!PyList_Check(c.ptr())) throw nb::type_error((std::string("OpWalk: columns.") + name + " is not a list").c_str());
  return c;
}

// An array the walk extends by its bytes (``frombytes``), of items of ``size`` bytes:
// array('Q') / array('q') for pointers, array('i') for ids.
nb::object byte_array(nb::handle a, const char* what, int size) {
  nb::object o = nb::borrow(a);
  if (!nb::hasattr(o, "frombytes") || nb::cast<int>(o.attr("itemsize")) != size) {
    throw nb::type_error((std::string("OpWalk: ") + what + " is not an array of " + std::to_string(size) +
                          "-byte items").c_str());
  }
  return o;
}

nb::object pointer_array(nb::handle a, const char* what) { return byte_array(a, what, sizeof(uint64_t)); }

// Graph value ids by the C API's value pointers: the import walk's table
// of every value it has made (importer._Importer.vid).  A Python dict of int
// keys cost a key object per value and three cache misses a lookup, and its
// cost per value doubled from 45k to 180k values.  This is one flat
// open-addressing table, at most half full, its pointer and id side by side
// in one slot: a lookup touches one cache line, not one per array.
class ValueIds {
 public:
  ValueIds() { rehash(1024); }

  // The id of the value at `key`, or -1.
  int32_t get(uintptr_t key) const {
    for (size_t i = slot(key);; i = (i + 1) & mask_) {
      if (slots_[i].key == key) return slots_[i].id;
      if (slots_[i].key == 0) return -1;
    }
  }

  void set(uintptr_t key, int32_t id) {
    if (key == 0) throw std::invalid_argument("ValueIds: a null value");
    if (id < 0) throw std::invalid_argument("ValueIds: a negative id");
    if (2 * (count_ + 1) > slots_.size()) rehash(2 * slots_.size());
    size_t i = slot(key);
    while (slots_[i].key != 0 && slots_[i].key != key) i = (i + 1) & mask_;
    if (slots_[i].key == 0) ++count_;
    slots_[i] = Slot{key, id};
  }

  size_t size() const { return count_; }

 private:
  struct Slot {
    uintptr_t key;  // 0: empty
    int32_t id;
  };

  // Fibonacci hashing of the pointer less its alignment bits.
  size_t slot(uintptr_t key) const { return static_cast<size_t>(((key >> 3) * 0x9E3779B97F4A7C15ULL) >> shift_); }

  void rehash(size_t capacity) {
    std::vector<Slot> old(capacity, Slot{0, -1});
    old.swap(slots_);
    mask_ = capacity - 1;
    shift_ = 64;
    for (size_t c = capacity; c > 1; c >>= 1) --shift_;
    count_ = 0;
    for (const Slot& s : old) {
      if (s.key != 0) set(s.key, s.id);
    }
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0, count_ = 0;
  int shift_ = 64;
};

class OpWalk {
 public:
  OpWalk(const std::string& library, nb::handle columns, nb::handle vid, nb::list value_comp, nb::dict type_index,
         nb::handle op_ptrs, nb::object no_attrs)
      : comp_(list_column(columns, "comp")),
        op_(list_column(columns, "op")),
        operand_count_(list_column(columns, "operand_count")),
        op_items_(list_column(columns, "op_items")),
        result_lists_(list_column(columns, "result_lists")),
        attrs_(list_column(columns, "attrs")),
        scope_(list_column(columns, "scope")),
        attributed_(list_column(columns, "attributed")),
        producer_(byte_array(columns.attr("producer"), "columns.producer", sizeof(int32_t))),
        shape_(list_column(columns, "shape")),
        kind_(list_column(columns, "kind")),
        index_(list_column(columns, "index")),
        element_(list_column(columns, "element")),
        where_(pointer_array(columns.attr("where"), "columns.where")),
        op_ptrs_(pointer_array(op_ptrs, "op_ptrs")),
        vid_owner_(nb::borrow(vid)),
        vid_(nb::cast<ValueIds*>(vid)),
        value_comp_(std::move(value_comp)),
        type_index_(std::move(type_index)),
        no_attrs_(std::move(no_attrs)),
        zero_(new_int(0)) {
    std::string why;
    api_ = slcore::find_mlir_capi(library, why);
    if (api_ == nullptr) throw std::runtime_error("OpWalk: " + why);
  }

  // Ops named as this one are written by the core from now on, their
  // attributes ``no_attrs``: Python found their rule needs none of them.
  void plain(uintptr_t op, nb::object code) { kinds_[api_->operation_name(at(op))] = Kind{std::move(code), ""}; }

  // Ops named as this one are written by the core once the value of their
  // ``attribute`` is known (``facts``): their rule reads that one alone.
  void keyed(uintptr_t op, nb::object code, const std::string& attribute) {
    if (attribute.empty()) throw std::invalid_argument("OpWalk.keyed: an attribute name is needed");
    kinds_[api_->operation_name(at(op))] = Kind{std::move(code), attribute};
  }

  // The facts Python extracted for ops of this one's name and value of its
  // keyed attribute (or its absence), and whether they hold one the engine's
  // set-up reads.
  void facts(uintptr_t op, nb::object attrs, bool attributed) {
    void* name = api_->operation_name(at(op));
    auto kind = kinds_.find(name);
    if (kind == kinds_.end() || kind->second.attribute.empty()) {
      throw std::invalid_argument("OpWalk.facts: the op's name is not keyed by an attribute");
    }
    // Keyed by the attribute's value, or by null where the op has none.
    facts_[{name, attribute(at(op), kind->second.attribute)}] = Facts{std::move(attrs), attributed};
  }

  // Writes the ops after ``after`` (0: from the block's start) while it can,
  // and returns the first it cannot as (op, name, operand values, result
  // values, result types, location, whether it is the block's last op),
  // each a C API pointer as an int but the name; None at the block's end.
  // ``comp_instrs`` is the computation's instruction array('i'), ``scope``
  // the function the walk is in.
  nb::object next_op(nb::handle block_capsule, uintptr_t after, int32_t comp, nb::handle comp_instrs,
                     nb::handle scope) {
    void* block = capsule_pointer(block_capsule, "OpWalk.next_op");
    if (comp < 0) throw std::invalid_argument("OpWalk.next_op: a negative computation");
    Run run{comp, comp_object(comp), byte_array(comp_instrs, "comp_instrs", sizeof(int32_t)), nb::borrow(scope),
            {}, {}, {}, {}};
    void* op = after == 0 ? api_->block_first_operation(block) : api_->operation_next_in_block(at(after));
    nb::object handed = nb::none();
    while (op != nullptr) {
      void* next = api_->operation_next_in_block(op);
      if (next == nullptr || !write(op, run)) {
        handed = handoff(op, next == nullptr);
        break;
      }
      op = next;
    }
    flush(where_, run.wheres);
    flush(op_ptrs_, run.ops);
    flush(producer_, run.producers);
    flush(run.comp_instrs, run.instrs);
    return handed;
  }

  // How many ops the core wrote (the rest were handed to Python).
  int64_t written() const { return written_; }

 private:
  struct Kind {
    nb::object code;        // the name's number in Columns.op_names
    std::string attribute;  // "" for a plain op
  };
  struct Facts {
    nb::object attrs;
    bool attributed;
  };
  struct PairHash {
    size_t operator()(const std::pair<void*, void*>& p) const {
      return std::hash<void*>()(p.first) * 31 + std::hash<void*>()(p.second);
    }
  };
  // One next_op call: its computation, and the pointers and ids written so
  // far.  The instruction ids (the computation's list, each value's producer)
  // go out as int32 bytes: as list items they cost an int object each (~7 MB
  // at 170k instructions, kept all run by Computation.instrs).
  struct Run {
    long comp;
    nb::object cid;
    nb::object comp_instrs;
    nb::object scope;
    std::vector<uint64_t> wheres, ops;
    std::vector<int32_t> producers, instrs;
  };

  static void* at(uintptr_t op) {
    if (op == 0) throw std::invalid_argument("OpWalk: a null op");
    return reinterpret_cast<void*>(op);
  }

  void* attribute(void* op, const std::string& name) const {
    return api_->operation_attribute(op, slcore::MlirStringRefC{name.data(), name.size()});
  }

  // dict[pointer] as a borrowed reference, or null where absent.
  static PyObject* lookup(const nb::object& dict, void* pointer) {
    PyObject* key = PyLong_FromVoidPtr(pointer);
    if (key == nullptr) throw nb::python_error();
    PyObject* got = PyDict_GetItemWithError(dict.ptr(), key);
    Py_DECREF(key);
    if (got == nullptr && PyErr_Occurred()) throw nb::python_error();
    return got;
  }

  // The rows of one op, as the Python walk writes a plain or keyed op's;
  // false, with nothing written, where Python must read it.
  bool write(void* op, Run& run) {
    auto kind = kinds_.find(api_->operation_name(op));
    if (kind == kinds_.end()) return false;
    PyObject* attrs = no_attrs_.ptr();
    bool attributed = false;
    if (!kind->second.attribute.empty()) {
      auto f = facts_.find({kind->first, attribute(op, kind->second.attribute)});
      if (f == facts_.end()) return false;
      attrs = f->second.attrs.ptr();
      attributed = f->second.attributed;
    }
    if (api_->operation_num_results(op) != 1) return false;
    void* result = api_->operation_result(op, 0);
    // (element, dims, rank, shape row), decoded by Python the first time it met the type.
    PyObject* type = lookup(type_index_, api_->value_type(result));
    if (type == nullptr) return false;
    if (!PyTuple_Check(type) || PyTuple_GET_SIZE(type) != 4) throw nb::type_error("OpWalk: a type_index entry");
    const intptr_t n = api_->operation_num_operands(op);
    operands_.clear();
    for (intptr_t i = 0; i < n; ++i) {
      const int32_t v = vid_->get(reinterpret_cast<uintptr_t>(api_->operation_operand(op, i)));
      if (v < 0) return false;
      if (v >= PyList_GET_SIZE(value_comp_.ptr())) throw std::out_of_range("OpWalk: a value id");
      const long home = PyLong_AsLong(PyList_GET_ITEM(value_comp_.ptr(), v));
      if (home == -1 && PyErr_Occurred()) throw nb::python_error();
      if (home != run.comp) return false;  // from an enclosing region: Python captures it
      operands_.push_back(v);
    }
    const Py_ssize_t iid = PyList_GET_SIZE(comp_.ptr());
    if (iid > INT32_MAX) throw std::overflow_error("OpWalk: more instructions than int32 ids");
    // Per-value lists all grow together; the producer array lags by what this call has not flushed.
    const Py_ssize_t value = PyList_GET_SIZE(shape_.ptr());
    if (value > INT32_MAX) throw std::overflow_error("OpWalk: more values than int32 ids");
    PyObject* vid = id_object(static_cast<int32_t>(value));
    append(comp_, run.cid.ptr());
    append(op_, kind->second.code.ptr());
    append(operand_count_, new_int(n).ptr());
    for (int32_t v : operands_) append(op_items_, id_object(v));
    append(result_lists_, vid);
    append(attrs_, attrs);
    append(scope_, run.scope.ptr());
    run.wheres.push_back(reinterpret_cast<uintptr_t>(api_->operation_location(op)));
    run.ops.push_back(reinterpret_cast<uintptr_t>(op));
    run.instrs.push_back(static_cast<int32_t>(iid));
    if (attributed) append(attributed_, new_int(iid).ptr());
    // Its one result, an array.
    run.producers.push_back(static_cast<int32_t>(iid));
    append(shape_, PyTuple_GET_ITEM(type, 3));
    append(kind_, zero_.ptr());
    append(index_, zero_.ptr());
    append(element_, PyTuple_GET_ITEM(type, 0));
    vid_->set(reinterpret_cast<uintptr_t>(result), static_cast<int32_t>(value));
    append(value_comp_, run.cid.ptr());
    ++written_;
    return true;
  }

  nb::object handoff(void* op, bool last) {
    void* id = api_->operation_name(op);
    auto named = names_.find(id);
    if (named == names_.end()) {
      const slcore::MlirStringRefC text = api_->identifier_str(id);
      PyObject* str = PyUnicode_FromStringAndSize(text.data, static_cast<Py_ssize_t>(text.length));
      if (str == nullptr) throw nb::python_error();
      named = names_.emplace(id, nb::steal(str)).first;
    }
    const intptr_t nr = api_->operation_num_results(op);
    std::vector<void*> results(static_cast<size_t>(nr));
    for (intptr_t i = 0; i < nr; ++i) results[i] = api_->operation_result(op, i);
    nb::object op_int = nb::steal(PyLong_FromVoidPtr(op));
    nb::object where = nb::steal(PyLong_FromVoidPtr(api_->operation_location(op)));
    if (!op_int.is_valid() || !where.is_valid()) throw nb::python_error();
    return nb::make_tuple(
        op_int, named->second,
        pointer_tuple(api_->operation_num_operands(op), [&](intptr_t i) { return api_->operation_operand(op, i); }),
        pointer_tuple(nr, [&](intptr_t i) { return results[i]; }),
        pointer_tuple(nr, [&](intptr_t i) { return api_->value_type(results[i]); }), where, nb::bool_(last));
  }

  // One int object per value id, shared by every row that names it (a
  // result list, the operands that read it), as the Python walk's dict of
  // ids shared its values: an object per operand cost 8 MB at L=1024.
  PyObject* id_object(int32_t v) {
    if (static_cast<size_t>(v) >= ints_.size()) ints_.resize(std::max<size_t>(2 * ints_.size(), v + 1024));
    nb::object& o = ints_[static_cast<size_t>(v)];
    if (!o.is_valid()) o = new_int(v);
    return o.ptr();
  }

  // One int object per computation id, for every call: reading a value's
  // computation back (value_comp) then finds the same few objects in cache,
  // where an object per call scattered them over the heap.
  nb::object comp_object(int32_t c) {
    if (static_cast<size_t>(c) >= comps_.size()) comps_.resize(static_cast<size_t>(c) + 1);
    nb::object& o = comps_[static_cast<size_t>(c)];
    if (!o.is_valid()) o = new_int(c);
    return o;
  }

  template <class T>
  static void flush(const nb::object& column, const std::vector<T>& items) {
    if (items.empty()) return;
    column.attr("frombytes")(nb::bytes(reinterpret_cast<const char*>(items.data()), items.size() * sizeof(T)));
  }

  const slcore::MlirCApi* api_ = nullptr;
  // Per instruction (graph.Columns).
  nb::object comp_, op_, operand_count_, op_items_, result_lists_, attrs_, scope_, attributed_;
  // Per value.
  nb::object producer_, shape_, kind_, index_, element_;
  // Per instruction, extended once per next_op call: locations and ops (Handles.op_ptrs).
  nb::object where_, op_ptrs_;
  // The walk's own tables: value pointer -> id, id -> computation, type pointer -> decoded type.
  nb::object vid_owner_;
  ValueIds* vid_;
  nb::object value_comp_, type_index_;
  nb::object no_attrs_, zero_;
  std::unordered_map<void*, Kind> kinds_;  // by the name's identifier
  std::unordered_map<std::pair<void*, void*>, Facts, PairHash> facts_;  // by (identifier, attribute)
  std::unordered_map<void*, nb::object> names_;  // one str per identifier handed over
  std::vector<int32_t> operands_;                 // one op's operand ids
  std::vector<nb::object> ints_;                  // by value id, its int (id_object)
  std::vector<nb::object> comps_;                 // by computation id, its int (comp_object)
  int64_t written_ = 0;
};

}  // namespace

void bind_import_walk(nb::module_& m) {
  m.def(
      "block_arguments",
      [](nb::handle block_capsule, const std::string& library) {
        std::string why;
        const slcore::MlirCApi* api = slcore::find_mlir_capi(library, why);
        if (api == nullptr) throw std::runtime_error("block_arguments: " + why);
        void* block = capsule_pointer(block_capsule, "block_arguments");
        const intptr_t n = api->block_num_arguments(block);
        std::vector<void*> args(static_cast<size_t>(n));
        for (intptr_t i = 0; i < n; ++i) args[i] = api->block_argument(block, i);
        return nb::make_tuple(pointer_tuple(n, [&](intptr_t i) { return args[i]; }),
                              pointer_tuple(n, [&](intptr_t i) { return api->value_type(args[i]); }));
      },
      nb::arg("block"), nb::arg("library"),
      "A block's arguments and their types, as C API pointers (the import walk's identities).");

  nb::class_<ValueIds>(m, "ValueIds",
                       "Graph value ids by C API value pointer: the import walk's table (cpp/bindings/bind_import_walk.cpp).")
      .def(nb::init<>())
      .def("__len__", &ValueIds::size)
      .def("__contains__", [](const ValueIds& t, uintptr_t key) { return t.get(key) >= 0; })
      .def("__getitem__",
           [](const ValueIds& t, uintptr_t key) {
             const int32_t id = t.get(key);
             if (id < 0) throw nb::key_error(std::to_string(key).c_str());
             return id;
           })
      .def("__setitem__", &ValueIds::set)
      .def(
          "get",
          [](const ValueIds& t, uintptr_t key, nb::object otherwise) -> nb::object {
            const int32_t id = t.get(key);
            return id < 0 ? otherwise : nb::int_(id);
          },
          nb::arg("key"), nb::arg("default") = nb::none());

  nb::class_<OpWalk>(m, "OpWalk",
                     "The import walk's ops that need no Python, written straight into the graph's columns "
                     "(cpp/bindings/bind_import_walk.cpp).")
      .def(nb::init<const std::string&, nb::handle, nb::handle, nb::list, nb::dict, nb::handle, nb::object>(),
           nb::arg("library"), nb::arg("columns"), nb::arg("vid"), nb::arg("value_comp"), nb::arg("type_index"),
           nb::arg("op_ptrs"), nb::arg("no_attrs"))
      .def("plain", &OpWalk::plain, nb::arg("op"), nb::arg("code"),
           "Ops of this op's name are written by the core, with no attributes.")
      .def("keyed", &OpWalk::keyed, nb::arg("op"), nb::arg("code"), nb::arg("attribute"),
           "Ops of this op's name are written by the core once their attribute's value has facts.")
      .def("facts", &OpWalk::facts, nb::arg("op"), nb::arg("attrs"), nb::arg("attributed"),
           "The facts of ops of this op's name and value of its keyed attribute.")
      .def("next_op", &OpWalk::next_op, nb::arg("block"), nb::arg("after"), nb::arg("comp"), nb::arg("comp_instrs"),
           nb::arg("scope"),
           "Writes the ops after `after` while it can; the first it cannot as (op, name, operands, results, "
           "types, location, last), or None at the block's end.")
      .def_prop_ro("written", &OpWalk::written, "How many ops the core wrote.");
}

}  // namespace slcore_python
