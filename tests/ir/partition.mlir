// RUN: %gradc opt %s --split-input-file -p 'partition{policy=save-all}' --verify-each | filecheck %s --check-prefixes=CHECK,SAVE
// RUN: %gradc opt %s --split-input-file -p 'partition{policy=min-memory}' --verify-each | filecheck %s --check-prefixes=CHECK,MIN
// RUN: %gradc opt %s --split-input-file -p partition --verify-each | filecheck %s --check-prefixes=CHECK,MIN
// RUN: %gradc opt %s --split-input-file -p 'partition,partition' --verify-each | filecheck %s --check-prefixes=CHECK,MIN

// A joint function (from autodiff) becomes @<name>_forward(primals) -> (outputs, residuals)
// and @<name>_backward(residuals, cotangents) -> gradients. save-all keeps every forward
// value backward reads; min-memory (the default) keeps a minimum-byte cut and recomputes
// cheap elementwise ops in backward; primal inputs are free to keep. Running partition
// again leaves the two halves alone.

// An elementwise chain: save-all keeps cos(2 exp x) and exp x (2 x 32 bytes); min-memory
// keeps only x (free) and recomputes exp, mul and cos in backward.
// CHECK-LABEL: func.func @chain_forward(%x: tensor<8xf32>)
// SAVE-SAME:     -> (tensor<f32>, tensor<8xf32>, tensor<8xf32>) attributes {gradc.num_outputs = 1, gradc.residuals = 2}
// SAVE:          [[E:%[0-9]+]] = gradc.exp %x
// SAVE:          [[L:%[0-9]+]] = gradc.sum
// SAVE-NEXT:     [[C:%[0-9]+]] = gradc.cos
// SAVE-NEXT:     func.return [[L]], [[C]], [[E]] :
// SAVE-LABEL:  func.func @chain_backward(%saved0: tensor<8xf32>, %saved1: tensor<8xf32>, %ct0: tensor<f32>) -> tensor<8xf32>
// SAVE-SAME:     attributes {gradc.residuals = 2, gradc.wrt = [0]}
// SAVE-NOT:      gradc.exp %
// SAVE-NOT:      gradc.cos
// SAVE:          gradc.mul {{%[0-9]+}}, %saved0
// SAVE:          gradc.mul {{%[0-9]+}}, %saved1
// SAVE-NEXT:     func.return
// MIN-SAME:      -> (tensor<f32>, tensor<8xf32>) attributes {gradc.num_outputs = 1, gradc.residuals = 1}
// MIN-NOT:       gradc.cos
// MIN:           [[L:%[0-9]+]] = gradc.sum
// MIN-NEXT:      func.return [[L]], %x :
// MIN-LABEL:   func.func @chain_backward(%x: tensor<8xf32>, %ct0: tensor<f32>) -> tensor<8xf32>
// MIN-NEXT:      [[E:%[0-9]+]] = gradc.exp %x
// MIN-NEXT:      gradc.constant
// MIN-NEXT:      [[M:%[0-9]+]] = gradc.mul [[E]],
// MIN:           gradc.cos [[M]]
// MIN-NOT:       gradc.sin
// MIN-NOT:       gradc.sum
// MIN:           func.return
func.func @chain_joint(%x: tensor<8xf32>, %ct0: tensor<f32>) -> (tensor<f32>, tensor<8xf32>) attributes {gradc.num_cotangents = 1, gradc.num_outputs = 1, gradc.wrt = [0]} {
  %0 = gradc.exp %x : (tensor<8xf32>) -> tensor<8xf32>
  %1 = gradc.constant {dtype = "float32", shape = [], value = 2.0} : () -> tensor<f32>
  %2 = gradc.mul %0, %1 : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %3 = gradc.sin %2 : (tensor<8xf32>) -> tensor<8xf32>
  %4 = gradc.sum %3 {dims = [0], keepdim = false} : (tensor<8xf32>) -> tensor<f32>
  %5 = gradc.reshape %ct0 {shape = [1]} : (tensor<f32>) -> tensor<1xf32>
  %6 = gradc.expand %5 {shape = [8]} : (tensor<1xf32>) -> tensor<8xf32>
  %7 = gradc.cos %2 : (tensor<8xf32>) -> tensor<8xf32>
  %8 = gradc.mul %6, %7 : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %9 = gradc.mul %8, %1 : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %10 = gradc.mul %9, %0 : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  func.return %4, %10 : tensor<f32>, tensor<8xf32>
}

// -----

// tanh(x @ w1) @ w2: save-all keeps the transposes and 1 - tanh^2 (72 + 96 + 96 + 80
// bytes); min-memory keeps x and w2 (free) and x @ w1 (96 bytes), never recomputing a
// matmul. w1 is not kept: backward never reads it.
// CHECK-LABEL: func.func @mlp_forward(%x: tensor<4x5xf32>, %w1: tensor<5x6xf32>, %w2: tensor<6x3xf32>)
// SAVE-SAME:     -> (tensor<f32>, tensor<3x6xf32>, tensor<6x4xf32>, tensor<4x6xf32>, tensor<5x4xf32>)
// SAVE-LABEL:  func.func @mlp_backward(%saved0: tensor<3x6xf32>, %saved1: tensor<6x4xf32>, %saved2: tensor<4x6xf32>, %saved3: tensor<5x4xf32>, %ct0: tensor<f32>)
// SAVE-COUNT-3:  gradc.matmul
// SAVE-NOT:      gradc.tanh
// MIN-SAME:      -> (tensor<f32>, tensor<4x5xf32>, tensor<6x3xf32>, tensor<4x6xf32>)
// MIN:           [[H:%[0-9]+]] = gradc.matmul %x, %w1
// MIN:           func.return {{%[0-9]+}}, %x, %w2, [[H]] :
// MIN-LABEL:   func.func @mlp_backward(%x: tensor<4x5xf32>, %w2: tensor<6x3xf32>, %saved2: tensor<4x6xf32>, %ct0: tensor<f32>)
// MIN-NEXT:      gradc.tanh %saved2
// MIN-COUNT-3:   gradc.matmul
// MIN-NOT:       gradc.matmul
// MIN:           func.return
func.func @mlp_joint(%x: tensor<4x5xf32>, %w1: tensor<5x6xf32>, %w2: tensor<6x3xf32>, %ct0: tensor<f32>) -> (tensor<f32>, tensor<5x6xf32>, tensor<6x3xf32>) attributes {gradc.num_cotangents = 1, gradc.num_outputs = 1, gradc.wrt = [1, 2]} {
  %0 = gradc.matmul %x, %w1 : (tensor<4x5xf32>, tensor<5x6xf32>) -> tensor<4x6xf32>
  %1 = gradc.tanh %0 : (tensor<4x6xf32>) -> tensor<4x6xf32>
  %2 = gradc.matmul %1, %w2 : (tensor<4x6xf32>, tensor<6x3xf32>) -> tensor<4x3xf32>
  %3 = gradc.sum %2 {dims = [0, 1], keepdim = false} : (tensor<4x3xf32>) -> tensor<f32>
  %4 = gradc.reshape %ct0 {shape = [1, 1]} : (tensor<f32>) -> tensor<1x1xf32>
  %5 = gradc.expand %4 {shape = [4, 3]} : (tensor<1x1xf32>) -> tensor<4x3xf32>
  %6 = gradc.permute %w2 {dims = [1, 0]} : (tensor<6x3xf32>) -> tensor<3x6xf32>
  %7 = gradc.matmul %5, %6 : (tensor<4x3xf32>, tensor<3x6xf32>) -> tensor<4x6xf32>
  %8 = gradc.permute %1 {dims = [1, 0]} : (tensor<4x6xf32>) -> tensor<6x4xf32>
  %9 = gradc.matmul %8, %5 : (tensor<6x4xf32>, tensor<4x3xf32>) -> tensor<6x3xf32>
  %10 = gradc.mul %1, %1 : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  %11 = gradc.constant {dtype = "float32", shape = [], value = 1.0} : () -> tensor<f32>
  %12 = gradc.sub %11, %10 : (tensor<f32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  %13 = gradc.mul %7, %12 : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  %14 = gradc.permute %x {dims = [1, 0]} : (tensor<4x5xf32>) -> tensor<5x4xf32>
  %15 = gradc.matmul %14, %13 : (tensor<5x4xf32>, tensor<4x6xf32>) -> tensor<5x6xf32>
  func.return %3, %15, %9 : tensor<f32>, tensor<5x6xf32>, tensor<6x3xf32>
}

// -----

// Several outputs, one returning an argument: one cotangent each. The zero gradient of
// the unused %y is a constant rebuilt in backward, never a residual.
// CHECK-LABEL: func.func @two_outputs_forward(%x: tensor<3xf32>, %y: tensor<2xf32>)
// SAVE-SAME:     attributes {gradc.num_outputs = 2, gradc.residuals = 2}
// SAVE:          [[S:%[0-9]+]] = gradc.sigmoid %x
// SAVE:          func.return [[S]], %x, [[S]], {{%[0-9]+}} :
// MIN-SAME:      attributes {gradc.num_outputs = 2, gradc.residuals = 1}
// MIN-NEXT:      [[S:%[0-9]+]] = gradc.sigmoid %x
// MIN-NEXT:      func.return [[S]], %x, %x :
// CHECK-LABEL: func.func @two_outputs_backward(
// CHECK-SAME:    %ct0: tensor<3xf32>, %ct1: tensor<3xf32>) -> (tensor<3xf32>, tensor<2xf32>)
// CHECK:         [[Z:%[0-9]+]] = gradc.constant {dtype = "float32", shape = [2], value = 0.0}
// CHECK-NEXT:    func.return {{%[0-9]+}}, [[Z]] :
func.func @two_outputs_joint(%x: tensor<3xf32>, %y: tensor<2xf32>, %ct0: tensor<3xf32>, %ct1: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2xf32>) attributes {gradc.num_cotangents = 2, gradc.num_outputs = 2, gradc.wrt = [0, 1]} {
  %0 = gradc.sigmoid %x : (tensor<3xf32>) -> tensor<3xf32>
  %1 = gradc.mul %ct0, %0 : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %2 = gradc.constant {dtype = "float32", shape = [], value = 1.0} : () -> tensor<f32>
  %3 = gradc.sub %2, %0 : (tensor<f32>, tensor<3xf32>) -> tensor<3xf32>
  %4 = gradc.mul %1, %3 : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %5 = gradc.add %ct1, %4 : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %6 = gradc.constant {dtype = "float32", shape = [2], value = 0.0} : () -> tensor<2xf32>
  func.return %0, %x, %5, %6 : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2xf32>
}
