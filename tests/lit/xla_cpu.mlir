// RUN: stablehlo-layout assign --target xla-cpu %s | FileCheck %s

// XLA:CPU's backend rules (CpuLayoutAssignment::AddBackendConstraints).

// A 16x32 by 32x8 matmul is an Eigen GEMM: operands and result row-major.
// The column-major pinned parameter therefore gets a copy on the dot edge.
// CHECK-LABEL: func.func public @gemm
// CHECK:         %[[C:.+]] = mhlo.copy %arg0
// CHECK-SAME:      xla_shape = "f32[16,32]{1,0}"
// CHECK:         stablehlo.dot_general %[[C]], %arg1
// CHECK-SAME:      xla_shape = "f32[16,8]{1,0}"
func.func public @gemm(%a: tensor<16x32xf32> {mhlo.layout_mode = "{0,1}"}, %b: tensor<32x8xf32>) -> tensor<16x8xf32> {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<16x32xf32>, tensor<32x8xf32>) -> tensor<16x8xf32>
  return %0 : tensor<16x8xf32>
}

// Every operand nothing else constrained is read row-major on CPU, so a
// column-major parameter is copied before an elementwise op, while a
// transpose's output still takes the bitcast layout and the pinned result
// gets a copy at the return.
// RUN: stablehlo-layout assign --target xla-cpu %S/Inputs/cpu_catch_all.mlir | FileCheck %s --check-prefix=ALL
// ALL-LABEL: func.func public @main
// ALL:         %[[C:.+]] = mhlo.copy %arg0
// ALL-SAME:      xla_shape = "f32[3,4]{1,0}"
// ALL:         %[[S:.+]] = stablehlo.sine %[[C]]
// ALL:         %[[T:.+]] = stablehlo.transpose %[[S]]
// ALL-SAME:      xla_shape = "f32[4,3]{0,1}"
// ALL:         %[[R:.+]] = mhlo.copy %[[T]]
// ALL-SAME:      xla_shape = "f32[4,3]{1,0}"
// ALL:         return %[[R]]

// A vector times a constant matrix reads the matrix column-major; the
// constant is re-laid-out, no copy.
// RUN: stablehlo-layout assign --target xla-cpu %S/Inputs/cpu_gemv_constant.mlir | FileCheck %s --check-prefix=GEMV
// GEMV-LABEL: func.func public @main
// GEMV-NOT:     mhlo.copy
// GEMV:         stablehlo.constant
// GEMV-SAME:      xla_shape = "f32[64,16]{0,1}"
// GEMV-NOT:     mhlo.copy
// GEMV:         return

// Batch dots are row-major whatever their size.
// RUN: stablehlo-layout assign --target xla-cpu %S/Inputs/cpu_batch_dot.mlir | FileCheck %s --check-prefix=BATCH
// BATCH-LABEL: func.func public @main
// BATCH:         stablehlo.dot_general
// BATCH-SAME:      xla_shape = "f32[2,3,5]{2,1,0}"
// BATCH:         mhlo.copy
// BATCH-SAME:      xla_shape = "f32[2,3,5]{0,1,2}"
// BATCH:         return
