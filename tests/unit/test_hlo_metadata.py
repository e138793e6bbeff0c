"""Which reshapes of an XLA dump an XLA pass made, read from their metadata."""

from __future__ import annotations

from stablehlo_layout.ir import mlir
from stablehlo_layout.frontends.api import assign_module
from stablehlo_layout.ir.marks import PASS_CREATED, pass_created_reshapes
from stablehlo_layout.ir.metadata import instruction_name, metadata_field, read_sources

# The shape of XLA:CPU's dumps: DotDecomposer's dot and reshape share the
# replaced dot_general's metadata.
DUMP = """HloModule m, entry_computation_layout={(f32[8,32]{1,0}, f32[32,16]{1,0}, f32[32,1,16]{2,1,0})->(f32[8,1,16]{2,1,0}, f32[32,16]{1,0}, f32[16,32]{1,0})}

ENTRY %main (x: f32[8,32], w: f32[32,16], v: f32[32,1,16]) -> (f32[8,1,16], f32[32,16], f32[16,32]) {
  %x = f32[8,32]{1,0} parameter(0), metadata={op_name="x"}
  %w = f32[32,16]{1,0} parameter(1), metadata={op_name="w"}
  %v = f32[32,1,16]{2,1,0} parameter(2), metadata={op_name="v"}
  %dot = f32[8,16]{1,0} dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}, metadata={op_name="jit(f)/sd,dk->sk/dot_general" stack_frame_id=2}
  %reshape.2 = f32[8,1,16]{2,1,0} reshape(%dot), metadata={op_name="jit(f)/sd,dk->sk/dot_general" stack_frame_id=2}
  %tanh = f32[8,1,16]{2,1,0} tanh(%reshape.2), metadata={op_name="jit(f)/tanh"}
  %reshape.3 = f32[32,16]{1,0} reshape(%v), metadata={op_name="v"}
  %neg = f32[32,16]{1,0} negate(%reshape.3), metadata={op_name="jit(f)/neg"}
  %reshape.4 = f32[16,32]{1,0} reshape(f32[512]{0} %flat), metadata={op_name="jit(f)/reshape"}
  %flat = f32[512]{0} reshape(%neg), metadata={op_name="jit(f)/neg"}
  ROOT %t = (f32[8,1,16]{2,1,0}, f32[32,16]{1,0}, f32[16,32]{1,0}) tuple(%tanh, %neg, %reshape.4)
}
"""  # noqa: E501 (IR text, one op per line, as the tool reads it)


def test_a_reshape_made_with_its_operand_is_pass_created():
    assert pass_created_reshapes(DUMP) == {"reshape.2", "flat"}


def test_parameter_reshapes_and_jax_reshapes_are_not():
    # reshape.3 carries a parameter's op_name (an argument rebuilt for some
    # new consumer); reshape.4 is JAX's own reshape (read in long form).
    names = pass_created_reshapes(DUMP)
    assert "reshape.3" not in names and "reshape.4" not in names


def test_without_metadata_nothing_is_marked():
    bare = "\n".join(line.split(", metadata=")[0] for line in DUMP.splitlines())
    assert pass_created_reshapes(bare) == set()


def test_the_marker_reaches_the_op_and_the_graph(tmp_path):
    path = tmp_path / "m.before_layout-assignment.txt"
    path.write_text(DUMP.replace(
        "  %reshape.4 = f32[16,32]{1,0} reshape(f32[512]{0} %flat), metadata={op_name=\"jit(f)/reshape\"}\n"
        "  %flat = f32[512]{0} reshape(%neg), metadata={op_name=\"jit(f)/neg\"}\n",
        "  %flat = f32[512]{0} reshape(%neg), metadata={op_name=\"jit(f)/neg\"}\n"
        "  %reshape.4 = f32[16,32]{1,0} reshape(f32[512]{0} %flat), metadata={op_name=\"jit(f)/reshape\"}\n"))
    ctx = mlir.make_context()
    module = mlir.read_input(str(path), ctx)
    marked = sorted(str(op.location) for op in mlir_ops(module) if PASS_CREATED in op.attributes)
    assert marked == ['loc("flat")', 'loc("reshape.2")']
    r = assign_module(module, "xla-cpu", "default")
    g = r.graph
    by_loc = {ins.loc: ins for ins in g.instrs if ins is not None}
    assert by_loc["reshape.2"].attrs.get("xla_pass_created") is True
    assert not by_loc["reshape.3"].attrs.get("xla_pass_created")
    # Propagated before the tanh's row-major demand: the bitcast layout of
    # the dot's row-major result, size-1 dim most major, as XLA:CPU picks.
    (vid,) = by_loc["reshape.2"].results
    assert tuple(r.assignment.layouts[vid]) == (2, 0, 1)


def mlir_ops(module):
    out = []

    def walk(op):
        for region in op.regions:
            for block in region:
                for child in block:
                    out.append(child.operation)
                    walk(child.operation)

    walk(module.operation)
    return out


def test_an_operand_without_metadata_was_made_by_the_pass_too():
    # DotDecomposer's dot sometimes carries no metadata; the reshape does.
    text = """
  %dot.25 = f32[6,16]{1,0} dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %reshape.14 = f32[6,1,16]{2,1,0} reshape(%dot.25), metadata={op_name="jit(f)/dot_general"}
  %neg = f32[6,1,16]{2,1,0} negate(%reshape.14), metadata={op_name="jit(f)/neg"}
  %reshape.15 = f32[6,16,1]{2,1,0} reshape(%neg), metadata={op_name="jit(f)/dot_general"}
"""
    # reshape.15's operand has an op_name of its own: it is older.
    assert pass_created_reshapes(text) == {"reshape.14"}
    # A tuple element never has metadata: that tells nothing.
    branch = """
  %get-tuple-element.1 = f32[1,3,2]{2,1,0} get-tuple-element(%slice.1), index=0
  %transpose.6 = f32[3,1,2]{2,1,0} reshape(%get-tuple-element.1), metadata={op_name="jit(f)/cond/branch_1_fun/transpose"}
"""
    assert pass_created_reshapes(branch) == set()


def test_reshapes_next_to_a_scatter_are_not_nor_a_gathers_read_by_a_pass_made_op():
    # XLA's scatter canonicalizer rebuilds the scatter along with the reshape
    # of its updates; a gather's result reshape (GatherSimplifier's) counts
    # unless its consumer was made by a pass too, as transpose.9 was: JAX
    # would have named it after its op_name's primitive (select_n).  Both
    # seen in XLA:CPU dumps, where XLA keeps these reshapes row-major.
    text = """
  %add.3 = f32[2,6]{1,0} add(%mul.2, %b), metadata={op_name="jit(f)/add"}
  %reshape = f32[2,1,6]{2,1,0} reshape(%add.3), metadata={op_name="jit(f)/add"}
  %scatter.5 = f32[2,6]{1,0} scatter(%a, %i, %reshape), update_window_dims={1,2}, metadata={op_name="jit(f)/scatter"}
  %gather.2 = f32[5,4,1,1,3]{4,3,2,1,0} gather(%p, %c), offset_dims={1,2,3,4}, metadata={op_name="jit(f)/jit(_take)/gather"}
  %reshape.4 = f32[5,4,1,3]{3,2,1,0} reshape(%gather.2), metadata={op_name="jit(f)/jit(_take)/gather"}
  %transpose.9 = f32[4,5,1,3]{3,2,1,0} transpose(%reshape.4), dimensions={1,0,2,3}, metadata={op_name="jit(f)/jit(_take)/select_n"}
"""  # noqa: E501 (IR text, one op per line, as the tool reads it)
    assert pass_created_reshapes(text) == set()
    jax_consumer = text.replace("%transpose.9 = f32[4,5,1,3]{3,2,1,0} transpose(%reshape.4), dimensions={1,0,2,3}",
                                "%select_n.8 = f32[5,4,1,3]{3,2,1,0} select(%m, %reshape.4, %z)")
    assert pass_created_reshapes(jax_consumer) == {"reshape.4"}
    assert pass_created_reshapes(text.replace("scatter(", "add(")) == {"reshape"}


def test_a_reshape_without_metadata_into_a_convolution_is_pass_created():
    # Seen in XLA:CPU dumps of one-channel conv nets' weight gradients: XLA
    # lays such a reshape out as a bitcast and copies it for the convolution.
    text = """
  %select_n.45 = f32[8,8,8]{2,1,0} select(%m, %a, %b), metadata={op_name="jit(f)/select_n"}
  %reshape.29 = f32[8,8,1,8]{3,2,1,0} reshape(%select_n.45)
  %convolution.1 = f32[1,3,3,8]{3,2,1,0} convolution(%x, %reshape.29), window={size=8x8 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  %reshape.30 = f32[8,8,1,8]{3,2,1,0} reshape(%select_n.45)
  %neg = f32[8,8,1,8]{3,2,1,0} negate(%reshape.30), metadata={op_name="jit(f)/neg"}
"""  # noqa: E501 (IR text, one op per line, as the tool reads it)
    assert pass_created_reshapes(text) == {"reshape.29"}


def test_pass_marking_reads_the_metadata_reports_show():
    """One reader: the op_name a reshape is judged by is the one a report prints beside it."""
    sources = read_sources(DUMP)
    names = [name for name in map(instruction_name, DUMP.splitlines()) if name is not None]
    assert "reshape.2" in names and "t" in names
    for line in DUMP.splitlines():
        name = instruction_name(line)
        if name is not None:
            assert metadata_field(line, "op_name") == (sources[name].op_name if name in sources else None)


def test_the_reader_skips_quoted_text_and_nested_braces():
    line = ('  %r = f32[2]{0} custom-call(%x), backend_config="metadata={op_name=\\"no\\"}", '
            'metadata={op_name="jit(f)/a \\"b\\"/add" profile={x={1}} source_line=4}')
    assert instruction_name(line) == "r"
    assert metadata_field(line, "op_name") == 'jit(f)/a "b"/add'
    assert metadata_field(line, "source_line") == "4"
    shallow = '  ROOT r.2 = f32[2]{0} add(x, y), metadata={op_name="jit(f)/add" profile={1,2} source_line=9}'
    assert instruction_name(shallow) == "r.2" and metadata_field(shallow, "source_line") == "9"
    assert metadata_field("  %r = f32[] add(%a, %b)", "op_name") is None
    assert instruction_name("ENTRY %main (x: f32[8]) -> f32[2,4] {") is None


def test_a_pass_made_reshape_with_an_escaped_op_name():
    text = """HloModule m, entry_computation_layout={(f32[8]{0})->f32[2,4]{1,0}}

ENTRY %main (x: f32[8]) -> f32[2,4] {
  %x = f32[8]{0} parameter(0), metadata={op_name="x"}
  %e = f32[8]{0} exponential(%x), metadata={op_name="jit(f)/the \\"odd\\" scope/exp"}
  ROOT %reshape.1 = f32[2,4]{1,0} reshape(%e), metadata={op_name="jit(f)/the \\"odd\\" scope/exp"}
}
"""
    assert pass_created_reshapes(text) == {"reshape.1"}
    assert read_sources(text)["reshape.1"].op_name == 'jit(f)/the "odd" scope/exp'


# -- users' order after XLA's call inliner ---------------------------------------------------

from stablehlo_layout.ir.marks import USER_ORDER, inlined_user_orders  # noqa: E402

# x feeds two instructions of an inlined jit(sym) and one of its own scope;
# y feeds one instruction of jit(sym) only; the parameter feeds two of jit(g).
INLINED = """HloModule m, entry_computation_layout={(f32[4,4]{1,0})->(f32[4,4]{1,0}, f32[4,4]{1,0}, f32[4,4]{1,0})}

ENTRY %main (p: f32[4,4]) -> (f32[4,4], f32[4,4], f32[4,4]) {
  %p = f32[4,4]{1,0} parameter(0), metadata={op_name="p"}
  %x = f32[4,4]{1,0} negate(%p), metadata={op_name="jit(f)/neg"}
  %t = f32[4,4]{1,0} transpose(%x), dimensions={1,0}, metadata={op_name="jit(f)/jit(sym)/transpose"}
  %s = f32[4,4]{1,0} add(%x, %t), metadata={op_name="jit(f)/jit(sym)/add"}
  %y = f32[4,4]{1,0} sine(%x), metadata={op_name="jit(f)/sin"}
  %z = f32[4,4]{1,0} cosine(%y), metadata={op_name="jit(f)/jit(sym)/cos"}
  %u = f32[4,4]{1,0} tanh(%p), metadata={op_name="jit(f)/jit(g)/tanh"}
  %v = f32[4,4]{1,0} multiply(%p, %u), metadata={op_name="jit(f)/jit(g)/mul"}
  ROOT %r = (f32[4,4]{1,0}, f32[4,4]{1,0}, f32[4,4]{1,0}) tuple(%s, %z, %v)
}
"""


def test_the_last_reader_of_an_inlined_call_takes_the_call_slot():
    # x's readers in the dump: t, s (both cloned from jit(sym)), y (its own
    # scope).  XLA: [call, y] + [t, s], then the call's slot goes to s: [s, y, t].
    assert inlined_user_orders(INLINED) == {"x": ["s", "y", "t"]}


def test_what_the_dump_cannot_say_keeps_its_order():
    # One reader per call changes nothing (y, z); a parameter's call slot among
    # its readers is not in the dump (p); without nested jits nothing is read.
    orders = inlined_user_orders(INLINED)
    assert "y" not in orders and "p" not in orders
    assert inlined_user_orders(INLINED.replace("jit(f)/jit(sym)/", "jit(f)/")) == {}
    assert inlined_user_orders(DUMP) == {}
    # An instruction whose op_name names no jit (a reshape of an argument,
    # op_name "p") has no known scope: its readers keep the dump's order.
    unscoped = INLINED.replace('op_name="jit(f)/neg"', 'op_name="p"')
    assert "x" not in inlined_user_orders(unscoped)


def test_the_order_reaches_the_op_and_the_engine():
    from jaxlib.mlir import ir

    from stablehlo_layout.ir.importer import import_module

    module = mlir.load(INLINED.encode(), "inlined.hlo", mlir.make_context())
    (x,) = [op for op in module.body.operations[0].regions[0].blocks[0].operations
            if op.operation.name == "stablehlo.negate"]
    assert list(ir.DenseI64ArrayAttr(x.attributes[USER_ORDER])) == [1, 2, 0]
    g, _ = import_module(module)
    (neg,) = [ins for ins in g.instrs if ins.op == "stablehlo.negate"]
    readers = [g.instrs[u].loc for u, _ in g.values[neg.results[0]].uses]
    assert readers == ["s", "y", "t"]


# XLA:CPU's before dump of f(a) = (inner(sin(a)), cos(sin(a))) with a nested
# @jax.jit inner(x) = x.T + x * 2 + exp(x) (jax 0.10.2, stack frames dropped).
# Its layout-assignment log (TF_CPP_VMODULE=layout_assignment=3) offers sin.1's
# layout to exp.0, cos.1, transpose.0, mul.1 in that order: [call, cos] + the
# three clones, then the last clone into the call's slot.
XLA_CPU_INLINED = """\
HloModule jit_f, entry_computation_layout={(f32[8,8]{1,0})->(f32[8,8]{1,0}, f32[8,8]{1,0})}
ENTRY %main.2 (a.1: f32[8,8]) -> (f32[8,8], f32[8,8]) {
  %a.1 = f32[8,8]{1,0} parameter(0), metadata={op_name="a"}
  %sin.1 = f32[8,8]{1,0} sine(%a.1), metadata={op_name="jit(f)/sin"}
  %transpose.0 = f32[8,8]{0,1} transpose(%sin.1), dimensions={1,0}, metadata={op_name="jit(f)/jit(inner)/transpose"}
  %constant.0 = f32[] constant(2), metadata={op_name="jit(f)/jit(inner)"}
  %mul.0 = f32[8,8]{1,0} broadcast(%constant.0), dimensions={}, metadata={op_name="jit(f)/jit(inner)/mul"}
  %mul.1 = f32[8,8]{1,0} multiply(%sin.1, %mul.0), metadata={op_name="jit(f)/jit(inner)/mul"}
  %add.0 = f32[8,8]{0,1} add(%transpose.0, %mul.1), metadata={op_name="jit(f)/jit(inner)/add"}
  %exp.0 = f32[8,8]{1,0} exponential(%sin.1), metadata={op_name="jit(f)/jit(inner)/exp"}
  %add.1 = f32[8,8]{0,1} add(%add.0, %exp.0), metadata={op_name="jit(f)/jit(inner)/add"}
  %cos.1 = f32[8,8]{1,0} cosine(%sin.1), metadata={op_name="jit(f)/cos"}
  ROOT %tuple.1 = (f32[8,8]{0,1}, f32[8,8]{1,0}) tuple(%add.1, %cos.1)
}
"""


def test_the_order_is_the_one_xlas_log_shows():
    assert inlined_user_orders(XLA_CPU_INLINED) == {"sin.1": ["exp.0", "cos.1", "transpose.0", "mul.1"]}


def test_a_malformed_user_order_is_one_line_naming_the_op(tmp_path, capsys):
    from stablehlo_layout.frontends import cli

    bad = tmp_path / "bad_order.mlir"
    bad.write_text(
        'module attributes {stablehlo_layout.xla_user_orders} {\n'
        '  func.func @main(%a: tensor<4x4xf32>) -> tensor<4x4xf32> {\n'
        '    %x = stablehlo.negate %a {stablehlo_layout.xla_user_order = "last first"} : tensor<4x4xf32> loc("x")\n'
        '    %s = stablehlo.add %x, %x : tensor<4x4xf32>\n'
        '    return %s : tensor<4x4xf32>\n'
        '  }\n'
        '}\n')
    assert cli.main(["assign", "--target", "xla-cpu", str(bad)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "stablehlo_layout.xla_user_order must be an array<i64" in lines[0], err
    assert "Traceback" not in err


# The shape of XLA 0.12's XLA:GPU dump of a scanned layer stack's jax.grad
# (tests/unit/test_xla_gpu_scanned_grad_versions.py, ``var``), cut to the
# loops and written with get-tuple-elements (both tested jaxlibs read it):
# the passes that cloned and sank the loops left the backward loop's
# computations first in the module, while the entry lists the forward loop
# first.
SUNK_LOOPS = """HloModule jit_fn, entry_computation_layout={(bf16[4,4]{1,0})->bf16[4,4]{1,0}}

%region_4.27.sunk.clone (arg_tuple.9: (s32[], bf16[4,4])) -> (s32[], bf16[4,4]) {
  %arg_tuple.9 = (s32[], bf16[4,4]{1,0}) parameter(0)
  %get-tuple-element.1 = s32[] get-tuple-element(%arg_tuple.9), index=0
  %get-tuple-element.2 = bf16[4,4]{1,0} get-tuple-element(%arg_tuple.9), index=1
  ROOT %tuple.13 = (s32[], bf16[4,4]{1,0}) tuple(%get-tuple-element.1, %get-tuple-element.2)
}

%region_11.28.clone (arg_tuple.8: (s32[], bf16[4,4])) -> pred[] {
  %arg_tuple.8 = (s32[], bf16[4,4]{1,0}) parameter(0)
  %get-tuple-element.3 = s32[] get-tuple-element(%arg_tuple.8), index=0
  %constant.1 = s32[] constant(3)
  ROOT %lt.1 = pred[] compare(%get-tuple-element.3, %constant.1), direction=LT
}

%region_0.13.sunk.clone.clone (arg_tuple.11: (s32[], bf16[4,4])) -> (s32[], bf16[4,4]) {
  %arg_tuple.11 = (s32[], bf16[4,4]{1,0}) parameter(0)
  %get-tuple-element.4 = s32[] get-tuple-element(%arg_tuple.11), index=0
  %get-tuple-element.5 = bf16[4,4]{1,0} get-tuple-element(%arg_tuple.11), index=1
  ROOT %tuple.16 = (s32[], bf16[4,4]{1,0}) tuple(%get-tuple-element.4, %get-tuple-element.5)
}

%region_3.14.clone.clone (arg_tuple.10: (s32[], bf16[4,4])) -> pred[] {
  %arg_tuple.10 = (s32[], bf16[4,4]{1,0}) parameter(0)
  %get-tuple-element.6 = s32[] get-tuple-element(%arg_tuple.10), index=0
  %constant.2 = s32[] constant(3)
  ROOT %lt.2 = pred[] compare(%get-tuple-element.6, %constant.2), direction=LT
}

ENTRY %main.29 (x.1: bf16[4,4]) -> bf16[4,4] {
  %constant.67 = s32[] constant(0)
  %x.1 = bf16[4,4]{1,0} parameter(0)
  %tuple.15 = (s32[], bf16[4,4]{1,0}) tuple(%constant.67, %x.1)
  %while.2 = (s32[], bf16[4,4]{1,0}) while(%tuple.15), condition=%region_3.14.clone.clone, body=%region_0.13.sunk.clone.clone
  %get-tuple-element.7 = bf16[4,4]{1,0} get-tuple-element(%while.2), index=1
  %tuple.12 = (s32[], bf16[4,4]{1,0}) tuple(%constant.67, %get-tuple-element.7)
  %while.1 = (s32[], bf16[4,4]{1,0}) while(%tuple.12), condition=%region_11.28.clone, body=%region_4.27.sunk.clone
  ROOT %r = bf16[4,4]{1,0} get-tuple-element(%while.1), index=1
}
"""


def test_loops_the_module_lists_out_of_instruction_order_get_their_places():
    from stablehlo_layout.ir.marks import loop_ranks

    assert loop_ranks(SUNK_LOOPS) == {"while.1": 0, "while.2": 1}


def test_loops_the_module_lists_in_instruction_order_are_not_marked():
    from stablehlo_layout.ir.marks import loop_ranks

    # The forward loop's computations moved in front of the backward loop's.
    head, tail = SUNK_LOOPS.split("%region_0.13.sunk.clone.clone", 1)
    forward = "%region_0.13.sunk.clone.clone" + tail[:tail.index("\nENTRY")]
    text = head.replace("%region_4.27.sunk.clone (", forward + "\n%region_4.27.sunk.clone (", 1)
    text = text + tail[tail.index("\nENTRY"):]
    assert loop_ranks(text) == {}
    assert loop_ranks(DUMP) == {}


def test_the_loop_ranks_reach_the_ops_and_the_engine(tmp_path):
    from stablehlo_layout.ir.importer import import_module

    m = mlir.load(SUNK_LOOPS.encode(), "sunk.hlo", mlir.make_context())
    assert str(m).count("stablehlo_layout.xla_loop_rank") == 2
    g, _ = import_module(m)
    ranks = {ins.attrs.get("xla_loop_rank") for ins in g.instrs if ins.op == "stablehlo.while"}
    assert ranks == {0, 1}
    assign_module(m, "xla-gpu", "default", gpu="a100")  # the engine reads them without complaint


def test_a_malformed_loop_rank_is_one_line_naming_the_op(tmp_path, capsys):
    from stablehlo_layout.frontends import cli

    bad = tmp_path / "bad_rank.mlir"
    bad.write_text(
        'func.func @main(%a: tensor<i32>) -> tensor<i32> {\n'
        '  %r = stablehlo.while(%i = %a) : tensor<i32> attributes {stablehlo_layout.xla_loop_rank = "first"}\n'
        '  cond {\n'
        '    %c = stablehlo.constant dense<3> : tensor<i32>\n'
        '    %p = stablehlo.compare LT, %i, %c : (tensor<i32>, tensor<i32>) -> tensor<i1>\n'
        '    stablehlo.return %p : tensor<i1>\n'
        '  } do {\n'
        '    stablehlo.return %i : tensor<i32>\n'
        '  }\n'
        '  return %r : tensor<i32>\n'
        '}\n')
    assert cli.main(["assign", "--target", "xla-gpu", str(bad)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "stablehlo_layout.xla_loop_rank must be an integer" in lines[0], err
    assert "bad_rank.mlir:2:" in lines[0], err
    assert "Traceback" not in err


def test_the_marks_walk_modules_nested_deeper_than_pythons_recursion_limit() -> None:
    """The marks' walk keeps its own stack: 3,000 nested whiles (MLIR's parser needs a deep C stack for them)."""
    import sys
    import threading

    from stablehlo_layout.ir import marks as hlo_metadata
    from tests.support import deep

    depth = 3000
    assert depth > sys.getrecursionlimit()
    seen: list[object] = []

    def work() -> None:
        try:
            module = mlir.load(deep.nested_whiles(depth).encode(), "deep.mlir", mlir.make_context())
            seen.extend(op.name for op in hlo_metadata._ops(module))
        except BaseException as e:  # reported by the test's own thread below
            seen.append(e)

    previous = threading.stack_size(1 << 30)
    try:
        worker = threading.Thread(target=work)
        worker.start()
    finally:
        threading.stack_size(previous)
    worker.join()
    assert not any(isinstance(x, BaseException) for x in seen), seen[-1]
    # Pre-order: the function, its constant, then each while before what it nests.
    assert seen[:3] == ["func.func", "stablehlo.constant", "stablehlo.while"]
    assert seen.count("stablehlo.while") == depth
    assert seen[-2:] == ["stablehlo.transpose", "func.return"]


def test_the_reshapes_of_an_all_to_all_expansion_are_not_late():
    # XLA:CPU's all-to-all decomposition: the tuple all-to-all and the
    # concatenate are new (no metadata); the reshapes and the transpose of the
    # expansion carry the all_to_all's op_name and come as one block.
    text = """HloModule m

ENTRY %main (p: f32[2,4,8,8]) -> f32[2,32,1,8] {
  %p = f32[2,4,8,8]{3,2,1,0} parameter(0)
  %concatenate = f32[2,4,8,8]{3,2,1,0} concatenate(%p, %p), dimensions={2}
  %all_to_all.53 = f32[2,4,8,1,8]{4,3,2,1,0} reshape(%concatenate), metadata={op_name="jit(f)/shard_map/all_to_all"}
  %all_to_all.54 = f32[2,8,4,1,8]{4,3,2,1,0} transpose(%all_to_all.53), dimensions={0,2,1,3,4}, metadata={op_name="jit(f)/shard_map/all_to_all"}
  ROOT %all_to_all.55 = f32[2,32,1,8]{3,2,1,0} reshape(%all_to_all.54), metadata={op_name="jit(f)/shard_map/all_to_all"}
}
"""  # noqa: E501 (IR text, one op per line, as the tool reads it)
    assert pass_created_reshapes(text) == set()
    # A reshape that replaced a transpose keeps its name and op_name, and is a pass's.
    assert pass_created_reshapes(text.replace("shard_map/all_to_all", "transpose")) == {"all_to_all.53", "all_to_all.55"}


def test_instructions_named_after_their_opcode_are_a_pass_s():
    from stablehlo_layout.ir.marks import pass_created_others, promoted_collectives

    text = """HloModule m

%add_promoted (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %a = f32[] add(%x, %y)
}

ENTRY %main (p: f32[4,8]) -> f32[4,1] {
  %p = f32[4,8]{1,0} parameter(0), metadata={op_name="x"}
  %reduce_sum.1 = f32[4]{0} reduce(%p, %c), dimensions={1}, to_apply=%add_promoted, metadata={op_name="jit(f)/reduce_sum"}
  %multiply.3 = f32[4]{0} multiply(%reduce_sum.1, %b), metadata={op_name="jit(f)/div"}
  %sub.4 = f32[4,8]{1,0} broadcast(%multiply.3), dimensions={0}, metadata={op_name="jit(f)/sub"}
  %reduce_scatter.8 = f32[4,1]{1,0} reduce-scatter(%sub.4), dimensions={1}, to_apply=%add_promoted, metadata={op_name="jit(f)/reduce_scatter"}
}
"""  # noqa: E501 (IR text, one op per line, as the tool reads it)
    # AlgebraicSimplifier's multiply for a div (named after its opcode); JAX's
    # broadcast for a sub is named after the primitive.
    assert pass_created_others(text) == {"multiply.3"}
    # AllReducePromotion's clone reduces with <name>_promoted; a reduce is no collective.
    assert promoted_collectives(text) == {"reduce_scatter.8"}


def test_converts_without_metadata_are_a_pass_s():
    from stablehlo_layout.ir.marks import pass_created_converts

    # XLA:CPU's float normalization runs a bf16 multiply in f32 between two
    # new converts (no metadata); JAX's own convert_element_type keeps its op_name.
    text = """HloModule m

ENTRY %main (p: bf16[4,8]) -> bf16[4,8] {
  %p = bf16[4,8]{1,0} parameter(0), metadata={op_name="x"}
  %convert.1 = f32[4,8]{1,0} convert(%p)
  %mul.2 = f32[4,8]{1,0} multiply(%convert.1, %convert.1), metadata={op_name="jit(f)/mul"}
  %convert.3 = bf16[4,8]{1,0} convert(%mul.2)
  ROOT %convert_element_type.4 = bf16[4,8]{1,0} convert(%convert.3), metadata={op_name="jit(f)/convert_element_type"}
}
"""
    assert pass_created_converts(text) == {"convert.1", "convert.3"}
    assert pass_created_converts("\n".join(ln.split(", metadata=")[0] for ln in text.splitlines())) == set()
