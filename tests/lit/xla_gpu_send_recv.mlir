// RUN: stablehlo-layout assign --target xla-gpu %s | FileCheck %s

// Rule (XLA §11.7, target:gpu-recv-default): every array a recv
// produces is in the default layout, mandatory.  (send: XLA copies what send
// transfers and GPU pins that copy to the default on both sides; the engine
// already reads send operands in the default layout, so the GPU rule adds
// nothing.)  GPUT "SendRcvLayout" expects recv f32[100,100]{1,0}.
//
// The recv'd array is added to a parameter pinned {0,1}, and the result is
// free.  The generic rules let the pinned parameter decide ({0,1} for the
// recv and the add); on GPU the recv is {1,0}, the add follows it and the
// parameter is copied (one copy serves both the add and the send).
// CHECK-LABEL: func.func public @main
// CHECK:         %[[X:.+]] = mhlo.copy %arg0
// CHECK-SAME:      xla_shape = "f32[100,100]{1,0}"
// CHECK:         %[[R:.+]]:2 = "stablehlo.recv"(%arg1)
// CHECK-SAME:      xla_shape = "(f32[100,100]{1,0}, token[])"
// CHECK:         stablehlo.add %[[R]]#0, %[[X]]
// CHECK-SAME:      xla_shape = "f32[100,100]{1,0}"
// CHECK:         "stablehlo.send"(%[[X]], %[[R]]#1)
func.func public @main(%x: tensor<100x100xf32> {mhlo.layout_mode = "{0,1}"}, %tok: !stablehlo.token)
    -> (tensor<100x100xf32> {mhlo.layout_mode = "auto"}, !stablehlo.token) {
  %0:2 = "stablehlo.recv"(%tok) <{channel_handle = #stablehlo.channel_handle<handle = 2, type = 3>, is_host_transfer = true}> : (!stablehlo.token) -> (tensor<100x100xf32>, !stablehlo.token)
  %1 = stablehlo.add %0#0, %x : tensor<100x100xf32>
  %2 = "stablehlo.send"(%x, %0#1) <{channel_handle = #stablehlo.channel_handle<handle = 3, type = 2>, is_host_transfer = true}> : (tensor<100x100xf32>, !stablehlo.token) -> !stablehlo.token
  return %1, %2 : tensor<100x100xf32>, !stablehlo.token
}
