#include "kernels/cuda/cost.hpp"

#include "kernels/cuda/scratch.hpp"

#include <algorithm>
#include <stdexcept>

namespace moacert::kernels::cuda_cost {
namespace {

int ceil_div(moa::extent_t a, int b) {
  return static_cast<int>((a + b - 1) / b);
}
int rows_in(int tile, moa::extent_t extent, int block) {
  return static_cast<int>(std::min<moa::extent_t>(block, extent - moa::extent_t(tile) * block));
}

// The tile walk of one (b, h) or (b, g): per query tile, the keys of the
// visible key tiles (KV); per key tile, the rows of the visible query
// tiles (QV); and the visible (row, key) pairs.
struct Walk {
  std::vector<double> kv_of_q, qv_of_k;
  double pairs = 0;
};

Walk walk(const Problem& p) {
  const Dims& d = p.dims;
  const int qt = ceil_div(d.N, kBlockM), kt = ceil_div(d.M, kBlockN);
  Walk w;
  w.kv_of_q.assign(qt, 0);
  w.qv_of_k.assign(kt, 0);
  for (int i = 0; i < qt; ++i)
    for (int j = 0; j < kt; ++j)
      if (tile_visible(p.causal(), i, j, d.N, d.M)) {
        w.kv_of_q[i] += rows_in(j, d.M, kBlockN);
        w.qv_of_k[j] += rows_in(i, d.N, kBlockM);
      }
  for (moa::extent_t i = 0; i < d.N; ++i)
    w.pairs += p.causal()
                   ? double(std::clamp<moa::extent_t>(causal::last_key(i, d.N, d.M) + 1, 0, d.M))
                   : d.M;
  return w;
}

namespace scratch = cuda_scratch;

// One launch's model as it is written: each figure once, against the
// tensor it touches.
struct Counter {
  LaunchCost c;
  double storage, f32 = 4;
  TensorTraffic& of(const char* tensor) {
    for (TensorTraffic& t : c.tensors)
      if (t.tensor == tensor) return t;
    c.tensors.push_back({tensor});
    return c.tensors.back();
  }
  void load(const char* tensor, double elements, double bytes_each) {
    TensorTraffic& t = of(tensor);
    t.load_elements += elements;
    t.load_bytes += elements * bytes_each;
  }
  void store(const char* tensor, double elements, double bytes_each) {
    TensorTraffic& t = of(tensor);
    t.store_elements += elements;
    t.store_bytes += elements * bytes_each;
  }
  void atomic(const char* tensor, double n) { of(tensor).atomics += n; }
};

// The query-tile kernels (one block per (query tile, head)).
struct QueryKernel {
  bool q = true, dout = false;        // tiles loaded at the start
  bool lse_in = false, d_in = false;  // rows loaded (attention.bwd: lse of storage, D_i f32)
  bool forward = false, backward = false;
  bool store_lse_f32 = false, store_d_f32 = false, store_dq = false;
  bool atomic_dk = false, atomic_dv = false;
};

LaunchCost query_kernel(const char* name, const QueryKernel& k, const Problem& p, const Walk& w) {
  const Dims& d = p.dims;
  Counter n{{name}, double(info(p.format).bytes)};
  const double heads = double(d.B) * d.H, D = double(d.D);
  for (std::size_t i = 0; i < w.kv_of_q.size(); ++i) {
    const double rows = rows_in(int(i), d.N, kBlockM), kv = w.kv_of_q[i];
    if (k.q) n.load("q", heads * rows * D, n.storage);
    if (k.dout) n.load("do", heads * rows * D, n.storage);
    if (k.lse_in) n.load("lse", heads * rows, n.storage);
    if (k.d_in) n.load(scratch::kDRows, heads * rows, n.f32);
    // the forward and the backward each walk the visible key tiles
    const int passes = int(k.forward) + int(k.backward);
    n.load("k", passes * heads * kv * D, n.storage);
    n.load("v", passes * heads * kv * D, n.storage);
    if (k.forward) {
      n.store("o", heads * rows * D, n.storage);
      n.store("lse", heads * rows, n.storage);
    }
    if (k.store_lse_f32) n.store(scratch::kLseRows, heads * rows, n.f32);
    if (k.store_d_f32) n.store(scratch::kDRows, heads * rows, n.f32);
    if (k.store_dq) n.store("dq", heads * rows * D, n.storage);
    if (k.atomic_dk) n.atomic(scratch::kDkAcc, heads * kv * D);
    if (k.atomic_dv) n.atomic(scratch::kDvAcc, heads * kv * D);
  }
  if (k.forward) n.c.flops += heads * w.pairs * (4 * D + 5);
  if (k.backward)
    n.c.flops += heads * w.pairs * (8 * D + 4) + (k.atomic_dv ? heads * w.pairs * 2 * D : 0);
  return n.c;
}

// dv_kernel / dkdv_kernel (one block per (key tile, kv head)); the LSE rows
// from `lse` (the op's, of storage, or a fused kernel's f32 scratch).
struct KeyKernel {
  bool dk = false;         // dK and dV (dkdv_kernel), else dV alone (dv_kernel)
  bool atomic_dq = false;  // dQ's partials by atomics (FlashAttention-2's form)
  const char* lse = "lse";
  bool lse_f32 = false;
};

LaunchCost key_kernel(const char* name, const KeyKernel& k, const Problem& p, const Walk& w) {
  const Dims& d = p.dims;
  Counter n{{name}, double(info(p.format).bytes)};
  const double kv_heads = double(d.B) * d.Hkv, group = double(d.H / d.Hkv), D = double(d.D);
  const double lse_bytes = k.lse_f32 ? n.f32 : n.storage;
  for (std::size_t j = 0; j < w.qv_of_k.size(); ++j) {
    const double keys = rows_in(int(j), d.M, kBlockN), qv = w.qv_of_k[j] * group;
    n.load("k", kv_heads * keys * D, n.storage);
    if (k.dk) n.load("v", kv_heads * keys * D, n.storage);
    n.load("q", kv_heads * qv * D, n.storage);  // per visible query tile
    n.load("do", kv_heads * qv * D, n.storage);
    n.load(k.lse, kv_heads * qv, lse_bytes);
    if (k.dk) n.load(scratch::kDRows, kv_heads * qv, n.f32);
    if (k.dk) n.store("dk", kv_heads * keys * D, n.storage);
    n.store("dv", kv_heads * keys * D, n.storage);
    if (k.atomic_dq) n.atomic(scratch::kDqAcc, kv_heads * qv * D);
  }
  n.c.flops = double(d.B) * d.H * w.pairs * ((k.dk ? 8 : 4) * D + (k.atomic_dq ? 2 * D : 0) + 2);
  return n.c;
}

// flash_tc_kernel (kernels/cuda/flash_tc.cu): one block per (64-row query
// tile, head); Q and the visible K, V tiles of 32 keys arrive by 16-byte
// cp.async (one load each), O and LSE leave by element stores.
LaunchCost tensor_core_forward(const Problem& p) {
  using cuda_tiles::kTcBlockM;
  using cuda_tiles::kTcBlockN;
  const Dims& d = p.dims;
  Counter n{{"flash_tc_kernel"}, double(info(p.format).bytes)};
  const double heads = double(d.B) * d.H, D = double(d.D), chunk = 16;
  const double chunks_per_row = D * n.storage / chunk;
  for (int i = 0; i < ceil_div(d.N, kTcBlockM); ++i) {
    double kv = 0;
    for (int j = 0; j < ceil_div(d.M, kTcBlockN) &&
                    tile_visible(p.causal(), i, j, d.N, d.M, kTcBlockM, kTcBlockN);
         ++j)
      kv += rows_in(j, d.M, kTcBlockN);
    const double rows = rows_in(i, d.N, kTcBlockM);
    n.load("q", heads * rows * chunks_per_row, chunk);
    n.load("k", heads * kv * chunks_per_row, chunk);
    n.load("v", heads * kv * chunks_per_row, chunk);
    n.store("o", heads * rows * D, n.storage);
    n.store("lse", heads * rows, n.storage);
  }
  n.c.flops = heads * walk(p).pairs * (4 * D + 5);
  return n.c;
}

// tc_key_tile_kernel (kernels/cuda/attention_tc_passes.cuh): one block
// per (32-key tile, kv head); K and V of the key tile and, per visible
// (query head, 16-row query tile), Q and dO arrive by 16-byte cp.async
// (one load each), the rows' LSE (storage) and D_i (f32) by element loads;
// dV (and dK) leave by element stores, dQ's partials (atomic_dq) by one
// atomic per (pair, query row, d).
struct TcKeyKernel {
  bool dk = false, atomic_dq = false;
};

LaunchCost tensor_core_key_tiles(const TcKeyKernel& k, const Problem& p) {
  using cuda_tiles::kTcBwdBlockM;
  using cuda_tiles::kTcBwdBlockN;
  const Dims& d = p.dims;
  Counter n{{"tc_key_tile_kernel"}, double(info(p.format).bytes)};
  const double kv_heads = double(d.B) * d.Hkv, group = double(d.H / d.Hkv), D = double(d.D);
  const double chunk = 16, chunks_per_row = D * n.storage / chunk;
  for (int j = 0; j < ceil_div(d.M, kTcBwdBlockN); ++j) {
    double qv = 0;  // the rows of this key tile's visible query tiles, per head
    for (int i = 0; i < ceil_div(d.N, kTcBwdBlockM); ++i)
      if (tile_visible(p.causal(), i, j, d.N, d.M, kTcBwdBlockM, kTcBwdBlockN))
        qv += rows_in(i, d.N, kTcBwdBlockM);
    const double keys = rows_in(j, d.M, kTcBwdBlockN), rows = kv_heads * group * qv;
    n.load("k", kv_heads * keys * chunks_per_row, chunk);
    n.load("v", kv_heads * keys * chunks_per_row, chunk);
    n.load("q", rows * chunks_per_row, chunk);
    n.load("do", rows * chunks_per_row, chunk);
    n.load("lse", rows, n.storage);
    n.load(scratch::kDRows, rows, n.f32);
    if (k.dk) n.store("dk", kv_heads * keys * D, n.storage);
    n.store("dv", kv_heads * keys * D, n.storage);
    if (k.atomic_dq) n.atomic(scratch::kDqAcc, rows * D);
  }
  n.c.flops =
      double(d.B) * d.H * walk(p).pairs * ((k.dk ? 8 : 6) * D + (k.atomic_dq ? 2 * D : 0) + 2);
  return n.c;
}

// tc_query_tile_kernel (attention_tc_passes.cuh): one block per (32-row
// query block, head); Q, dO and, per 32-key tile the block sees (its last
// row does), K and V arrive by 16-byte cp.async, the rows' LSE (storage,
// as the forward stored it) and D_i (f32) by element loads; dQ leaves by
// element stores, dK and dV (where atomic) by one atomic each per (block,
// visible key tile, key, d), their two 16-row sub-steps summed first.
struct TcQueryKernel {
  bool atomic_dk = false, atomic_dv = false;
};

LaunchCost tensor_core_query_tiles(const TcQueryKernel& k, const Problem& p) {
  using cuda_tiles::kTcBwdBlockN;
  using cuda_tiles::kTcFusedBlockM;
  const Dims& d = p.dims;
  Counter n{{"tc_query_tile_kernel"}, double(info(p.format).bytes)};
  const double heads = double(d.B) * d.H, D = double(d.D);
  const double chunk = 16, chunks_per_row = D * n.storage / chunk;
  for (int i = 0; i < ceil_div(d.N, kTcFusedBlockM); ++i) {
    double kv = 0;  // the keys of this query block's visible key tiles
    for (int j = 0; j < ceil_div(d.M, kTcBwdBlockN) &&
                    tile_visible(p.causal(), i, j, d.N, d.M, kTcFusedBlockM, kTcBwdBlockN);
         ++j)
      kv += rows_in(j, d.M, kTcBwdBlockN);
    const double rows = heads * rows_in(i, d.N, kTcFusedBlockM);
    n.load("q", rows * chunks_per_row, chunk);
    n.load("do", rows * chunks_per_row, chunk);
    n.load("lse", rows, n.storage);
    n.load(scratch::kDRows, rows, n.f32);
    n.load("k", heads * kv * chunks_per_row, chunk);
    n.load("v", heads * kv * chunks_per_row, chunk);
    n.store("dq", rows * D, n.storage);
    if (k.atomic_dk) n.atomic(scratch::kDkAcc, heads * kv * D);
    if (k.atomic_dv) n.atomic(scratch::kDvAcc, heads * kv * D);
  }
  n.c.flops =
      heads * walk(p).pairs * (8 * D + (k.atomic_dk ? 2 * D : 0) + (k.atomic_dv ? 2 * D : 0) + 2);
  return n.c;
}

LaunchCost row_dot(const Problem& p) {
  const Dims& d = p.dims;
  Counter n{{"row_dot_kernel"}, double(info(p.format).bytes)};
  const double rows = double(d.B) * d.H * d.N;
  n.load("do", rows * d.D, n.storage);
  n.load("o", rows * d.D, n.storage);
  n.store(scratch::kDRows, rows, n.f32);
  n.c.flops = 2 * rows * d.D;
  return n.c;
}

// scale_to_storage: the f32 accumulator `acc` rounded into `out`.
LaunchCost convert(const Problem& p, const char* acc, const char* out, double heads, double rows) {
  const Dims& d = p.dims;
  Counter n{{"scale_to_storage"}, double(info(p.format).bytes)};
  const double total = double(d.B) * heads * rows * d.D;
  n.load(acc, total, n.f32);
  n.store(out, total, n.storage);
  n.c.flops = total;
  return n.c;
}

LaunchCost rmsnorm(const Problem& p) {
  const Dims& d = p.dims;
  Counter n{{"rmsnorm_kernel"}, double(info(p.format).bytes)};
  const double elements = double(d.T) * d.D;
  n.load("x", 2 * elements, n.storage);  // twice: the sum of squares, the output
  n.load("w", elements, n.storage);      // once per row
  n.store("y", elements, n.storage);
  n.c.flops = 4 * elements;
  return n.c;
}

std::vector<LaunchCost> swiglu(const Problem& p) {
  const Dims& d = p.dims;
  const double storage = double(info(p.format).bytes);
  const double tiles_t = ceil_div(d.T, kGemmTile), tiles_f = ceil_div(d.F, kGemmTile),
               tiles_dm = ceil_div(d.Dm, kGemmTile);
  Counter gate{{"gate_up_kernel"}, storage};
  gate.load("x", double(d.T) * d.Dm * tiles_f, storage);   // once per F tile
  gate.load("w1", double(d.Dm) * d.F * tiles_t, storage);  // once per T tile
  gate.load("w3", double(d.Dm) * d.F * tiles_t, storage);
  gate.store(scratch::kHidden, double(d.T) * d.F, gate.f32);
  gate.c.flops = 4.0 * d.T * d.Dm * d.F + 5.0 * d.T * d.F;
  Counter down{{"down_kernel"}, storage};
  down.load(scratch::kHidden, double(d.T) * d.F * tiles_dm, down.f32);  // once per Dm tile
  down.load("w2", double(d.F) * d.Dm * tiles_t, storage);               // once per T tile
  down.store("y", double(d.T) * d.Dm, storage);
  down.c.flops = 2.0 * d.T * d.F * d.Dm;
  return {gate.c, down.c};
}

}  // namespace

TensorTraffic& TensorTraffic::operator+=(const TensorTraffic& o) {
  load_elements += o.load_elements;
  load_bytes += o.load_bytes;
  store_elements += o.store_elements;
  store_bytes += o.store_bytes;
  atomics += o.atomics;
  return *this;
}

TensorTraffic LaunchCost::total() const {
  TensorTraffic sum;
  for (const TensorTraffic& t : tensors) sum += t;
  return sum;
}

TensorTraffic LaunchCost::of(std::string_view tensor) const {
  for (const TensorTraffic& t : tensors)
    if (t.tensor == tensor) return t;
  return {std::string(tensor)};
}

std::vector<LaunchCost> decode_launches(const Problem& p, const std::vector<std::int64_t>& lens) {
  const Dims& d = p.dims;
  const double storage = double(info(p.format).bytes), D = double(d.D);
  const int splits = ceil_div(d.M, kSplitKeys);
  Counter split{{"decode_split_kernel"}, storage};
  for (moa::extent_t b = 0; b < d.B; ++b) {
    const std::int64_t len = lens.empty() ? std::int64_t(d.M) : lens[std::size_t(b)];
    for (int s = 0; s < splits; ++s) {
      const double keys =
          double(std::clamp<std::int64_t>(len - std::int64_t(s) * kSplitKeys, 0, kSplitKeys));
      const double heads = double(d.H);
      split.load("lens", heads * kSplitKeys, 8);  // lens[b], by every thread
      if (keys > 0) {
        split.load("q", heads * D, storage);
        split.load("k", heads * keys * D, storage);
        split.load("v", heads * keys * D, storage);
      }
      split.store(scratch::kMPart, heads, split.f32);
      split.store(scratch::kLPart, heads, split.f32);
      split.store(scratch::kAccPart, heads * D, split.f32);
      split.c.flops += heads * keys * (4 * D + 3);
    }
  }
  Counter merge{{"decode_merge_kernel"}, storage};
  const double heads = double(d.B) * d.H;
  merge.load(scratch::kMPart, heads * splits, merge.f32);
  merge.load(scratch::kLPart, heads * splits, merge.f32);
  merge.load(scratch::kAccPart, heads * splits * D, merge.f32);
  merge.store("o", heads * D, storage);
  merge.store("lse", heads, storage);
  merge.c.flops = heads * splits * (2 * D + 3);
  return {split.c, merge.c};
}

std::vector<LaunchCost> launches(std::string_view onf, const Problem& p) {
  const Walk w = walk(p);
  const Dims& d = p.dims;
  const double kv_heads = double(d.Hkv), heads = double(d.H);
  if (onf == "decode") return decode_launches(p, {});
  if (onf == "rmsnorm") return {rmsnorm(p)};
  if (onf == "swiglu") return swiglu(p);
  if (onf == "flash_tc") return {tensor_core_forward(p)};
  if (onf == "flash") {
    return {query_kernel("flash_fwd_kernel", {.forward = true}, p, w)};
  }
  if (onf == "fused_v1") {
    return {query_kernel("fused_v1_kernel",
                         {.dout = true,
                          .forward = true,
                          .backward = true,
                          .store_dq = true,
                          .atomic_dk = true,
                          .atomic_dv = true},
                         p, w),
            convert(p, scratch::kDkAcc, "dk", kv_heads, double(d.M)),
            convert(p, scratch::kDvAcc, "dv", kv_heads, double(d.M))};
  }
  if (onf == "fused_v3") {
    return {query_kernel("fused_v3_kernel",
                         {.dout = true,
                          .forward = true,
                          .backward = true,
                          .store_lse_f32 = true,
                          .store_dq = true,
                          .atomic_dk = true},
                         p, w),
            key_kernel("dv_kernel", {.lse = scratch::kLseRows, .lse_f32 = true}, p, w),
            convert(p, scratch::kDkAcc, "dk", kv_heads, double(d.M))};
  }
  if (onf == "fused_det") {
    return {
        query_kernel("fused_det_kernel",
                     {.dout = true,
                      .forward = true,
                      .backward = true,
                      .store_lse_f32 = true,
                      .store_d_f32 = true,
                      .store_dq = true},
                     p, w),
        key_kernel("dkdv_kernel", {.dk = true, .lse = scratch::kLseRows, .lse_f32 = true}, p, w)};
  }
  if (onf == "bwd_atomic") {
    return {row_dot(p), key_kernel("dv_kernel", {}, p, w),
            query_kernel("dq_dk_kernel",
                         {.dout = true,
                          .lse_in = true,
                          .d_in = true,
                          .backward = true,
                          .store_dq = true,
                          .atomic_dk = true},
                         p, w),
            convert(p, scratch::kDkAcc, "dk", kv_heads, double(d.M))};
  }
  if (onf == "bwd_tc") {
    return {row_dot(p), tensor_core_key_tiles({.dk = true, .atomic_dq = true}, p),
            convert(p, scratch::kDqAcc, "dq", heads, double(d.N))};
  }
  if (onf == "fused_v1_tc") {
    return {tensor_core_forward(p), row_dot(p),
            tensor_core_query_tiles({.atomic_dk = true, .atomic_dv = true}, p),
            convert(p, scratch::kDkAcc, "dk", kv_heads, double(d.M)),
            convert(p, scratch::kDvAcc, "dv", kv_heads, double(d.M))};
  }
  if (onf == "fused_v3_tc") {
    return {tensor_core_forward(p), row_dot(p), tensor_core_query_tiles({.atomic_dk = true}, p),
            tensor_core_key_tiles({}, p), convert(p, scratch::kDkAcc, "dk", kv_heads, double(d.M))};
  }
  if (onf == "fused_det_tc") {
    return {tensor_core_forward(p), row_dot(p), tensor_core_query_tiles({}, p),
            tensor_core_key_tiles({.dk = true}, p)};
  }
  if (onf == "bwd_fa2") {
    return {row_dot(p), key_kernel("dkdv_kernel", {.dk = true, .atomic_dq = true}, p, w),
            convert(p, scratch::kDqAcc, "dq", heads, double(d.N))};
  }
  throw std::invalid_argument("cuda_cost: no ONF named " + std::string(onf));
}

TrafficBounds traffic_bounds(std::string_view onf, const Problem& p,
                             const std::vector<std::int64_t>* lens) {
  if (onf != "decode") {
    std::vector<LaunchCost> exact = launches(onf, p);
    return {exact, exact};
  }
  if (lens) {
    std::vector<LaunchCost> exact = decode_launches(p, *lens);
    return {exact, exact};
  }
  return {decode_launches(p, std::vector<std::int64_t>(std::size_t(p.dims.B), 1)),
          decode_launches(p, {})};
}

double scratch_bytes(std::string_view onf, const Problem& p) {
  const Dims& d = p.dims;
  const double rows = double(d.B) * d.H * d.N, kv = double(d.B) * d.Hkv * d.M * d.D;
  if (onf == "fused_v1") return 4 * 2 * kv;
  if (onf == "fused_v1_tc") return 4 * (rows + 2 * kv);
  if (onf == "fused_v3_tc") return 4 * (rows + kv);
  if (onf == "fused_det_tc") return 4 * rows;
  if (onf == "fused_v3_tc") return 4 * (rows + kv);
  if (onf == "fused_det_tc") return 4 * rows;
  if (onf == "fused_v3") return 4 * (kv + rows);
  if (onf == "fused_det") return 4 * 2 * rows;
  if (onf == "bwd_atomic") return 4 * (rows + kv);
  if (onf == "bwd_fa2" || onf == "bwd_tc") return 4 * (rows + rows * d.D);
  if (onf == "decode") return 4 * double(d.B) * d.H * ceil_div(d.M, kSplitKeys) * (2 + d.D);
  if (onf == "swiglu") return 4 * double(d.T) * d.F;
  return 0;
}

Cost total(std::string_view onf, const Problem& p) {
  Cost c;
  for (const LaunchCost& l : launches(onf, p)) {
    const TensorTraffic t = l.total();
    c.flops += l.flops;
    c.bytes_read += t.load_bytes;
    c.bytes_written += t.store_bytes;
    c.atomics += t.atomics;
  }
  c.peak_extra_bytes = scratch_bytes(onf, p);
  return c;
}

}  // namespace moacert::kernels::cuda_cost
