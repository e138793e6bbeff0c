// RUN: stablehlo-layout assign --target %S/../../examples/targets/column_major_dots.py:ColumnMajorDots %s | FileCheck %s
// RUN: stablehlo-layout explain --target %S/../../examples/targets/column_major_dots.py:ColumnMajorDots %s | FileCheck %s --check-prefix=WHY
// RUN: not stablehlo-layout assign --target %S/../../examples/targets/column_major_dots.py:Nope %s 2>&1 | FileCheck %s --check-prefix=BAD

// A target written by a user, loaded from a file: its dot wants column-major
// operands, so both row-major pinned parameters are copied, and explain names
// the user's rule.

// CHECK-LABEL: func.func public @main
// CHECK:         %[[A:.+]] = mhlo.copy %arg0
// CHECK-SAME:      xla_shape = "f32[8,16]{0,1}"
// CHECK:         %[[B:.+]] = mhlo.copy %arg1
// CHECK-SAME:      xla_shape = "f32[16,4]{0,1}"
// CHECK:         stablehlo.dot_general %[[A]], %[[B]]
// WHY: backend rule column-major-dots
// BAD: error: target '{{.*}}column_major_dots.py:Nope': {{.*}} has no class 'Nope'
func.func public @main(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>) -> tensor<8x4xf32> {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}
