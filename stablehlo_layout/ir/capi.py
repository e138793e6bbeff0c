"""MLIR's C API through the compiled core: the one place ``ir/`` reaches ``_core``.

jaxlib links MLIR's C API into one library without exporting it; the core
finds the functions there by name (``cpp/mlir/``).  The import walk reads
blocks, and the rewrite writes attributes and copies, through it by pointer,
where the bindings would make a Python object per op, operand and type.
Here the library's name is supplied once, and objects become pointers.

Each function looks its core function up when called, so that a test can
stand another in for one of ``_core``'s.
"""

from __future__ import annotations

from array import array
from typing import Any

from stablehlo_layout import _core

# jaxlib's library that holds MLIR, and with it MLIR's C API (cpp/mlir/mlir_capi.h).
CAPI_LIBRARY = "libjax_common.so"


def pointer(obj: Any) -> int:
    """The C API pointer of a bindings object (an op, value, block, type, attribute or location)."""
    return _core.capsule_pointer(obj._CAPIPtr)


def capsule_name(obj: Any) -> str:
    """The name the bindings give the capsule of objects of ``obj``'s kind."""
    return _core.capsule_name(obj._CAPIPtr)


def capsule(pointer: int, name: str) -> Any:
    """A capsule named ``name`` holding ``pointer``, for the bindings' ``_CAPICreate``."""
    return _core.make_capsule(pointer, name)


def unusable_reason() -> str:
    """Why the core cannot reach the C API in jaxlib's library ('' when it can)."""
    return _core.find_mlir_capi(CAPI_LIBRARY)


def block_arguments(block: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """A block's arguments and their types, as C API pointers."""
    return _core.block_arguments(block._CAPIPtr, CAPI_LIBRARY)


def value_ids() -> Any:
    """The core's table from a value's pointer to its id (``ValueIds``)."""
    return _core.ValueIds()


def op_walk(columns: Any, vid: Any, value_comp: list[int], type_index: dict, op_ptrs: array,
            no_attrs: dict) -> Any:
    """The core's half of the import walk (``OpWalk``), appending to ``columns``."""
    return _core.OpWalk(CAPI_LIBRARY, columns, vid, value_comp, type_index, op_ptrs, no_attrs)


def use_rows(values: int, op_start: array, op_items: array, capture_owner: array,
             capture_item: array) -> tuple:
    """Every value's uses as three int32 columns (``graph.UseRows``)."""
    return _core.use_rows(values, op_start, op_items, capture_owner, capture_item)


def column_packers() -> tuple[Any, Any, Any]:
    """The core's packers of the walk's lists (``graph.Columns.freeze``)."""
    return _core.int32_bytes, _core.start_bytes, _core.row_bytes


def annotation_rows(*columns: Any) -> tuple:
    """The single-array ops and their (xla_shape, result_layout) pair rows (``cpp/bindings``)."""
    return _core.annotation_rows(*columns)


def set_attribute_pairs(ops: array, rows: array, first: str, second: str, firsts: list[int],
                        seconds: list[int]) -> None:
    """Set two attributes on each op at once, ``rows`` choosing its pair."""
    _core.set_attribute_pairs(ops, rows, first, second, firsts, seconds, CAPI_LIBRARY)


def insert_copies(name: str, *rows: Any) -> None:
    """Create, insert and wire the copies whose rows are given (``cpp/bindings``)."""
    _core.insert_copies(CAPI_LIBRARY, name, *rows)
