// RUN: stablehlo-layout assign --target xla-gpu %s | FileCheck %s
// RUN: stablehlo-layout assign --target xla-gpu %S/Inputs/gpu_bitcast_convert_narrow_in.mlir | FileCheck %s --check-prefix=NARROWIN
// RUN: stablehlo-layout assign --target xla-gpu %S/Inputs/gpu_bitcast_convert_narrow_out.mlir | FileCheck %s --check-prefix=NARROWOUT

// Rule (XLA §11.5, target:gpu-bitcast-convert-rank-change): when a
// bitcast_convert adds or drops the last dimension (the element split into
// narrower elements), that dimension is moved most minor in the larger
// shape's existing layout, and the smaller shape takes the same layout with
// it deleted, so the convert is a bitcast.  Both sides mandatory.
//
// GPUT "BitcastConvertKeepsCompatibleLayouts" (there u4 -> u8; here u8 ->
// u16, so that XLA:CPU can run the file): u8[5,4,3,2]{3,2,1,0} already has
// dim 3 most minor, so the convert writes u16[5,4,3]{2,1,0}; the transpose
// follows as a bitcast and the row-major result needs a root copy.  (The
// generic rules instead copy the parameter.)
// CHECK-LABEL: func.func public @main
// CHECK-NOT:     mhlo.copy %arg0
// CHECK:         %[[B:.+]] = stablehlo.bitcast_convert %arg0
// CHECK-SAME:      xla_shape = "u16[5,4,3]{2,1,0}"
// CHECK:         %[[T:.+]] = stablehlo.transpose %[[B]]
// CHECK-SAME:      xla_shape = "u16[4,5,3]{2,0,1}"
// CHECK:         %[[R:.+]] = mhlo.copy %[[T]]
// CHECK-SAME:      xla_shape = "u16[4,5,3]{2,1,0}"
// CHECK:         return %[[R]]
func.func public @main(%a: tensor<5x4x3x2xui8>) -> tensor<4x5x3xui16> {
  %b = stablehlo.bitcast_convert %a : (tensor<5x4x3x2xui8>) -> tensor<5x4x3xui16>
  %c = stablehlo.transpose %b, dims = [1, 0, 2] : (tensor<5x4x3xui16>) -> tensor<4x5x3xui16>
  return %c : tensor<4x5x3xui16>
}

// GPUT "BitcastConvertFromNarrowerTypeGetsOptimalInputLayout": the operand
// s4[3,5,2] is pinned {0,1,2}; moving dim 2 most minor gives {2,0,1}, so the
// parameter is copied, and the result is {0,1} as pinned.
// NARROWIN-LABEL: func.func public @main
// NARROWIN:         %[[C:.+]] = mhlo.copy %arg0
// NARROWIN-SAME:      xla_shape = "s4[3,5,2]{2,0,1}"
// NARROWIN:         stablehlo.bitcast_convert %[[C]]
// NARROWIN-SAME:      xla_shape = "s8[3,5]{0,1}"

// GPUT "BitcastConvertToNarrowerTypeGetsOptimalOutputLayout": the result
// s4[3,5,2] is pinned {0,1,2}, so the convert writes {2,0,1} and reads
// s8[3,5]{0,1}: the row-major parameter is copied in and the result copied
// out.  (The generic rules write {0,1,2}, which is not a bitcast.)
// NARROWOUT-LABEL: func.func public @main
// NARROWOUT:         %[[C:.+]] = mhlo.copy %arg0
// NARROWOUT-SAME:      xla_shape = "s8[3,5]{0,1}"
// NARROWOUT:         %[[B:.+]] = stablehlo.bitcast_convert %[[C]]
// NARROWOUT-SAME:      xla_shape = "s4[3,5,2]{2,0,1}"
// NARROWOUT:         mhlo.copy %[[B]]
// NARROWOUT-SAME:      xla_shape = "s4[3,5,2]{0,1,2}"
