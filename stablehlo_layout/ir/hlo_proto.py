"""XLA's instruction list order, read from the HloProto an XLA dump writes beside its text.

XLA:CPU's backend demands are added walking each computation's instruction
list (XLA §10), and that list is not the order a text dump prints:
``HloComputation::AddInstructionInternal`` appends every new instruction to
the end, so what a pass made sits after everything JAX made, in the order
the passes made it.  The text has lost that order; the proto has not quite
kept it either (it lists instructions in post order too), but every
instruction carries its ``unique_id``, which the module hands out in
increasing order as instructions are added (``HloModule::NewUniqueInstructionId``).
Sorting by id gives the list's order.

XLA dumps the proto (``--xla_dump_hlo_as_proto``) beside the text:
``<stem>.txt`` and ``<stem>.hlo.pb``.  The proto's schema is read here from
the wire format alone (no generated module ships with jaxlib): HloProto
field 1 is the HloModuleProto, whose field 3 lists the computations; a
computation's field 2 lists its instructions, each with its name (field 1)
and id (field 35).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

_HLO_MODULE = 1  # HloProto.hlo_module
_COMPUTATIONS = 3  # HloModuleProto.computations
_INSTRUCTIONS = 2  # HloComputationProto.instructions
_NAME = 1  # HloInstructionProto.name
_ID = 35  # HloInstructionProto.id


def _varint(data: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, i


def _fields(data: bytes) -> Iterator[tuple[int, int | bytes]]:
    """(field number, value) of one message: ints for varints, bytes for the rest."""
    i, n = 0, len(data)
    while i < n:
        key, i = _varint(data, i)
        wire = key & 7
        if wire == 0:
            value, i = _varint(data, i)
            yield key >> 3, value
        elif wire == 2:
            size, i = _varint(data, i)
            yield key >> 3, data[i:i + size]
            i += size
        elif wire == 1:
            yield key >> 3, data[i:i + 8]
            i += 8
        elif wire == 5:
            yield key >> 3, data[i:i + 4]
            i += 4
        else:
            raise ValueError(f"wire type {wire} is not one a HloProto uses")


def _module(data: bytes) -> bytes:
    """The HloModuleProto: a dump's ``.hlo.pb`` holds an HloProto around it (a bare module lists
    computations at the top, where an HloProto has none)."""
    top = list(_fields(data))
    if any(number == _COMPUTATIONS for number, _ in top):
        return data
    for number, value in top:
        if number == _HLO_MODULE and isinstance(value, bytes):
            return value
    return data


def list_order(data: bytes) -> list[str]:
    """Every instruction's name, in the order of its computation's instruction list.

    One list for the module, by unique id: names are unique in a module, and
    only the order within each computation matters to the reader.  Raises
    ``ValueError`` for data that is not a HloProto.
    """
    found: list[tuple[int, str]] = []
    for number, comp in _fields(_module(data)):
        if number != _COMPUTATIONS or not isinstance(comp, bytes):
            continue
        for field, instr in _fields(comp):
            if field != _INSTRUCTIONS or not isinstance(instr, bytes):
                continue
            name, uid = None, None
            for f, v in _fields(instr):
                if f == _NAME and isinstance(v, bytes):
                    name = v.decode("utf-8")
                elif f == _ID and isinstance(v, int):
                    uid = v
            if name is not None and uid is not None:
                found.append((uid, name))
    found.sort()
    return [name for _, name in found]


def beside(path: str) -> str | None:
    """The ``.hlo.pb`` XLA dumped beside the text dump ``path``, if there is one."""
    if not path.endswith(".txt"):
        return None
    proto = path[: -len(".txt")] + ".hlo.pb"
    return proto if os.path.isfile(proto) else None
