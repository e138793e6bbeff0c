// RUN: stablehlo-layout assign --target xla-gpu %s | FileCheck %s
// RUN: stablehlo-layout assign --target xla-gpu %S/Inputs/gpu_dot_keep_valid.mlir | FileCheck %s --check-prefix=KEEP
// RUN: stablehlo-layout assign --target xla-gpu %S/Inputs/gpu_dot_batch_order.mlir | FileCheck %s --check-prefix=ORDER

// Rule (reference §11.2 case 2, target:gpu-dot-operand): cuBLAS needs the
// batch, contracting and free dims of an operand each physically contiguous
// (in logical order) and no batch dim most minor.  An operand with batch
// dims, or several contracting or free dims, keeps its existing layout if
// cuBLAS takes it, else the default if cuBLAS takes that, else is forced to
// major-to-minor [batch, contracting, free].  Mandatory.
//
// GPUT "DotOperandLayoutSetToBatchRowsColsOtherwise": the batch dim is the
// last logical dim of both operands, so the default puts it most minor and
// is refused.  lhs [batch 2, contracting 1, free 0] -> {0,1,2}; rhs
// [batch 2, contracting 0, free 1] -> {1,0,2}.  The default-layout
// parameters are copied.  The result (batched dot) takes the default.
// CHECK-LABEL: func.func public @main
// CHECK-DAG:     %[[B:.+]] = mhlo.copy %arg1 {{.*}}xla_shape = "f32[3,4,5]{1,0,2}"
// CHECK-DAG:     %[[A:.+]] = mhlo.copy %arg0 {{.*}}xla_shape = "f32[2,3,5]{0,1,2}"
// CHECK:         stablehlo.dot_general %[[A]], %[[B]]
// CHECK-SAME:      xla_shape = "f32[5,2,4]{2,1,0}"
func.func public @main(%a: tensor<2x3x5xf32>, %b: tensor<3x4x5xf32>) -> tensor<5x2x4xf32> {
  %0 = stablehlo.dot_general %a, %b, batching_dims = [2] x [2], contracting_dims = [1] x [0] : (tensor<2x3x5xf32>, tensor<3x4x5xf32>) -> tensor<5x2x4xf32>
  return %0 : tensor<5x2x4xf32>
}

// XLA's DotLayoutUnchangedIfValid as JAX feeds it: parameters pinned
// {1,2,0}.  cuBLAS could take them, but "the existing layout" XLA:GPU's dot
// rule tries first is the parameter instruction's, which its module before
// layout assignment leaves at the default; the default is valid too, so the
// dot reads {2,1,0} and both parameters are copied -- as XLA:GPU compiles
// the same program for H100.  (The unit test writes {1,2,0} on the parameter
// instructions and keeps them: tests/unit/xla_gpu_scenarios.)
// KEEP-LABEL: func.func public @main
// KEEP-DAG:     %[[A:.+]] = mhlo.copy %arg0 {{.*}}xla_shape = "f32[5,2,3]{2,1,0}"
// KEEP-DAG:     %[[B:.+]] = mhlo.copy %arg1 {{.*}}xla_shape = "f32[5,3,4]{2,1,0}"
// KEEP:         stablehlo.dot_general %[[A]], %[[B]]
// KEEP-SAME:      xla_shape = "f32[5,2,4]{2,1,0}"

// GPUT "DotOperandInconsistentDimLayouts": the rhs lists its batch dims as
// [1, 0], so the default (logical 0 before 1) is not contiguous in that
// order; forced [1, 0, 2, 3] major-to-minor -> {3,2,0,1}.  The lhs default
// {3,2,1,0} is valid and kept.
// ORDER-LABEL: func.func public @main
// ORDER:         %[[B:.+]] = mhlo.copy %arg1
// ORDER-SAME:      xla_shape = "f32[6,5,3,4]{3,2,0,1}"
// ORDER:         stablehlo.dot_general %arg0, %[[B]]
// ORDER-SAME:      xla_shape = "f32[5,6,2,4]{3,2,1,0}"
