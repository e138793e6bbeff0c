// XLA gpu/transforms/layout_assignment_test.cc: LayoutAssignmentTest.SendRcvLayout
// XLA asserts: recv and recv-done (f32[100,100]{1,0}, ...); send (f32[100,100]{1,0}, ...)
// As StableHLO: the HLO->StableHLO converter rejects a send-done fed by a
// get-tuple-element (the test's loop-carried send context), so the while body
// here receives, sends and adds as the test's body does, with tokens carried.
func.func public @main(%p0: tensor<100x100xf32>) -> tensor<100x100xf32> {
  %tk = stablehlo.create_token : !stablehlo.token
  %snd = "stablehlo.send"(%p0, %tk) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, is_host_transfer = false}> : (tensor<100x100xf32>, !stablehlo.token) -> !stablehlo.token loc("snd")
  %loop:2 = stablehlo.while(%t1 = %p0, %t = %snd) : tensor<100x100xf32>, !stablehlo.token
    cond {
      %lt = stablehlo.constant dense<true> : tensor<i1>
      stablehlo.return %lt : tensor<i1>
    } do {
      %tk2 = stablehlo.after_all %t : !stablehlo.token
      %rcvd:2 = "stablehlo.recv"(%tk2) <{channel_handle = #stablehlo.channel_handle<handle = 2, type = 1>, is_host_transfer = false}> : (!stablehlo.token) -> (tensor<100x100xf32>, !stablehlo.token) loc("rcvd")
      %snd2 = "stablehlo.send"(%t1, %rcvd#1) <{channel_handle = #stablehlo.channel_handle<handle = 3, type = 1>, is_host_transfer = false}> : (tensor<100x100xf32>, !stablehlo.token) -> !stablehlo.token loc("snd.1")
      %a = stablehlo.add %t1, %t1 : tensor<100x100xf32> loc("a")
      %b = stablehlo.add %rcvd#0, %a : tensor<100x100xf32> loc("b")
      stablehlo.return %b, %snd2 : tensor<100x100xf32>, !stablehlo.token
    } loc("loop")
  return %loop#0 : tensor<100x100xf32>
}
