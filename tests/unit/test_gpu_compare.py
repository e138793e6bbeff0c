"""How the GPU differential harness pairs our answer with XLA:GPU's (tests/differential/compare.py)."""

from __future__ import annotations

import tempfile

import pytest

from tests.differential.compare import compare_dumps, physically_equal
from tests.differential.gpu_oracle import oracle_available

OK, WHY = oracle_available()


def test_physically_equal_ignores_only_size1_dims():
    assert physically_equal((2, 0, 1), (2, 1, 0), (1, 5, 8))
    assert physically_equal((3, 0, 1, 2), (3, 2, 1, 0), (2, 1, 1, 3))
    assert not physically_equal((1, 0), (0, 1), (3, 4))
    assert not physically_equal((2, 0, 1), (2, 1, 0), (2, 5, 8))


@pytest.mark.skipif(not OK, reason=WHY)
def test_a_copy_inside_a_branch_pairs_with_xlas_copy_of_the_branch_parameter():
    """XLA copies a conditional's column-major operand to row-major inside each branch; so do we.

    Ours is a copy of the caller's value (StableHLO branches read it directly),
    XLA's of the branch parameter: the same data, so the pair must match, by
    (source, layout) and as edges (the branch parameter to its reader there).
    """
    import jax
    import jax.numpy as jnp
    from jax import lax
    from jax.experimental.layout import Format, Layout
    from jax.sharding import SingleDeviceSharding

    from tests.differential.gpu_oracle import compile_for_gpu, gpu_device
    from tests.differential.oracle import find_dumps

    def f(x):
        return lax.cond(jnp.sum(x) > 0, lambda x: jnp.sort(x, axis=0) + 1.0, lambda x: jnp.sin(x) * 1.1, x)

    s = SingleDeviceSharding(gpu_device("a100"))
    with tempfile.TemporaryDirectory() as d:
        compile_for_gpu(f, [jax.ShapeDtypeStruct((6, 4), jnp.float32)], "a100", d,
                        in_shardings=(Format(Layout((1, 0)), s),))
        before, after = find_dumps(d)
        r = compare_dumps(before, after, target="xla-gpu", gpu="a100", unique_keys=True)
    assert r["status"] == "ok", r
    assert r["xla_copies"] == 2  # one per branch
    assert r["xla_copies_matched"] == 2 and r["our_copies_unmatched"] == 0, (r["xla_copy_info"], r["our_copy_info"])
    assert r["xla_edges"] == r["our_edges"] == r["edges_matched"] == 2, r["diffs"]
