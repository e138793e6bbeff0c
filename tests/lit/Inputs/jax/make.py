"""Regenerate the JAX-exported lit inputs in this folder (not run by the tests).

    python tests/lit/Inputs/jax/make.py

Each input is what ``jax.jit(f).lower(...).as_text()`` prints for a small
program built from a real JAX construct, with the layouts a user would pin.
"""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental.layout import Format, Layout, with_layout_constraint
from jax.sharding import SingleDeviceSharding

HERE = os.path.dirname(os.path.abspath(__file__))
DEV = SingleDeviceSharding(jax.devices()[0])
COL = Format(Layout((1, 0)), DEV)  # column-major: XLA {0,1}


def fori_transpose(x):
    return lax.fori_loop(0, 3, lambda i, c: jnp.sin(c.T) * 2, x)


def nested_loops(x):
    def outer(i, c):
        return lax.fori_loop(0, 2, lambda j, d: d.T + 1.0, c) * 0.5
    return lax.fori_loop(0, 4, outer, x)


def scan_cumulative(xs):
    def step(carry, x):
        carry = carry + x.T
        return carry, carry @ carry
    return lax.scan(step, jnp.zeros((4, 4)), xs)


def cond_disagree(x, p):
    return lax.cond(p, lambda a: a.T + 1, lambda a: a * 2, x)


def switch_three(x, i):
    return lax.switch(i, [lambda a: a.T, lambda a: -a, lambda a: jnp.exp(a)], x)


@jax.jit
def _inner(q):
    return jnp.tanh(q).T


def nested_jit_twice(x, y):
    return _inner(x), _inner(y)


def cholesky(a):
    return jnp.linalg.cholesky(a @ a.T + 4 * jnp.eye(a.shape[0]))


def solve(a, b):
    return jnp.linalg.solve(a + 8 * jnp.eye(a.shape[0]), b)


def layout_constraint(x):
    y = with_layout_constraint(x * 2, Layout((1, 0)))
    return y @ x


def donated(x, y):
    return x + y.T


CASES = {
    "fori_transpose": (fori_transpose, [jnp.ones((4, 4))], {}),
    "nested_loops": (nested_loops, [jnp.ones((3, 3))], {}),
    "scan": (scan_cumulative, [jnp.ones((5, 4, 4))], {}),
    "cond": (cond_disagree, [jnp.ones((3, 3)), True], {}),
    "switch": (switch_three, [jnp.ones((3, 3)), 1], {}),
    "nested_jit": (nested_jit_twice, [jnp.ones((2, 5)), jnp.ones((2, 5))], {"in_shardings": (COL, None)}),
    "cholesky": (cholesky, [jnp.ones((4, 4))], {}),
    "solve": (solve, [jnp.ones((4, 4)), jnp.ones((4, 3))], {}),
    "layout_constraint": (layout_constraint, [jnp.ones((4, 4))], {}),
    "donated": (donated, [jnp.ones((4, 4)), jnp.ones((4, 4))], {"donate_argnums": (0,)}),
}


def main() -> None:
    for name, (fn, args, kw) in CASES.items():
        text = jax.jit(fn, **kw).lower(*args).as_text()
        with open(os.path.join(HERE, f"{name}.mlir"), "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
