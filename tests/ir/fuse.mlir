// RUN: %gradc opt %s --split-input-file -p fuse --verify-each | filecheck %s
// RUN: %gradc opt %s --split-input-file -p fuse,fuse --verify-each | filecheck %s

// An elementwise chain with a broadcast operand and a scalar constant is one kernel; the
// constant moves into the body, the chain's inputs become the region's arguments.
// CHECK-LABEL: func.func @chain
// CHECK-NEXT:    [[F:%[0-9]+]] = gradc.fused %x, %b ({
// CHECK-NEXT:    ^bb0([[X:%arg[0-9]+]]: tensor<4x3xf32>, [[B:%arg[0-9]+]]: tensor<3xf32>):
// CHECK-NEXT:      [[A:%[0-9]+]] = gradc.add [[X]], [[B]]
// CHECK-NEXT:      [[T:%[0-9]+]] = gradc.tanh [[A]]
// CHECK-NEXT:      [[C:%[0-9]+]] = gradc.constant {dtype = "float32", shape = [], value = 2.0}
// CHECK-NEXT:      [[M:%[0-9]+]] = gradc.mul [[T]], [[C]]
// CHECK-NEXT:      gradc.yield [[M]] : tensor<4x3xf32>
// CHECK-NEXT:    }) : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT:    func.return [[F]] : tensor<4x3xf32>
func.func @chain(%x: tensor<4x3xf32>, %b: tensor<3xf32>) -> tensor<4x3xf32> {
  %0 = gradc.add %x, %b : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %1 = gradc.tanh %0 : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %2 = gradc.constant {dtype = "float32", shape = [], value = 2.0} : () -> tensor<f32>
  %3 = gradc.mul %1, %2 : (tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xf32>
  func.return %3 : tensor<4x3xf32>
}

// -----

// A reduction consuming an elementwise chain is one kernel; its result is the yield.
// CHECK-LABEL: func.func @reduce_chain
// CHECK-NEXT:    [[F:%[0-9]+]] = gradc.fused %x, %y ({
// CHECK-NEXT:    ^bb0([[X:%arg[0-9]+]]: tensor<4x3xf32>, [[Y:%arg[0-9]+]]: tensor<4x3xf32>):
// CHECK-NEXT:      [[D:%[0-9]+]] = gradc.sub [[X]], [[Y]]
// CHECK-NEXT:      [[Q:%[0-9]+]] = gradc.mul [[D]], [[D]]
// CHECK-NEXT:      [[S:%[0-9]+]] = gradc.sum [[Q]] {dims = [0, 1], keepdim = false}
// CHECK-NEXT:      gradc.yield [[S]] : tensor<f32>
// CHECK-NEXT:    }) : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<f32>
// CHECK-NEXT:    func.return [[F]]
func.func @reduce_chain(%x: tensor<4x3xf32>, %y: tensor<4x3xf32>) -> tensor<f32> {
  %0 = gradc.sub %x, %y : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %1 = gradc.mul %0, %0 : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %2 = gradc.sum %1 {dims = [0, 1], keepdim = false} : (tensor<4x3xf32>) -> tensor<f32>
  func.return %2 : tensor<f32>
}

// -----

// Softmax: two reductions over the same dim and their elementwise epilogue, one kernel.
// CHECK-LABEL: func.func @softmax
// CHECK-NEXT:    [[F:%[0-9]+]] = gradc.fused %x ({
// CHECK-NEXT:    ^bb0([[X:%arg[0-9]+]]: tensor<4x3xf32>):
// CHECK-NEXT:      [[M:%[0-9]+]] = gradc.amax [[X]] {dims = [1], keepdim = true}
// CHECK-NEXT:      [[D:%[0-9]+]] = gradc.sub [[X]], [[M]]
// CHECK-NEXT:      [[E:%[0-9]+]] = gradc.exp [[D]]
// CHECK-NEXT:      [[S:%[0-9]+]] = gradc.sum [[E]] {dims = [1], keepdim = true}
// CHECK-NEXT:      [[R:%[0-9]+]] = gradc.div [[E]], [[S]]
// CHECK-NEXT:      gradc.yield [[R]] : tensor<4x3xf32>
// CHECK-NEXT:    })
// CHECK-NEXT:    func.return [[F]]
func.func @softmax(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %0 = gradc.amax %x {dims = [1], keepdim = true} : (tensor<4x3xf32>) -> tensor<4x1xf32>
  %1 = gradc.sub %x, %0 : (tensor<4x3xf32>, tensor<4x1xf32>) -> tensor<4x3xf32>
  %2 = gradc.exp %1 : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %3 = gradc.sum %2 {dims = [1], keepdim = true} : (tensor<4x3xf32>) -> tensor<4x1xf32>
  %4 = gradc.div %2, %3 : (tensor<4x3xf32>, tensor<4x1xf32>) -> tensor<4x3xf32>
  func.return %4 : tensor<4x3xf32>
}

// -----

// Layernorm: mean, variance and the normalising epilogue, including the row-shaped
// (4x1) ops in between, are one kernel.
// CHECK-LABEL: func.func @layernorm
// CHECK-NEXT:    [[F:%[0-9]+]] = gradc.fused %x ({
// CHECK-NEXT:    ^bb0([[X:%arg[0-9]+]]: tensor<4x3xf32>):
// CHECK-NEXT:      gradc.mean [[X]] {dims = [1], keepdim = true}
// CHECK-NEXT:      gradc.sub
// CHECK-NEXT:      gradc.mul
// CHECK-NEXT:      gradc.mean {{%[0-9]+}} {dims = [1], keepdim = true}
// CHECK-NEXT:      gradc.constant
// CHECK-NEXT:      gradc.add
// CHECK-NEXT:      gradc.rsqrt
// CHECK-NEXT:      [[Y:%[0-9]+]] = gradc.mul
// CHECK-NEXT:      gradc.yield [[Y]] : tensor<4x3xf32>
// CHECK-NEXT:    })
// CHECK-NEXT:    func.return [[F]]
func.func @layernorm(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %0 = gradc.mean %x {dims = [1], keepdim = true} : (tensor<4x3xf32>) -> tensor<4x1xf32>
  %1 = gradc.sub %x, %0 : (tensor<4x3xf32>, tensor<4x1xf32>) -> tensor<4x3xf32>
  %2 = gradc.mul %1, %1 : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %3 = gradc.mean %2 {dims = [1], keepdim = true} : (tensor<4x3xf32>) -> tensor<4x1xf32>
  %4 = gradc.constant {dtype = "float32", shape = [], value = 1e-05} : () -> tensor<f32>
  %5 = gradc.add %3, %4 : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %6 = gradc.rsqrt %5 : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %7 = gradc.mul %1, %6 : (tensor<4x3xf32>, tensor<4x1xf32>) -> tensor<4x3xf32>
  func.return %7 : tensor<4x3xf32>
}

// -----

// Matmul stays a separate op: the activation before it and the epilogue after it are
// their own kernels.
// CHECK-LABEL: func.func @matmul_separate
// CHECK-NEXT:    [[A:%[0-9]+]] = gradc.fused %x ({
// CHECK:           gradc.tanh
// CHECK-NOT:       gradc.matmul
// CHECK:         })
// CHECK-NEXT:    [[M:%[0-9]+]] = gradc.matmul [[A]], %w
// CHECK-NEXT:    [[E:%[0-9]+]] = gradc.fused [[M]], %b ({
// CHECK-NOT:       gradc.matmul
// CHECK:           gradc.add
// CHECK-NEXT:      gradc.relu
// CHECK:         })
// CHECK-NEXT:    func.return [[E]]
func.func @matmul_separate(%x: tensor<4x5xf32>, %w: tensor<5x3xf32>, %b: tensor<3xf32>) -> tensor<4x3xf32> {
  %0 = gradc.tanh %x : (tensor<4x5xf32>) -> tensor<4x5xf32>
  %1 = gradc.matmul %0, %w : (tensor<4x5xf32>, tensor<5x3xf32>) -> tensor<4x3xf32>
  %2 = gradc.add %1, %b : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %3 = gradc.relu %2 : (tensor<4x3xf32>) -> tensor<4x3xf32>
  func.return %3 : tensor<4x3xf32>
}

// -----

// Dominance: exp has a user (the matmul) between it and the group's anchor (the add), so
// it cannot move into that kernel, which sits at the anchor; it gets a kernel of its own.
// CHECK-LABEL: func.func @dominance
// CHECK-NEXT:    [[E:%[0-9]+]] = gradc.fused %x ({
// CHECK-NEXT:    ^bb0([[X:%arg[0-9]+]]: tensor<3x3xf32>):
// CHECK-NEXT:      [[V:%[0-9]+]] = gradc.exp [[X]]
// CHECK-NEXT:      gradc.yield [[V]]
// CHECK-NEXT:    })
// CHECK-NEXT:    [[M:%[0-9]+]] = gradc.matmul [[E]], %w
// CHECK-NEXT:    [[G:%[0-9]+]] = gradc.fused [[E]], [[M]] ({
// CHECK-NEXT:    ^bb0([[P:%arg[0-9]+]]: tensor<3x3xf32>, [[Q:%arg[0-9]+]]: tensor<3x3xf32>):
// CHECK-NEXT:      [[N:%[0-9]+]] = gradc.neg [[P]]
// CHECK-NEXT:      [[A:%[0-9]+]] = gradc.add [[N]], [[Q]]
// CHECK-NEXT:      gradc.yield [[A]]
// CHECK-NEXT:    })
// CHECK-NEXT:    func.return [[G]]
func.func @dominance(%x: tensor<3x3xf32>, %w: tensor<3x3xf32>) -> tensor<3x3xf32> {
  %0 = gradc.exp %x : (tensor<3x3xf32>) -> tensor<3x3xf32>
  %1 = gradc.matmul %0, %w : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
  %2 = gradc.neg %0 : (tensor<3x3xf32>) -> tensor<3x3xf32>
  %3 = gradc.add %2, %1 : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
  func.return %3 : tensor<3x3xf32>
}

// -----

// Multi-output fusion: exp feeds the reduction and is also returned, so the kernel stores
// both (results used after the kernel need no recomputation).
// CHECK-LABEL: func.func @multi_output
// CHECK-NEXT:    [[F:%[0-9]+]]:2 = gradc.fused %x ({
// CHECK-NEXT:    ^bb0([[X:%arg[0-9]+]]: tensor<5xf32>):
// CHECK-NEXT:      [[E:%[0-9]+]] = gradc.exp [[X]]
// CHECK-NEXT:      [[M:%[0-9]+]] = gradc.mul [[E]], [[X]]
// CHECK-NEXT:      [[S:%[0-9]+]] = gradc.sum [[M]]
// CHECK-NEXT:      gradc.yield [[E]], [[S]] : tensor<5xf32>, tensor<f32>
// CHECK-NEXT:    }) : (tensor<5xf32>) -> (tensor<5xf32>, tensor<f32>)
// CHECK-NEXT:    func.return [[F]]#1, [[F]]#0
func.func @multi_output(%x: tensor<5xf32>) -> (tensor<f32>, tensor<5xf32>) {
  %0 = gradc.exp %x : (tensor<5xf32>) -> tensor<5xf32>
  %1 = gradc.mul %0, %x : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
  %2 = gradc.sum %1 {dims = [0], keepdim = false} : (tensor<5xf32>) -> tensor<f32>
  func.return %2, %0 : tensor<f32>, tensor<5xf32>
}

// -----

// A cheap elementwise value read only by two kernels is recomputed in each (duplicated)
// rather than written to memory by one and read back by the other. (The two reductions
// reduce different dims, so they are not one kernel.)
// CHECK-LABEL: func.func @shared_producer
// CHECK-NEXT:    [[F:%[0-9]+]] = gradc.fused %x ({
// CHECK-NEXT:    ^bb0([[X:%arg[0-9]+]]: tensor<4x3xf32>):
// CHECK-NEXT:      [[E:%[0-9]+]] = gradc.exp [[X]]
// CHECK-NEXT:      [[S0:%[0-9]+]] = gradc.sum [[E]] {dims = [0], keepdim = false}
// CHECK-NEXT:      gradc.yield [[S0]] : tensor<3xf32>
// CHECK-NEXT:    })
// CHECK-NEXT:    [[G:%[0-9]+]] = gradc.fused %x ({
// CHECK-NEXT:    ^bb0([[Y:%arg[0-9]+]]: tensor<4x3xf32>):
// CHECK-NEXT:      [[E2:%[0-9]+]] = gradc.exp [[Y]]
// CHECK-NEXT:      [[S1:%[0-9]+]] = gradc.sum [[E2]] {dims = [1], keepdim = false}
// CHECK-NEXT:      gradc.yield [[S1]] : tensor<4xf32>
// CHECK-NEXT:    })
// CHECK-NEXT:    func.return [[F]], [[G]]
func.func @shared_producer(%x: tensor<4x3xf32>) -> (tensor<3xf32>, tensor<4xf32>) {
  %0 = gradc.exp %x : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %1 = gradc.sum %0 {dims = [0], keepdim = false} : (tensor<4x3xf32>) -> tensor<3xf32>
  %2 = gradc.sum %0 {dims = [1], keepdim = false} : (tensor<4x3xf32>) -> tensor<4xf32>
  func.return %1, %2 : tensor<3xf32>, tensor<4xf32>
}

// -----

// Horizontal fusion: independent kernels over the same iteration space whose inputs all
// exist at the first kernel become one kernel with both results.
// CHECK-LABEL: func.func @siblings
// CHECK-NEXT:    [[F:%[0-9]+]]:2 = gradc.fused %x, %y ({
// CHECK-NEXT:    ^bb0([[X:%arg[0-9]+]]: tensor<4x3xf32>, [[Y:%arg[0-9]+]]: tensor<4x3xf32>):
// CHECK-NEXT:      [[E:%[0-9]+]] = gradc.exp [[X]]
// CHECK-NEXT:      [[S:%[0-9]+]] = gradc.sin [[Y]]
// CHECK-NEXT:      gradc.yield [[E]], [[S]] : tensor<4x3xf32>, tensor<4x3xf32>
// CHECK-NEXT:    })
// CHECK-NEXT:    func.return [[F]]#0, [[F]]#1
func.func @siblings(%x: tensor<4x3xf32>, %y: tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
  %0 = gradc.exp %x : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %1 = gradc.sin %y : (tensor<4x3xf32>) -> tensor<4x3xf32>
  func.return %0, %1 : tensor<4x3xf32>, tensor<4x3xf32>
}

// -----

// Reductions over different dims are not one kernel: the dim-0 mean is a kernel of its
// own, whose result the dim-1 kernel reads.
// CHECK-LABEL: func.func @different_reduce_dims
// CHECK-NEXT:    [[M:%[0-9]+]] = gradc.fused %x ({
// CHECK:           gradc.mean {{.*}}dims = [0]
// CHECK:         }) : (tensor<4x3xf32>) -> tensor<1x3xf32>
// CHECK-NEXT:    [[S:%[0-9]+]] = gradc.fused %x, [[M]] ({
// CHECK:           gradc.sub
// CHECK-NEXT:      gradc.sum {{.*}}dims = [1]
// CHECK:         })
// CHECK-NEXT:    func.return [[S]]
func.func @different_reduce_dims(%x: tensor<4x3xf32>) -> tensor<4xf32> {
  %0 = gradc.mean %x {dims = [0], keepdim = true} : (tensor<4x3xf32>) -> tensor<1x3xf32>
  %1 = gradc.sub %x, %0 : (tensor<4x3xf32>, tensor<1x3xf32>) -> tensor<4x3xf32>
  %2 = gradc.sum %1 {dims = [1], keepdim = false} : (tensor<4x3xf32>) -> tensor<4xf32>
  func.return %2 : tensor<4xf32>
}

// -----

// Nothing worth a kernel: a lone constant, views feeding a matmul, and a multi-result op
// stay as they are.
// CHECK-LABEL: func.func @nothing_to_fuse
// CHECK-NOT:     gradc.fused
// CHECK:         gradc.constant
// CHECK-NEXT:    gradc.reshape
// CHECK-NEXT:    gradc.expand
// CHECK-NEXT:    gradc.matmul
// CHECK-NEXT:    gradc.max_dim
// CHECK-NEXT:    func.return
func.func @nothing_to_fuse(%x: tensor<3xf32>, %w: tensor<4x2xf32>) -> (tensor<f32>, tensor<3x2xf32>, tensor<3xf32>) {
  %0 = gradc.constant {dtype = "float32", shape = [], value = 2.0} : () -> tensor<f32>
  %1 = gradc.reshape %x {shape = [3, 1]} : (tensor<3xf32>) -> tensor<3x1xf32>
  %2 = gradc.expand %1 {shape = [3, 4]} : (tensor<3x1xf32>) -> tensor<3x4xf32>
  %3 = gradc.matmul %2, %w : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  %4:2 = gradc.max_dim %3 {dim = 1, keepdim = false} : (tensor<3x2xf32>) -> (tensor<3xf32>, tensor<3xi64>)
  func.return %0, %3, %4#0 : tensor<f32>, tensor<3x2xf32>, tensor<3xf32>
}

// -----

// Fusible ops nothing reads (a dead chain, here exp -> neg feeding nothing) are erased
// rather than made into a kernel without results, which dce could never remove; a dead
// op that is not fusible (the matmul) is left for dce, and so is its operand's producer
// (merged with the live sin, as both read only %x).
// CHECK-LABEL: func.func @dead_code
// CHECK-NEXT:    [[F:%[0-9]+]]:2 = gradc.fused %x ({
// CHECK-NEXT:    ^bb0([[X:%arg[0-9]+]]: tensor<3x3xf32>):
// CHECK-NEXT:      [[T:%[0-9]+]] = gradc.tanh [[X]]
// CHECK-NEXT:      [[S:%[0-9]+]] = gradc.sin [[X]]
// CHECK-NEXT:      gradc.yield [[T]], [[S]]
// CHECK-NEXT:    })
// CHECK-NEXT:    gradc.matmul [[F]]#0, %w
// CHECK-NEXT:    func.return [[F]]#1
func.func @dead_code(%x: tensor<3x3xf32>, %w: tensor<3x3xf32>) -> tensor<3x3xf32> {
  %0 = gradc.exp %x : (tensor<3x3xf32>) -> tensor<3x3xf32>
  %1 = gradc.neg %0 : (tensor<3x3xf32>) -> tensor<3x3xf32>
  %2 = gradc.tanh %x : (tensor<3x3xf32>) -> tensor<3x3xf32>
  %3 = gradc.matmul %2, %w : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
  %4 = gradc.sin %x : (tensor<3x3xf32>) -> tensor<3x3xf32>
  func.return %4 : tensor<3x3xf32>
}

// -----

// A sum over everything beside a column sum of the same space becomes column sums plus a small
// sum over them: the big stage joins its sibling (one pass over %x), and the product the two
// kernels each had a copy of is computed once in the merged body.
// CHECK-LABEL: func.func @loss_beside_column_sums
// CHECK-NEXT:    [[F:%[0-9]+]]:2 = gradc.fused %x, %g ({
// CHECK-NEXT:    ^bb0([[X:%arg[0-9]+]]: tensor<8x4xf32>, [[G:%arg[0-9]+]]: tensor<4xf32>):
// CHECK-NEXT:      [[P:%[0-9]+]] = gradc.mul [[X]], [[G]]
// CHECK-NEXT:      [[Q:%[0-9]+]] = gradc.mul [[P]], [[P]]
// CHECK-NEXT:      [[C1:%[0-9]+]] = gradc.sum [[Q]] {dims = [0], keepdim = false}
// CHECK-NEXT:      [[C2:%[0-9]+]] = gradc.sum [[P]] {dims = [0], keepdim = false}
// CHECK-NEXT:      gradc.yield [[C1]], [[C2]] : tensor<4xf32>, tensor<4xf32>
// CHECK:         [[T:%[0-9]+]] = gradc.fused [[F]]#0 ({
// CHECK:           gradc.sum %{{.*}} {dims = [0], keepdim = false} : (tensor<4xf32>) -> tensor<f32>
// CHECK:         func.return [[T]], [[F]]#1 : tensor<f32>, tensor<4xf32>
func.func @loss_beside_column_sums(%x: tensor<8x4xf32>, %g: tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>) {
  %0 = gradc.mul %x, %g : (tensor<8x4xf32>, tensor<4xf32>) -> tensor<8x4xf32>
  %1 = gradc.mul %0, %0 : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  %2 = gradc.sum %1 {dims = [0, 1], keepdim = false} : (tensor<8x4xf32>) -> tensor<f32>
  %3 = gradc.sum %0 {dims = [0], keepdim = false} : (tensor<8x4xf32>) -> tensor<4xf32>
  func.return %2, %3 : tensor<f32>, tensor<4xf32>
}

// -----

// A reshape read by an expand before the kernel's anchor (through an index, which is not
// fused) stays where it is: moved into the kernel it would be defined after that use.
// CHECK-LABEL: func.func @early_outside_use
// CHECK:         [[R:%[0-9]+]] = gradc.reshape %in2
// CHECK-NEXT:    [[E:%[0-9]+]] = gradc.expand [[R]]
// CHECK-NEXT:    [[I:%[0-9]+]] = gradc.index [[E]]
// CHECK-NEXT:    gradc.fused [[R]], [[I]]
func.func @early_outside_use(%in2: tensor<f64>) -> tensor<1x3xf64> {
  %0 = gradc.reshape %in2 {shape = [1]} : (tensor<f64>) -> tensor<1xf64>
  %1 = gradc.expand %0 {shape = [3]} : (tensor<1xf64>) -> tensor<3xf64>
  %2 = gradc.index %1 {key = [["none"]]} : (tensor<3xf64>) -> tensor<1x3xf64>
  %3 = gradc.gt %0, %2 : (tensor<1xf64>, tensor<1x3xf64>) -> tensor<1x3xi1>
  %4 = gradc.constant {dtype = "float64", shape = [], value = 0.5} : () -> tensor<f64>
  %5 = gradc.mul %2, %4 : (tensor<1x3xf64>, tensor<f64>) -> tensor<1x3xf64>
  %6 = gradc.where %3, %0, %5 : (tensor<1x3xi1>, tensor<1xf64>, tensor<1x3xf64>) -> tensor<1x3xf64>
  func.return %6 : tensor<1x3xf64>
}

// -----

// Column sums that a row kernel computes with stay a kernel of their own: as accumulations
// of the row kernel they would be complete only after its last row (softmax over dim 0
// beside a logsumexp over dim 1 had them merged, and the kernel could not be built).
// CHECK-LABEL: func.func @column_sums_read_by_rows
// CHECK-NEXT:    [[C:%[0-9]+]] = gradc.fused %x ({
// CHECK-NEXT:    ^bb0([[X:%arg[0-9]+]]: tensor<4x3xf32>):
// CHECK-NEXT:      [[S:%[0-9]+]] = gradc.sum [[X]] {dims = [0], keepdim = true}
// CHECK-NEXT:      gradc.yield [[S]] : tensor<1x3xf32>
// CHECK:         [[R:%[0-9]+]] = gradc.fused %x, [[C]] ({
// CHECK:           gradc.sum %{{.*}} {dims = [1], keepdim = true}
// CHECK:         func.return [[R]]
func.func @column_sums_read_by_rows(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %0 = gradc.sum %x {dims = [0], keepdim = true} : (tensor<4x3xf32>) -> tensor<1x3xf32>
  %1 = gradc.exp %x : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %2 = gradc.sum %1 {dims = [1], keepdim = true} : (tensor<4x3xf32>) -> tensor<4x1xf32>
  %3 = gradc.div %1, %2 : (tensor<4x3xf32>, tensor<4x1xf32>) -> tensor<4x3xf32>
  %4 = gradc.mul %3, %0 : (tensor<4x3xf32>, tensor<1x3xf32>) -> tensor<4x3xf32>
  func.return %4 : tensor<4x3xf32>
}
