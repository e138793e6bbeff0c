"""The child process that compiles a partitioned module for XLA:CPU's N host devices (``partitioned.py``).

    python -m stablehlo_layout.xla.partitioned_child '{"path": ..., "entry_layouts": ...}' < bytecode

Started with ``--xla_force_host_platform_device_count=N`` in ``XLA_FLAGS``, so
jax makes N host devices; it prints XLA's dumps as JSON on stdout, or one line
(the ``InputError``) on stderr and exits 1.
"""

from __future__ import annotations

import json
import sys

from stablehlo_layout.model.errors import InputError


def _child(argv: list[str]) -> int:
    """Bytecode on stdin, the dumps as JSON on stdout, or one line on stderr and status 1."""
    spec = json.loads(argv[0])
    from stablehlo_layout.ir import mlir
    from stablehlo_layout.xla.pipeline import compile_module

    try:
        module = mlir.load(sys.stdin.buffer.read(), spec["path"], mlir.make_context())
        compiled = compile_module(module, spec["path"], "xla-cpu", spec["entry_layouts"])
    except InputError as e:  # its reason: the parent says it of its own input
        print(" ".join(e.reason.split()), file=sys.stderr)
        return 1
    json.dump({"before": compiled.before, "after": compiled.after, "note": compiled.note}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1:]))
