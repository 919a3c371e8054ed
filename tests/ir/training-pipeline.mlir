// RUN: %gradc opt %s --split-input-file --verify-each -p 'canonicalize,cse,autodiff,canonicalize,cse,dce,partition,fuse,plan-buffers' | filecheck %s --check-prefixes=CHECK,MIN
// RUN: %gradc opt %s --split-input-file --verify-each -p 'canonicalize,cse,autodiff,canonicalize,cse,dce,partition{policy=save-all},fuse,plan-buffers' | filecheck %s --check-prefixes=CHECK,SAVE
// RUN: %gradc opt %s --split-input-file --verify-each -p 'canonicalize,cse,autodiff,decompose,canonicalize,cse,dce,partition,fuse,cse,dce,plan-buffers' | filecheck %s --check-prefix=DECOMPOSE

// The whole training pipeline, verified after every pass: differentiate, clean up, split
// into forward and backward, fuse each half, plan each half's memory.

// A two-layer MLP with a bias and a log-softmax loss.
// CHECK-LABEL: func.func @mlp_forward(%x: tensor<4x5xf32>, %w1: tensor<5x6xf32>, %b1: tensor<6xf32>, %w2: tensor<6x3xf32>)
// CHECK-SAME:    gradc.arena_bytes = {{[0-9]+}}, gradc.buffers = {{.*}}, gradc.num_outputs = 1, gradc.peak_bytes = {{[0-9]+}}, gradc.residuals = {{[0-9]+}}
// CHECK:         gradc.matmul %x, %w1
// CHECK:         gradc.fused
// CHECK:           gradc.tanh
// CHECK:         gradc.matmul
// CHECK:         gradc.log_softmax
// CHECK:         func.return
// MIN-SAME:        %x, %b1, %w2,
// CHECK-LABEL: func.func @mlp_backward(
// CHECK-SAME:    %ct0: tensor<f32>) -> (tensor<5x6xf32>, tensor<6xf32>, tensor<6x3xf32>)
// CHECK-SAME:    gradc.wrt = [1, 2, 3]
// MIN:           gradc.tanh
// SAVE-NOT:      gradc.tanh
// CHECK-COUNT-3: gradc.matmul
// CHECK:         func.return

// Decomposing log_softmax lets the loss fuse: the mean over all elements splits into row
// means (the dims of the row max and row sum) and a small mean of those, so one kernel does
// the row max, exp, row sum, log, subtraction and row means, and a second the last mean.
// DECOMPOSE-LABEL: func.func @mlp_forward
// DECOMPOSE-NOT:   gradc.log_softmax
// DECOMPOSE:       gradc.matmul
// DECOMPOSE:       gradc.matmul
// DECOMPOSE-NEXT:  gradc.fused
// DECOMPOSE:         gradc.amax {{%[a-z0-9]+}} {dims = [1], keepdim = true}
// DECOMPOSE:         gradc.exp
// DECOMPOSE:         gradc.sum {{%[0-9]+}} {dims = [1], keepdim = true}
// DECOMPOSE:         gradc.log
// DECOMPOSE:         gradc.mean {{%[0-9]+}} {dims = [1], keepdim = false}
// DECOMPOSE:       gradc.fused
// DECOMPOSE-NEXT:  ^bb0(%arg{{[0-9]+}}: tensor<4xf32>):
// DECOMPOSE-NEXT:    gradc.mean {{%[a-z0-9]+}} {dims = [0], keepdim = false}
// DECOMPOSE:       func.return
// DECOMPOSE-LABEL: func.func @mlp_backward
func.func @mlp(%x: tensor<4x5xf32>, %w1: tensor<5x6xf32> {gradc.requires_grad}, %b1: tensor<6xf32> {gradc.requires_grad}, %w2: tensor<6x3xf32> {gradc.requires_grad}) -> tensor<f32> {
  %0 = gradc.matmul %x, %w1 : (tensor<4x5xf32>, tensor<5x6xf32>) -> tensor<4x6xf32>
  %1 = gradc.add %0, %b1 : (tensor<4x6xf32>, tensor<6xf32>) -> tensor<4x6xf32>
  %2 = gradc.tanh %1 : (tensor<4x6xf32>) -> tensor<4x6xf32>
  %3 = gradc.matmul %2, %w2 : (tensor<4x6xf32>, tensor<6x3xf32>) -> tensor<4x3xf32>
  %4 = gradc.log_softmax %3 {dim = 1} : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %5 = gradc.mean %4 {dims = [0, 1], keepdim = false} : (tensor<4x3xf32>) -> tensor<f32>
  %6 = gradc.neg %5 : (tensor<f32>) -> tensor<f32>
  func.return %6 : tensor<f32>
}

// -----

// An elementwise chain with identities for canonicalize (x*1, x+0) and a duplicate for
// cse: min-memory keeps only the input; each half is a single fused kernel.
// CHECK-LABEL: func.func @chain_forward(%x: tensor<8xf32>)
// MIN-SAME:      -> (tensor<f32>, tensor<8xf32>)
// SAVE-SAME:     -> (tensor<f32>, tensor<8xf32>, tensor<8xf32>)
// MIN-NEXT:      [[F:%[0-9]+]] = gradc.fused %x ({
// SAVE-NEXT:     {{%[0-9]+}}:3 = gradc.fused %x ({
// CHECK-NOT:     gradc.fused
// MIN:           func.return [[F]], %x :
// CHECK-LABEL: func.func @chain_backward(
// CHECK-NEXT:    [[G:%[0-9]+]] = gradc.fused
// CHECK-NOT:     gradc.fused
// CHECK:         func.return [[G]] : tensor<8xf32>
// DECOMPOSE-LABEL: func.func @chain_forward
func.func @chain(%x: tensor<8xf32> {gradc.requires_grad}) -> tensor<f32> {
  %c1 = gradc.constant {dtype = "float32", shape = [], value = 1.0} : () -> tensor<f32>
  %c0 = gradc.constant {dtype = "float32", shape = [], value = 0.0} : () -> tensor<f32>
  %0 = gradc.mul %x, %c1 : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %1 = gradc.exp %0 : (tensor<8xf32>) -> tensor<8xf32>
  %2 = gradc.exp %x : (tensor<8xf32>) -> tensor<8xf32>
  %3 = gradc.add %1, %2 : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %4 = gradc.add %3, %c0 : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %5 = gradc.sin %4 : (tensor<8xf32>) -> tensor<8xf32>
  %6 = gradc.sum %5 {dims = [0], keepdim = false} : (tensor<8xf32>) -> tensor<f32>
  func.return %6 : tensor<f32>
}
