"""Code generation: kernel IR and its CPU (LLVM, MCJIT) and GPU (NVPTX, PTX) backends.

kernel_ir     loop-level kernel IR: buffers, index maps, scalar SSA body, reductions; builder, printer
kernel_eval   NumPy reference evaluation of a kernel (tests, debugging)
llvm_common   the shared lowering table (op -> LLVM IR) and body/reduction emission
llvm_math     exp/log/sin/cos/tanh/sigmoid/pow in LLVM IR (vectorizable; no libm on the GPU)
llvm_cpu      kernel -> host LLVM IR -> O3 + vectorization -> machine code
runtime_cpu   MCJIT + ctypes calls, 2-thread split, disk object cache (cache.py)
matmul_cpu    matmul-shaped kernels: BLAS via ctypes (measured faster) or a generated blocked kernel
ptx           kernel -> NVPTX LLVM IR -> PTX (elementwise, row/block reductions, tiled matmul)
cuda_driver   device memory and launches: PyCUDA, or the CPU simulator (GRADC_CUDA_SIMULATOR=1)
backend_cuda  executor backend and eager ops on CUDA tensors
gpusim        the SIMT simulator (GPU threads as CPU threads)
backend_cpu   executor glue: gradc.fused regions (lower_fused) and matmul -> native kernels
host_buffers  cache-line aligned host arrays; Recycler, the pool of a kernel result's buffers
eager_cpu     eager CPU ops on large tensors as compiled single-op kernels; pooled zeros

Submodules import llvmlite; this package imports nothing eagerly.
"""
