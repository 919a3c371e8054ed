// RUN: %gradc opt %s --split-input-file -p 'canonicalize,cse' --verify-each | filecheck %s --check-prefix=CSE
// RUN: %gradc opt %s --split-input-file -p 'dce' --verify-each | filecheck %s --check-prefix=DCE
// RUN: %gradc opt %s --split-input-file -p 'autodiff,canonicalize,cse,dce,partition' --verify-each | filecheck %s --check-prefix=PART

// A random draw (gradc.rand_like: uniform in [0, 1) with its operand's type) is not pure:
// two equal draws are two draws (no CSE), and canonicalize folds nothing into them; an
// unused draw is dropped by DCE.
// CSE-LABEL: func.func @two_draws
// CSE:         [[A:%[0-9]+]] = gradc.rand_like %x
// CSE-NEXT:    [[B:%[0-9]+]] = gradc.rand_like %x
// CSE-NEXT:    gradc.rand_like %x
// CSE-NEXT:    gradc.sub [[A]], [[B]]
// DCE-LABEL: func.func @two_draws
// DCE-COUNT-2: gradc.rand_like
// DCE-NOT:     gradc.rand_like
// PART-LABEL: func.func @two_draws
func.func @two_draws(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = gradc.rand_like %x : (tensor<4xf32>) -> tensor<4xf32>
  %1 = gradc.rand_like %x : (tensor<4xf32>) -> tensor<4xf32>
  %2 = gradc.rand_like %x : (tensor<4xf32>) -> tensor<4xf32>
  %3 = gradc.sub %0, %1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %3 : tensor<4xf32>
}

// -----

// Dropout's mask: min-memory recomputes cheap elementwise ops in backward, but never a draw
// (it would draw a new mask): the forward keeps the comparison's result (one byte per
// element) and the backward reads it, with no rand_like of its own.
// CSE-LABEL: func.func @dropout
// DCE-LABEL: func.func @dropout
// PART-LABEL: func.func @dropout_forward(%x: tensor<8xf32>)
// PART:         gradc.rand_like
// PART:         [[MASK:%[0-9]+]] = gradc.ge
// PART:         func.return {{%[0-9]+}}, %x, [[MASK]] : tensor<f32>, tensor<8xf32>, tensor<8xi1>
// PART-LABEL: func.func @dropout_backward(%x: tensor<8xf32>, %saved1: tensor<8xi1>, %ct0: tensor<f32>)
// PART-NOT:     gradc.rand_like
// PART:         func.return
func.func @dropout(%x: tensor<8xf32> {gradc.requires_grad}) -> tensor<f32> {
  %0 = gradc.detach %x : (tensor<8xf32>) -> tensor<8xf32>
  %1 = gradc.rand_like %0 : (tensor<8xf32>) -> tensor<8xf32>
  %2 = gradc.constant {dtype = "float32", shape = [], value = 0.5} : () -> tensor<f32>
  %3 = gradc.ge %1, %2 : (tensor<8xf32>, tensor<f32>) -> tensor<8xi1>
  %4 = gradc.cast %3 {dtype = "float32"} : (tensor<8xi1>) -> tensor<8xf32>
  %5 = gradc.mul %x, %4 : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %6 = gradc.exp %5 : (tensor<8xf32>) -> tensor<8xf32>
  %7 = gradc.sum %6 {dims = [0], keepdim = false} : (tensor<8xf32>) -> tensor<f32>
  func.return %7 : tensor<f32>
}
