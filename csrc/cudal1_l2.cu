// L2 flush kernel: a grid-stride store over a buffer twice the L2 size, on the current stream;
// and one timed call with CUDA events recorded through the CUDA runtime.
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <cuda_runtime.h>

__global__ void cudal1_flush_kernel(int* __restrict__ p, long long n, int v) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    p[i] = v;
  }
}

void flush_l2(torch::Tensor buf, int64_t value) {
  TORCH_CHECK(buf.is_cuda() && buf.scalar_type() == torch::kInt32 && buf.is_contiguous(),
              "flush_l2: needs a contiguous int32 CUDA buffer");
  long long n = buf.numel();
  int threads = 512;
  int blocks = (int)std::min<long long>((n + threads - 1) / threads, 65535);
  cudal1_flush_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
      buf.data_ptr<int>(), n, (int)value);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// L2 flush, start event, fn(*args), end event on the current stream, device-wide sync, end event
// after it. The synced time counts work the call left on other streams.
py::tuple time_call_cuda(py::object fn, py::tuple args, torch::Tensor flush_buf,
                         int64_t flush_value) {
  cudaEvent_t start, end_events, end_synced;
  C10_CUDA_CHECK(cudaEventCreate(&start));
  C10_CUDA_CHECK(cudaEventCreate(&end_events));
  C10_CUDA_CHECK(cudaEventCreate(&end_synced));
  if (flush_buf.numel() > 0) flush_l2(flush_buf, flush_value);
  py::object out;
  float synced_ms = 0.f, events_ms = 0.f;
  try {
    C10_CUDA_CHECK(cudaEventRecord(start, at::cuda::getCurrentCUDAStream()));
    out = fn(*args);
    C10_CUDA_CHECK(cudaEventRecord(end_events, at::cuda::getCurrentCUDAStream()));
    {
      py::gil_scoped_release nogil;
      C10_CUDA_CHECK(cudaDeviceSynchronize());
    }
    C10_CUDA_CHECK(cudaEventRecord(end_synced, at::cuda::getCurrentCUDAStream()));
    C10_CUDA_CHECK(cudaEventSynchronize(end_synced));
    C10_CUDA_CHECK(cudaEventElapsedTime(&synced_ms, start, end_synced));
    C10_CUDA_CHECK(cudaEventElapsedTime(&events_ms, start, end_events));
  } catch (...) {
    cudaEventDestroy(start);
    cudaEventDestroy(end_events);
    cudaEventDestroy(end_synced);
    throw;
  }
  cudaEventDestroy(start);
  cudaEventDestroy(end_events);
  cudaEventDestroy(end_synced);
  return py::make_tuple(out, (double)synced_ms, (double)events_ms);
}
