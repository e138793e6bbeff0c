"""The floor the command is measured against: parse, walk every op once, print.

    python bench/baseline.py FILE > OUT

Loads FILE with the MLIR bindings as ``stablehlo-layout assign`` does
(``mlir.read_input``: the same parser, verifier and HLO importer, the
bindings imported as the command imports them, numpy deferred), visits
every operation of the module once through the bindings (reading its name
and its results, the least a one-walk import can do), prints the module
through the command's own printer (``mlir.final_text_bytes``) to stdout and
leaves with ``os._exit``, as the console command does.  ``bench/run.py``
runs it beside the command and compares their peak RSS and wall time: what
the command needs beyond this is the cost of layout assignment itself.
"""

from __future__ import annotations

import os
import sys


def walk(op) -> int:
    """Pre-order over every nested op, without recursion; returns how many there were."""
    n = 0
    stack = [iter([op])]
    while stack:
        inner = next(stack[-1], None)
        if inner is None:
            stack.pop()
            continue
        n += 1
        _ = inner.name, len(inner.results)
        if len(inner.regions):
            stack.append(iter([v.operation for r in inner.regions for b in r.blocks for v in b.operations]))
    return n


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        sys.stderr.write("usage: python bench/baseline.py FILE\n")
        return 2
    from stablehlo_layout.ir.deferred_numpy import import_bindings

    import_bindings()  # the command's start-up: the bindings without numpy
    from stablehlo_layout.ir import mlir
    from stablehlo_layout.model.errors import InputError

    ctx = mlir.make_context()
    try:
        module = mlir.read_input(argv[0], ctx)
    except InputError as e:
        sys.stderr.write(f"{e}\n")
        return 1
    ops = walk(module.operation)
    if ops < 2:
        sys.stderr.write(f"{argv[0]}: error: the walk found no operations\n")
        return 1
    sys.stdout.buffer.write(mlir.final_text_bytes(module))
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stderr.flush()
    os._exit(code)
