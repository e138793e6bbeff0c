// stablehlo_layout._core: the compiled core's Python face.  It only converts:
// Python lists in, Python lists out; the rooms (index, order, store, worklist,
// propagators, ...) hold the logic.
#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "bindings/python_handles.h"
#include "engine/computation.h"
#include "engine/demands.h"
#include "engine/facts.h"
#include "engine/footprint.h"
#include "engine/index.h"
#include "engine/order.h"
#include "engine/propagators.h"
#include "engine/reshape.h"
#include "mlir/mlir_capi.h"
#include "mlir/rewrite_ops.h"

namespace nb = nanobind;

namespace {

using Ids = std::vector<int32_t>;
using Flags = std::vector<uint8_t>;

slcore::Rows rows(Ids start, Ids items) {
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

Ids ids(nb::handle h, const char* what) { return column<int32_t>(h, 'i', what); }
Flags flags(nb::handle h, const char* what) { return column<uint8_t>(h, 'B', what); }
slcore::Rows id_rows(nb::handle start, nb::handle items, const char* what) {
  return rows(ids(start, what), ids(items, what));
}

// One Program per engine run, put in order from the columns the importer
// collected as it walked the module (graph.py's Columns).
struct Index : slcore::Walked {
  Ids rule_of;  // per instruction, its rule's number among the distinct rules
};

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

nb::object rows_pair(const slcore::Rows& r) { return nb::make_tuple(nb::cast(r.start), nb::cast(r.items)); }

nb::tuple layout_tuple(const slcore::Layouts& l, int32_t id) {
  nb::list out;
  for (const int32_t* d = l.begin(id); d != l.end(id); ++d) out.append(*d);
  return nb::tuple(out);
}

// The target's derivations, called back in Python: ``(instr, n, layout[, result])``
// to None or (layout id, rule name id); the rule's own to None or a layout id.
class PyDeriver : public slcore::Deriver {
 public:
  PyDeriver(nb::object back, nb::object fwd, nb::object rule)
      : back_(std::move(back)), fwd_(std::move(fwd)), rule_(std::move(rule)) {}
  bool operand_from_output(int32_t instr, int32_t n, int32_t output, int32_t& layout, int32_t& rule) override {
    return unpack(back_(instr, n, output), layout, rule);
  }
  bool output_from_operand(int32_t instr, int32_t n, int32_t operand, int32_t result, int32_t& layout,
                           int32_t& rule) override {
    return unpack(fwd_(instr, n, operand, result), layout, rule);
  }
  bool rule_operand(int32_t instr, int32_t n, int32_t output, int32_t& layout) override {
    nb::object got = rule_(instr, n, output);
    if (got.is_none()) return false;
    layout = nb::cast<int32_t>(got);
    return true;
  }

 private:
  static bool unpack(nb::object got, int32_t& layout, int32_t& rule) {
    if (got.is_none()) return false;
    auto pair = nb::cast<std::pair<int32_t, int32_t>>(got);
    layout = pair.first;
    rule = pair.second;
    return true;
  }
  nb::object back_, fwd_, rule_;
};

// The engine and the deriver it calls back through.
// The engine, the deriver it calls back through, and the targets' plans (made once per run).
struct Core {
  std::unique_ptr<PyDeriver> deriver;
  std::unique_ptr<slcore::Engine> e;
  std::vector<slcore::Plan> plans;
  Ids value_layouts;  // per value, its layout id once value_layouts ran (-1: not an array)
  // finish() ran: only the store, provenance, layouts and results are left, for reading back.
  bool finished = false;
};

// What only a run reads is gone once it finished: say so rather than read freed arrays.
void running(const Core& c) {
  if (c.finished) throw std::logic_error("engine: the run is finished; only reading the store back is left");
}

slcore::Why why(int32_t rule, int32_t instr, int32_t parent, int32_t note, int32_t made) {
  return slcore::Why{rule, instr, parent, note, made};
}

nb::object slot_tuple(const slcore::Slot& s) {
  return nb::make_tuple(s.layout, static_cast<bool>(s.mandatory), static_cast<bool>(s.dfs), s.priority, s.round,
                        s.origin);
}

PyObject* demand_error = nullptr;

using slcore_python::capsule_pointer;

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

NB_MODULE(_core, m) {
  m.doc() = "The compiled core of stablehlo-layout (see docs/DESIGN.md, the core).";
  demand_error = PyErr_NewException("stablehlo_layout._core.DemandError", PyExc_ValueError, nullptr);
  m.attr("DemandError") = nb::handle(demand_error);
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const slcore::DemandError& e) {
      nb::tuple args = nb::make_tuple(static_cast<int>(e.what), e.a, e.b, e.layout);
      PyErr_SetObject(demand_error, args.ptr());
    }
  });
  nb::list names;
  for (const char* n : slcore::kRuleNames) names.append(n);
  m.attr("RULE_NAMES") = nb::tuple(names);

  m.def(
      "capsule_pointer",
      [](nb::handle capsule) { return reinterpret_cast<uintptr_t>(capsule_pointer(capsule, "capsule_pointer")); },
      "The pointer an MLIR _CAPIPtr capsule holds, as an int (the import walk's identities).");
  m.def(
      "find_mlir_capi",
      [](const std::string& library) {
        std::string why;
        slcore::find_mlir_capi(library, why);
        return why;
      },
      "Finds MLIR's C API in the loaded library of that file name (cpp/mlir_capi.h); '' when found, else why not.");
  slcore_python::bind_import_walk(m);
  slcore_python::bind_rewrite_rows(m);
  slcore_python::bind_rewrite_copies(m);
  m.def(
      "make_capsule",
      [](uintptr_t pointer, const std::string& name) {
        // A capsule's name must outlive it: each distinct name is kept for the process.
        static std::mutex mutex;
        static std::set<std::string> names;
        const char* kept;
        {
          std::lock_guard<std::mutex> hold(mutex);
          kept = names.insert(name).first->c_str();
        }
        if (pointer == 0) throw std::invalid_argument("make_capsule: a null pointer");
        PyObject* c = PyCapsule_New(reinterpret_cast<void*>(pointer), kept, nullptr);
        if (c == nullptr) throw nb::python_error();
        return nb::steal(c);
      },
      "A capsule named `name` holding a C API pointer (for the bindings' _CAPICreate).");
  m.def(
      "capsule_name",
      [](nb::handle capsule) {
        const char* name = PyCapsule_GetName(capsule.ptr());
        if (name == nullptr) {
          PyErr_Clear();
          throw nb::type_error("capsule_name: expected a named capsule");
        }
        return std::string(name);
      },
      "The name of a capsule (the bindings' _CAPIPtr names its type).");
  m.def(
      "set_attribute_pairs",
      [](nb::handle op_column, nb::handle pair_column, const std::string& first, const std::string& second,
         const std::vector<uintptr_t>& firsts, const std::vector<uintptr_t>& seconds, const std::string& library) {
        // Op k of op_column gets attribute ``first`` = firsts[p] then ``second`` = seconds[p],
        // p being pair_column[k] (mlir/rewrite_ops.h).
        std::string why;
        const slcore::MlirCApi* api = slcore::find_mlir_capi(library, why);
        if (api == nullptr) throw std::runtime_error("set_attribute_pairs: " + why);
        const std::vector<int64_t> ops = column<int64_t>(op_column, 'q', "set_attribute_pairs ops");
        const Ids pairs = ids(pair_column, "set_attribute_pairs pairs");
        slcore::set_attribute_pairs(*api, ops, pairs, first, second, firsts, seconds);
      },
      "Sets two attributes on each op of a column from a table of attribute pairs (the rewrite's layouts).");
  m.def(
      "align_layouts",
      [](const std::vector<int64_t>& in_dims, const Ids& in_layout, const std::vector<int64_t>& out_dims) -> nb::object {
        if (in_layout.size() != in_dims.size()) throw std::invalid_argument("align_layouts: layout rank differs");
        Ids out;
        if (!slcore::align_layouts(in_dims, in_layout, out_dims, out)) return nb::none();
        return nb::tuple(nb::cast(out));
      },
      "The core's AlignLayouts (cpp/reshape.cpp), the twin of layout.align_layouts.");

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

  m.def(
      "use_rows",
      [](int32_t nv, nb::handle op_start, nb::handle op_items, nb::handle capture_owner,
         nb::handle capture_item) -> nb::tuple {
        // Every value's uses as three flat int32 columns (``graph.UseRows``): one
        // Python object per value is made only when a reader asks for its uses.
        const slcore::Rows operands = id_rows(op_start, op_items, "operands");
        const int32_t ni = operands.size();
        if (nv < 0 || ni < 0 || operands.start[0] != 0 ||
            operands.start.back() != static_cast<int32_t>(operands.items.size())) {
          throw std::invalid_argument("use_rows: the operand rows do not cover their items");
        }
        for (int32_t i = 0; i < ni; ++i) {
          if (operands.start[i] > operands.start[i + 1]) throw std::invalid_argument("use_rows: operand rows overlap");
        }
        const slcore::Rows captures = slcore::rows_from_pairs(ni, ids(capture_owner, "capture_owner"),
                                                              ids(capture_item, "capture_item"), "captures");
        for (const slcore::Rows* r : {&operands, &captures}) {
          for (int32_t v : r->items) {
            if (v < 0 || v >= nv) throw std::invalid_argument("use_rows: a use names a value out of range");
          }
        }
        slcore::Rows users, use_operand;
        slcore::value_uses(operands, captures, nv, users, use_operand);
        auto raw = [](const std::vector<int32_t>& col) {
          return nb::bytes(reinterpret_cast<const char*>(col.data()), col.size() * sizeof(int32_t));
        };
        return nb::make_tuple(raw(users.start), raw(users.items), raw(use_operand.items));
      },
      "Per value, its uses as (start, users, operand numbers) int32 bytes: own operands, then captures, in "
      "instruction order.");

  nb::class_<Index>(m, "Index")
      .def(
          "__init__",
          [](Index* self, nb::handle producer, nb::handle element_owner,
             nb::handle element_item, nb::handle comp, nb::handle kind, nb::handle while_rule, nb::handle rule_of,
             nb::handle op_start,
             nb::handle op_items, nb::handle callee_owner, nb::handle callee_item, nb::handle capture_owner,
             nb::handle capture_item, nb::handle root, nb::handle is_func, nb::handle param_start,
             nb::handle param_items, nb::handle reordered, nb::handle reorder_start, nb::handle reorder_users,
             nb::handle reorder_operands, int32_t entry) {
            slcore::Walk w;
            w.producer = ids(producer, "producer");
            w.element_owner = ids(element_owner, "element_owner");
            w.element_item = ids(element_item, "element_item");
            w.comp = ids(comp, "comp");
            w.kind = flags(kind, "kind");
            Ids rules = ids(rule_of, "rule_of");
            if (rules.size() != w.comp.size()) throw std::invalid_argument("index: rule_of has the wrong length");
            w.is_while = per_instruction(flags(while_rule, "while_rule"), rules, "index");
            w.operands = id_rows(op_start, op_items, "operands");
            w.callee_owner = ids(callee_owner, "callee_owner");
            w.callee_item = ids(callee_item, "callee_item");
            w.capture_owner = ids(capture_owner, "capture_owner");
            w.capture_item = ids(capture_item, "capture_item");
            w.root = ids(root, "root");
            w.is_func = flags(is_func, "is_func");
            w.params = id_rows(param_start, param_items, "params");
            w.reordered = ids(reordered, "reordered");
            w.reorder_users = id_rows(reorder_start, reorder_users, "reorder_users");
            w.reorder_operands = id_rows(reorder_start, reorder_operands, "reorder_operands");
            w.entry = entry;
            auto* x = new (self) Index();
            // A malformed walk is a bug on the Python side: say so, never crash.
            static_cast<slcore::Walked&>(*x) = slcore::from_walk(std::move(w));
            x->rule_of = std::move(rules);
          })
      .def(
          "rows",
          [](const Index& x, const std::string& name) -> nb::object {
            const slcore::Program& p = x.p;
            if (name == "elements") return rows_pair(p.elements);
            if (name == "operands") return rows_pair(p.operands);
            if (name == "results") return rows_pair(p.results);
            if (name == "callees") return rows_pair(p.callees);
            if (name == "instrs") return rows_pair(p.instrs);
            if (name == "captures") return rows_pair(x.captures);
            if (name == "users") return rows_pair(x.users);
            if (name == "use_operand") return rows_pair(x.use_operand);
            if (name == "used") return nb::cast(p.used);
            if (name == "is_tuple") return nb::cast(p.is_tuple);
            if (name == "is_root") return nb::cast(p.is_root);
            throw std::invalid_argument("Index.rows: no rows named " + name);
          },
          "The index's rows by name, (start, items), or a per-value / per-instruction flag list (tests read them).")
      .def(
          "tuple_shape_indices",
          [](const Index& x) {
            // Only where a result is a tuple: elsewhere the shape indices are the
            // results themselves, which the caller already holds as lists.
            nb::list out;
            Ids leaves;
            for (int32_t i = 0; i < x.p.n_instrs(); ++i) {
              bool tuple = false;
              for (const int32_t* r = x.p.results.begin(i); r != x.p.results.end(i); ++r) tuple |= x.p.is_tuple[*r];
              if (!tuple) continue;
              leaves.clear();
              for (const int32_t* r = x.p.results.begin(i); r != x.p.results.end(i); ++r) {
                slcore::append_leaves(x.p, *r, leaves);
              }
              out.append(nb::make_tuple(i, leaves));
            }
            return out;
          },
          "(instruction, shape indices) for each instruction with a tuple result.")
      .def("footprint", [](const Index& x) { return slcore::footprint(x); },
           "(structure, bytes) for each array the index holds (capacity, not size).")
      .def("computation_order", [](const Index& x) { return slcore::computation_order(x.p); },
           "Callees before callers, the entry last.")
      .def("post_order", [](const Index& x, int32_t c) { return slcore::post_order(x.p, c); },
           "The instructions of computation c in XLA's post-order.")
      .def(
          "number_buffers",
          [](const Index& x, const Ids& order, const Flags& skip) { return slcore::number_buffers(x.p, order, skip); },
          "XLA's buffer ids per value, walking the computations of order not skipped.");

  nb::class_<Core>(m, "Engine")
      .def(
          "__init__",
          [](Core* self, const Index& index, nb::handle shape_of, nb::handle shape_is_array, nb::handle shape_start,
             nb::handle shape_items, nb::handle buffer_value, nb::handle buffer_item, nb::handle hlo, nb::handle rule, nb::handle back,
             nb::handle fwd, nb::handle active, nb::handle constrained, nb::handle dim_owner, nb::handle dim_item,
             nb::handle alias_owner, nb::handle alias_item, nb::handle perm_owner, nb::handle perm_item,
             nb::handle comp_kind, nb::handle caller, bool exact, bool tracing, nb::object derive_back,
             nb::object derive_fwd, nb::object derive_rule) {
            const slcore::Program& p = index.p;
            const int32_t nv = p.n_values(), ni = p.n_instrs();
            // Per value its shape, from the few distinct shapes the importer met.
            Ids shape = ids(shape_of, "shape_of");
            const Flags shape_array = flags(shape_is_array, "shape_is_array");
            Ids extent_start = ids(shape_start, "shape_start");
            std::vector<int64_t> extents = column<int64_t>(shape_items, 'q', "shape_items");
            const int32_t n_shapes = static_cast<int32_t>(shape_array.size());
            if (static_cast<int32_t>(extent_start.size()) != n_shapes + 1 || extent_start[0] != 0 ||
                extent_start.back() != static_cast<int32_t>(extents.size())) {
              throw std::invalid_argument("engine: the shape table's rows do not cover its extents");
            }
            if (static_cast<int32_t>(shape.size()) != nv) throw std::invalid_argument("engine: shape_of has the wrong length");
            slcore::FactsInput in;
            in.is_array.resize(nv);
            in.rank.resize(nv);
            for (int32_t v = 0; v < nv; ++v) {
              const int32_t s = shape[v];
              if (s < 0 || s >= n_shapes || extent_start[s] > extent_start[s + 1]) {
                throw std::invalid_argument("engine: a value's shape is out of range");
              }
              in.is_array[v] = shape_array[s];
              in.rank[v] = extent_start[s + 1] - extent_start[s];
            }
            // The extents stay the importer's table of distinct shapes, each value naming its row.
            in.dims.shape = std::move(shape);
            in.dims.start = std::move(extent_start);
            in.dims.items = std::move(extents);
            // Each value its own buffer, but for the ones the importer pointed elsewhere (the last word counts).
            in.buffer.resize(nv);
            for (int32_t v = 0; v < nv; ++v) in.buffer[v] = v;
            const Ids shared = ids(buffer_value, "buffer_value"), target = ids(buffer_item, "buffer_item");
            if (shared.size() != target.size()) throw std::invalid_argument("engine: buffer pairs differ in length");
            for (size_t k = 0; k < shared.size(); ++k) {
              if (shared[k] < 0 || shared[k] >= nv || target[k] < 0 || target[k] >= nv) {
                throw std::invalid_argument("engine: a value's buffer is out of range");
              }
              in.buffer[shared[k]] = target[k];
            }
            in.users = index.users;
            in.use_operand = index.use_operand;
            in.kind = index.kind;
            // Per distinct rule, what the core reads of it; per instruction through rule_of.
            in.hlo = per_instruction(flags(hlo, "hlo"), index.rule_of, "engine");
            in.rule = per_instruction(column<uint16_t>(rule, 'H', "rule"), index.rule_of, "engine");
            in.back = per_instruction(flags(back, "back"), index.rule_of, "engine");
            in.fwd = per_instruction(flags(fwd, "fwd"), index.rule_of, "engine");
            in.active = flags(active, "active");
            // The sparse facts (few instructions have them): zero or empty elsewhere.
            in.layout_constrained.assign(ni, 0);
            for (int32_t i : ids(constrained, "constrained")) {
              if (i < 0 || i >= ni) throw std::invalid_argument("engine: a constrained instruction is out of range");
              in.layout_constrained[i] = 1;
            }
            in.dim.assign(ni, 0);
            const Ids dim_of = ids(dim_owner, "dim_owner"), dim_value = ids(dim_item, "dim_item");
            if (dim_of.size() != dim_value.size()) throw std::invalid_argument("engine: dim pairs differ in length");
            for (size_t k = 0; k < dim_of.size(); ++k) {
              if (dim_of[k] < 0 || dim_of[k] >= ni) throw std::invalid_argument("engine: a dim's instruction is out of range");
              in.dim[dim_of[k]] = dim_value[k];
            }
            in.captures = index.captures;
            in.aliases = slcore::rows_from_pairs(ni, ids(alias_owner, "alias_owner"), ids(alias_item, "alias_item"),
                                                 "aliases");
            in.perm = slcore::rows_from_pairs(ni, ids(perm_owner, "perm_owner"), ids(perm_item, "perm_item"), "perm");
            in.comp_kind = flags(comp_kind, "comp_kind");
            in.caller = ids(caller, "caller");
            in.params = index.params;
            auto* c = new (self) Core();
            c->deriver = std::make_unique<PyDeriver>(std::move(derive_back), std::move(derive_fwd),
                                                     std::move(derive_rule));
            c->e = std::make_unique<slcore::Engine>(index.p, slcore::build_facts(index.p, std::move(in)), exact,
                                                    tracing, c->deriver.get());
          },
          nb::keep_alive<1, 2>())
      .def("footprint", [](const Core& c) { return slcore::footprint(*c.e, c.plans); },
           "(structure, bytes) for each array the engine holds (capacity, not size).")
      // -- layouts and names
      .def("intern", [](Core& c, const Ids& dims) { return c.e->layouts.intern(dims); })
      .def("layouts_from",
           [](const Core& c, int32_t k) {
             nb::list out;
             for (int32_t i = k; i < c.e->layouts.size(); ++i) out.append(layout_tuple(c.e->layouts, i));
             return out;
           })
      // -- state the driver sets and reads
      .def_prop_rw(
          "priority", [](const Core& c) { return c.e->current_priority; },
          [](Core& c, int32_t v) { c.e->current_priority = v; })
      .def_prop_rw(
          "round", [](const Core& c) { return c.e->round; }, [](Core& c, int32_t v) { c.e->round = v; })
      .def_prop_ro("weakened", [](const Core& c) { return c.e->weakened; })
      .def("new_round", [](Core& c) { running(c); c.e->new_round(); })
      .def("set_layout_constrained", [](Core& c, int32_t i) { running(c); c.e->facts.in.layout_constrained.at(i) = 1; })
      // -- XLA's Set*Layout and the worklist
      .def("set_buffer",
           [](Core& c, int32_t layout, int32_t b, bool mandatory, bool dfs, int32_t priority, int32_t rule,
              int32_t instr, int32_t parent, int32_t note, int32_t made) { running(c);
             if (b < 0 || b >= c.e->p.n_values()) throw std::out_of_range("set_buffer: no such value");
             c.e->set_buffer(layout, b, mandatory, dfs, priority, why(rule, instr, parent, note, made));
           })
      .def("set_operand",
           [](Core& c, int32_t layout, int32_t instr, int32_t n, bool mandatory, bool dfs, int32_t priority,
              int32_t rule, int32_t at, int32_t parent, int32_t note, int32_t made) { running(c);
             if (instr < 0 || instr >= c.e->p.n_instrs() || n < 0 || n >= c.e->facts.op_values.count(instr)) {
               throw std::out_of_range("set_operand: no such operand");
             }
             c.e->set_operand(layout, instr, n, mandatory, dfs, priority, why(rule, at, parent, note, made));
           })
      .def("set_instruction",
           [](Core& c, const Ids& layouts, int32_t instr, bool mandatory, int32_t priority, int32_t rule, int32_t at,
              int32_t parent, int32_t note, int32_t made) { running(c);
             if (instr < 0 || instr >= c.e->p.n_instrs()) throw std::out_of_range("set_instruction: no such op");
             c.e->set_instruction(layouts, instr, mandatory, priority, why(rule, at, parent, note, made));
           })
      .def("demand_operands",
           [](Core& c, int32_t instr, const std::vector<std::pair<int32_t, int32_t>>& slots, int32_t priority,
              int32_t rule, int32_t at, int32_t parent, int32_t note, int32_t made) { running(c);
             if (instr < 0 || instr >= c.e->p.n_instrs()) throw std::out_of_range("demand_operands: no such op");
             const slcore::Why w = why(rule, at, parent, note, made);
             for (const auto& [n, layout] : slots) {
               if (n < 0 || n >= c.e->facts.op_values.count(instr)) {
                 throw std::out_of_range("demand_operands: no such operand");
               }
               c.e->demand_operand(instr, n, layout, priority, w);
             }
           })
      .def(
          "add_plan",
          [](Core& c, int32_t comp, Ids late, Ids instr, Flags code, Ids arg, Ids rule, Ids note, int32_t catch_all_rule,
             int32_t catch_all_note, int32_t late_note) { running(c);
            slcore::PlanInput in;
            in.comp = comp;
            in.late = std::move(late);
            in.instr = std::move(instr);
            in.code = std::move(code);
            in.arg = std::move(arg);
            in.rule = std::move(rule);
            in.note = std::move(note);
            in.catch_all_rule = catch_all_rule;
            in.catch_all_note = catch_all_note;
            in.late_note = late_note;
            c.plans.push_back(slcore::make_plan(*c.e, in));
            return static_cast<int32_t>(c.plans.size()) - 1;
          },
          "A computation's plan (cpp/demands.h), checked and laid out in list order; its id.")
      .def(
          "apply_plan",
          [](Core& c, int32_t plan, int32_t priority) { running(c);
            if (plan < 0 || plan >= static_cast<int32_t>(c.plans.size())) throw std::out_of_range("apply_plan: no such plan");
            slcore::apply_plan(*c.e, c.plans[plan], priority);
          },
          "Applies plan ``plan``'s demands at ``priority``, in order.")
      .def("push_result",
           [](Core& c, int32_t comp, Ids layouts, int32_t priority, int32_t rule, int32_t at, int32_t parent,
              int32_t note, int32_t made) { running(c);
             c.e->push_result(comp, std::move(layouts), priority, why(rule, at, parent, note, made));
           })
      .def("propagate", [](Core& c) { running(c); c.e->propagate(); })
      .def("lay_out_trivial", [](Core& c, int32_t comp) { running(c); c.e->lay_out_trivial(comp); })
      .def("lay_out_defaults",
           [](Core& c, const Ids& buffers) { running(c);
             for (int32_t b : buffers) {
               if (b < 0 || b >= c.e->p.n_values() || !c.e->facts.in.is_array[b]) {
                 throw std::out_of_range("lay_out_defaults: not an array buffer");
               }
             }
             c.e->lay_out_defaults(buffers);
           })
      // -- the store, read back
      .def("has_buffer", [](const Core& c, int32_t b) { return c.e->store.has_buffer(b); })
      .def("buffer_layout", [](const Core& c, int32_t b) { return c.e->buffer_layout(b); })
      .def("buffer",
           [](const Core& c, int32_t b) -> nb::object {
             if (b < 0 || b >= c.e->p.n_values() || !c.e->store.has_buffer(b)) return nb::none();
             return slot_tuple(c.e->store.buffer(b));
           })
      .def("history", [](const Core& c, int32_t b) { return c.e->store.history(b); })
      .def("operand",
           [](const Core& c, int32_t instr, int32_t n) -> nb::object {
             if (instr < 0 || instr >= c.e->p.n_instrs() || n < 0 || n >= c.e->facts.op_values.count(instr)) {
               return nb::none();
             }
             const int32_t s = c.e->slot(instr, n);
             if (!c.e->store.has_operand(s)) return nb::none();
             return slot_tuple(c.e->store.operand(s));
           })
      .def("buffer_order", [](const Core& c) { return c.e->store.buffer_order(); })
      .def("operand_order",
           [](const Core& c) {
             std::vector<std::pair<int32_t, int32_t>> out;
             for (int32_t s : c.e->store.operand_order()) {
               out.emplace_back(c.e->facts.slot_instr[s], c.e->facts.slot_operand(s));
             }
             return out;
           })
      .def(
          "value_layouts",
          [](Core& c, nb::list table) -> nb::object { running(c);
            // Per value, its buffer's layout as the object ``table`` holds for its id, or None
            // (not an array); a missing one is the first bad value.  The ids stay for copy_candidates.
            const slcore::FactsInput& in = c.e->facts.in;
            const int32_t nv = c.e->p.n_values();
            Ids& out = c.value_layouts;
            out.assign(nv, -1);
            for (int32_t v = 0; v < nv; ++v) {
              if (!in.is_array[v]) continue;
              const int32_t lay = c.e->buffer_layout(in.buffer[v]);
              if (lay < 0) return nb::make_tuple(v, nb::none());
              if (lay >= static_cast<int32_t>(table.size())) throw std::out_of_range("value_layouts: a layout id past the table");
              out[v] = lay;
            }
            // Sized once and filled in place: one list of shared layout objects, no int per value.
            nb::list objects = nb::steal<nb::list>(PyList_New(nv));
            for (int32_t v = 0; v < nv; ++v) {
              PyObject* x = out[v] < 0 ? Py_None : PyList_GET_ITEM(table.ptr(), out[v]);
              Py_INCREF(x);
              PyList_SET_ITEM(objects.ptr(), v, x);
            }
            return nb::make_tuple(int32_t{-1}, objects);
          },
          "(first array value without a layout or -1, per value its layout from table or None).")
      .def(
          "finish",
          [](Core& c) {
            // The readers (records.py) need the store, provenance, layouts, results and the slot
            // table; the propagators' facts, the worklist and the plans go.
            running(c);
            c.finished = true;
            c.e->facts.release_for_readers();
            c.e->work.release();
            std::vector<slcore::Plan>().swap(c.plans);
            Ids().swap(c.value_layouts);
          },
          "Frees what only the run reads (after value_layouts and copy_candidates).")
      .def(
          "copy_candidates",
          [](const Core& c) { running(c);
            // Operand slots this round (in the order first set) whose own operand's
            // layout (as value_layouts found it) differs from the demand: (instruction, operand, value, demand).
            const slcore::Engine& e = *c.e;
            const Ids& value_layout = c.value_layouts;
            if (static_cast<int32_t>(value_layout.size()) != e.p.n_values()) {
              throw std::logic_error("copy_candidates: value_layouts comes first");
            }
            std::vector<std::pair<std::pair<int32_t, int32_t>, std::pair<int32_t, int32_t>>> out;
            for (int32_t s : e.store.operand_order()) {
              const int32_t instr = e.facts.slot_instr[s], n = e.facts.slot_operand(s);
              if (n >= e.p.operands.count(instr)) continue;  // implicit captures are settled apart
              const int32_t v = e.facts.op_values.items[s];
              const int32_t have = value_layout[v], want = e.store.operand(s).layout;
              if (have >= 0 && have != want && e.facts.in.rank[v] > 0 && e.facts.in.is_array[v]) {
                out.push_back({{instr, n}, {v, want}});
              }
            }
            return out;
          })
      // -- provenance
      .def("make_origin",
           [](Core& c, int32_t rule, int32_t instr, int32_t parent, int32_t note, int kind) {
             const int32_t r = c.e->prov.make(rule, instr, parent, note);
             if (kind) c.e->prov.mark_fact(r, static_cast<slcore::Kind>(kind));
             return r;
           })
      .def("origin",
           [](const Core& c, int32_t r) {
             const slcore::Record& x = c.e->prov[r];
             return nb::make_tuple(x.rule, x.instr, x.parent, x.note, static_cast<int>(x.kind), x.a, x.b, x.layout,
                                   x.priority, static_cast<bool>(x.mandatory), static_cast<bool>(x.dfs), x.round,
                                   x.was);
           })
      .def("result_layouts", [](const Core& c, int32_t r) { return c.e->results.at(r).layouts; })
      .def_prop_rw(
          "watch", [](const Core& c) { return c.e->watch; }, [](Core& c, bool v) { c.e->watch = v; })
      .def(
          "take_deques",
          [](Core& c) {
            // Per pop, the worklist front first: ("buffer", (b,)), ("operand", (instr, n)) or ("result", (comp,)).
            nb::list out;
            const slcore::Engine& e = *c.e;
            for (const auto& d : e.deques) {
              nb::list row;
              for (const slcore::Ref& r : d) {
                if (r.kind == slcore::kBuffer) {
                  row.append(nb::make_tuple("buffer", nb::make_tuple(r.id)));
                } else if (r.kind == slcore::kOperand) {
                  row.append(nb::make_tuple("operand", nb::make_tuple(e.facts.slot_instr[r.id],
                                                                      e.facts.slot_operand(r.id))));
                } else {
                  row.append(nb::make_tuple("result", nb::make_tuple(e.results[r.id].comp)));
                }
              }
              out.append(row);
            }
            c.e->deques.clear();
            return out;
          },
          "The worklists watch recorded since the last call.")
      .def("take_events",
           [](Core& c) {
             nb::list out;
             for (auto& ev : c.e->events) {
               nb::object seeds = ev.first ? nb::cast(ev.seeds) : nb::none();
               out.append(nb::make_tuple(ev.popped, nb::cast(ev.derived), seeds));
             }
             c.e->events.clear();
             return out;
           });
  // -- the per-computation steps (cpp/computation.h), on an engine
  m.def(
      "default_buffers",
      [](const Core& c, const std::vector<int64_t>& key, const Ids& comps) {
        return rows_pair(slcore::default_buffers(*c.e, key, comps));
      },
      "Per computation of comps, its array buffers in buffer-id order: (start, items).");
  m.def(
      "lay_out_one_layout_run",
      [](Core& c, const Ids& comps) {
        slcore::Rows params, results;
        slcore::lay_out_one_layout_run(*c.e, comps, params, results);
        return nb::make_tuple(rows_pair(params), rows_pair(results));
      },
      "Lays out each computation of comps (one layout per array); their interfaces as rows of layout ids.");
  m.def(
      "pin_parameters",
      [](Core& c, const Ids& params, const Ids& layouts, const Ids& notes, int32_t rule, int32_t priority) {
        slcore::pin_parameters(*c.e, params, layouts, notes, rule, priority);
      },
      "Step 1 for parameters: each takes its layout, mandatory, from a record of its own (rule, it, note).");
  m.def(
      "interface_of",
      [](const Core& c, int32_t comp) {
        Ids params, results;
        slcore::interface_of(*c.e, comp, params, results);
        return nb::make_tuple(nb::cast(params), nb::cast(results));
      },
      "The layout ids computation comp's parameters and (array) root operands hold now; -1 for none.");
  m.def("layout_count", [](const Core& c) { return c.e->layouts.size(); }, "How many layouts the core has interned.");
}
