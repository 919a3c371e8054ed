// RUN: %gradc opt %s --split-input-file -p plan-buffers --verify-each | filecheck %s
// RUN: %gradc opt %s --split-input-file -p plan-buffers,plan-buffers --print-ir-after-change 2>&1 >/dev/null | filecheck %s --check-prefix=ONCE

// Each top-level op is one step; a result's buffer lives from its step to its last use
// (inclusive); returned buffers escape (live to the end step = number of ops, never reused,
// offset -1). gradc.buffers lists [first, last, offset, size] in definition order; peak is
// the most bytes live at one step; arena is the reusable memory after first-fit offsets
// (largest first). Worked by hand below; f32 is 4 bytes, i64 8.

// Running the pass again changes nothing (only the first run prints a dump per function).
// ONCE-COUNT-8: IR Dump After plan-buffers
// ONCE-NOT:     IR Dump After plan-buffers

// A chain of 16-byte values: A=exp [0,1], B=neg [1,2], C=tanh [2,3], D=sin escapes [3,4].
// Live per step: s0 A=16, s1 A+B=32, s2 B+C=32, s3 C+D=32, s4 D=16 -> peak 32.
// Offsets: A@0; B overlaps A -> @16; C overlaps only B -> reuses @0. Arena 32.
// CHECK-LABEL: func.func @chain
// CHECK-SAME:    attributes {gradc.arena_bytes = 32, gradc.buffers = {{\[}}[0, 1, 0, 16], [1, 2, 16, 16], [2, 3, 0, 16], [3, 4, -1, 16]], gradc.peak_bytes = 32}
func.func @chain(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = gradc.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  %1 = gradc.neg %0 : (tensor<4xf32>) -> tensor<4xf32>
  %2 = gradc.tanh %1 : (tensor<4xf32>) -> tensor<4xf32>
  %3 = gradc.sin %2 : (tensor<4xf32>) -> tensor<4xf32>
  func.return %3 : tensor<4xf32>
}

// -----

// A view (reshape) owns no memory; reading the view at step 4 keeps exp's buffer alive.
// A=exp 16 [0,4], B=neg 16 [2,3], C=sum 4 [3,4], D=mul 16 escapes [4,5].
// Live: s0 16, s1 16, s2 A+B=32, s3 A+B+C=36, s4 A+C+D=36, s5 D=16 -> peak 36.
// Offsets: A@0; B overlaps A -> @16; C overlaps A and B -> @32. Arena 36.
// CHECK-LABEL: func.func @view_extends_life
// CHECK-SAME:    attributes {gradc.arena_bytes = 36, gradc.buffers = {{\[}}[0, 4, 0, 16], [2, 3, 16, 16], [3, 4, 32, 4], [4, 5, -1, 16]], gradc.peak_bytes = 36}
func.func @view_extends_life(%x: tensor<4xf32>) -> tensor<2x2xf32> {
  %0 = gradc.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  %1 = gradc.reshape %0 {shape = [2, 2]} : (tensor<4xf32>) -> tensor<2x2xf32>
  %2 = gradc.neg %x : (tensor<4xf32>) -> tensor<4xf32>
  %3 = gradc.sum %2 {dims = [0], keepdim = false} : (tensor<4xf32>) -> tensor<f32>
  %4 = gradc.mul %1, %3 : (tensor<2x2xf32>, tensor<f32>) -> tensor<2x2xf32>
  func.return %4 : tensor<2x2xf32>
}

// -----

// Arguments belong to the caller and views of them alias them: nothing is allocated.
// CHECK-LABEL: func.func @views_of_arguments
// CHECK-SAME:    attributes {gradc.arena_bytes = 0, gradc.buffers = [], gradc.peak_bytes = 0}
func.func @views_of_arguments(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<2x4xf32>, tensor<4x2xf32>) {
  %0 = gradc.reshape %x {shape = [2, 4]} : (tensor<8xf32>) -> tensor<2x4xf32>
  %1 = gradc.permute %0 {dims = [1, 0]} : (tensor<2x4xf32>) -> tensor<4x2xf32>
  func.return %x, %0, %1 : tensor<8xf32>, tensor<2x4xf32>, tensor<4x2xf32>
}

// -----

// Each result of a multi-result op is its own buffer: V=values 2xf32 8 [0,2],
// I=indices 2xi64 16 [0,1], K=cast 8 [1,2], R=add 8 escapes [2,3].
// Live: s0 V+I=24, s1 V+I+K=32, s2 V+K+R=24, s3 R=8 -> peak 32.
// Offsets, largest first: I@0; V overlaps I -> @16; K overlaps I and V -> @24. Arena 32.
// CHECK-LABEL: func.func @multi_result
// CHECK-SAME:    attributes {gradc.arena_bytes = 32, gradc.buffers = {{\[}}[0, 2, 16, 8], [0, 1, 0, 16], [1, 2, 24, 8], [2, 3, -1, 8]], gradc.peak_bytes = 32}
func.func @multi_result(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  %0:2 = gradc.max_dim %x {dim = 1, keepdim = false} : (tensor<2x3xf32>) -> (tensor<2xf32>, tensor<2xi64>)
  %1 = gradc.cast %0#1 {dtype = "float32"} : (tensor<2xi64>) -> tensor<2xf32>
  %2 = gradc.add %0#0, %1 : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %2 : tensor<2xf32>
}

// -----

// A fused kernel is one step; the values inside its body need no buffers, only its results.
// A=fused 16 [0,1], R=sum 4 escapes [1,2]. Live: s0 16, s1 20, s2 4 -> peak 20; arena 16.
// CHECK-LABEL: func.func @fused
// CHECK-SAME:    attributes {gradc.arena_bytes = 16, gradc.buffers = {{\[}}[0, 1, 0, 16], [1, 2, -1, 4]], gradc.peak_bytes = 20}
func.func @fused(%a: tensor<4xf32>) -> tensor<f32> {
  %0 = gradc.fused %a ({
  ^bb0(%x: tensor<4xf32>):
    %1 = gradc.exp %x : (tensor<4xf32>) -> tensor<4xf32>
    %2 = gradc.neg %1 : (tensor<4xf32>) -> tensor<4xf32>
    gradc.yield %2 : tensor<4xf32>
  }) : (tensor<4xf32>) -> tensor<4xf32>
  %3 = gradc.sum %0 {dims = [0], keepdim = false} : (tensor<4xf32>) -> tensor<f32>
  func.return %3 : tensor<f32>
}

// -----

// A fused body may read an enclosing value directly (the verifier allows it): that read
// happens at the fused op's step, so exp stays live until then and keeps its own bytes.
// A=exp 16 [0,2], B=neg 16 [1,2], R=fused 16 escapes [2,3].
// Live: s0 16, s1 32, s2 48, s3 16 -> peak 48; A@0, B overlaps A -> @16: arena 32.
// CHECK-LABEL: func.func @fused_reads_outer_value
// CHECK-SAME:    attributes {gradc.arena_bytes = 32, gradc.buffers = {{\[}}[0, 2, 0, 16], [1, 2, 16, 16], [2, 3, -1, 16]], gradc.peak_bytes = 48}
func.func @fused_reads_outer_value(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = gradc.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  %1 = gradc.neg %x : (tensor<4xf32>) -> tensor<4xf32>
  %2 = gradc.fused %1 ({
  ^bb0(%a: tensor<4xf32>):
    %3 = gradc.add %a, %0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    gradc.yield %3 : tensor<4xf32>
  }) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %2 : tensor<4xf32>
}

// -----

// A returned intermediate escapes: it stays live to the end even though its last reader
// runs at step 1. A=exp 16 escapes [0,3], B=neg 16 [1,2], C=sin 16 escapes [2,3].
// Live: s0 16, s1 32, s2 48, s3 32 -> peak 48. Only B is in the arena: 16.
// CHECK-LABEL: func.func @returned_intermediate
// CHECK-SAME:    attributes {gradc.arena_bytes = 16, gradc.buffers = {{\[}}[0, 3, -1, 16], [1, 2, 0, 16], [2, 3, -1, 16]], gradc.peak_bytes = 48}
func.func @returned_intermediate(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = gradc.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  %1 = gradc.neg %0 : (tensor<4xf32>) -> tensor<4xf32>
  %2 = gradc.sin %1 : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0, %2 : tensor<4xf32>, tensor<4xf32>
}

// -----

// Nothing to run: no buffers.
// CHECK-LABEL: func.func @identity
// CHECK-SAME:    attributes {gradc.arena_bytes = 0, gradc.buffers = [], gradc.peak_bytes = 0}
func.func @identity(%x: tensor<4xf32>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}
