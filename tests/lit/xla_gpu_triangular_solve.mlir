// RUN: stablehlo-layout assign --target xla-gpu %s | FileCheck %s

// Rule (XLA §11.6, target:gpu-triangular-solve-fortran): the solver
// reads both operands and writes its result in "Fortran" order: the default
// layout with its two most minor entries swapped, i.e. the two matrix dims
// column-major and the batch dims major.  For rank 3: {2,1,0} -> {1,2,0}.
// Mandatory, so the row-major parameters are copied in and the row-major
// result is copied out.
// CHECK-LABEL: func.func public @main
// CHECK-DAG:     %[[B:.+]] = mhlo.copy %arg1 {{.*}}xla_shape = "f32[4,16,8]{1,2,0}"
// CHECK-DAG:     %[[A:.+]] = mhlo.copy %arg0 {{.*}}xla_shape = "f32[4,16,16]{1,2,0}"
// CHECK:         %[[S:.+]] = "stablehlo.triangular_solve"(%[[A]], %[[B]])
// CHECK-SAME:      xla_shape = "f32[4,16,8]{1,2,0}"
// CHECK:         %[[R:.+]] = mhlo.copy %[[S]]
// CHECK-SAME:      xla_shape = "f32[4,16,8]{2,1,0}"
// CHECK:         return %[[R]]
func.func public @main(%a: tensor<4x16x16xf32>, %b: tensor<4x16x8xf32>) -> tensor<4x16x8xf32> {
  %0 = "stablehlo.triangular_solve"(%a, %b) <{left_side = true, lower = true, transpose_a = #stablehlo<transpose NO_TRANSPOSE>, unit_diagonal = false}> : (tensor<4x16x16xf32>, tensor<4x16x8xf32>) -> tensor<4x16x8xf32>
  return %0 : tensor<4x16x8xf32>
}
