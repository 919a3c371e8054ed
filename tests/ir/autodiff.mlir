// RUN: %gradc opt %s --split-input-file -p autodiff --verify-each | filecheck %s
// RUN: %gradc opt %s --split-input-file -p 'autodiff{wrt=0,1}' --verify-each | filecheck %s --check-prefix=BOTH
// RUN: %gradc opt %s --split-input-file -p 'autodiff,autodiff{wrt=0}' --verify-each | filecheck %s --check-prefix=TWICE

// The joint function takes the primals and one cotangent per floating output and returns
// the outputs then the gradients; attributes record the layout. By default it
// differentiates the arguments marked gradc.requires_grad (the mark is dropped).
// CHECK-LABEL: func.func @mul_joint(%x: tensor<3xf32>, %y: tensor<3xf32>, %ct0: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>)
// CHECK-SAME:    attributes {gradc.num_cotangents = 1, gradc.num_outputs = 1, gradc.wrt = [0]}
// CHECK-NEXT:    [[P:%[0-9]+]] = gradc.mul %x, %y
// CHECK-NEXT:    [[GX:%[0-9]+]] = gradc.mul %ct0, %y
// CHECK-NEXT:    func.return [[P]], [[GX]] :
// BOTH-LABEL:  func.func @mul_joint
// BOTH-SAME:     gradc.wrt = [0, 1]
// BOTH:          [[GX:%[0-9]+]] = gradc.mul %ct0, %y
// BOTH-NEXT:     [[GY:%[0-9]+]] = gradc.mul %ct0, %x
// BOTH-NEXT:     func.return {{%[0-9]+}}, [[GX]], [[GY]] :
// The joint is ordinary IR, so autodiff applies to it again (second derivatives): the
// joint's outputs (x*y and its gradient ct0*y) each get a cotangent and the result
// appends d/dx; ct0*y does not depend on x, so d/dx is the first cotangent times y.
// TWICE-LABEL: func.func @mul_joint_joint(
// TWICE-SAME:    %x: tensor<3xf32>, %y: tensor<3xf32>, [[CT:%[a-z0-9]+]]: tensor<3xf32>, [[C0:%[a-z0-9]+]]: tensor<3xf32>, [[C1:%[a-z0-9]+]]: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)
// TWICE-SAME:    gradc.num_cotangents = 2, gradc.num_outputs = 2, gradc.wrt = [0]
// TWICE:         [[D:%[0-9]+]] = gradc.mul [[C0]], %y
// TWICE-NEXT:    func.return {{%[0-9]+}}, {{%[0-9]+}}, [[D]] :
func.func @mul(%x: tensor<3xf32> {gradc.requires_grad}, %y: tensor<3xf32>) -> tensor<3xf32> {
  %0 = gradc.mul %x, %y : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}

// -----

// Broadcasting is undone as PyTorch's sum_to does it (a keepdim sum and a reshape); an integer output (argmax) gets no cotangent; a
// fan-out value (%0 used twice) gets the sum of its contributions.
// CHECK-LABEL: func.func @bcast_joint(%x: tensor<2x3xf32>, %b: tensor<3xf32>, %ct0: tensor<f32>) -> (tensor<f32>, tensor<2xi64>, tensor<3xf32>)
// CHECK-SAME:    gradc.num_cotangents = 1, gradc.num_outputs = 2, gradc.wrt = [1]
// CHECK:         [[E:%[0-9]+]] = gradc.expand {{%[0-9]+}} {shape = [2, 3]}
// CHECK:         [[S:%[0-9]+]] = gradc.sum {{%[0-9]+}} {dims = [0], keepdim = true} : (tensor<2x3xf32>) -> tensor<1x3xf32>
// CHECK-NEXT:    [[G:%[0-9]+]] = gradc.reshape [[S]] {shape = [3]} : (tensor<1x3xf32>) -> tensor<3xf32>
// CHECK-NEXT:    func.return {{%[0-9]+}}, {{%[0-9]+}}, [[G]] : tensor<f32>, tensor<2xi64>, tensor<3xf32>
// BOTH-LABEL:  func.func @bcast_joint
// BOTH-SAME:     -> (tensor<f32>, tensor<2xi64>, tensor<2x3xf32>, tensor<3xf32>)
func.func @bcast(%x: tensor<2x3xf32>, %b: tensor<3xf32> {gradc.requires_grad}) -> (tensor<f32>, tensor<2xi64>) {
  %0 = gradc.add %x, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = gradc.mul %0, %0 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = gradc.sum %1 {dims = [0, 1], keepdim = false} : (tensor<2x3xf32>) -> tensor<f32>
  %3 = gradc.argmax %0 {dim = 1, keepdim = false} : (tensor<2x3xf32>) -> tensor<2xi64>
  func.return %2, %3 : tensor<f32>, tensor<2xi64>
}

// -----

// An argument the outputs do not depend on gets a zero gradient; values that do not depend
// on a wrt argument get no adjoint code.
// CHECK-LABEL: func.func @unused_joint
// CHECK-SAME:    gradc.wrt = [1]
// CHECK-NEXT:    [[E:%[0-9]+]] = gradc.exp %x
// CHECK-NEXT:    [[Z:%[0-9]+]] = gradc.constant {dtype = "float32", shape = [2], value = 0.0} : () -> tensor<2xf32>
// CHECK-NEXT:    func.return [[E]], [[Z]] : tensor<3xf32>, tensor<2xf32>
func.func @unused(%x: tensor<3xf32>, %y: tensor<2xf32> {gradc.requires_grad}) -> tensor<3xf32> {
  %0 = gradc.exp %x : (tensor<3xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}

// -----

// Comparisons are not differentiable: the where routes the cotangent by the saved mask,
// and the threshold %t, which only reaches the output through the comparison, gets zero.
// CHECK-LABEL: func.func @relu_like_joint
// CHECK:         [[M:%[0-9]+]] = gradc.gt %x, %t
// CHECK:         [[G:%[0-9]+]] = gradc.where [[M]], %ct0, {{%[0-9]+}}
// CHECK-NEXT:    func.return {{%[0-9]+}}, [[G]] :
// BOTH-LABEL:  func.func @relu_like_joint
// BOTH:          gradc.where {{%[0-9]+}}, %ct0
// BOTH:          [[Z:%[0-9]+]] = gradc.constant {dtype = "float32", shape = [], value = 0.0} : () -> tensor<f32>
// BOTH-NEXT:     func.return {{%[0-9]+}}, {{%[0-9]+}}, [[Z]] : tensor<4xf32>, tensor<4xf32>, tensor<f32>
func.func @relu_like(%x: tensor<4xf32> {gradc.requires_grad}, %t: tensor<f32>) -> tensor<4xf32> {
  %0 = gradc.constant {dtype = "float32", shape = [], value = 0.0} : () -> tensor<f32>
  %1 = gradc.gt %x, %t : (tensor<4xf32>, tensor<f32>) -> tensor<4xi1>
  %2 = gradc.where %1, %x, %0 : (tensor<4xi1>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  func.return %2 : tensor<4xf32>
}
