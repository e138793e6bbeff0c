"""Pinned entry layouts hold, as XLA holds them (XLA §8.5).

A pinned entry parameter keeps its pin; with every array result pinned (or
fixed by the caller) each pinned result is returned in its pin, through a root
copy where its value is laid out otherwise.  The engine checks both after
every run (``result.check_entry_pins``) and fails loudly, as XLA's
``PropagateComputationLayouts`` does.  The one case where a pinned result
changes is XLA's own: a result layout with a leaf left ``auto`` is not set for
XLA, and the pass replaces it whole, the other results' pins included
(issue #32 item 4: library conv nets on XLA:GPU return their filters
``{2,1,0,3}`` / ``{1,3,2,0}``, a flax transformer's gradient on XLA:CPU
``{0,2,1}`` / ``{1,0,2}``).  There the tool matches XLA and says so in a note
for each such result.
"""

from __future__ import annotations

import pytest

from stablehlo_layout.engine.result import check_entry_pins
from stablehlo_layout.frontends.api import assign_module
from stablehlo_layout.ir import mlir
from stablehlo_layout.model.errors import PassError
from tests.support.tiers import ORACLE

jax = pytest.importorskip("jax")
jnp = jax.numpy


def _row_major(rank: int) -> tuple[int, ...]:
    return tuple(range(rank - 1, -1, -1))


def _check(assignment, notes: list[str]) -> None:
    """Every pinned parameter has its pin; every pinned result has it or a note says why not."""
    a = assignment
    for i, (want, have) in enumerate(zip(a.given_params, a.entry_params)):
        if want is not None:
            assert tuple(have) == tuple(want), f"parameter {i}"
    for i, (want, have) in enumerate(zip(a.given_results, a.entry_results)):
        if want is not None and tuple(have) != tuple(want):
            assert any(n.startswith(f"note: entry result {i} ") for n in notes), f"result {i}: no note"


# -- every generated program (pins, auto and free entry layouts mixed), CPU and GPU rules ---------------

@pytest.mark.parametrize("target", ["xla-cpu", "xla-gpu"])
def test_generated_programs_keep_their_pins(target: str) -> None:
    from tests.differential.programs import generate

    ctx = mlir.make_context()
    checked = dropped = 0
    for i in range(25):
        p = generate(0, i)
        ins, outs = p.formats()
        text = jax.jit(p.fn, in_shardings=ins, out_shardings=outs, keep_unused=True).lower(*p.args).as_text()
        r = assign_module(mlir.load(text.encode(), p.name, ctx), target, "default")
        _check(r.assignment, r.warnings)
        checked += 1
        dropped += sum(1 for w in r.warnings if "was pinned to" in w)
    assert checked == 25


# -- the loud failure ------------------------------------------------------------------------------------

def test_a_changed_pin_is_an_internal_error() -> None:
    def f(x):
        return (x.T @ x).T

    text = jax.jit(f).lower(jnp.ones((8, 4))).as_text()
    r = assign_module(mlir.load(text.encode(), "f", mlir.make_context()), "xla-cpu", "default")
    a = r.assignment
    with pytest.raises(PassError, match="internal: entry parameter 0 is pinned"):
        check_entry_pins(a.graph, a.layouts, a.copies, [(0, 1)], a.entry_results, [(1, 0)],
                         a.given_results, True)
    root_value = a.graph.instrs[a.graph.comps[a.graph.entry].root].operands[0]
    layouts = list(a.layouts)
    layouts[root_value] = (0, 1)
    with pytest.raises(PassError, match="internal: entry result 0 is pinned"):
        check_entry_pins(a.graph, layouts, [], a.entry_params, a.entry_results, a.given_params,
                         a.given_results, True)


# -- against the real XLA: pins kept, or dropped exactly where XLA drops them ---------------------------

def _transposing(x, w):
    y = jnp.einsum("abc,cd->abd", x, w)
    return y.transpose(2, 0, 1) * 2, jnp.sum(y), y.transpose(1, 2, 0) + 1


def test_cpu_pins_kept_and_an_auto_result_drops_them_as_xla_does() -> None:
    from jax.experimental.layout import Layout

    from stablehlo_layout.frontends.jax import analyze

    x, w = jnp.ones((4, 8, 16)), jnp.ones((16, 32))
    pinned = analyze(_transposing, x, w, target="xla-cpu", verify=True)
    assert pinned.verified, pinned.mismatches
    assert [e.minor_to_major for e in pinned.results] == [(2, 1, 0), (), (2, 1, 0)]
    assert not any("was pinned to" in w for w in pinned.warnings)
    mixed = analyze(_transposing, x, w, target="xla-cpu", verify=True, out_layouts=[Layout.AUTO, None, None])
    assert mixed.verified, mixed.mismatches  # XLA:CPU replaces the pin of result 2 too
    assert mixed.results[2].minor_to_major != (2, 1, 0)
    assert [w for w in mixed.warnings if w.startswith("note: entry result 2 ")], mixed.warnings


def _train_step(m, x, y, opt):
    """A flax model's training step with batch statistics and an optax update, and its arguments."""
    import optax

    v = m.init(jax.random.PRNGKey(0), x)
    s = opt.init(v["params"])

    def step(params, stats, s, x, y):
        def loss(p):
            out, upd = m.apply({"params": p, "batch_stats": stats}, x, mutable=["batch_stats"])
            return -jnp.mean(jax.nn.log_softmax(out)[jnp.arange(2), y]), upd

        (value, upd), g = jax.value_and_grad(loss, has_aux=True)(params)
        u, s2 = opt.update(g, s, params)
        return optax.apply_updates(params, u), upd["batch_stats"], s2, value

    return step, (v["params"], v["batch_stats"], s, x, y)


def _flax_cnn_step():
    flax_linen = pytest.importorskip("flax.linen")
    optax = pytest.importorskip("optax")
    nn = flax_linen

    class CNN(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.relu(nn.BatchNorm(use_running_average=False)(nn.Conv(8, (3, 3))(x)))
            x = nn.max_pool(x, (2, 2), (2, 2))
            x = nn.relu(nn.GroupNorm(4)(nn.Conv(16, (3, 3))(x)))
            return nn.Dense(10)(x.reshape(x.shape[0], -1))

    m, x, y = CNN(), jnp.ones((2, 8, 8, 3)), jnp.zeros((2,), jnp.int32)
    return _train_step(m, x, y, optax.adam(1e-3))


@ORACLE  # a flax train step compiled twice by XLA:GPU: ~15 s each
@pytest.mark.parametrize("mode", ["pinned", "loss-auto"])
def test_flax_conv_train_step_on_gpu(mode: str) -> None:
    """The conv net's filters come out of cuDNN {2,1,0,3} (OHWI): pinned, XLA:GPU copies them back."""
    from jax.experimental.layout import Layout

    from stablehlo_layout.frontends.jax import analyze
    from tests.differential.gpu_oracle import oracle_available

    ok, why = oracle_available()
    if not ok:
        pytest.skip(why)
    step, args = _flax_cnn_step()
    n_out = len(jax.tree.leaves(jax.eval_shape(step, *args)))
    out = None if mode == "pinned" else [None] * (n_out - 1) + [Layout.AUTO]
    a = analyze(step, *args, target="xla-gpu", gpu="h100", verify=True, out_layouts=out)
    assert not a.verification.entry_mismatches, a.verification.entry_mismatches
    filters = [e for e in a.results if e.shape.startswith("f32[3,3,")]
    assert filters
    if mode == "pinned":
        assert all(e.minor_to_major == (3, 2, 1, 0) for e in filters)
    else:  # the loss left to XLA: XLA lays every result out, the filters as cuDNN wrote them
        assert all(e.minor_to_major == (2, 1, 0, 3) for e in filters)
        assert len([w for w in a.warnings if "was pinned to {3,2,1,0}" in w]) == len(filters)


def _resnet18_step():
    flax_linen = pytest.importorskip("flax.linen")
    optax = pytest.importorskip("optax")
    nn = flax_linen

    class Block(nn.Module):
        c: int
        stride: int = 1

        @nn.compact
        def __call__(self, x):
            r = x
            x = nn.relu(nn.BatchNorm(use_running_average=False)(
                nn.Conv(self.c, (3, 3), (self.stride, self.stride), use_bias=False)(x)))
            x = nn.BatchNorm(use_running_average=False)(nn.Conv(self.c, (3, 3), use_bias=False)(x))
            if r.shape != x.shape:
                r = nn.BatchNorm(use_running_average=False)(
                    nn.Conv(self.c, (1, 1), (self.stride, self.stride), use_bias=False)(r))
            return nn.relu(x + r)

    class Net(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.relu(nn.BatchNorm(use_running_average=False)(nn.Conv(16, (7, 7), (2, 2), use_bias=False)(x)))
            x = nn.max_pool(x, (3, 3), (2, 2), "SAME")
            for i, c in enumerate((16, 32, 64, 128)):  # resnet18's stages, narrower
                x = Block(c, 1)(Block(c, 1 if i == 0 else 2)(x))
            return nn.Dense(10)(jnp.mean(x, (1, 2)))

    m, x, y = Net(), jnp.ones((2, 32, 32, 3)), jnp.zeros((2,), jnp.int32)
    return _train_step(m, x, y, optax.sgd(0.1, 0.9))


@ORACLE  # a resnet18 train step compiled twice by XLA:GPU: ~25 s
def test_all_auto_resnet_train_step_on_gpu() -> None:
    """Every entry layout AUTO (issue #32 item 4): a filter read by the forward convolution
    ({2,1,0,3}) and the data-gradient one ({3,1,0,2}) takes the first in round 0, the update
    takes the second in round 1, and XLA returns what round 0 recorded, through a root copy."""
    from jax.experimental.layout import Layout

    from stablehlo_layout.frontends.jax import analyze
    from tests.differential.gpu_oracle import oracle_available

    ok, why = oracle_available()
    if not ok:
        pytest.skip(why)
    step, args = _resnet18_step()
    a = analyze(step, *args, target="xla-gpu", gpu="h100", verify=True, fixes=False,
                in_layouts=Layout.AUTO, out_layouts=Layout.AUTO)
    assert not a.verification.entry_mismatches, a.verification.entry_mismatches
