// The bytes behind an owning tensor: zero-filled and 64-byte aligned.
//
// A deployment-scale case is gigabytes (mlp.swiglu at Llama 3.1 405B's
// widths holds 10.5 GB of weights), and faulting its pages in is then
// most of generating it: on the 2-core VM of docs/performance.md, touching
// 10 GiB of fresh 4 KiB pages took 47 s, of 2 MiB pages 12 s. So a large
// buffer is mapped straight from the kernel, whose fresh pages are already
// zero (nothing writes them twice), and asks for transparent huge pages;
// a small one comes from the heap, where a page of its own would waste most
// of it.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstring>
#include <new>
#include <utility>

namespace moacert {

class TensorStorage {
 public:
  // Buffers from this size on are mapped: one huge page, below which a
  // mapping holds no huge page at all.
  static constexpr std::size_t kMappedFrom = std::size_t(2) << 20;

  TensorStorage() = default;
  explicit TensorStorage(std::size_t bytes) : bytes_(bytes) {
    if (bytes == 0) return;
    if (mapped()) {
      void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
      // Only a request: without transparent huge pages it fails, and the
      // buffer is as good in 4 KiB pages.
      madvise(p, bytes, MADV_HUGEPAGE);
#endif
      data_ = p;
    } else {
      data_ = ::operator new(bytes, kAlignment);
      std::memset(data_, 0, bytes);
    }
  }
  TensorStorage(const TensorStorage& other) : TensorStorage(other.bytes_) {
    if (bytes_ != 0) std::memcpy(data_, other.data_, bytes_);
  }
  TensorStorage(TensorStorage&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
  TensorStorage& operator=(TensorStorage other) noexcept {
    std::swap(data_, other.data_);
    std::swap(bytes_, other.bytes_);
    return *this;
  }
  ~TensorStorage() {
    if (data_ == nullptr) return;
    if (mapped())
      munmap(data_, bytes_);
    else
      ::operator delete(data_, kAlignment);
  }

  void* data() {
    return data_;
  }
  const void* data() const {
    return data_;
  }
  std::size_t size() const {
    return bytes_;
  }

 private:
  static constexpr std::align_val_t kAlignment{64};
  bool mapped() const {
    return bytes_ >= kMappedFrom;
  }

  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace moacert
