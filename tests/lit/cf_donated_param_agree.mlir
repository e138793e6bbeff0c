// RUN: stablehlo-layout assign --target xla-cpu %s | FileCheck %s
// A donated "auto" parameter x (tf.aliasing_output = 0) added to a row-major
// y; the result is pinned column-major {0,1}.
//
// xla-cpu: add reads both operands row-major (XLA §10) and is a
// cannot-change-layout op, so its output is {1,0} (mandatory sibling rule)
// and the soft result demand (XLA §3.4) is refused.  x, free, takes {1,0} from its
// use.  Alias reconciliation (XLA §3.7) infers the parameter's layout {1,0} and
// the root's layout {1,0}: they agree, so XLA changes nothing - the pinned
// result stays {0,1} and gets a root copy (XLA §8.1).  (The parameter does not
// end up in the result's layout here; the rule compares against the root's
// buffer, not against the requested result layout.)
//
// Cross-checked against XLA's after-dump of this module:
// entry_computation_layout={(f32[4,8]{1,0}, f32[4,8]{1,0})->f32[4,8]{0,1}},
// add {1,0}, ROOT copy {0,1}.

// CHECK:       module attributes {mhlo.xla_entry_computation_parameter_layouts = [dense<[1, 0]> : tensor<2xindex>, dense<[1, 0]> : tensor<2xindex>], mhlo.xla_entry_computation_result_layout = [dense<[0, 1]> : tensor<2xindex>]}
// CHECK-LABEL: func.func public @main(
// CHECK-SAME:    %arg0: tensor<4x8xf32> {mhlo.layout_mode = "{1,0}", stablehlo_layout.chosen, tf.aliasing_output = 0 : i32}
// CHECK-SAME:    %arg1: tensor<4x8xf32> {mhlo.layout_mode = "{1,0}"}
// CHECK-SAME:    -> (tensor<4x8xf32> {mhlo.layout_mode = "{0,1}"})
// CHECK-NEXT:    %[[S:.+]] = stablehlo.add %arg0, %arg1
// CHECK-SAME:      xla_shape = "f32[4,8]{1,0}"
// CHECK-NEXT:    %[[R:.+]] = mhlo.copy %[[S]] {result_layout = dense<[0, 1]> : tensor<2xindex>, {{(stablehlo_layout.inserted, )?}}xla_shape = "f32[4,8]{0,1}"}
// CHECK-NEXT:    return %[[R]]
func.func public @main(%x: tensor<4x8xf32> {mhlo.layout_mode = "auto", tf.aliasing_output = 0 : i32}, %y: tensor<4x8xf32>)
    -> (tensor<4x8xf32> {mhlo.layout_mode = "{0,1}"}) {
  %0 = stablehlo.add %x, %y : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
