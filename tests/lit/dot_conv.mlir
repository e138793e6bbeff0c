// RUN: stablehlo-layout assign --target generic %s | FileCheck %s

// dot (dot_general) and convolution can change layout and the base pass has no
// rule for them in either direction: layouts are decided by backends (CPU/GPU
// AddBackendConstraints, XLA §5.3, XLA §10, XLA §11).  The generic target adds
// no backend constraints, so nothing is derived across these ops and no copy is
// inserted around them (LAT "ConvolutionOperandWithImplicitLayoutChangeNot-
// Copied", Appendix A).  Each operand keeps its producer's layout (the operand
// constraints only echo it), and each output takes its users' layout (here the
// soft result demand) or the default.
//
// %arg0 {0,1} . %arg1 {1,0} -> result pinned {0,1}: dot output {0,1}, no copy.
// %arg2 {0,1,2} . %arg3 (batch dot) -> default result: output {2,1,0}.
// %arg4 NHWC input pinned {0,1,2,3}, %arg5 HWIO kernel -> default result:
//   convolution output {3,2,1,0}, no copy, the input stays {0,1,2,3}.
// %arg6 . %arg7 both "auto" -> result {0,1}: nothing reaches the parameters
//   through the dot, so they get the default {1,0} from the default loop.

// CHECK-LABEL: func.func public @main(
// CHECK-SAME:    %arg0: tensor<4x8xf32> {mhlo.layout_mode = "{0,1}"}
// CHECK-SAME:    %arg1: tensor<8x5xf32> {mhlo.layout_mode = "{1,0}"}
// CHECK-SAME:    %arg2: tensor<2x4x8xf32> {mhlo.layout_mode = "{0,1,2}"}
// CHECK-SAME:    %arg3: tensor<2x8x5xf32> {mhlo.layout_mode = "{2,1,0}"}
// CHECK-SAME:    %arg4: tensor<1x8x8x3xf32> {mhlo.layout_mode = "{0,1,2,3}"}
// CHECK-SAME:    %arg5: tensor<3x3x3x4xf32> {mhlo.layout_mode = "{3,2,1,0}"}
// CHECK-SAME:    %arg6: tensor<4x8xf32> {mhlo.layout_mode = "{1,0}", stablehlo_layout.chosen}
// CHECK-SAME:    %arg7: tensor<8x5xf32> {mhlo.layout_mode = "{1,0}", stablehlo_layout.chosen}
// CHECK-SAME:    -> (tensor<4x5xf32> {mhlo.layout_mode = "{0,1}"}, tensor<2x4x5xf32> {mhlo.layout_mode = "{2,1,0}"}, tensor<1x6x6x4xf32> {mhlo.layout_mode = "{3,2,1,0}"}, tensor<4x5xf32> {mhlo.layout_mode = "{0,1}"})
// CHECK-NOT:     mhlo.copy
// CHECK:         stablehlo.dot_general %arg0, %arg1
// CHECK-SAME:      result_layout = dense<[0, 1]> : tensor<2xindex>
// CHECK-SAME:      xla_shape = "f32[4,5]{0,1}"
// CHECK-NEXT:    stablehlo.dot_general %arg2, %arg3
// CHECK-SAME:      xla_shape = "f32[2,4,5]{2,1,0}"
// CHECK-NEXT:    stablehlo.convolution(%arg4, %arg5)
// CHECK-SAME:      xla_shape = "f32[1,6,6,4]{3,2,1,0}"
// CHECK-NEXT:    stablehlo.dot_general %arg6, %arg7
// CHECK-SAME:      xla_shape = "f32[4,5]{0,1}"
// CHECK-NOT:     mhlo.copy
// CHECK:         return
func.func public @main(%l: tensor<4x8xf32> {mhlo.layout_mode = "{0,1}"}, %r: tensor<8x5xf32>,
                       %bl: tensor<2x4x8xf32> {mhlo.layout_mode = "{0,1,2}"}, %br: tensor<2x8x5xf32>,
                       %in: tensor<1x8x8x3xf32> {mhlo.layout_mode = "{0,1,2,3}"}, %k: tensor<3x3x3x4xf32>,
                       %fl: tensor<4x8xf32> {mhlo.layout_mode = "auto"},
                       %fr: tensor<8x5xf32> {mhlo.layout_mode = "auto"})
    -> (tensor<4x5xf32> {mhlo.layout_mode = "{0,1}"}, tensor<2x4x5xf32>, tensor<1x6x6x4xf32>,
        tensor<4x5xf32> {mhlo.layout_mode = "{0,1}"}) {
  %0 = stablehlo.dot_general %l, %r, contracting_dims = [1] x [0]
      : (tensor<4x8xf32>, tensor<8x5xf32>) -> tensor<4x5xf32>
  %1 = stablehlo.dot_general %bl, %br, batching_dims = [0] x [0], contracting_dims = [2] x [1]
      : (tensor<2x4x8xf32>, tensor<2x8x5xf32>) -> tensor<2x4x5xf32>
  %2 = stablehlo.convolution(%in, %k)
      dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
      window = {stride = [1, 1], pad = [[0, 0], [0, 0]]}
      {batch_group_count = 1 : i64, feature_group_count = 1 : i64}
      : (tensor<1x8x8x3xf32>, tensor<3x3x3x4xf32>) -> tensor<1x6x6x4xf32>
  %3 = stablehlo.dot_general %fl, %fr, contracting_dims = [1] x [0]
      : (tensor<4x8xf32>, tensor<8x5xf32>) -> tensor<4x5xf32>
  return %0, %1, %2, %3 : tensor<4x5xf32>, tensor<2x4x5xf32>, tensor<1x6x6x4xf32>, tensor<4x5xf32>
}
