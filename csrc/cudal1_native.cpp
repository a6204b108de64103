// Native helpers of the verifier and the timing harness (torch_cudal1/bench/native.py builds
// them with torch.utils.cpp_extension on first use and caches the build).
//
// check_close: the output checker in C++, beyond the reach of a candidate that monkeypatches
// torch's Python functions or Tensor methods. It works on float64 copies and returns the
// statistics compare.py turns into a verdict.
// flush_l2 (CUDA builds only, cudal1_l2.cu): overwrites a buffer larger than the L2 cache.
// time_call_cpu / time_call_cuda (cudal1_l2.cu): one timed call of the candidate with the clock
// or the CUDA events driven from C++, out of reach of a candidate that patches torch.cuda.Event,
// torch.cuda.synchronize or time.perf_counter. The loop around them (warm-up, repetitions, input
// rotation, checks during timing) stays in bench/timing.py.
#include <torch/extension.h>
#include <chrono>
#include <vector>

// Returns {err_norm, ref_norm, max_abs_err, n_exceed, n_new_nonfinite_where_ref_finite}.
// An element exceeds when |new - ref| > elem_tol * (rms(ref) + |ref|) + abs_slack.
std::vector<double> check_close(torch::Tensor ref, torch::Tensor out, double elem_tol,
                                double abs_slack) {
  TORCH_CHECK(ref.sizes() == out.sizes(), "check_close: shape mismatch");
  auto r = ref.detach().to(torch::kFloat64).contiguous();
  auto n = out.detach().to(r.device(), torch::kFloat64).contiguous();
  auto r_fin = torch::isfinite(r);
  auto n_fin = torch::isfinite(n);
  double bad_nonfinite = (r_fin & n_fin.logical_not()).sum().item<double>();
  auto mask = r_fin & n_fin;
  auto rf = r.masked_select(mask);
  auto nf = n.masked_select(mask);
  auto diff = (nf - rf).abs();
  double err = diff.numel() ? diff.norm().item<double>() : 0.0;
  double refn = rf.numel() ? rf.norm().item<double>() : 0.0;
  double maxabs = diff.numel() ? diff.max().item<double>() : 0.0;
  double rms = rf.numel() ? refn / std::sqrt(static_cast<double>(rf.numel())) : 0.0;
  double exceed = diff.numel()
      ? (diff > (rf.abs() + rms) * elem_tol + abs_slack).sum().item<double>() : 0.0;
  return {err, refn, maxabs, exceed, bad_nonfinite};
}

// time_call_cpu: one timed call with the clock read in C++ (steady_clock), so that a candidate
// that replaces time.perf_counter cannot change what is measured. Returns (output, ms).
py::tuple time_call_cpu(py::object fn, py::tuple args) {
  auto t0 = std::chrono::steady_clock::now();
  py::object out = fn(*args);
  auto t1 = std::chrono::steady_clock::now();
  return py::make_tuple(out, std::chrono::duration<double, std::milli>(t1 - t0).count());
}

#ifdef CUDAL1_WITH_CUDA
void flush_l2(torch::Tensor buf, int64_t value);
py::tuple time_call_cuda(py::object fn, py::tuple args, torch::Tensor flush_buf,
                         int64_t flush_value);
#endif

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("check_close", &check_close, "float64 error statistics of out against ref");
  m.def("time_call_cpu", &time_call_cpu, "(output, ms) of fn(*args), clock read in C++");
#ifdef CUDAL1_WITH_CUDA
  m.def("flush_l2", &flush_l2, "overwrite a buffer larger than L2 on the current stream");
  m.def("time_call_cuda", &time_call_cuda,
        "(output, synced ms, events ms): L2 flush, then fn(*args) between CUDA events recorded "
        "through the CUDA runtime, the end one after a device-wide synchronisation");
#endif
}
