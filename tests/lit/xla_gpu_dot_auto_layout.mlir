// RUN: stablehlo-layout assign --target xla-gpu %s | FileCheck %s

// Rule (XLA §11.2 case 3, target:gpu-dot-auto-layout): a plain matrix
// operand whose producer chain (unary elementwise ops, transposes, reshapes,
// concatenates) starts at an entry parameter with no given layout gets a
// *non-mandatory* layout cuBLAS takes: its existing (default) layout.  The
// free parameter then follows it, so no copy is needed.
//
// GPUT "DotSetsNonMandatoryConstraintIfAutoLayout": rhs f16[2000,20] is
// asked for {1,0}; through the reshape (bitcast) the transpose wants
// {2,1,0}, and through the transpose the parameter gets {1,2,0}.  The
// pinned lhs has no such chain and gets nothing.
// CHECK-LABEL: func.func public @main
// CHECK-SAME:    %arg1: tensor<40x20x50xf16> {mhlo.layout_mode = "{1,2,0}", stablehlo_layout.chosen}
// CHECK-NOT:     mhlo.copy
// CHECK:         stablehlo.transpose %arg1
// CHECK-SAME:      xla_shape = "f16[40,50,20]{2,1,0}"
// CHECK:         stablehlo.reshape
// CHECK-SAME:      xla_shape = "f16[2000,20]{1,0}"
// CHECK:         stablehlo.dot_general
// CHECK-SAME:      xla_shape = "f16[300,2000]{1,0}"
// CHECK-NOT:     mhlo.copy
func.func public @main(%p0: tensor<300x20xf16>, %p1: tensor<40x20x50xf16> {mhlo.layout_mode = "auto"}) -> tensor<300x2000xf16> {
  %t = stablehlo.transpose %p1, dims = [0, 2, 1] : (tensor<40x20x50xf16>) -> tensor<40x50x20xf16>
  %r = stablehlo.reshape %t : (tensor<40x50x20xf16>) -> tensor<2000x20xf16>
  %0 = stablehlo.dot_general %p0, %r, contracting_dims = [1] x [1] : (tensor<300x20xf16>, tensor<2000x20xf16>) -> tensor<300x2000xf16>
  return %0 : tensor<300x2000xf16>
}
