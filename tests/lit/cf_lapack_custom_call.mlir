// RUN: stablehlo-layout assign --target xla-cpu %s | FileCheck %s --check-prefix=CPU
// RUN: stablehlo-layout assign --target generic %s | FileCheck %s --check-prefix=GEN

// A LAPACK-style layout-constrained custom call (potrf, the way jax lowers
// jnp.linalg.cholesky): operand_layouts and result_layouts ask for a
// column-major {0,1} operand and factor, mandatory (XLA §2.5, XLA §12.3).  It is fed
// by a row-major value and its factor is returned row-major.
//
// xla-cpu: a @ a^T (4x4, contracting dims 1 x 1) is an Eigen GEMM, whose
// operands and result are row-major, mandatory (XLA §10).  The dot's buffer
// therefore refuses potrf's {0,1} demand and the copy sits on the call's
// operand edge, before the call.  The factor is {0,1} and the entry result is
// pinned {1,0}: the soft result demand is refused (XLA §3.4) and a root copy
// follows the call.  The s32 info scalar has no layout to argue about.
//
// generic: nothing constrains the dot (the base pass has no dot rule, XLA §5.3),
// so potrf's demand is accepted by the dot's buffer: no copy before the call,
// the dot writes column-major directly.  The root copy after the call stays.
//
// Both targets: potrf overwrites its operand with the factor
// (output_operand_aliases), so XLA copies that operand before analysis
// (XLA §2.6) and the call clobbers the copy: a same-layout {0,1} -> {0,1} copy
// right before the call, marked stablehlo_layout.in_place.  On xla-cpu it
// copies the relayout copy (a chain, as in XLA's dump).
//
// Cross-checked for xla-cpu against XLA's after-dump of this module: dot
// {1,0}, copy to {0,1}, the same-layout copy, potrf, copy of the factor to
// {1,0}.

// CPU-LABEL: func.func public @main(
// CPU-NEXT:    %[[G:.+]] = stablehlo.dot_general %arg0, %arg0
// CPU-SAME:      xla_shape = "f32[4,4]{1,0}"
// CPU-NEXT:    %[[GC:.+]] = mhlo.copy %[[G]] {result_layout = dense<[0, 1]> : tensor<2xindex>, {{(stablehlo_layout.inserted, )?}}xla_shape = "f32[4,4]{0,1}"}
// CPU-NEXT:    %[[IP:.+]] = mhlo.copy %[[GC]] {result_layout = dense<[0, 1]> : tensor<2xindex>, stablehlo_layout.in_place, stablehlo_layout.inserted, xla_shape = "f32[4,4]{0,1}"}
// CPU-NEXT:    %[[L:.+]]:2 = stablehlo.custom_call @lapack_spotrf_ffi(%[[IP]])
// CPU-SAME:      xla_shape = "(f32[4,4]{0,1}, s32[])"
// CPU-NEXT:    %[[LC:.+]] = mhlo.copy %[[L]]#0 {result_layout = dense<[1, 0]> : tensor<2xindex>, {{(stablehlo_layout.inserted, )?}}xla_shape = "f32[4,4]{1,0}"}
// CPU-NEXT:    return %[[LC]], %[[L]]#1

// GEN-LABEL: func.func public @main(
// GEN-NEXT:    %[[G:.+]] = stablehlo.dot_general %arg0, %arg0
// GEN-SAME:      xla_shape = "f32[4,4]{0,1}"
// GEN-NEXT:    %[[IP:.+]] = mhlo.copy %[[G]] {result_layout = dense<[0, 1]> : tensor<2xindex>, stablehlo_layout.in_place, stablehlo_layout.inserted, xla_shape = "f32[4,4]{0,1}"}
// GEN-NEXT:    %[[L:.+]]:2 = stablehlo.custom_call @lapack_spotrf_ffi(%[[IP]])
// GEN-SAME:      xla_shape = "(f32[4,4]{0,1}, s32[])"
// GEN-NEXT:    %[[LC:.+]] = mhlo.copy %[[L]]#0 {result_layout = dense<[1, 0]> : tensor<2xindex>, {{(stablehlo_layout.inserted, )?}}xla_shape = "f32[4,4]{1,0}"}
// GEN-NEXT:    return %[[LC]], %[[L]]#1
func.func public @main(%a: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<i32>) {
  %g = stablehlo.dot_general %a, %a, contracting_dims = [1] x [1] : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %l:2 = stablehlo.custom_call @lapack_spotrf_ffi(%g) {backend_config = "", mhlo.backend_config = {uplo = 76 : ui8}, mhlo.frontend_attributes = {num_batch_dims = "0"}, operand_layouts = [dense<[0, 1]> : tensor<2xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 0, operand_tuple_indices = []>], result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<> : tensor<0xindex>]} : (tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<i32>)
  return %l#0, %l#1 : tensor<4x4xf32>, tensor<i32>
}

// trace lists the in-place copy after the worklist pops: no pop makes it.
// RUN: stablehlo-layout trace --target xla-cpu %s | FileCheck %s --check-prefix=TRACE
// TRACE:      pop {{[0-9]+}}:
// TRACE:      in-place copies (XLA copies these operands before analysis; no layout changes):
// TRACE-NEXT:   copy of result of stablehlo.dot_general {{.*}} for operand 0 of stablehlo.custom_call {{.*}} = {0,1}  [custom-call-in-place; output 0 overwrites it]
