// Barriers and warps: __syncthreads (and its reductions) counts arrivals;
// a warp function completes when every lane of its mask has called it;
// a block whose every live thread waits is explained (stuck).
#include <cstdio>
#include <string>

#include "simt/state.hpp"

namespace moacert::simt::detail {

namespace {

void release_barrier() {
  Launch& L = *runtime.launch;
  int result = 0;
  switch (L.reduce_kind) {
    case 1:
      result = int(L.predicate_sum);
      break;
    case 2:
      result = L.predicate_sum == L.arrived;
      break;
    case 3:
      result = L.predicate_sum != 0;
      break;
    default:
      break;
  }
  L.barrier_result = result;
  L.arrived = 0;
  L.predicate_sum = 0;
  ++L.epoch;
  ++L.counters.barriers;
  for (auto& f : L.fibers)
    if (f->state == State::barrier) make_runnable(f.get());
}

[[noreturn]] void divergent_barrier(const Fiber& missing, const char* why) {
  const Launch& L = *runtime.launch;
  hazard("divergent barrier", "__syncthreads at " + describe_where(L.barrier_where) +
                                  " reached by " + std::to_string(L.arrived) + " of " +
                                  std::to_string(L.block_threads) + " threads of block " +
                                  xyz(L.block_idx) + "; " + me_name(missing) + " " + why);
}

}  // namespace

void check_barrier_complete() {
  Launch& L = *runtime.launch;
  if (L.arrived == 0) return;
  if (L.arrived == L.live && L.exited == 0) {
    release_barrier();
    return;
  }
  if (L.arrived + L.exited == L.block_threads && L.exited > 0)
    for (auto& f : L.fibers)
      if (f->state == State::exited)
        divergent_barrier(*f, "exited without reaching it (a deadlock on the device)");
}

namespace {

void complete_collective(Warp& w, std::uint32_t warp_index, unsigned mask) {
  Launch& L = *runtime.launch;
  Fiber* lanes[32] = {};  // the fibers of a warp are consecutive: warp * 32 + lane
  for (int l = 0; l < 32; ++l)
    if (mask >> l & 1u) lanes[l] = L.fibers[warp_index * 32 + std::uint32_t(l)].get();
  Fiber& first = *lanes[__builtin_ctz(mask)];
  std::uint64_t ballot = 0;
  for (int l = 0; l < 32; ++l)
    if (lanes[l]) {
      if (lanes[l]->op != first.op)
        hazard("warp mask", "lanes of warp " + std::to_string(warp_index) + " of block " +
                                xyz(L.block_idx) + " meet with mask " + std::to_string(mask) +
                                " in different warp functions (" +
                                describe_where(first.wait_where) + " and " +
                                describe_where(lanes[l]->wait_where) + ")");
      if (lanes[l]->value) ballot |= 1ull << l;
    }
  const bool tensor_op = first.op == WarpOp::mma || first.op == WarpOp::ldmatrix;
  if (tensor_op) {
    // .sync.aligned: every lane at the same instruction with the same qualifiers
    for (int l = 0; l < 32; ++l)
      if (lanes[l]->wait_where != first.wait_where || lanes[l]->arg != first.arg)
        hazard("warp mask",
               "lanes of warp " + std::to_string(warp_index) + " of block " + xyz(L.block_idx) +
                   " meet in " + (first.op == WarpOp::mma ? "mma.sync.aligned" : "ldmatrix") +
                   " at different instructions or qualifiers (" + describe_where(first.wait_where) +
                   " and " + describe_where(lanes[l]->wait_where) +
                   "): .aligned requires every lane at the same one");
    complete_tensor_op(first.op, lanes);
  }
  for (int l = 0; !tensor_op && l < 32; ++l) {
    Fiber* f = lanes[l];
    if (!f) continue;
    const int width = f->width;
    const int segment = l & ~(width - 1);
    int src = l;
    switch (f->op) {
      case WarpOp::shfl:
        src = segment + (f->arg & (width - 1));
        break;
      case WarpOp::shfl_up:
        src = l - f->arg < segment ? l : l - f->arg;
        break;
      case WarpOp::shfl_down:
        src = l + f->arg >= segment + width ? l : l + f->arg;
        break;
      case WarpOp::shfl_xor:
        src = (l ^ f->arg) >= segment + width ? l : l ^ f->arg;
        break;
      default:
        break;
    }
    switch (f->op) {
      case WarpOp::ballot:
        f->result = ballot;
        break;
      case WarpOp::any:
        f->result = ballot != 0;
        break;
      case WarpOp::all:
        f->result = ballot == (mask & 0xffffffffull);
        break;
      case WarpOp::sync:
        f->result = 0;
        break;
      default:
        if (!lanes[src])
          hazard(
              "warp mask", me_name(*f) + " (lane " + std::to_string(l) + ") shuffles from lane " +
                               std::to_string(src) + ", outside the mask 0x" +
                               [&] {
                                 char b[16];
                                 std::snprintf(b, sizeof b, "%08x", mask);
                                 return std::string(b);
                               }() +
                               " (" + describe_where(f->wait_where) + "): its value is undefined");
        f->result = lanes[src]->value;
    }
  }
  ++w.gen;
  if ((mask & w.lanes) == w.lanes)
    w.full_gen = w.gen;
  else
    for (int a = 0; a < 32; ++a)
      if (mask >> a & 1u)
        for (int b = 0; b < 32; ++b)
          if (mask >> b & 1u) w.pair_gen[a][b] = w.gen;
  w.pending &= ~mask;
  ++L.counters.warp_ops;
  for (int l = 0; l < 32; ++l)
    if (lanes[l] && lanes[l] != tls_current) make_runnable(lanes[l]);
}

}  // namespace

// Every live fiber waits: explain why the block cannot go on.
[[noreturn]] void stuck() {
  Launch& L = *runtime.launch;
  for (auto& f : L.fibers) {
    if (f->state != State::warp) continue;
    const Warp& w = L.warps[f->warp];
    for (int l = 0; l < 32; ++l) {
      if (!(f->mask >> l & 1u)) continue;
      Fiber* other = nullptr;
      for (auto& g : L.fibers)
        if (g->warp == f->warp && g->lane == std::uint32_t(l)) other = g.get();
      const std::string head = me_name(*f) + " waits in a warp function (" +
                               describe_where(f->wait_where) + ") with mask " + hex(f->mask) +
                               " for lane " + std::to_string(l);
      if (!other || !(w.lanes >> l & 1u)) hazard("warp mask", head + ", which does not exist");
      if (other->state == State::exited) hazard("warp mask", head + ", which exited");
      if (other->state == State::barrier)
        hazard("warp mask",
               head + ", which waits at __syncthreads (" + describe_where(other->wait_where) + ")");
      if (other->state == State::warp && other->mask != f->mask)
        hazard("warp mask", head + ", which waits with mask " + hex(other->mask) + " (" +
                                describe_where(other->wait_where) + ")");
    }
  }
  for (auto& f : L.fibers)
    if (f->state == State::exited)
      divergent_barrier(*f, "exited without reaching it (a deadlock on the device)");
  hazard("deadlock", "every thread of block " + xyz(L.block_idx) + " waits");
}

int block_barrier(int reduce_kind, int predicate, Site site) {
  Fiber* me = tls_current;
  if (!me) return predicate;
  Launch& L = *runtime.launch;
  const std::uint64_t where = intern(site);
  if (L.arrived == 0) {
    L.barrier_where = where;
    L.reduce_kind = reduce_kind;
  } else if (L.barrier_where != where) {
    hazard("divergent barrier",
           me_name(*me) + " waits at __syncthreads " + describe_where(where) + " while " +
               std::to_string(L.arrived) + " threads wait at __syncthreads " +
               describe_where(L.barrier_where) + ": threads of a block at different barriers");
  }
  me->state = State::barrier;
  me->wait_where = where;
  ++L.arrived;
  L.predicate_sum += predicate != 0;
  check_barrier_complete();
  switch_out();  // the last to arrive is runnable again, among the others
  return L.barrier_result;
}

std::uint64_t warp_collective(WarpOp op, unsigned mask, std::uint64_t value, int arg, int width,
                              Site site) {
  Fiber* me = tls_current;
  if (!me) return value;
  Launch& L = *runtime.launch;
  Warp& w = L.warps[me->warp];
  const std::uint64_t where = intern(site);
  if (!(mask >> me->lane & 1u))
    hazard("warp mask", me_name(*me) + " (lane " + std::to_string(me->lane) +
                            ") calls a warp function with mask " + hex(mask) +
                            ", which does not contain its own lane (" + describe_where(where) +
                            ")");
  if (width < 1 || width > 32 || (width & (width - 1)))
    hazard("warp mask", me_name(*me) + " shuffles with width " + std::to_string(width) +
                            " (a power of 2 up to 32) (" + describe_where(where) + ")");
  if (mask & ~w.lanes)
    hazard("warp mask", me_name(*me) + " calls a warp function with mask " + hex(mask) +
                            " naming lanes beyond the block's last thread (" +
                            describe_where(where) + ")");
  me->state = State::warp;
  me->op = op;
  me->mask = mask;
  me->value = value;
  me->arg = arg;
  me->width = width;
  me->wait_where = where;
  w.pending |= 1u << me->lane;
  bool complete = (w.pending & mask) == mask;
  for (int l = 0; complete && l < 32; ++l)
    if ((mask >> l & 1u) && L.fibers[me->warp * 32 + std::uint32_t(l)]->mask != mask)
      complete = false;
  if (complete) {
    complete_collective(w, me->warp, mask);
    yield();
  } else {
    switch_out();
  }
  return me->result;
}

unsigned active_mask() {
  Fiber* me = tls_current;
  if (!me) return 1u;
  const Warp& w = runtime.launch->warps[me->warp];
  unsigned m = 0;
  for (int l = 0; l < 32; ++l)
    if ((w.lanes >> l & 1u) &&
        runtime.launch->fibers[me->warp * 32 + std::uint32_t(l)]->state != State::exited)
      m |= 1u << l;
  return m;
}

}  // namespace moacert::simt::detail
