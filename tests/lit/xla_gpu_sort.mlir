// RUN: stablehlo-layout assign --target xla-gpu %s | FileCheck %s

// Rule (XLA §11.3, target:gpu-sort-default): a sort whose keys have
// rank > 1 reads every operand and writes every result in the default layout
// of the keys' rank, mandatory.
//
// GPUT "SameLayoutOnOperandsAndOutputsOfSort": keys pinned {0,1} and values
// that come out of a transpose.  The generic rules would let the pinned keys
// decide ({0,1}); on GPU both operands are {1,0}: the keys are copied, the
// transpose writes {1,0} and stays a bitcast by reading a {0,1} copy of the
// row-major parameter, and the results are row-major although they are free.
// CHECK-LABEL: func.func public @main
// CHECK-DAG:     %[[V:.+]] = mhlo.copy %arg1 {{.*}}xla_shape = "f32[2,3]{0,1}"
// CHECK-DAG:     %[[K:.+]] = mhlo.copy %arg0 {{.*}}xla_shape = "f32[3,2]{1,0}"
// CHECK:         %[[T:.+]] = stablehlo.transpose %[[V]]
// CHECK-SAME:      xla_shape = "f32[3,2]{1,0}"
// CHECK:         "stablehlo.sort"(%[[K]], %[[T]])
// CHECK:         xla_shape = "(f32[3,2]{1,0}, f32[3,2]{1,0})"
func.func public @main(%k: tensor<3x2xf32> {mhlo.layout_mode = "{0,1}"}, %v: tensor<2x3xf32>)
    -> (tensor<3x2xf32> {mhlo.layout_mode = "auto"}, tensor<3x2xf32> {mhlo.layout_mode = "auto"}) {
  %t = stablehlo.transpose %v, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %0:2 = "stablehlo.sort"(%k, %t) <{dimension = 1 : i64, is_stable = true}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>, %c: tensor<f32>, %d: tensor<f32>):
    %e = stablehlo.compare LT, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %e : tensor<i1>
  }) : (tensor<3x2xf32>, tensor<3x2xf32>) -> (tensor<3x2xf32>, tensor<3x2xf32>)
  return %0#0, %0#1 : tensor<3x2xf32>, tensor<3x2xf32>
}
