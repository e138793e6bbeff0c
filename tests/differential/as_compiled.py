"""``--as-compiled`` against XLA: realistic programs, from the raw export to XLA's own answer.

    python -m tests.differential.as_compiled [--target xla-cpu|xla-gpu] [--gpu h100] [NAME ...]
    python -m tests.differential.as_compiled --corpus realistic --seed 0,1 [-v] [NAME ...]

For each program below (what users write: training steps, conv nets in both
conventions, attention and its gradient, scans, linalg, layout requests):

1. XLA compiles it the way a user does, ``jax.jit(f).lower(...).compile()``
   with the layout-assignment dumps (``oracle.run_oracle``): XLA's *after*
   dump is the answer.
2. The same function is exported (``jax.export``), serialized, read back as a
   user's file would be, and run through ``compile.compile_module`` (what
   ``--as-compiled`` does): our own compile yields the module XLA is about to
   lay out.
3. ``compare.compare_dumps`` runs our pass on that module and holds every
   named value and every copy (by source value and layout) against XLA's
   after dump; entry layouts are compared separately.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
from jax import lax

from .compare import compare_dumps
from .oracle import parse_hlo, run_oracle
from .programs import layout_format

LayoutSpec = Any  # None (default), "auto", or a JAX major_to_minor tuple


@dataclass
class Realistic:
    """A program as ``oracle.run_oracle`` takes it: a function, its arguments, layout requests."""

    name: str
    fn: Callable[..., Any]
    args: list[jax.ShapeDtypeStruct]
    in_layouts: list[LayoutSpec] = field(default_factory=list)
    out_layouts: LayoutSpec = None  # one spec for every output
    device: Any = None  # the device the layouts are for (XLA:CPU's when None)
    donate: tuple[int, ...] = ()  # donated arguments (donate_argnums), as training steps donate their state

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "args": [f"{a.dtype}{list(a.shape)}" for a in self.args],
                "in_layouts": [list(s) if isinstance(s, tuple) else s for s in self.in_layouts],
                "out_layouts": self.out_layouts}

    def formats(self) -> tuple[Any, Any]:
        from jax.sharding import SingleDeviceSharding

        sharding = SingleDeviceSharding(self.device or jax.devices("cpu")[0])
        ins = tuple(layout_format(self.in_layouts[i] if i < len(self.in_layouts) else None, sharding)
                    for i in range(len(self.args)))
        return ins, layout_format(self.out_layouts, sharding)

    def exported(self) -> bytes:
        """The serialized ``jax.export`` artifact: the raw program a user hands the tool."""
        ins, outs = self.formats()
        jitted = jax.jit(self.fn, in_shardings=ins, out_shardings=outs, keep_unused=True,
                         donate_argnums=self.donate)
        platforms = None if self.device is None else ["cuda"]  # a GPU topology device says "gpu"
        # LayoutConstraint (with_layout_constraint) has no export compatibility guarantee; XLA
        # reads it all the same, and the programs here are compiled by the jaxlib that exported them.
        checks = [jax.export.DisabledSafetyCheck.custom_call("LayoutConstraint")]
        exported = jax.export.export(jitted, platforms=platforms, disabled_checks=checks)(*self.args)
        return bytes(exported.serialize())


def _f32(*shape: int, dtype: Any = jnp.float32) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(shape, dtype)


# -- the programs ---------------------------------------------------------------------


def mlp_train_step(w1, b1, w2, b2, x, y):
    def loss(params):
        w1, b1, w2, b2 = params
        h = jax.nn.relu(x @ w1 + b1)
        return jnp.mean((h @ w2 + b2 - y) ** 2)

    value, grads = jax.value_and_grad(loss)((w1, b1, w2, b2))
    new = tuple(p - 0.1 * g for p, g in zip((w1, b1, w2, b2), grads))
    return (*new, value)


def _conv_net(dn: tuple[str, str, str], spatial: tuple[int, int]):
    def loss(x, k1, k2):
        y = jax.nn.relu(lax.conv_general_dilated(x, k1, (1, 1), "SAME", dimension_numbers=dn))
        y = jax.nn.relu(lax.conv_general_dilated(y, k2, (2, 2), "SAME", dimension_numbers=dn))
        return jnp.mean(y.mean(axis=spatial) ** 2)

    def step(x, k1, k2):
        value, (g1, g2) = jax.value_and_grad(loss, argnums=(1, 2))(x, k1, k2)
        return k1 - 0.01 * g1, k2 - 0.01 * g2, value

    return step


conv_nchw_train_step = _conv_net(("NCHW", "OIHW", "NCHW"), (2, 3))
conv_nhwc_train_step = _conv_net(("NHWC", "HWIO", "NHWC"), (1, 2))


def conv_nchw_forward(x, k, b):
    y = lax.conv_general_dilated(x, k, (1, 1), "SAME", dimension_numbers=("NCHW", "OIHW", "NCHW"))
    return jax.nn.relu(y + b[None, :, None, None])


def attention(x, wq, wk, wv, wo):
    seq, model = x.shape[-2:]
    heads, head_dim = 4, model // 4

    def split(t):
        return t.reshape(*t.shape[:-1], heads, head_dim).swapaxes(-2, -3)

    q, k, v = split(x @ wq), split(x @ wk), split(x @ wv)
    probs = jax.nn.softmax(jnp.einsum("...hqd,...hkd->...hqk", q, k) / jnp.sqrt(jnp.float32(head_dim)), axis=-1)
    ctx = jnp.einsum("...hqk,...hkd->...hqd", probs, v).swapaxes(-2, -3).reshape(x.shape)
    return x + ctx @ wo


def attention_grad(x, wq, wk, wv, wo):
    return jax.grad(lambda *a: jnp.sum(attention(*a) ** 2), argnums=(1, 2, 3, 4))(x, wq, wk, wv, wo)


def rnn_scan(h0, xs, w, u):
    def cell(h, x):
        h = jnp.tanh(h @ w + x @ u)
        return h, h.sum(axis=-1)

    h, ys = lax.scan(cell, h0, xs)
    return h, ys.T


def linalg_solve(a, b):
    spd = a @ a.T + 8.0 * jnp.eye(a.shape[0], dtype=a.dtype)
    chol = jnp.linalg.cholesky(spd)
    sol = jax.scipy.linalg.cho_solve((chol, True), b)
    return sol, jnp.linalg.qr(a)[1]


def layout_constraint(x, w):
    from jax.experimental.layout import Layout, with_layout_constraint

    h = with_layout_constraint(x @ w, Layout(major_to_minor=(1, 0)))  # column-major inside the program
    return jnp.tanh(h).T + 1.0


def programs(device: Any = None) -> list[Realistic]:
    """The corpus; ``device`` says whose layouts (XLA:CPU's, or a GPU topology's device)."""
    col = (1, 0)  # JAX major_to_minor (1, 0): column-major, XLA {0,1}
    out = [
        Realistic("mlp_train_step", mlp_train_step,
                  [_f32(64, 128), _f32(128), _f32(128, 32), _f32(32), _f32(16, 64), _f32(16, 32)]),
        Realistic("mlp_train_step_auto", mlp_train_step,
                  [_f32(64, 128), _f32(128), _f32(128, 32), _f32(32), _f32(16, 64), _f32(16, 32)],
                  ["auto"] * 6, "auto"),
        Realistic("conv_nchw_train_step", conv_nchw_train_step,
                  [_f32(4, 3, 16, 16), _f32(8, 3, 3, 3), _f32(16, 8, 3, 3)]),
        Realistic("conv_nhwc_train_step", conv_nhwc_train_step,
                  [_f32(4, 16, 16, 3), _f32(3, 3, 3, 8), _f32(3, 3, 8, 16)]),
        Realistic("conv_nchw_forward_bf16", conv_nchw_forward,
                  [_f32(2, 8, 16, 16, dtype=jnp.bfloat16), _f32(16, 8, 3, 3, dtype=jnp.bfloat16),
                   _f32(16, dtype=jnp.bfloat16)]),
        Realistic("attention", attention, [_f32(2, 16, 64)] + [_f32(64, 64)] * 4),
        Realistic("attention_grad", attention_grad, [_f32(16, 64)] + [_f32(64, 64)] * 4),
        Realistic("attention_grad_auto_results", attention_grad, [_f32(16, 64)] + [_f32(64, 64)] * 4,
                  [], "auto"),
        Realistic("rnn_scan", rnn_scan, [_f32(8, 32), _f32(12, 8, 16), _f32(32, 32), _f32(16, 32)],
                  [None, None, col, None]),
        Realistic("linalg_solve", linalg_solve, [_f32(16, 16), _f32(16, 4)], [col]),
        Realistic("layout_constraint", layout_constraint, [_f32(32, 16), _f32(16, 8)], [col, "auto"]),
    ]
    if device is not None:
        from jax.sharding import SingleDeviceSharding

        sharding = SingleDeviceSharding(device)
        for p in out:
            p.device = device
            p.args = [jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=sharding) for a in p.args]
    return out


# -- the check -------------------------------------------------------------------------


def _entry_layouts(hlo_text: str) -> tuple[list[Any], Any]:
    m = parse_hlo(hlo_text)
    return m.entry_params, m.entry_result


def check(program: Realistic, target: str = "xla-cpu", gpu: Any = None, workdir: str | None = None,
          list_order: bool = True, also_blind: bool = False) -> dict[str, Any]:
    """XLA's answer for ``program`` next to ours from its raw export with ``--as-compiled``.

    Returns ``compare.compare_dumps``' report plus ``entry_agrees`` (our
    rewritten module's entry layouts against XLA's after dump), ``status``
    ``"skipped"`` with a reason when XLA refuses the program itself.
    ``list_order=False`` withholds XLA's instruction list order (the before
    module's HloProto) from our pass, as before the tool read it;
    ``also_blind`` adds that comparison as ``blind`` from the same compile.
    """
    from stablehlo_layout.ir import mlir
    from stablehlo_layout.xla.pipeline import compile_module

    with tempfile.TemporaryDirectory(prefix="as-compiled-", dir=workdir) as tmp:
        oracle = run_oracle(program, os.path.join(tmp, "xla"))
        if oracle.status != "ok":
            return {"name": program.name, "status": "skipped", "reason": oracle.reason}
        export_path = os.path.join(tmp, f"{program.name}.jax_export")
        with open(export_path, "wb") as f:
            f.write(program.exported() if hasattr(program, "exported") else _exported(program))
        ctx = mlir.make_context()
        module = mlir.read_input(export_path, ctx)
        options = {} if gpu is None else {"gpu_config": gpu.text, "gpu_label": gpu.name}
        compiled = compile_module(module, export_path, target, **options)
        ours_before = os.path.join(tmp, "ours.before.txt")
        with open(ours_before, "w") as f:
            f.write(compiled.before)
        proto = compiled.before_proto if list_order else None
        # A target object carries its GPU (compare_dumps hands it to assign_module as it is).
        rules = target if gpu is None else _gpu_target(gpu)
        blind = compare_dumps(ours_before, oracle.after, target=rules) if also_blind and proto else None
        if proto is not None:  # beside the text, as XLA dumps it: mlir.read_input finds it
            with open(os.path.join(tmp, "ours.before.hlo.pb"), "wb") as f:
                f.write(proto)
        out = compare_dumps(ours_before, oracle.after, target=rules)
        if also_blind:
            out["blind"] = blind or out
        with open(oracle.after) as f:
            xla_params, xla_result = _entry_layouts(f.read())
        with open(oracle.before) as f:
            xla_before = f.read()
    out["name"] = program.name
    out["same_module"] = _body(xla_before) == _body(compiled.before)
    if out["status"] == "ok":
        from stablehlo_layout.frontends.api import assign_module

        ctx = mlir.make_context()
        r = assign_module(mlir.load(compiled.before, export_path, ctx, hlo_proto=proto), rules)
        ours = [tuple(x) if x is not None else None for x in r.assignment.entry_params]
        xla = [p.layout for p in xla_params]
        ours_res = [tuple(x) if x is not None else None for x in r.assignment.entry_results]
        xla_res = [p.layout for p in (xla_result if isinstance(xla_result, list) else [xla_result])]
        out["entry"] = {"ours": [ours, ours_res], "xla": [xla, xla_res]}
        out["entry_agrees"] = _same(ours, xla) and _same(ours_res, xla_res)
    return out


def _exported(program: Any) -> bytes:
    """The raw export of a generated program (``programs.Program``), as ``Realistic.exported``."""
    ins, outs = program.formats()
    jitted = jax.jit(program.fn, in_shardings=ins, out_shardings=outs, keep_unused=True)
    return bytes(jax.export.export(jitted)(*program.args).serialize())


def _flat_results(model: Any) -> Realistic:
    """A models.py program as a raw export holds it: results flattened (an export serializes no
    optimizer-state classes), entry layouts left to JAX."""
    def fn(*xs: Any) -> Any:
        return tuple(jax.tree_util.tree_leaves(model.fn(*xs)))

    fn.__name__ = fn.__qualname__ = model.name
    return Realistic(model.name, fn, list(model.args))


def _gpu_target(gpu: Any) -> Any:
    from stablehlo_layout.targets import get_target

    target, _ = get_target("xla-gpu", gpu.name)  # type: ignore[call-arg]
    return target


def _same(ours: list[Any], xla: list[Any]) -> bool:
    # XLA prints no layout for a scalar; ours is ().
    return len(ours) == len(xla) and all((a or ()) == (b or ()) for a, b in zip(ours, xla))


def _body(hlo_text: str) -> str:
    """The program: no header line (compile options differ there) and no metadata (call stacks differ)."""
    from .oracle import strip_attribute

    body = hlo_text.split("\n", 1)[1] if "\n" in hlo_text else ""
    start = body.find("\n\n\n%")
    if start < 0:
        start = body.find("\nENTRY")
    return strip_attribute(body[start:] if start >= 0 else body, "metadata")


def copy_classes(r: dict[str, Any]) -> dict[str, int]:
    """XLA's copies in ``r`` by how they stand against ours.

    ``matched``: we make a copy of the same source value into the same layout;
    ``duplicate``: a second copy of a (source, layout) XLA already copies
    (XLA copies once per use, we once per value); ``no_data``: unmatched, and
    its source's layout orders the same bytes as its own (a same-layout copy,
    or layouts that differ only in size-1 dimensions); ``unmatched``: the rest.
    """
    out = {"matched": 0, "duplicate": 0, "no_data": 0, "unmatched": 0}
    seen: set[tuple[str, str]] = set()
    mine = {(c["src"], c["dst"]) for c in r.get("our_copy_info", [])}
    for c in r.get("xla_copy_info", []):
        key = (c["src"], c["dst"])
        if key in seen:
            out["duplicate"] += 1
            continue
        seen.add(key)
        if c["matched"] or key in mine:
            out["matched"] += 1
        elif c["src_layout"] == c["dst"] or _only_unit_dims_differ(c):
            out["no_data"] += 1
        else:
            out["unmatched"] += 1
    return out


def _only_unit_dims_differ(c: dict[str, Any]) -> bool:
    import re

    m = re.search(r"\[([0-9,]*)\]", c.get("line", ""))
    if not m or c["src_layout"] in ("-", None):
        return False
    dims = tuple(int(x) for x in m.group(1).split(",") if x)
    parse = lambda t: tuple(int(x) for x in t.strip("{}").split(",") if x)  # noqa: E731
    a, b = parse(c["src_layout"]), parse(c["dst"])
    return len(a) == len(b) == len(dims) and [d for d in a if dims[d] != 1] == [d for d in b if dims[d] != 1]


def summary_line(r: dict[str, Any]) -> str:
    if r.get("status") != "ok":
        return f"{r['name']}: {r.get('status')} {r.get('reason') or r.get('error', '')}"
    k = copy_classes(r)
    return (f"{r['name']}: values {r['agree']}/{r['values']}, XLA copies {r['xla_copies']} (matched "
            f"{r['xla_copies_matched']}; {k['duplicate']} duplicates, {k['no_data']} move no data, "
            f"{k['unmatched']} unmatched), ours {r['our_copies']}, edges matched {r['edges_matched']}/"
            f"{r['xla_edges']}, entry {'agrees' if r['entry_agrees'] else 'DIFFERS'}, same module as jit: "
            f"{r['same_module']}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--target", default="xla-cpu", choices=("xla-cpu", "xla-gpu"))
    ap.add_argument("--gpu", default="h100")
    ap.add_argument("--generated", type=int, default=0, metavar="N",
                    help="also the first N programs of the differential generator (seed 0; XLA:CPU)")
    ap.add_argument("--corpus", choices=("programs", "realistic", "models"), default="programs",
                    help="the 11 hand-written programs, realistic.py's programs or models.py's 24 (XLA:CPU)")
    ap.add_argument("--seed", default="0", help="the realistic corpus' seeds, comma-separated (0 is the one "
                    "its rules were written against)")
    ap.add_argument("--no-list-order", action="store_true",
                    help="withhold XLA's instruction list order (the HloProto) from our pass, as before it read it")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every unmatched XLA copy")
    ap.add_argument("names", nargs="*")
    args = ap.parse_args(argv)
    device = gpu = None
    if args.target == "xla-gpu":
        from stablehlo_layout.targets.gpu_config import load_gpu
        from stablehlo_layout.xla.gpu_deviceless import deviceless_device

        gpu = load_gpu(args.gpu)
        device = deviceless_device(gpu.text)
    corpus: list[Any]
    if args.corpus == "realistic":
        from .realistic import corpus as realistic

        corpus = [p for seed in args.seed.split(",") for p in realistic(int(seed), args.names)]
    elif args.corpus == "models":
        from .models import MODELS, build

        corpus = [_flat_results(build(n)) for n in MODELS if not args.names or n in args.names]
    else:
        corpus = programs(device)
    if args.generated:
        from .programs import generate

        corpus += [generate(0, i) for i in range(args.generated)]
    totals = {"programs": 0, "agree": 0, "values": 0, "xla_edges": 0, "edges_matched": 0, "entry": 0,
              "xla_copies": 0, "xla_copies_matched": 0}
    classes = {"matched": 0, "duplicate": 0, "no_data": 0, "unmatched": 0}
    blind = {"xla_copies_matched": 0, "xla_copies": 0, "agree": 0, "values": 0}
    blind_classes = dict(classes)
    for p in corpus:
        if args.names and p.name not in args.names:
            continue
        r = check(p, args.target, gpu, list_order=not args.no_list_order, also_blind=args.corpus != "programs")
        print(summary_line(r))
        if r.get("status") == "ok":
            totals["programs"] += 1
            totals["entry"] += bool(r["entry_agrees"])
            for k in ("agree", "values", "xla_edges", "edges_matched", "xla_copies", "xla_copies_matched"):
                totals[k] += r[k]
            for k, n in copy_classes(r).items():
                classes[k] += n
            if "blind" in r:
                b = r["blind"]
                blind["xla_copies_matched"] += b.get("xla_copies_matched", 0)
                blind["xla_copies"] += b.get("xla_copies", 0)
                blind["agree"] += b.get("agree", 0)
                blind["values"] += b.get("values", 0)
                for k, n in copy_classes(b).items():
                    blind_classes[k] += n
        for d in r.get("diffs", [])[:None if args.verbose else 5]:
            print(f"    {d['kind']}: {d['name']} ours/xla {d.get('ours', d.get('layout'))} {d.get('xla', '')}")
        if args.verbose:
            for c in r.get("xla_copy_info", []):
                if not c["matched"]:
                    print(f"    unmatched XLA copy: {c['src']} {c['src_layout']} -> {c['dst']}: {c['line']}")
        sys.stdout.flush()
    print(f"total: {totals['programs']} programs compared, entry layouts agree on {totals['entry']}, "
          f"values {totals['agree']}/{totals['values']}, XLA copy edges matched "
          f"{totals['edges_matched']}/{totals['xla_edges']}")
    print(f"XLA copies matched by (source, layout): {totals['xla_copies_matched']}/{totals['xla_copies']}; "
          f"by class: {classes['matched']} matched, {classes['duplicate']} one-per-use duplicates, "
          f"{classes['no_data']} unmatched that move no data, {classes['unmatched']} unmatched")
    if blind["xla_copies"]:
        print(f"without XLA's list order (the HloProto): values {blind['agree']}/{blind['values']}, XLA copies "
              f"matched {blind['xla_copies_matched']}/{blind['xla_copies']}; by class: {blind_classes['matched']} "
              f"matched, {blind_classes['duplicate']} one-per-use duplicates, {blind_classes['no_data']} unmatched "
              f"that move no data, {blind_classes['unmatched']} unmatched")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
