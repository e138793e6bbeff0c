"""explain on sharded programs: the collective and mesh axis behind a copy, each value's sharding,
and ``analyze`` on sharded functions compiled for a mesh of N compile-only devices (issue 32 item 3).

The mesh algebra (``model/mesh.py``) is checked on meshes whose groups are
worked out by hand; ``analyze`` on a ``shard_map`` function and on a
``jax.jit`` with ``NamedSharding`` over an ``AbstractMesh`` (this process has
one CPU device: the compile runs in a child with 8 host devices) and, in a
process started with 8 host devices, over a concrete ``Mesh`` (the compile runs
in process).  ``verify=True`` holds our copies and entry layouts against XLA's
own after-layout-assignment module of the same compile.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from stablehlo_layout.model.errors import InputError
from stablehlo_layout.model.mesh import Mesh, permute_axis, unnamed_axis
from tests.support.tiers import ORACLE

MESH = Mesh((("data", 2), ("model", 4)))


def test_groups_name_the_axes_they_span():
    assert MESH.axes_of_groups(((0, 1, 2, 3), (4, 5, 6, 7))) == ("model",)
    assert MESH.axes_of_groups(((0, 4), (1, 5), (2, 6), (3, 7))) == ("data",)
    assert MESH.axes_of_groups((tuple(range(8)),)) == ("data", "model")
    # Groups no set of axes makes (a device in two groups' places) name none.
    assert MESH.axes_of_groups(((0, 1), (2, 3), (4, 5), (6, 7))) is None


def test_device_ids_reorder_the_mesh():
    # The mesh lists its devices row-major: here the minor axis runs over 0, 2, 4, 6.
    mesh = Mesh((("a", 2), ("b", 4)), (0, 2, 4, 6, 1, 3, 5, 7))
    assert mesh.axes_of_groups(((0, 2, 4, 6), (1, 3, 5, 7))) == ("b",)
    assert mesh.axes_of_groups(((0, 1), (2, 3), (4, 5), (6, 7))) == ("a",)


def test_pairs_name_the_axis_they_move_along():
    ring = [(r * 4 + i, r * 4 + (i + 1) % 4) for r in range(2) for i in range(4)]
    assert MESH.axes_of_pairs(ring) == ("model",)
    assert MESH.axes_of_pairs([(0, 4), (4, 0)]) == ("data",)
    assert permute_axis(ring) == "4 devices, stride 1"


def test_unnamed_axes_by_size_and_stride():
    assert unnamed_axis(((0, 1, 2, 3), (4, 5, 6, 7))) == "4 devices, stride 1"
    assert unnamed_axis(((0, 4), (1, 5), (2, 6), (3, 7))) == "2 devices, stride 4"
    assert unnamed_axis(((0, 1, 3), (2, 4, 5))) is None
    assert unnamed_axis(((0,), (1,))) == "1 device"


def _shard_map_program():
    import jax
    import jax.numpy as jnp
    from jax import lax
    from jax.sharding import AbstractMesh, NamedSharding, PartitionSpec as P

    mesh = AbstractMesh((2, 4), ("data", "model"))

    def local(x, w):
        full = lax.all_gather(x, "model", axis=1, tiled=True)
        return jnp.tanh(full @ w)

    f = jax.shard_map(local, mesh=mesh, in_specs=(P("data", "model"), P(None, "model")),
                      out_specs=P("data", "model"), check_vma=False)
    x = jax.ShapeDtypeStruct((16, 32), jnp.float32, sharding=NamedSharding(mesh, P("data", "model")))
    w = jax.ShapeDtypeStruct((32, 32), jnp.float32, sharding=NamedSharding(mesh, P(None, "model")))
    return f, x, w


def test_analyze_shard_map_names_the_collective_and_axis():
    from stablehlo_layout.frontends.jax import analyze

    f, x, w = _shard_map_program()
    a = analyze(f, x, w, verify=True)
    assert a.verified, a.mismatches
    assert a.verification is not None and a.verification.oracle.startswith("XLA:CPU (8 devices)")
    # XLA:CPU wants the gathered dimension most major: a copy on each side of the all-gather,
    # on XLA's per-device module ([16,32] over data x model is [8,8] on each device).
    gathered = [c for c in a.copies if any(x.op == "all-gather" for x in c.collectives)]
    assert {c.shape for c in gathered} == {"f32[8,8]", "f32[8,32]"}
    for c in gathered:
        (col,) = c.collectives
        assert col.mesh_axes == ("model",) and col.dimension == 1
        assert col.devices == "{{0,1,2,3},{4,5,6,7}}"
    assert [e.sharding for e in a.params] == ["P('data', 'model') on @mesh", "P(None, 'model') on @mesh"]
    text = a.explanation.render()
    assert "over mesh axis 'model' of @mesh (data=2 x model=4), dimension 1" in text
    # XLA's own spelling where its partitioned module keeps the parameter's sharding (jax 0.10's
    # XLA); the program's where it drops it (jax 0.11's and later).
    line = next(s for s in text.splitlines() if s.startswith("  parameter 0 "))
    assert line.endswith(("; sharding {devices=[2,4]<=[8]}", "; sharding P('data', 'model') on @mesh")), line
    doc = a.explanation.to_json()
    # jax 0.12 states the mesh twice (@mesh for the arguments, @mesh_0 for the all-gather's groups).
    axes = [{"name": "data", "size": 2}, {"name": "model", "size": 4}]
    assert doc["meshes"][0] == {"name": "mesh", "axes": axes, "device_ids": None}
    assert all(m["name"] in ("mesh", "mesh_0") and m["axes"] == axes for m in doc["meshes"]), doc["meshes"]


def test_analyze_jit_with_named_shardings():
    import jax
    import jax.numpy as jnp
    from jax.sharding import AbstractMesh, NamedSharding, PartitionSpec as P

    from stablehlo_layout.frontends.jax import analyze

    mesh = AbstractMesh((2, 4), ("data", "model"))

    def g(x, w):
        return (jnp.tanh(x @ w) + 1.0).T

    x = jax.ShapeDtypeStruct((16, 32), jnp.float32, sharding=NamedSharding(mesh, P("data", None)))
    w = jax.ShapeDtypeStruct((32, 32), jnp.float32, sharding=NamedSharding(mesh, P(None, "model")))
    a = analyze(jax.jit(g, out_shardings=NamedSharding(mesh, P("model", "data"))), x, w, verify=True)
    assert a.verified, a.mismatches
    assert a.verification is not None and a.verification.copies_matched == len(a.copies) >= 1
    # The transpose's bitcast layout meets the row-major result: XLA's copy, on the per-device shape.
    (copy,) = a.copies
    assert copy.shape == "f32[8,8]" and copy.reason == "entry-result"
    assert [e.sharding for e in a.params] == ["P('data', None) on @mesh", "P(None, 'model') on @mesh"]
    assert any(line.startswith("entry ") and "sharding" in line for line in repr(a).splitlines())


def test_too_large_a_mesh_is_one_line_and_tpu_slices():
    from stablehlo_layout.xla.partitioned import MAX_DEVICES, check_partitions
    from stablehlo_layout.xla.tpu_deviceless import mesh_topology

    with pytest.raises(InputError) as e:
        check_partitions(MAX_DEVICES + 1, "m.mlir")
    assert len(str(e.value).splitlines()) == 1 and f"{MAX_DEVICES + 1} devices" in str(e.value)
    # XLA:TPU's meshes: the smallest slice with N chips, as the sharded oracle's v5e:2x4 (a host at least).
    assert [mesh_topology("v5e", n) for n in (2, 4, 6, 8, 16)] == ["v5e:2x2", "v5e:2x2", "v5e:2x4", "v5e:2x4",
                                                                  "v5e:4x4"]
    assert [mesh_topology("v4", n) for n in (4, 8, 16, 32, 64)] == ["v4:2x2x1", "v4:2x2x2", "v4:2x2x4", "v4:2x4x4",
                                                                   "v4:4x4x4"]


_IN_PROCESS = textwrap.dedent("""
    import json
    import jax, jax.numpy as jnp, numpy as np
    from jax import lax
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    from stablehlo_layout.frontends.jax import analyze
    import stablehlo_layout.xla.partitioned as partitioned

    def no_child(*args, **kwargs):
        raise AssertionError("compiled in a child although this process has 8 devices")
    partitioned.compile_cpu_in_child = no_child
    mesh = Mesh(np.array(jax.devices()[:8]), ("x",))

    def local(a):
        return lax.psum_scatter(a.T, "x", scatter_dimension=0, tiled=True)

    f = jax.shard_map(local, mesh=mesh, in_specs=P(None, "x"), out_specs=P("x"), check_vma=False)
    a = analyze(f, jax.ShapeDtypeStruct((16, 64), jnp.float32, sharding=NamedSharding(mesh, P(None, "x"))),
                verify=True)
    cols = [x for c in a.copies for x in c.collectives]
    print(json.dumps({"verified": a.verified, "axes": sorted({x.mesh_axes[0] for x in cols}),
                      "ops": sorted({x.op for x in cols}), "oracle": a.verification.oracle}))
""")


@ORACLE
def test_analyze_in_a_process_with_the_mesh_devices():
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "TF_CPP_MIN_LOG_LEVEL": "3",
           "XLA_FLAGS": "--xla_force_host_platform_device_count=8"}
    done = subprocess.run([sys.executable, "-c", _IN_PROCESS], capture_output=True, text=True, env=env,
                          cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    assert done.returncode == 0, done.stderr[-2000:]
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert answer == {"verified": True, "axes": ["x"], "ops": ["reduce-scatter"],
                      "oracle": "XLA:CPU (8 devices), compiled for its mesh"}


@ORACLE
def test_analyze_shard_map_on_deviceless_xla_gpu():
    from stablehlo_layout.frontends.jax import analyze
    from stablehlo_layout.xla.gpu_deviceless import plugin_available, plugin_version_mismatch

    if not plugin_available() or plugin_version_mismatch():
        pytest.skip("XLA:GPU's compiler (the gpu-oracle extra) is not installed for this jaxlib")
    f, x, w = _shard_map_program()
    a = analyze(f, x, w, target="xla-gpu", verify=True)
    assert a.verified, a.mismatches
    assert a.verification is not None and "8 devices" in a.verification.oracle


@ORACLE
def test_analyze_shard_map_on_deviceless_xla_tpu():
    from stablehlo_layout.frontends.jax import analyze
    from stablehlo_layout.xla.tpu_deviceless import unavailable

    why = unavailable()
    if why:
        pytest.skip(why)
    f, x, w = _shard_map_program()
    a = analyze(f, x, w, target="xla-tpu", verify=True)
    # Compiled for a v5e:2x4 slice; the per-device module's entry layouts are libtpu's.  (Its copies
    # are the TPU target's fidelity, measured by the sharded differential, not held here.)
    assert a.verification is not None and a.verification.oracle.startswith("XLA:TPU v5e (8 chips)")
    assert not a.verification.entry_mismatches
    assert [p.shape for p in a.params] == ["f32[16,32]", "f32[32,32]"]
