// RUN: stablehlo-layout assign --target xla-gpu %s | FileCheck %s
// RUN: stablehlo-layout assign --target xla-gpu %S/Inputs/gpu_bitcast_convert_narrow_in.mlir | FileCheck %s --check-prefix=NARROWIN
// RUN: stablehlo-layout assign --target xla-gpu %S/Inputs/gpu_bitcast_convert_narrow_out.mlir | FileCheck %s --check-prefix=NARROWOUT

// Rule (reference §11.5, target:gpu-bitcast-convert-rank-change): when a
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

// The s4[3,5,2] operand pinned {0,1,2} (XLA's
// BitcastConvertFromNarrowerTypeGetsOptimalInputLayout, fed as JAX feeds
// it): XLA:GPU's module before layout assignment gives the parameter
// instruction the default layout, so "the larger shape's layout with the
// split dim moved most minor" is {2,1,0}: the parameter is copied to
// {2,1,0}, the convert writes s8[3,5]{1,0}, and the pinned result {0,1} is a
// copy at the return.  (XLA's unit test writes {0,1,2} on the parameter
// instruction itself, and gets {2,0,1}: tests/unit/xla_gpu_scenarios.)
// Checked against XLA:GPU compiling the same program for H100.
// NARROWIN-LABEL: func.func public @main
// NARROWIN:         %[[C:.+]] = mhlo.copy %arg0
// NARROWIN-SAME:      xla_shape = "s4[3,5,2]{2,1,0}"
// NARROWIN:         %[[B:.+]] = stablehlo.bitcast_convert %[[C]]
// NARROWIN-SAME:      xla_shape = "s8[3,5]{1,0}"
// NARROWIN:         mhlo.copy %[[B]]
// NARROWIN-SAME:      xla_shape = "s8[3,5]{0,1}"

// The result s4[3,5,2] pinned {0,1,2} from a row-major s8[3,5] (XLA's
// BitcastConvertToNarrowerTypeGetsOptimalOutputLayout as JAX feeds it): the
// convert's existing layout is the default, so it writes {2,1,0} from the
// row-major parameter and the result is copied to {0,1,2} at the return,
// as XLA:GPU compiles it.
// NARROWOUT-LABEL: func.func public @main
// NARROWOUT-NOT:     mhlo.copy %arg0
// NARROWOUT:         %[[B:.+]] = stablehlo.bitcast_convert %arg0
// NARROWOUT-SAME:      xla_shape = "s4[3,5,2]{2,1,0}"
// NARROWOUT:         mhlo.copy %[[B]]
// NARROWOUT-SAME:      xla_shape = "s4[3,5,2]{0,1,2}"
