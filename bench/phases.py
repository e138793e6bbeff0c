"""The command's phases, one function each: the only file of bench/ that names engine internals.

``bench/run.py`` times them, its memory workers measure them, and
``bench/instructions.py`` counts their machine instructions.  They run what
``stablehlo-layout assign --target xla-cpu`` runs, in its order (the
cyclic collector held off over the pass, as ``assign_module`` does), minus
the output verification and the file write.  When the engine's entry points
change, this file is the one to follow them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

PHASES = ("parse", "import", "propagate", "rewrite", "print")
PASS_PHASES = ("import", "propagate", "rewrite")  # what is compared with XLA's pass


def start() -> None:
    """Import what the command imports before it reads its input (start-up, beside the interpreter's own)."""
    from stablehlo_layout.ir.deferred_numpy import import_bindings

    import_bindings()  # as cli.run does first
    # Imported for what importing them costs: the names are not used here.
    from stablehlo_layout.frontends import api as assignment, cli  # noqa: F401
    from stablehlo_layout.ir import importer, mlir, rewrite  # noqa: F401
    from stablehlo_layout.engine import driver  # noqa: F401
    from stablehlo_layout import targets  # noqa: F401


@dataclass
class State:
    ctx: Any
    module: Any = None
    graph: Any = None
    handles: Any = None
    assignment: Any = None
    copies: Any = None
    text: bytes = b""


def parse(data: bytes, path: str, single_threaded: bool = False) -> State:
    from stablehlo_layout.ir import mlir

    ctx = mlir.make_context()
    if single_threaded:  # MLIR's threads make instruction counts vary
        ctx.enable_multithreading(False)
    return State(ctx, mlir.load(data, path, ctx))


def import_(s: State) -> None:
    from stablehlo_layout.ir.importer import import_module

    s.graph, s.handles = import_module(s.module, inline_calls=True)


def propagate(s: State, target: str = "xla-cpu") -> None:
    from stablehlo_layout.engine.driver import assign_layouts
    from stablehlo_layout.targets import get_target

    s.assignment = assign_layouts(s.graph, get_target(target)[0])


def rewrite(s: State) -> None:
    from stablehlo_layout.ir.rewrite import rewrite as rewrite_module

    s.copies = rewrite_module(s.module, s.assignment, s.handles, names=False)  # as the command, without debuginfo


def print_(s: State) -> None:
    """The command's printer (the module is not read afterwards)."""
    from stablehlo_layout.ir import mlir

    s.text = mlir.final_text_bytes(s.module)


def quiet_gc():
    from stablehlo_layout.frontends.api import quiet_gc as held

    return held()


STEPS = {"import": import_, "propagate": propagate, "rewrite": rewrite, "print": print_}
