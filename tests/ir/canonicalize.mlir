// RUN: %gradc opt %s --split-input-file -p canonicalize --verify-each | filecheck %s
// RUN: %gradc opt %s --split-input-file -p canonicalize,dce --verify-each | filecheck %s --check-prefix=DCE

// One run reaches a fixed point (see @double_neg and the unit-dim sum_to in @sum_to).

// x*1 and 1*x are x (the unit may be a 0-d or a full-shape splat); the constants are left for dce.
// CHECK-LABEL: func.func @mul_one
// CHECK-NOT:     gradc.mul
// CHECK:         func.return %x, %x :
// DCE-LABEL:   func.func @mul_one
// DCE-NEXT:      func.return %x, %x :
func.func @mul_one(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %0 = gradc.constant {dtype = "float32", shape = [], value = 1.0} : () -> tensor<f32>
  %1 = gradc.mul %x, %0 : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %2 = gradc.constant {dtype = "float32", shape = [2, 3], value = 1.0} : () -> tensor<2x3xf32>
  %3 = gradc.mul %2, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %1, %3 : tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// x+0 and 0+x are x.
// CHECK-LABEL: func.func @add_zero
// CHECK-NOT:     gradc.add
// CHECK:         func.return %x, %x :
func.func @add_zero(%x: tensor<3xf64>) -> (tensor<3xf64>, tensor<3xf64>) {
  %0 = gradc.constant {dtype = "float64", shape = [], value = 0.0} : () -> tensor<f64>
  %1 = gradc.add %x, %0 : (tensor<3xf64>, tensor<f64>) -> tensor<3xf64>
  %2 = gradc.constant {dtype = "float64", shape = [3], value = [0.0, 0.0, 0.0]} : () -> tensor<3xf64>
  %3 = gradc.add %2, %x : (tensor<3xf64>, tensor<3xf64>) -> tensor<3xf64>
  func.return %1, %3 : tensor<3xf64>, tensor<3xf64>
}

// -----

// x-0 is x; 0-x is not (it is a negation).
// CHECK-LABEL: func.func @sub_zero
// CHECK:         [[Z:%[0-9]+]] = gradc.constant {{.*}}value = 0.0
// CHECK-NEXT:    [[R:%[0-9]+]] = gradc.sub [[Z]], %x
// CHECK-NEXT:    func.return %x, [[R]] :
func.func @sub_zero(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %0 = gradc.constant {dtype = "float32", shape = [], value = 0.0} : () -> tensor<f32>
  %1 = gradc.sub %x, %0 : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  %2 = gradc.sub %0, %x : (tensor<f32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %1, %2 : tensor<3xf32>, tensor<3xf32>
}

// -----

// x/1 is x; 1/x is not.
// CHECK-LABEL: func.func @div_one
// CHECK:         [[O:%[0-9]+]] = gradc.constant {{.*}}value = 1.0
// CHECK-NEXT:    [[R:%[0-9]+]] = gradc.div [[O]], %x
// CHECK-NEXT:    func.return %x, [[R]] :
func.func @div_one(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %0 = gradc.constant {dtype = "float32", shape = [], value = 1.0} : () -> tensor<f32>
  %1 = gradc.div %x, %0 : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  %2 = gradc.div %0, %x : (tensor<f32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %1, %2 : tensor<3xf32>, tensor<3xf32>
}

// -----

// Identities that would change the result type are kept: the unit broadcasts x to a
// bigger shape or rank, so the result is not x. Multiplying by 0 is not an identity.
// CHECK-LABEL: func.func @no_identity_when_broadcasting
// CHECK:         gradc.mul %x, {{%[0-9]+}} : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK:         gradc.add %x, {{%[0-9]+}} : (tensor<3xf32>, tensor<1x3xf32>) -> tensor<1x3xf32>
// CHECK:         gradc.sub %x, {{%[0-9]+}} : (tensor<3xf32>, tensor<4x1xf32>) -> tensor<4x3xf32>
// CHECK:         gradc.mul %x, {{%[0-9]+}} : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
// CHECK-NEXT:    func.return
func.func @no_identity_when_broadcasting(%x: tensor<3xf32>) -> (tensor<2x3xf32>, tensor<1x3xf32>, tensor<4x3xf32>, tensor<3xf32>) {
  %0 = gradc.constant {dtype = "float32", shape = [2, 3], value = 1.0} : () -> tensor<2x3xf32>
  %1 = gradc.mul %x, %0 : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = gradc.constant {dtype = "float32", shape = [1, 3], value = 0.0} : () -> tensor<1x3xf32>
  %3 = gradc.add %x, %2 : (tensor<3xf32>, tensor<1x3xf32>) -> tensor<1x3xf32>
  %4 = gradc.constant {dtype = "float32", shape = [4, 1], value = 0.0} : () -> tensor<4x1xf32>
  %5 = gradc.sub %x, %4 : (tensor<3xf32>, tensor<4x1xf32>) -> tensor<4x3xf32>
  %6 = gradc.constant {dtype = "float32", shape = [], value = 0.0} : () -> tensor<f32>
  %7 = gradc.mul %x, %6 : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  func.return %1, %3, %5, %7 : tensor<2x3xf32>, tensor<1x3xf32>, tensor<4x3xf32>, tensor<3xf32>
}

// -----

// A unit that is not a splat (or not the unit everywhere) is no identity.
// CHECK-LABEL: func.func @not_a_splat
// CHECK:         gradc.mul %x,
// CHECK:         gradc.add %x,
func.func @not_a_splat(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  %0 = gradc.constant {dtype = "float32", shape = [2], value = [1.0, 2.0]} : () -> tensor<2xf32>
  %1 = gradc.mul %x, %0 : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %2 = gradc.constant {dtype = "float32", shape = [2], value = [0.0, -1.0]} : () -> tensor<2xf32>
  %3 = gradc.add %x, %2 : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %1, %3 : tensor<2xf32>, tensor<2xf32>
}

// -----

// Double negation cancels; chains of four cancel in one run; a single neg stays.
// CHECK-LABEL: func.func @double_neg
// CHECK:         [[N:%[0-9]+]] = gradc.neg %x
// CHECK:         func.return %x, %x, [[N]] :
// DCE-LABEL:   func.func @double_neg
// DCE-NEXT:      [[N:%[0-9]+]] = gradc.neg %x
// DCE-NEXT:      func.return %x, %x, [[N]] :
func.func @double_neg(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) {
  %0 = gradc.neg %x : (tensor<3xf32>) -> tensor<3xf32>
  %1 = gradc.neg %0 : (tensor<3xf32>) -> tensor<3xf32>
  %2 = gradc.neg %1 : (tensor<3xf32>) -> tensor<3xf32>
  %3 = gradc.neg %2 : (tensor<3xf32>) -> tensor<3xf32>
  func.return %1, %3, %0 : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
}

// -----

// reshape(reshape(x)) is one reshape of x; a reshape back to x's type is x. (The inner
// reshapes are left dead for dce; no reshape of a reshape remains.)
// CHECK-LABEL: func.func @reshape_of_reshape
// CHECK-NOT:     gradc.reshape %{{[0-9]+}}
// CHECK:         [[R:%[0-9]+]] = gradc.reshape %x {shape = [3, 4]} : (tensor<2x6xf32>) -> tensor<3x4xf32>
// CHECK-NOT:     gradc.reshape %{{[0-9]+}}
// CHECK:         func.return [[R]], %x :
// DCE-LABEL:   func.func @reshape_of_reshape
// DCE-NEXT:      [[R:%[0-9]+]] = gradc.reshape %x {shape = [3, 4]}
// DCE-NEXT:      func.return [[R]], %x :
func.func @reshape_of_reshape(%x: tensor<2x6xf32>) -> (tensor<3x4xf32>, tensor<2x6xf32>) {
  %0 = gradc.reshape %x {shape = [12]} : (tensor<2x6xf32>) -> tensor<12xf32>
  %1 = gradc.reshape %0 {shape = [3, 4]} : (tensor<12xf32>) -> tensor<3x4xf32>
  %2 = gradc.reshape %0 {shape = [1, 12]} : (tensor<12xf32>) -> tensor<1x12xf32>
  %3 = gradc.reshape %2 {shape = [2, 6]} : (tensor<1x12xf32>) -> tensor<2x6xf32>
  func.return %1, %3 : tensor<3x4xf32>, tensor<2x6xf32>
}

// -----

// permute(permute(x)) composes (a transpose is a 2-d permute); a composition that is the
// identity, and an identity permute, are x.
// CHECK-LABEL: func.func @permutes
// CHECK-NOT:     gradc.permute %{{[0-9]+}}
// CHECK:         [[P:%[0-9]+]] = gradc.permute %x {dims = [1, 2, 0]} : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
// CHECK-NOT:     gradc.permute %{{[0-9]+}}
// CHECK:         func.return [[P]], %x, %x, %y :
// DCE-LABEL:   func.func @permutes
// DCE-NEXT:      [[P:%[0-9]+]] = gradc.permute %x {dims = [1, 2, 0]}
// DCE-NEXT:      func.return [[P]], %x, %x, %y :
func.func @permutes(%x: tensor<2x3x4xf32>, %y: tensor<5x6xf32>) -> (tensor<3x4x2xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<5x6xf32>) {
  %0 = gradc.permute %x {dims = [1, 0, 2]} : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  %1 = gradc.permute %0 {dims = [0, 2, 1]} : (tensor<3x2x4xf32>) -> tensor<3x4x2xf32>
  %2 = gradc.permute %x {dims = [1, 2, 0]} : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
  %3 = gradc.permute %2 {dims = [2, 0, 1]} : (tensor<3x4x2xf32>) -> tensor<2x3x4xf32>
  %4 = gradc.permute %x {dims = [0, 1, 2]} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %5 = gradc.permute %y {dims = [1, 0]} : (tensor<5x6xf32>) -> tensor<6x5xf32>
  %6 = gradc.permute %5 {dims = [1, 0]} : (tensor<6x5xf32>) -> tensor<5x6xf32>
  func.return %1, %3, %4, %6 : tensor<3x4x2xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<5x6xf32>
}

// -----

// sum/mean/amax/amin/prod over dims of size 1 only reshape (and with keepdim they are x);
// a reduction over a dim of size > 1 stays.
// CHECK-LABEL: func.func @reduce_unit_dims
// CHECK:         [[S:%[0-9]+]] = gradc.reshape %x {shape = [4, 3]} : (tensor<4x1x3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT:    [[A:%[0-9]+]] = gradc.reshape %x {shape = [4, 3]} : (tensor<4x1x3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT:    [[P:%[0-9]+]] = gradc.reshape %x {shape = [4, 3]} : (tensor<4x1x3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT:    [[R:%[0-9]+]] = gradc.sum %x {dims = [0, 1], keepdim = false}
// CHECK-NEXT:    func.return [[S]], %x, [[A]], %x, [[P]], [[R]] :
func.func @reduce_unit_dims(%x: tensor<4x1x3xf32>) -> (tensor<4x3xf32>, tensor<4x1x3xf32>, tensor<4x3xf32>, tensor<4x1x3xf32>, tensor<4x3xf32>, tensor<3xf32>) {
  %0 = gradc.sum %x {dims = [1], keepdim = false} : (tensor<4x1x3xf32>) -> tensor<4x3xf32>
  %1 = gradc.mean %x {dims = [1], keepdim = true} : (tensor<4x1x3xf32>) -> tensor<4x1x3xf32>
  %2 = gradc.amax %x {dims = [1], keepdim = false} : (tensor<4x1x3xf32>) -> tensor<4x3xf32>
  %3 = gradc.amin %x {dims = [1], keepdim = true} : (tensor<4x1x3xf32>) -> tensor<4x1x3xf32>
  %4 = gradc.prod %x {dims = [1], keepdim = false} : (tensor<4x1x3xf32>) -> tensor<4x3xf32>
  %5 = gradc.sum %x {dims = [0, 1], keepdim = false} : (tensor<4x1x3xf32>) -> tensor<3xf32>
  func.return %0, %1, %2, %3, %4, %5 : tensor<4x3xf32>, tensor<4x1x3xf32>, tensor<4x3xf32>, tensor<4x1x3xf32>, tensor<4x3xf32>, tensor<3xf32>
}

// -----

// sum_to is a keepdim sum over the broadcast dims plus a reshape; when the only summed dims
// have size 1 it is just the reshape (in one run); sum_to, reshape, expand and cast to the
// operand's own type are no-ops.
// CHECK-LABEL: func.func @sum_to
// CHECK:         [[S:%[0-9]+]] = gradc.sum %x {dims = [0, 2], keepdim = true} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
// CHECK-NEXT:    [[R:%[0-9]+]] = gradc.reshape [[S]] {shape = [3, 1]} : (tensor<1x3x1xf32>) -> tensor<3x1xf32>
// CHECK-NEXT:    [[U:%[0-9]+]] = gradc.reshape %y {shape = [3]} : (tensor<1x3xf32>) -> tensor<3xf32>
// CHECK-NEXT:    func.return [[R]], [[U]], %x, %x, %x, %x :
func.func @sum_to(%x: tensor<2x3x4xf32>, %y: tensor<1x3xf32>) -> (tensor<3x1xf32>, tensor<3xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>) {
  %0 = gradc.sum_to %x {shape = [3, 1]} : (tensor<2x3x4xf32>) -> tensor<3x1xf32>
  %1 = gradc.sum_to %y {shape = [3]} : (tensor<1x3xf32>) -> tensor<3xf32>
  %2 = gradc.sum_to %x {shape = [2, 3, 4]} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %3 = gradc.reshape %x {shape = [2, 3, 4]} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %4 = gradc.expand %x {shape = [2, 3, 4]} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %5 = gradc.cast %x {dtype = "float32"} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  func.return %0, %1, %2, %3, %4, %5 : tensor<3x1xf32>, tensor<3xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>
}

// -----

// x**1 is x; where with an all-true (all-false) condition is its first (second) branch. A
// where whose chosen branch would be broadcast, or whose condition is not constant, stays.
// CHECK-LABEL: func.func @pow_one_and_constant_where
// CHECK-NOT:     gradc.pow
// CHECK:         [[KEEP:%[0-9]+]] = gradc.where %c, %x, %y
// CHECK:         [[BCAST:%[0-9]+]] = gradc.where %{{[0-9]+}}, %s, %x
// CHECK-NOT:     gradc.where
// CHECK:         func.return %x, %x, %y, [[KEEP]], [[BCAST]] :
func.func @pow_one_and_constant_where(%x: tensor<3xf32>, %y: tensor<3xf32>, %c: tensor<3xi1>, %s: tensor<f32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) {
  %0 = gradc.constant {dtype = "float32", shape = [], value = 1.0} : () -> tensor<f32>
  %1 = gradc.pow %x, %0 : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  %2 = gradc.constant {dtype = "bool", shape = [], value = true} : () -> tensor<i1>
  %3 = gradc.where %2, %x, %y : (tensor<i1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %4 = gradc.constant {dtype = "bool", shape = [3], value = false} : () -> tensor<3xi1>
  %5 = gradc.where %4, %x, %y : (tensor<3xi1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %6 = gradc.where %c, %x, %y : (tensor<3xi1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %7 = gradc.where %2, %s, %x : (tensor<i1>, tensor<f32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %1, %3, %5, %6, %7 : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
}

// -----

// Elementwise ops read an expand's source directly (they broadcast), and ops whose operands
// were all smaller than their result compute small and expand once: expand(r) / 4 is
// expand(r / 4), and the product then broadcasts r / 4 itself.
// DCE-LABEL: func.func @sink_expand
// DCE-NEXT:    gradc.constant
// DCE-NEXT:    [[Q:%[0-9]+]] = gradc.div %r, %{{[0-9]+}} : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
// DCE-NEXT:    [[P:%[0-9]+]] = gradc.mul [[Q]], %x : (tensor<2x1xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// DCE-NEXT:    [[N:%[0-9]+]] = gradc.neg %r : (tensor<2x1xf32>) -> tensor<2x1xf32>
// DCE-NEXT:    [[E:%[0-9]+]] = gradc.expand [[N]] {shape = [2, 3]}
// DCE-NEXT:    func.return [[P]], [[E]] :
func.func @sink_expand(%x: tensor<2x3xf32>, %r: tensor<2x1xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %0 = gradc.expand %r {shape = [2, 3]} : (tensor<2x1xf32>) -> tensor<2x3xf32>
  %1 = gradc.constant {dtype = "float32", shape = [], value = 4.0} : () -> tensor<f32>
  %2 = gradc.div %0, %1 : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %3 = gradc.mul %2, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %4 = gradc.neg %0 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %3, %4 : tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// A per-row factor leaves a sum over the row: sum(r * x) is r * sum(x), sum(x / r) is
// sum(x) / r, sum(-x) is -sum(x) (without keepdim, a reshape drops the summed dim). A
// factor that varies along the summed dim, or a sum over another dim, stays inside.
// DCE-LABEL: func.func @factor_reduction
// DCE:         [[S1:%[0-9]+]] = gradc.sum %x {dims = [1], keepdim = true}
// DCE-NEXT:    [[M:%[0-9]+]] = gradc.mul [[S1]], %r
// DCE:         [[S2:%[0-9]+]] = gradc.sum %x {dims = [1], keepdim = true}
// DCE-NEXT:    [[D:%[0-9]+]] = gradc.div [[S2]], %r
// DCE-NEXT:    [[DR:%[0-9]+]] = gradc.reshape [[D]] {shape = [2]}
// DCE:         [[S3:%[0-9]+]] = gradc.mean %x {dims = [1], keepdim = true}
// DCE-NEXT:    [[NG:%[0-9]+]] = gradc.neg [[S3]]
// DCE:         [[C:%[0-9]+]] = gradc.mul %x, %c
// DCE-NEXT:    [[KEEP:%[0-9]+]] = gradc.sum [[C]] {dims = [1], keepdim = true}
// DCE:         [[R0:%[0-9]+]] = gradc.mul %x, %r
// DCE-NEXT:    [[KEEP0:%[0-9]+]] = gradc.sum [[R0]] {dims = [0], keepdim = true}
// DCE:         func.return [[M]], [[DR]], [[NG]], [[KEEP]], [[KEEP0]] :
func.func @factor_reduction(%x: tensor<2x3xf32>, %r: tensor<2x1xf32>, %c: tensor<3xf32>) -> (tensor<2x1xf32>, tensor<2xf32>, tensor<2x1xf32>, tensor<2x1xf32>, tensor<1x3xf32>) {
  %0 = gradc.mul %r, %x : (tensor<2x1xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = gradc.sum %0 {dims = [1], keepdim = true} : (tensor<2x3xf32>) -> tensor<2x1xf32>
  %2 = gradc.div %x, %r : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  %3 = gradc.sum %2 {dims = [1], keepdim = false} : (tensor<2x3xf32>) -> tensor<2xf32>
  %4 = gradc.neg %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %5 = gradc.mean %4 {dims = [1], keepdim = true} : (tensor<2x3xf32>) -> tensor<2x1xf32>
  %6 = gradc.mul %x, %c : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %7 = gradc.sum %6 {dims = [1], keepdim = true} : (tensor<2x3xf32>) -> tensor<2x1xf32>
  %8 = gradc.mul %x, %r : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  %9 = gradc.sum %8 {dims = [0], keepdim = true} : (tensor<2x3xf32>) -> tensor<1x3xf32>
  func.return %1, %3, %5, %7, %9 : tensor<2x1xf32>, tensor<2xf32>, tensor<2x1xf32>, tensor<2x1xf32>, tensor<1x3xf32>
}

// -----

// A per-row factor one product down: sum(g * (x / r)) is sum(g * x) / r, sum((x * r) * g)
// is sum(g * x) * r. A nested quotient with another use stays, as does one whose divisor
// varies along the summed dim.
// DCE-LABEL: func.func @factor_nested
// DCE:         [[P:%[0-9]+]] = gradc.mul %g, %x
// DCE-NEXT:    [[S:%[0-9]+]] = gradc.sum [[P]] {dims = [1], keepdim = true}
// DCE-NEXT:    [[D:%[0-9]+]] = gradc.div [[S]], %r
// DCE:         [[P2:%[0-9]+]] = gradc.mul %g, %x
// DCE-NEXT:    [[S2:%[0-9]+]] = gradc.sum [[P2]] {dims = [1], keepdim = true}
// DCE-NEXT:    [[M2:%[0-9]+]] = gradc.mul [[S2]], %r
// DCE-NEXT:    [[R2:%[0-9]+]] = gradc.reshape [[M2]] {shape = [2]}
// DCE:         [[Q:%[0-9]+]] = gradc.div %x, %r
// DCE-NEXT:    [[GQ:%[0-9]+]] = gradc.mul %g, [[Q]]
// DCE-NEXT:    gradc.sum [[GQ]] {dims = [1], keepdim = true}
// DCE:         [[QC:%[0-9]+]] = gradc.div %x, %c
// DCE-NEXT:    [[GQC:%[0-9]+]] = gradc.mul %g, [[QC]]
// DCE-NEXT:    gradc.sum [[GQC]] {dims = [1], keepdim = true}
// DCE:         func.return [[D]], [[R2]],
func.func @factor_nested(%x: tensor<2x3xf32>, %g: tensor<2x3xf32>, %r: tensor<2x1xf32>, %c: tensor<3xf32>) -> (tensor<2x1xf32>, tensor<2xf32>, tensor<2x1xf32>, tensor<2x3xf32>, tensor<2x1xf32>) {
  %0 = gradc.div %x, %r : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  %1 = gradc.mul %g, %0 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = gradc.sum %1 {dims = [1], keepdim = true} : (tensor<2x3xf32>) -> tensor<2x1xf32>
  %3 = gradc.mul %x, %r : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  %4 = gradc.mul %3, %g : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %5 = gradc.sum %4 {dims = [1], keepdim = false} : (tensor<2x3xf32>) -> tensor<2xf32>
  %6 = gradc.div %x, %r : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  %7 = gradc.mul %g, %6 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %8 = gradc.sum %7 {dims = [1], keepdim = true} : (tensor<2x3xf32>) -> tensor<2x1xf32>
  %9 = gradc.div %x, %c : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %10 = gradc.mul %g, %9 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %11 = gradc.sum %10 {dims = [1], keepdim = true} : (tensor<2x3xf32>) -> tensor<2x1xf32>
  func.return %2, %5, %8, %6, %11 : tensor<2x1xf32>, tensor<2xf32>, tensor<2x1xf32>, tensor<2x3xf32>, tensor<2x1xf32>
}

// -----

// sum(x - mean(x)) over the mean's dims is 0 in exact arithmetic: mean(x) * 0 (NaN where the
// sum would be NaN). A mean over another dim, of another tensor, or without keepdim stays.
// DCE-LABEL: func.func @centered_sum
// DCE:         [[M:%[0-9]+]] = gradc.mean %x {dims = [1], keepdim = true}
// DCE:         [[Z:%[0-9]+]] = gradc.constant {dtype = "float32", shape = [], value = 0.0}
// DCE-NEXT:    [[ZM:%[0-9]+]] = gradc.mul [[M]], [[Z]]
// DCE:         [[Z2:%[0-9]+]] = gradc.mul [[M]], %{{[0-9]+}}
// DCE-NEXT:    [[R:%[0-9]+]] = gradc.reshape [[Z2]] {shape = [2]}
// DCE:         [[KEEP:%[0-9]+]] = gradc.sum %{{[0-9]+}} {dims = [0], keepdim = true}
// DCE:         [[KEEP2:%[0-9]+]] = gradc.sum %{{[0-9]+}} {dims = [1], keepdim = true}
// DCE:         func.return [[ZM]], [[R]], [[KEEP]], [[KEEP2]] :
func.func @centered_sum(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> (tensor<2x1xf32>, tensor<2xf32>, tensor<1x3xf32>, tensor<2x1xf32>) {
  %0 = gradc.mean %x {dims = [1], keepdim = true} : (tensor<2x3xf32>) -> tensor<2x1xf32>
  %1 = gradc.sub %x, %0 : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  %2 = gradc.sum %1 {dims = [1], keepdim = true} : (tensor<2x3xf32>) -> tensor<2x1xf32>
  %3 = gradc.mean %1 {dims = [1], keepdim = false} : (tensor<2x3xf32>) -> tensor<2xf32>
  %4 = gradc.sum %1 {dims = [0], keepdim = true} : (tensor<2x3xf32>) -> tensor<1x3xf32>
  %5 = gradc.sub %y, %0 : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  %6 = gradc.sum %5 {dims = [1], keepdim = true} : (tensor<2x3xf32>) -> tensor<2x1xf32>
  func.return %2, %3, %4, %6 : tensor<2x1xf32>, tensor<2xf32>, tensor<1x3xf32>, tensor<2x1xf32>
}

// -----

// add/sub with alpha compute a + alpha * b: a zero b leaves a, a zero a does not leave b.
// CHECK-LABEL: func.func @alpha
// CHECK:         [[KEEP:%[0-9]+]] = gradc.add %{{[0-9]+}}, %x {alpha = 2.0}
// CHECK:         func.return %x, [[KEEP]], %x :
func.func @alpha(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) {
  %0 = gradc.constant {dtype = "float32", shape = [], value = 0.0} : () -> tensor<f32>
  %1 = gradc.add %x, %0 {alpha = 2.0} : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  %2 = gradc.add %0, %x {alpha = 2.0} : (tensor<f32>, tensor<3xf32>) -> tensor<3xf32>
  %3 = gradc.sub %x, %0 {alpha = 0.5} : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  func.return %1, %2, %3 : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
}

// -----

// Shape-changing views and real casts are kept; clone is not removed.
// CHECK-LABEL: func.func @keep_real_changes
// CHECK:         gradc.expand %x {shape = [2, 3]}
// CHECK-NEXT:    gradc.cast %x {dtype = "float64"}
// CHECK-NEXT:    gradc.clone %x
// CHECK-NEXT:    func.return
func.func @keep_real_changes(%x: tensor<3xf32>) -> (tensor<2x3xf32>, tensor<3xf64>, tensor<3xf32>) {
  %0 = gradc.expand %x {shape = [2, 3]} : (tensor<3xf32>) -> tensor<2x3xf32>
  %1 = gradc.cast %x {dtype = "float64"} : (tensor<3xf32>) -> tensor<3xf64>
  %2 = gradc.clone %x : (tensor<3xf32>) -> tensor<3xf32>
  func.return %0, %1, %2 : tensor<2x3xf32>, tensor<3xf64>, tensor<3xf32>
}

// -----

// Constant folding: small results fold to a value list, uniform results of any size to a
// splat (a scalar value with the full shape); folding cascades through a chain.
// CHECK-LABEL: func.func @fold
// CHECK-DAG:     [[SMALL:%[0-9]+]] = gradc.constant {dtype = "float32", shape = [3], value = [11.0, 22.0, 33.0]} : () -> tensor<3xf32>
// CHECK-DAG:     [[SPLAT:%[0-9]+]] = gradc.constant {dtype = "float32", shape = [64], value = 3.0} : () -> tensor<64xf32>
// CHECK-DAG:     [[BOOL:%[0-9]+]] = gradc.constant {dtype = "bool", shape = [3], value = [false, true, true]} : () -> tensor<3xi1>
// CHECK-DAG:     [[INT:%[0-9]+]] = gradc.constant {dtype = "int64", shape = [], value = 7} : () -> tensor<i64>
// CHECK-NOT:     gradc.add
// CHECK-NOT:     gradc.exp
// CHECK-NOT:     gradc.gt
// CHECK:         func.return [[SMALL]], [[SPLAT]], [[BOOL]], [[INT]] :
// DCE-LABEL:   func.func @fold
// DCE-COUNT-4:   gradc.constant
// DCE-NEXT:      func.return
func.func @fold() -> (tensor<3xf32>, tensor<64xf32>, tensor<3xi1>, tensor<i64>) {
  %0 = gradc.constant {dtype = "float32", shape = [3], value = [1.0, 2.0, 3.0]} : () -> tensor<3xf32>
  %1 = gradc.constant {dtype = "float32", shape = [3], value = [10.0, 20.0, 30.0]} : () -> tensor<3xf32>
  %2 = gradc.add %0, %1 : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %3 = gradc.constant {dtype = "float32", shape = [64], value = 0.0} : () -> tensor<64xf32>
  %4 = gradc.exp %3 : (tensor<64xf32>) -> tensor<64xf32>
  %5 = gradc.constant {dtype = "float32", shape = [], value = 2.0} : () -> tensor<f32>
  %6 = gradc.add %4, %5 : (tensor<64xf32>, tensor<f32>) -> tensor<64xf32>
  %7 = gradc.constant {dtype = "float32", shape = [], value = 1.5} : () -> tensor<f32>
  %8 = gradc.gt %0, %7 : (tensor<3xf32>, tensor<f32>) -> tensor<3xi1>
  %9 = gradc.constant {dtype = "int64", shape = [], value = 3} : () -> tensor<i64>
  %10 = gradc.constant {dtype = "int64", shape = [], value = 4} : () -> tensor<i64>
  %11 = gradc.add %9, %10 : (tensor<i64>, tensor<i64>) -> tensor<i64>
  func.return %2, %6, %8, %11 : tensor<3xf32>, tensor<64xf32>, tensor<3xi1>, tensor<i64>
}

// -----

// Not folded: a large non-uniform result (4x5 = 20 > 16 elements), a NaN result, and ops
// with a non-constant operand.
// CHECK-LABEL: func.func @no_fold
// CHECK:         gradc.mul {{%[0-9]+}}, {{%[0-9]+}} : (tensor<4x1xf32>, tensor<1x5xf32>) -> tensor<4x5xf32>
// CHECK:         gradc.log {{%[0-9]+}} : (tensor<f32>) -> tensor<f32>
// CHECK:         gradc.add %x, {{%[0-9]+}} : (tensor<f32>, tensor<f32>) -> tensor<f32>
func.func @no_fold(%x: tensor<f32>) -> (tensor<4x5xf32>, tensor<f32>, tensor<f32>) {
  %0 = gradc.constant {dtype = "float32", shape = [4, 1], value = [[1.0], [2.0], [3.0], [4.0]]} : () -> tensor<4x1xf32>
  %1 = gradc.constant {dtype = "float32", shape = [1, 5], value = [[1.0, 2.0, 3.0, 4.0, 5.0]]} : () -> tensor<1x5xf32>
  %2 = gradc.mul %0, %1 : (tensor<4x1xf32>, tensor<1x5xf32>) -> tensor<4x5xf32>
  %3 = gradc.constant {dtype = "float32", shape = [], value = -1.0} : () -> tensor<f32>
  %4 = gradc.log %3 : (tensor<f32>) -> tensor<f32>
  %5 = gradc.add %x, %3 : (tensor<f32>, tensor<f32>) -> tensor<f32>
  func.return %2, %4, %5 : tensor<4x5xf32>, tensor<f32>, tensor<f32>
}

// -----

// Patterns apply inside gradc.fused bodies too.
// CHECK-LABEL: func.func @in_region
// CHECK:         gradc.fused %a ({
// CHECK-NEXT:    ^bb0(%x: tensor<4xf32>):
// CHECK:           gradc.yield %x : tensor<4xf32>
// DCE-LABEL:   func.func @in_region
// DCE:           ^bb0(%x: tensor<4xf32>):
// DCE-NEXT:        gradc.yield %x : tensor<4xf32>
func.func @in_region(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = gradc.fused %a ({
  ^bb0(%x: tensor<4xf32>):
    %1 = gradc.neg %x : (tensor<4xf32>) -> tensor<4xf32>
    %2 = gradc.neg %1 : (tensor<4xf32>) -> tensor<4xf32>
    gradc.yield %2 : tensor<4xf32>
  }) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

// A view of a splat constant is a splat constant of the view's shape (no array is built).
// CHECK-LABEL: func.func @view_of_splat
// CHECK:         [[C:%[0-9]+]] = gradc.constant {dtype = "float32", shape = [4096, 1024], value = -0.5}
// CHECK-NEXT:    func.return [[C]]
// DCE-LABEL: func.func @view_of_splat
// DCE-NEXT:      [[C:%[0-9]+]] = gradc.constant {dtype = "float32", shape = [4096, 1024], value = -0.5}
// DCE-NEXT:      func.return [[C]]
func.func @view_of_splat() -> tensor<4096x1024xf32> {
  %0 = gradc.constant {dtype = "float32", shape = [4096], value = -0.5} : () -> tensor<4096xf32>
  %1 = gradc.reshape %0 {shape = [4096, 1]} : (tensor<4096xf32>) -> tensor<4096x1xf32>
  %2 = gradc.expand %1 {shape = [4096, 1024]} : (tensor<4096x1xf32>) -> tensor<4096x1024xf32>
  func.return %2 : tensor<4096x1024xf32>
}
