// RUN: stablehlo-layout assign --target xla-gpu %s | FileCheck %s
// RUN: stablehlo-layout assign --target xla-gpu %S/Inputs/gpu_dot_fp8.mlir | FileCheck %s --check-prefix=FP8

// Rule (XLA §11.2 case 1, target:gpu-dot-minor-contracting): int8 GEMMs
// (s8 x s8 -> s32) and FP8 GEMMs before Blackwell need the contracting dims
// most minor in both operands: the existing layout is kept if it already
// has them most minor, else the operand is forced to major-to-minor
// [batch, free, contracting].  Mandatory.
//
// GPUT "DotLayoutS8": lhs s8[32,64] contracts dim 1, already most minor in
// {1,0}; rhs s8[64,96] contracts dim 0, so it becomes {0,1} and the
// row-major parameter is copied.
// CHECK-LABEL: func.func public @main
// CHECK:         %[[B:.+]] = mhlo.copy %arg1
// CHECK-SAME:      xla_shape = "s8[64,96]{0,1}"
// CHECK:         stablehlo.dot_general %arg0, %[[B]]
// CHECK-SAME:      xla_shape = "s32[32,96]{1,0}"
func.func public @main(%a: tensor<32x64xi8>, %b: tensor<64x96xi8>) -> tensor<32x96xi32> {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<32x64xi8>, tensor<64x96xi8>) -> tensor<32x96xi32>
  return %0 : tensor<32x96xi32>
}

// GPUT "AutoLayoutE4M3ContractingMinorFirst": with free (auto) parameters
// the FP8 operands simply take the layouts: lhs {1,0}, rhs {0,1}, no copy;
// the f32 result is row-major.
// FP8-LABEL: func.func public @main
// FP8-SAME:      %arg0: tensor<128x512xf8E4M3FN> {mhlo.layout_mode = "{1,0}", stablehlo_layout.chosen}
// FP8-SAME:      %arg1: tensor<512x1024xf8E4M3FN> {mhlo.layout_mode = "{0,1}", stablehlo_layout.chosen}
// FP8-NOT:     mhlo.copy
// FP8:         stablehlo.dot_general %arg0, %arg1
// FP8-SAME:      xla_shape = "f32[128,1024]{1,0}"
