#pragma once
// The definitions of profile.hpp's functions: inline there by default, compiled once into
// tfg::torch_compiled with TFG_TORCH_SEPARATE (see linkage.hpp).
#include "tfg/torch/execute/profile.hpp"

namespace tfg::torch {

[[nodiscard]] TFG_TORCH_DECL state::dtype to_state(c10::ScalarType t) {
  using state::dtype;
  switch (t) {
    case c10::kHalf: return dtype::f16;
    case c10::kBFloat16: return dtype::bf16;
    case c10::kFloat: return dtype::f32;
    case c10::kDouble: return dtype::f64;
    case c10::kComplexFloat: return dtype::c64;
    case c10::kComplexDouble: return dtype::c128;
    case c10::kChar: return dtype::i8;
    case c10::kByte: return dtype::u8;
    case c10::kShort: return dtype::i16;
    case c10::kInt: return dtype::i32;
    case c10::kLong: return dtype::i64;
    case c10::kBool: return dtype::boolean;
    default: return dtype::other;
  }
}

}  // namespace tfg::torch

#if (defined(__GNUC__))
namespace tfg::torch::detail {

TFG_TORCH_DECL void summarise_f32(const float* p, std::int64_t n, state::numeric_summary& s) {
  // 16-byte vectors: native on every x86-64 (SSE2) and AArch64 (NEON) target; wider ones are
  // split by the compiler into slow generic code unless AVX is enabled for the whole TU.
  // Blocks are summarised optimistically (all finite: plain min/max/sum); a block that holds
  // NaN or Inf is summarised again by the scalar loop, which counts them.
  using f32x4 = float __attribute__((vector_size(16)));
  using i32x4 = std::int32_t __attribute__((vector_size(16)));
  constexpr float inf = INFINITY;
  const f32x4 infs = {inf, inf, inf, inf};
  f32x4 lo0 = infs, hi0 = -infs, lo1 = infs, hi1 = -infs;
  double sum = 0;
  std::uint64_t zero = 0;
  state::numeric_summary odd;  // blocks with NaN/Inf
  std::int64_t i = 0;
  constexpr std::int64_t block = 4 * 1024;  // flush float sums and 32-bit counts per block
  while (i + 8 <= n) {
    const std::int64_t begin = i;
    const std::int64_t end = std::min(n - (n - i) % 8, i + block);
    f32x4 s0 = {}, s1 = {}, blo0 = lo0, bhi0 = hi0, blo1 = lo1, bhi1 = hi1;
    i32x4 z0 = {}, z1 = {}, bad = {};
    for (; i < end; i += 8) {
      f32x4 v0, v1;
      std::memcpy(&v0, p + i, sizeof v0);
      std::memcpy(&v1, p + i + 4, sizeof v1);
      // NaN fails `<`; Inf fails it too once the sign bit is cleared.
      bad |= ~((f32x4)((i32x4)v0 & 0x7fffffff) < infs) | ~((f32x4)((i32x4)v1 & 0x7fffffff) < infs);
      blo0 = v0 < blo0 ? v0 : blo0;
      bhi0 = v0 > bhi0 ? v0 : bhi0;
      blo1 = v1 < blo1 ? v1 : blo1;
      bhi1 = v1 > bhi1 ? v1 : bhi1;
      s0 += v0;
      s1 += v1;
      z0 -= v0 == 0;
      z1 -= v1 == 0;
    }
    if (bad[0] | bad[1] | bad[2] | bad[3]) {
      summarise(p + begin, end - begin, odd);
      continue;
    }
    lo0 = blo0, hi0 = bhi0, lo1 = blo1, hi1 = bhi1;
    for (int l = 0; l < 4; ++l) {
      sum += static_cast<double>(s0[l]) + static_cast<double>(s1[l]);
      zero += static_cast<std::uint64_t>(z0[l]) + static_cast<std::uint64_t>(z1[l]);
    }
  }
  summarise(p + i, n - i, odd);  // the tail, at most 7 elements
  float flo = inf, fhi = -inf;
  for (int l = 0; l < 4; ++l) {
    flo = std::min({flo, lo0[l], lo1[l]});
    fhi = std::max({fhi, hi0[l], hi1[l]});
  }
  s.nan_count = odd.nan_count;
  s.inf_count = odd.inf_count;
  s.zero_count = zero + odd.zero_count;
  const bool vector_finite = flo <= fhi;  // some finite element went through the vector path
  if (vector_finite || !std::isnan(odd.min)) {
    s.min = std::isnan(odd.min) ? flo : vector_finite ? std::min(static_cast<double>(flo), odd.min) : odd.min;
    s.max = std::isnan(odd.max) ? fhi : vector_finite ? std::max(static_cast<double>(fhi), odd.max) : odd.max;
    const double total = sum + (std::isnan(odd.mean) ? 0.0 : odd.mean);
    s.mean = total / static_cast<double>(static_cast<std::uint64_t>(n) - s.nan_count - s.inf_count);
  }
}

}  // namespace tfg::torch::detail
#endif

namespace tfg::torch::detail {

[[nodiscard]] TFG_TORCH_DECL state::numeric_summary numbers_of(const at::Tensor& t) {
  state::numeric_summary s;
  if (!t.defined() || t.numel() == 0 || t.layout() != c10::kStrided) return s;
  at::Tensor c = t.device().is_cpu() ? t.contiguous() : t.to(c10::kCPU).contiguous();
  const auto n = c.numel();
  const auto bytes = static_cast<std::size_t>(n) * c.element_size();
  s.content_hash = XXH3_64bits(c.data_ptr(), bytes);
  switch (c.scalar_type()) {
#if defined(__GNUC__)
    case c10::kFloat: summarise_f32(c.data_ptr<float>(), n, s); break;
#else
    case c10::kFloat: summarise_all(c.data_ptr<float>(), n, s); break;
#endif
    case c10::kDouble: summarise_all(c.data_ptr<double>(), n, s); break;
    case c10::kHalf: summarise_all(c.data_ptr<c10::Half>(), n, s); break;
    case c10::kBFloat16: summarise_all(c.data_ptr<c10::BFloat16>(), n, s); break;
    case c10::kLong: summarise_integral(c.data_ptr<std::int64_t>(), n, s); break;
    case c10::kInt: summarise_integral(c.data_ptr<std::int32_t>(), n, s); break;
    case c10::kShort: summarise_integral(c.data_ptr<std::int16_t>(), n, s); break;
    case c10::kChar: summarise_integral(c.data_ptr<std::int8_t>(), n, s); break;
    case c10::kByte: summarise_integral(c.data_ptr<std::uint8_t>(), n, s); break;
    case c10::kBool: summarise_integral(reinterpret_cast<const std::uint8_t*>(c.data_ptr<bool>()), n, s); break;
    default: break;  // complex and quantized: hash only
  }
  return s;
}

}  // namespace tfg::torch::detail

namespace tfg::torch {

[[nodiscard]] TFG_TORCH_DECL state::tensor_state tensor_state_of(const at::Tensor& t, bool with_numbers) {
  state::tensor_state s;
  s.kind = state::value_kind::tensor;
  if (!t.defined()) return s;
  s.shape.assign(t.sizes().begin(), t.sizes().end());
  s.numel = t.numel();
  s.type = to_state(t.scalar_type());
  s.device = {t.device().is_cpu()    ? state::device_kind::cpu
              : t.device().is_cuda() ? state::device_kind::cuda
                                     : state::device_kind::other,
              static_cast<std::int16_t>(t.device().has_index() ? t.device().index() : -1)};
  s.requires_grad = t.requires_grad();
  switch (t.layout()) {
    case c10::kStrided: s.tensor_layout = state::layout::strided; break;
    case c10::kSparse: s.tensor_layout = state::layout::sparse; break;
    case c10::kMkldnn: s.tensor_layout = state::layout::mkldnn; break;
    default: s.tensor_layout = state::layout::other; break;
  }
  if (t.layout() == c10::kStrided) {
    s.strides.assign(t.strides().begin(), t.strides().end());
    s.storage_offset = t.storage_offset();
    s.contiguous = t.is_contiguous();
    const auto rank = t.dim();
    if (s.contiguous) s.format = state::memory_format::contiguous;
    else if ((rank == 4 && t.is_contiguous(c10::MemoryFormat::ChannelsLast)) ||
             (rank == 5 && t.is_contiguous(c10::MemoryFormat::ChannelsLast3d)))
      s.format = state::memory_format::channels_last;
    else s.format = state::memory_format::strided;
  }
  if (t.has_storage()) s.storage_nbytes = static_cast<std::int64_t>(t.storage().nbytes());
  if (with_numbers) s.numbers = detail::numbers_of(t);
  return s;
}

}  // namespace tfg::torch
