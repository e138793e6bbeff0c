// RUN: stablehlo-layout assign --target generic %s | FileCheck %s

// Elementwise ops (add, multiply, tanh, compare, select, clamp, convert,
// subtract) are "cannot change layout" ops in XLA (XLA §4): every operand
// with the output's rank must have the output's layout.  Propagation enforces
// it both ways (XLA §3.2 backward: output -> same-rank operands, mandatory; XLA §3.3
// step 7: operand -> same-rank siblings and outputs, mandatory), so a layout
// pinned on a parameter is carried unchanged down a chain of such ops.  Operands
// of lower rank (the scalar clamp bounds) are untouched (XLA §4, "Different-rank
// operands are unaffected"; rank-0 operand constraints are dropped, XLA §1.6).
//
// Case 1 (subtract): %arg0 is pinned {0,1}, %arg1 is pinned to the default
// {1,0}.  Both are mandatory buffer constraints added in instruction order
// (arg0 first); DFS constraints are pushed to the front of the deque, so the
// last added, %arg1, propagates first (XLA §3.1, XLA §13.6).  Its use demand on
// operand 1 forces operand 0 and the output to {1,0} (sibling rule, mandatory).
// When %arg0 then offers {0,1} to operand 0, the non-mandatory request cannot
// replace the existing operand constraint (XLA §1.6: first writer wins).  The loser
// is operand 0: one copy of %arg0 to {1,0}; the result takes {1,0}.
// Case 1b (multiply %arg6, %arg5): the same pins, but the default-pinned
// parameter is now the later one *and* operand 0.  The order is that of the
// parameter instructions, not of the operands: %arg6 (added last) wins, the
// loser is operand 1: one copy of %arg5 to {1,0}.
//
// Case 2 (chain): %arg2 pinned {0,1} feeds add/multiply/tanh/compare/select/
// clamp/convert.  Nothing else constrains the chain, so every op is {0,1}, no
// copy is needed, and the "auto" result is written back as "{0,1}".  The
// scalar bounds keep their (empty) default layout.

// The module records the entry layouts: one dense per parameter (scalars get
// an empty layout), and the results as one tuple entry (XLA §12.1).
// CHECK:       module attributes {mhlo.xla_entry_computation_parameter_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<[1, 0]> : tensor<2xindex>, dense<[0, 1]> : tensor<2xindex>, dense<> : tensor<0xindex>, dense<> : tensor<0xindex>, dense<[0, 1]> : tensor<2xindex>, dense<[1, 0]> : tensor<2xindex>]
// CHECK-SAME:    mhlo.xla_entry_computation_result_layout = {{\[}}[dense<[1, 0]> : tensor<2xindex>, dense<[0, 1]> : tensor<2xindex>, dense<[1, 0]> : tensor<2xindex>]]

// CHECK-LABEL: func.func public @main(
// CHECK-SAME:    %arg0: tensor<4x3xf32> {mhlo.layout_mode = "{0,1}"}
// CHECK-SAME:    %arg1: tensor<4x3xf32> {mhlo.layout_mode = "{1,0}"}
// CHECK-SAME:    %arg2: tensor<4x3xf32> {mhlo.layout_mode = "{0,1}"}
// CHECK-SAME:    %arg3: tensor<f32> {mhlo.layout_mode = "{}"}
// CHECK-SAME:    %arg4: tensor<f32> {mhlo.layout_mode = "{}"}
// CHECK-SAME:    %arg5: tensor<4x3xf32> {mhlo.layout_mode = "{0,1}"}
// CHECK-SAME:    %arg6: tensor<4x3xf32> {mhlo.layout_mode = "{1,0}"}
// CHECK-SAME:    -> (tensor<4x3xf32> {mhlo.layout_mode = "{1,0}", stablehlo_layout.chosen}, tensor<4x3xf64> {mhlo.layout_mode = "{0,1}", stablehlo_layout.chosen}, tensor<4x3xf32> {mhlo.layout_mode = "{1,0}", stablehlo_layout.chosen})
// Exactly two copies: %arg0 and %arg5 relaid out to {1,0} (at the block start).
// CHECK-DAG:     %[[C:.+]] = mhlo.copy %arg0 {result_layout = dense<[1, 0]> : tensor<2xindex>, {{(stablehlo_layout.inserted, )?}}xla_shape = "f32[4,3]{1,0}"}
// CHECK-DAG:     %[[C5:.+]] = mhlo.copy %arg5 {result_layout = dense<[1, 0]> : tensor<2xindex>, {{(stablehlo_layout.inserted, )?}}xla_shape = "f32[4,3]{1,0}"}
// CHECK-NOT:     mhlo.copy
// CHECK:         stablehlo.subtract %[[C]], %arg1
// CHECK-SAME:      xla_shape = "f32[4,3]{1,0}"
// CHECK-NEXT:    stablehlo.multiply %arg6, %[[C5]]
// CHECK-SAME:      xla_shape = "f32[4,3]{1,0}"
// CHECK:         %[[ADD:.+]] = stablehlo.add %arg2, %arg2
// CHECK-SAME:      result_layout = dense<[0, 1]> : tensor<2xindex>
// CHECK-SAME:      xla_shape = "f32[4,3]{0,1}"
// CHECK:         %[[MUL:.+]] = stablehlo.multiply %[[ADD]], %arg2
// CHECK-SAME:      xla_shape = "f32[4,3]{0,1}"
// CHECK:         %[[TANH:.+]] = stablehlo.tanh %[[MUL]]
// CHECK-SAME:      xla_shape = "f32[4,3]{0,1}"
// CHECK:         %[[CMP:.+]] = stablehlo.compare GT, %[[TANH]], %arg2
// CHECK-SAME:      xla_shape = "pred[4,3]{0,1}"
// CHECK:         %[[SEL:.+]] = stablehlo.select %[[CMP]], %[[TANH]], %[[MUL]]
// CHECK-SAME:      xla_shape = "f32[4,3]{0,1}"
// CHECK:         %[[CL:.+]] = stablehlo.clamp %arg3, %[[SEL]], %arg4
// CHECK-SAME:      xla_shape = "f32[4,3]{0,1}"
// CHECK:         stablehlo.convert %[[CL]]
// CHECK-SAME:      result_layout = dense<[0, 1]> : tensor<2xindex>
// CHECK-SAME:      xla_shape = "f64[4,3]{0,1}"
// CHECK:         return
// CHECK-NOT:     mhlo.copy
module attributes {} {
  func.func public @main(%p: tensor<4x3xf32> {mhlo.layout_mode = "{0,1}"},
                         %q: tensor<4x3xf32>,
                         %x: tensor<4x3xf32> {mhlo.layout_mode = "{0,1}"},
                         %lo: tensor<f32>, %hi: tensor<f32>,
                         %r: tensor<4x3xf32> {mhlo.layout_mode = "{0,1}"},
                         %s: tensor<4x3xf32>)
      -> (tensor<4x3xf32> {mhlo.layout_mode = "auto"}, tensor<4x3xf64> {mhlo.layout_mode = "auto"},
          tensor<4x3xf32> {mhlo.layout_mode = "auto"}) {
    %d = stablehlo.subtract %p, %q : tensor<4x3xf32>
    %e = stablehlo.multiply %s, %r : tensor<4x3xf32>
    %0 = stablehlo.add %x, %x : tensor<4x3xf32>
    %1 = stablehlo.multiply %0, %x : tensor<4x3xf32>
    %2 = stablehlo.tanh %1 : tensor<4x3xf32>
    %3 = stablehlo.compare GT, %2, %x : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xi1>
    %4 = stablehlo.select %3, %2, %1 : tensor<4x3xi1>, tensor<4x3xf32>
    %5 = stablehlo.clamp %lo, %4, %hi : (tensor<f32>, tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xf32>
    %6 = stablehlo.convert %5 : (tensor<4x3xf32>) -> tensor<4x3xf64>
    return %d, %6, %e : tensor<4x3xf32>, tensor<4x3xf64>, tensor<4x3xf32>
  }
}
