// RUN: %gradc opt %s -p 'cse,dce' | filecheck %s
// RUN: %gradc opt %s -p 'cse,dce' --verify-each --print-ir-after-all 2>&1 >/dev/null | filecheck %s --check-prefix=AFTER-ALL
// RUN: %gradc opt %s -p 'cse,cse,dce' --print-ir-after-change 2>&1 >/dev/null | filecheck %s --check-prefix=AFTER-CHANGE
// RUN: %gradc opt %s -p 'cse, dce' --timing 2>&1 >/dev/null | filecheck %s --check-prefix=TIMING
// RUN: %gradc opt %s -p 'cse,dce' -o %t && filecheck %s < %t

// CHECK-LABEL: func.func @f(%x: tensor<3xf32>) -> tensor<3xf32> {
// CHECK-NEXT:    [[A:%[0-9]+]] = gradc.exp %x
// CHECK-NEXT:    [[B:%[0-9]+]] = gradc.mul [[A]], [[A]]
// CHECK-NEXT:    func.return [[B]] : tensor<3xf32>
// CHECK-NEXT:  }

// AFTER-ALL:      // -----// IR Dump After cse //----- //
// AFTER-ALL-NEXT: func.func @f
// AFTER-ALL:      gradc.neg
// AFTER-ALL:      // -----// IR Dump After dce //----- //
// AFTER-ALL-NEXT: func.func @f
// AFTER-ALL-NOT:  gradc.neg

// The second cse changes nothing, so only the first cse and dce print.
// AFTER-CHANGE:     // -----// IR Dump After cse //----- //
// AFTER-CHANGE-NOT: IR Dump After cse
// AFTER-CHANGE:     // -----// IR Dump After dce //----- //
// AFTER-CHANGE-NOT: IR Dump After

// TIMING: Pass execution timing report
// TIMING: cse
// TIMING: dce
// TIMING: Total

func.func @f(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = gradc.exp %x : (tensor<3xf32>) -> tensor<3xf32>
  %1 = gradc.exp %x : (tensor<3xf32>) -> tensor<3xf32>
  %2 = gradc.neg %1 : (tensor<3xf32>) -> tensor<3xf32>
  %3 = gradc.mul %0, %1 : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %3 : tensor<3xf32>
}
