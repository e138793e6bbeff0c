// The bindings' MLIR handles: the pointer in a ``_CAPIPtr`` capsule, capsules
// made from pointers, and finding MLIR's C API (mlir/mlir_capi.h).
#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>

#include "bindings/bind.h"
#include "bindings/python_handles.h"
#include "mlir/mlir_capi.h"

namespace nb = nanobind;

namespace slcore_python {

void bind_mlir(nb::module_& m) {
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
      "Finds MLIR's C API in the loaded library of that file name (cpp/mlir/mlir_capi.h); '' when found, else why not.");
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
}

}  // namespace slcore_python
