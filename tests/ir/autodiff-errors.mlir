// RUN: not %gradc opt %s --split-input-file -p 'autodiff{wrt=1}' 2>&1 | filecheck %s --check-prefix=RANGE
// RUN: not %gradc opt %s --split-input-file -p 'autodiff{wrt=-1}' 2>&1 | filecheck %s --check-prefix=NEGATIVE
// RUN: not %gradc opt %s --split-input-file -p 'autodiff{wrt=0}' 2>&1 | filecheck %s --check-prefix=INTEGER
// RUN: not %gradc opt %s --split-input-file -p 'fuse,autodiff{wrt=0}' 2>&1 | filecheck %s --check-prefix=FUSED

// Every chunk is one function of one argument; each RUN line breaks one rule, and the
// error names the pass, the function and the problem (one line, exit status 2).

// RANGE:    error: pass 'autodiff' failed: AutodiffError: autodiff: wrt index 1 out of range for @f with 1 args
// NEGATIVE: error: pass 'autodiff' failed: AutodiffError: autodiff: wrt index -1 out of range for @f with 1 args
// FUSED:    error: pass 'autodiff' failed: AutodiffError: autodiff: cannot differentiate through 'gradc.fused' (run autodiff before fuse)
func.func @f(%x: tensor<3xf32>) -> tensor<f32> {
  %0 = gradc.exp %x : (tensor<3xf32>) -> tensor<3xf32>
  %1 = gradc.sum %0 {dims = [0], keepdim = false} : (tensor<3xf32>) -> tensor<f32>
  func.return %1 : tensor<f32>
}

// -----

// Only floating point arguments can be differentiated.
// INTEGER:  error: pass 'autodiff' failed: AutodiffError: autodiff: argument 0 of @idx has type tensor<3xi64>; only floating point arguments can be differentiated
func.func @idx(%i: tensor<3xi64>) -> tensor<3xf32> {
  %0 = gradc.cast %i {dtype = "float32"} : (tensor<3xi64>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}
