// RUN: %gradc opt %s --split-input-file -p 'cse' | filecheck %s

// Equal pure ops (same name, operands, attributes, types) merge into the first.
// CHECK-LABEL: func.func @simple
// CHECK-NEXT:    [[A:%[0-9]+]] = gradc.mul %x, %y
// CHECK-NEXT:    [[B:%[0-9]+]] = gradc.add [[A]], [[A]]
// CHECK-NEXT:    func.return [[B]]
func.func @simple(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %0 = gradc.mul %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = gradc.mul %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %2 = gradc.add %0, %1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %2 : tensor<4xf32>
}

// -----

// Chains collapse: once the operands are merged, their users are equal too.
// CHECK-LABEL: func.func @chain
// CHECK-NEXT:    [[E:%[0-9]+]] = gradc.exp %x
// CHECK-NEXT:    [[N:%[0-9]+]] = gradc.neg [[E]]
// CHECK-NEXT:    [[S:%[0-9]+]] = gradc.sub [[N]], [[N]]
// CHECK-NEXT:    func.return [[S]]
func.func @chain(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = gradc.exp %x : (tensor<3xf32>) -> tensor<3xf32>
  %1 = gradc.exp %x : (tensor<3xf32>) -> tensor<3xf32>
  %2 = gradc.neg %0 : (tensor<3xf32>) -> tensor<3xf32>
  %3 = gradc.neg %1 : (tensor<3xf32>) -> tensor<3xf32>
  %4 = gradc.sub %2, %3 : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %4 : tensor<3xf32>
}

// -----

// Different attributes, operand order or values are not merged; equal constants are.
// CHECK-LABEL: func.func @distinct
// CHECK:         gradc.sum %x {dims = [0], keepdim = false}
// CHECK-NEXT:    gradc.sum %x {dims = [0], keepdim = true}
// CHECK-NEXT:    gradc.sub %y, %z
// CHECK-NEXT:    gradc.sub %z, %y
// CHECK-NEXT:    [[C:%[0-9]+]] = gradc.constant {dtype = "float32", shape = [], value = 1.0}
// CHECK-NEXT:    gradc.constant {dtype = "float32", shape = [], value = 2.0}
// CHECK-NOT:     gradc.constant
// CHECK:         gradc.add [[C]], [[C]]
func.func @distinct(%x: tensor<2x3xf32>, %y: tensor<3xf32>, %z: tensor<3xf32>) -> (tensor<3xf32>, tensor<1x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<f32>, tensor<f32>) {
  %0 = gradc.sum %x {dims = [0], keepdim = false} : (tensor<2x3xf32>) -> tensor<3xf32>
  %1 = gradc.sum %x {dims = [0], keepdim = true} : (tensor<2x3xf32>) -> tensor<1x3xf32>
  %2 = gradc.sub %y, %z : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %3 = gradc.sub %z, %y : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %4 = gradc.constant {dtype = "float32", shape = [], value = 1.0} : () -> tensor<f32>
  %5 = gradc.constant {dtype = "float32", shape = [], value = 2.0} : () -> tensor<f32>
  %6 = gradc.constant {dtype = "float32", shape = [], value = 1.0} : () -> tensor<f32>
  %7 = gradc.add %4, %6 : (tensor<f32>, tensor<f32>) -> tensor<f32>
  func.return %0, %1, %2, %3, %7, %5 : tensor<3xf32>, tensor<1x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<f32>, tensor<f32>
}

// -----

// Multi-result ops merge result by result.
// CHECK-LABEL: func.func @multi
// CHECK-NEXT:    [[M:%[0-9]+]]:2 = gradc.max_dim %x
// CHECK-NOT:     gradc.max_dim
// CHECK:         func.return [[M]]#0, [[M]]#1, [[M]]#0
func.func @multi(%x: tensor<2x3xf32>) -> (tensor<2xf32>, tensor<2xi64>, tensor<2xf32>) {
  %0:2 = gradc.max_dim %x {dim = 1, keepdim = false} : (tensor<2x3xf32>) -> (tensor<2xf32>, tensor<2xi64>)
  %1:2 = gradc.max_dim %x {dim = 1, keepdim = false} : (tensor<2x3xf32>) -> (tensor<2xf32>, tensor<2xi64>)
  func.return %0#0, %1#1, %1#0 : tensor<2xf32>, tensor<2xi64>, tensor<2xf32>
}

// -----

// Region bodies are their own scope: an op inside a fused body is not replaced by an equal
// op outside it (nor the reverse), but equal ops within one body merge.
// CHECK-LABEL: func.func @regions
// CHECK-NEXT:    [[OUT:%[0-9]+]] = gradc.exp %a
// CHECK-NEXT:    gradc.fused %a
// CHECK-NEXT:    ^bb0(%x: tensor<4xf32>):
// CHECK-NEXT:      [[IN:%[0-9]+]] = gradc.exp %x
// CHECK-NEXT:      [[SUM:%[0-9]+]] = gradc.add [[IN]], [[IN]]
// CHECK-NEXT:      gradc.yield [[SUM]]
// CHECK-NEXT:    })
// CHECK-NEXT:    gradc.fused %a ({
// CHECK-NEXT:    ^bb0(%y: tensor<4xf32>):
// CHECK-NEXT:      gradc.exp %y
func.func @regions(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %0 = gradc.exp %a : (tensor<4xf32>) -> tensor<4xf32>
  %1 = gradc.fused %a ({
  ^bb0(%x: tensor<4xf32>):
    %2 = gradc.exp %x : (tensor<4xf32>) -> tensor<4xf32>
    %3 = gradc.exp %x : (tensor<4xf32>) -> tensor<4xf32>
    %4 = gradc.add %2, %3 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    gradc.yield %4 : tensor<4xf32>
  }) : (tensor<4xf32>) -> tensor<4xf32>
  %5 = gradc.fused %a ({
  ^bb0(%y: tensor<4xf32>):
    %6 = gradc.exp %y : (tensor<4xf32>) -> tensor<4xf32>
    gradc.yield %6 : tensor<4xf32>
  }) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0, %1, %5 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
