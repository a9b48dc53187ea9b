// What the three harnesses share: a reader that turns fuzzer bytes into choices, the checks that make
// a finding (they print "FINDING: ..." and abort, so libFuzzer saves the input), and tensor helpers.
// Only the public C ABI is used.
#pragma once

#include <oneflow/oneflow_c.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

// Sanitizer defaults baked into every harness, so that running a harness on a reproducer by hand
// behaves as under scripts/run-fuzz.sh: an allocation over 256 MiB fails (malloc returns NULL) instead
// of aborting, so that "too large to allocate" is exercised as RESOURCE_EXHAUSTED and stays fast
// (operator new still reports such an allocation: the engine sized a container from user input).
// Stack-use-after-return checking is off: every error status is a C++ throw, and its fake-stack
// bookkeeping then costs a tenth of the run time.
extern "C" const char* __asan_default_options() {  // NOLINT: a sanitizer hook
  return "allocator_may_return_null=1:max_allocation_size_mb=256:detect_leaks=1:detect_stack_use_after_return=0";
}
extern "C" const char* __ubsan_default_options() { return "print_stacktrace=1:halt_on_error=1"; }

namespace fz {

// Caps that keep one input fast: tensors the harnesses keep have at most kMaxNumel elements.
constexpr int64_t kMaxNumel = 4096;
constexpr size_t kMaxNdim = 5;

[[noreturn]] inline void Finding(const std::string& what) {
  std::fprintf(stderr, "FINDING: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

// Consumes a status and returns its code (OF_STATUS_OK for NULL). INTERNAL, a non-NULL status that
// says OK, and a status without a message are findings.
inline of_status_code_t Check(of_status_t* st, const char* call) {
  if (st == nullptr) return OF_STATUS_OK;
  const of_status_code_t code = of_status_code(st);
  const char* message = of_status_message(st);
  if (code == OF_STATUS_INTERNAL) Finding(std::string("INTERNAL status from ") + call + ": " + message);
  if (code == OF_STATUS_OK) Finding(std::string("a non-NULL status with code OK from ") + call);
  if (message == nullptr || message[0] == '\0') Finding(std::string("a status without a message from ") + call);
  of_status_destroy(st);
  return code;
}
#define FZ_CHECK(call) ::fz::Check((call), #call)

// A call that must succeed (on tensors the harness made valid).
inline void MustSucceed(of_status_t* st, const char* call) {
  if (st == nullptr) return;
  std::string message = of_status_message(st);
  const of_status_code_t code = of_status_code(st);
  of_status_destroy(st);
  Finding(std::string(call) + " failed (" + of_status_code_name(code) + "): " + message);
}
#define FZ_MUST(call) ::fz::MustSucceed((call), #call)

#define FZ_ASSERT(cond, what)                                                                        \
  do {                                                                                             \
    if (!(cond)) ::fz::Finding(std::string(what) + " [" #cond "] at " __FILE__ ":" + std::to_string(__LINE__)); \
  } while (0)

// A pointer no call may write over an out parameter when it fails.
inline of_tensor_t* TensorSentinel() {
  static int storage;
  return reinterpret_cast<of_tensor_t*>(&storage);
}

// Turns the fuzzer's bytes into choices; past the end every read gives 0.
class Bytes {
 public:
  Bytes(const uint8_t* data, size_t size) : p_(data), n_(size) {}
  bool empty() const { return n_ == 0; }
  size_t left() const { return n_; }
  uint8_t u8() {
    if (n_ == 0) return 0;
    --n_;
    return *p_++;
  }
  uint16_t u16() { return static_cast<uint16_t>(u8() | (u8() << 8)); }
  uint32_t u32() { return u16() | (static_cast<uint32_t>(u16()) << 16); }
  uint64_t u64() { return u32() | (static_cast<uint64_t>(u32()) << 32); }
  // A value in [0, k).
  uint32_t pick(uint32_t k) {
    if (k == 0) return 0;
    return k <= 256 ? u8() % k : u16() % k;
  }
  bool flag() { return (u8() & 1) != 0; }
  // True about once in `one_in` reads: the rare, extreme branches.
  bool rare(uint32_t one_in = 16) { return pick(one_in) == 0; }
  // Copies up to n bytes into dst, zero-filling what is missing.
  void fill(void* dst, size_t n) {
    const size_t k = n < n_ ? n : n_;
    if (k) std::memcpy(dst, p_, k);
    if (n > k) std::memset(static_cast<char*>(dst) + k, 0, n - k);
    p_ += k;
    n_ -= k;
  }

  // A scalar: mostly small values, sometimes the edges of the dtypes, infinities, NaN, raw bits.
  double scalar() {
    static const double kTable[] = {0.0, 1.0, -1.0, 0.5, 2.0, -2.5, 3.0, 1e-3, 100.0, -0.0, 255.0, 256.0,
                                    -128.0, 65504.0, 65536.0, 3.39e38, 3.41e38, 1e300, -1e300, 2147483648.0,
                                    9.2233720368547758e18, 9007199254740993.0, 1e-310,
                                    std::numeric_limits<double>::infinity(),
                                    -std::numeric_limits<double>::infinity(),
                                    std::numeric_limits<double>::quiet_NaN()};
    const uint8_t b = u8();
    if (b < 200) return kTable[b % 12];
    if (b < 250) return kTable[b % (sizeof kTable / sizeof kTable[0])];
    double d;
    const uint64_t bits = u64();
    std::memcpy(&d, &bits, sizeof d);
    return d;
  }
  // A dim argument for a tensor of `ndim` dims: mostly in [-(ndim + 1), ndim], sometimes extreme.
  int64_t dim(size_t ndim) {
    const uint8_t b = u8();
    const int64_t n = static_cast<int64_t>(ndim);
    if (b < 240) return static_cast<int64_t>(b % (2 * n + 2)) - (n + 1);
    static const int64_t kExtreme[] = {OF_DIM_UNKNOWN, std::numeric_limits<int64_t>::max(), -n - 2, n + 1,
                                       std::numeric_limits<int64_t>::min() + 1, 1 << 30, -(int64_t{1} << 31),
                                       1000};
    return kExtreme[b % 8];
  }
  // A size in a target shape (reshape, expand): mostly -1..5, sometimes large or invalid.
  int64_t size() {
    const uint8_t b = u8();
    if (b < 224) return static_cast<int64_t>(b % 7) - 1;
    if (b < 244) return b % 17;
    static const int64_t kExtreme[] = {std::numeric_limits<int64_t>::max(), int64_t{1} << 40, -2,
                                       OF_DIM_UNKNOWN, int64_t{1} << 31, int64_t{1} << 62};
    return kExtreme[b % 6];
  }
  // A flag argument: 0 or 1, sometimes an invalid value.
  int32_t flag_arg() {
    const uint8_t b = u8();
    if (b < 248) return b & 1;
    static const int32_t kBad[] = {2, -1, 255, std::numeric_limits<int32_t>::min()};
    return kBad[b % 4];
  }
  // A struct_size for an options struct of `real` bytes: mostly right, sometimes 0, short or long.
  size_t struct_size(size_t real) {
    const uint8_t b = u8();
    if (b < 240) return real;
    static const size_t kOdd[] = {0, 1, sizeof(size_t), sizeof(size_t) + 4, 0, 0, 0, 0};
    const size_t k = b % 8;
    if (k < 4) return kOdd[k];
    if (k == 4) return real - 4;
    if (k == 5) return real + 64;
    if (k == 6) return static_cast<size_t>(-1);
    return real / 2;
  }

 private:
  const uint8_t* p_;
  size_t n_;
};

inline const of_dtype_t* DTypeOf(uint32_t k) {
  switch (k % 10) {
    case 0: return of_dtype_bool();
    case 1: return of_dtype_int8();
    case 2: return of_dtype_uint8();
    case 3: return of_dtype_int16();
    case 4: return of_dtype_int32();
    case 5: return of_dtype_int64();
    case 6: return of_dtype_float16();
    case 7: return of_dtype_bfloat16();
    case 8: return of_dtype_float32();
    default: return of_dtype_float64();
  }
}
// Any dtype, floating ones more often; NULL about once in 64 (misuse).
inline const of_dtype_t* PickDType(Bytes& in) {
  const uint8_t b = in.u8();
  if (b == 255 || b == 254 || b == 253 || b == 252) return nullptr;
  if (b < 96) return b < 64 ? of_dtype_float32() : of_dtype_float64();
  return DTypeOf(b);
}
inline const of_dtype_t* PickFloatDType(Bytes& in) {
  switch (in.pick(8)) {
    case 0: return of_dtype_float64();
    case 1: return of_dtype_float16();
    case 2: return of_dtype_bfloat16();
    default: return of_dtype_float32();
  }
}

// A shape of at most kMaxNdim dims, each 0..max_size, with at most kMaxNumel elements.
inline std::vector<int64_t> PickShape(Bytes& in, int64_t max_size = 5) {
  std::vector<int64_t> dims(in.pick(kMaxNdim + 1));
  int64_t numel = 1;
  for (int64_t& d : dims) {
    d = in.pick(static_cast<uint32_t>(max_size + 1));
    if (numel * (d == 0 ? 1 : d) > kMaxNumel) d = 1;
    numel *= d == 0 ? 1 : d;
  }
  return dims;
}

// The element count of a shape the harness made: -1 if a dim is negative, INT64_MAX on overflow.
inline int64_t Numel(const std::vector<int64_t>& dims) {
  // The engine's rule: the non-zero sizes must multiply within int64 even when a 0 is present.
  int64_t n = 1;
  bool empty = false;
  for (int64_t d : dims) {
    if (d < 0) return -1;
    if (d == 0) empty = true;
    else if (__builtin_mul_overflow(n, d, &n)) return std::numeric_limits<int64_t>::max();
  }
  return empty ? 0 : n;
}

// The dims of t, as its handle says (lazy tensors may hold OF_DIM_UNKNOWN and symbols); empty for NULL.
inline std::vector<int64_t> DimsOf(const of_tensor_t* t) {
  size_t ndim = 0;
  if (t == nullptr || of_tensor_ndim(t, &ndim) != nullptr) return {};
  std::vector<int64_t> dims(ndim);
  FZ_MUST(of_tensor_dims(t, dims.data(), ndim));
  return dims;
}
inline const of_dtype_t* DTypeOfTensor(const of_tensor_t* t) {
  const of_dtype_t* d = nullptr;
  if (t != nullptr) FZ_MUST(of_tensor_dtype(t, &d));
  return d;
}
// FNV-1a of the bytes of tensor t (row-major, whatever its layout); must succeed for an eager tensor
// of at most kMaxNumel elements.
inline uint64_t HashTensor(const of_tensor_t* t) {
  size_t nbytes = 0;
  FZ_MUST(of_tensor_nbytes(t, &nbytes));
  static std::vector<unsigned char> buffer;
  buffer.assign(nbytes, 0xA5);
  FZ_MUST(of_tensor_copy_to_host(t, buffer.data(), nbytes));
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : buffer) h = (h ^ c) * 1099511628211ull;
  return h ^ nbytes;
}

// The facts every tensor handle must answer, checked against each other: dtype (interned, its code
// maps back), ndim, dims (a short buffer is OUT_OF_RANGE and untouched), numel = product of the dims,
// nbytes = numel * dtype size, device CPU, and for an eager tensor a copy out of nbytes that succeeds
// (and one of a wrong size that fails). Returns the numel (-1 when unknown: a lazy tensor's).
inline int64_t Inspect(const of_tensor_t* t) {
  const of_dtype_t* dtype = nullptr;
  FZ_MUST(of_tensor_dtype(t, &dtype));
  FZ_ASSERT(dtype != nullptr, "of_tensor_dtype gave NULL");
  const of_dtype_t* again = nullptr;
  FZ_MUST(of_dtype_from_code(of_dtype_code(dtype), &again));
  FZ_ASSERT(again == dtype, "a tensor's dtype is not the interned one");
  size_t ndim = 99;
  FZ_MUST(of_tensor_ndim(t, &ndim));
  FZ_ASSERT(ndim <= 64, "implausible ndim");
  std::vector<int64_t> dims(ndim + 1, 12345);
  FZ_MUST(of_tensor_dims(t, dims.data(), ndim));
  FZ_ASSERT(dims[ndim] == 12345, "of_tensor_dims wrote past its capacity");
  if (ndim > 0) {
    std::vector<int64_t> short_dims(ndim - 1 + 1, 777);
    FZ_ASSERT(FZ_CHECK(of_tensor_dims(t, short_dims.data(), ndim - 1)) == OF_STATUS_OUT_OF_RANGE,
              "of_tensor_dims with a short buffer is not OUT_OF_RANGE");
    for (int64_t d : short_dims) FZ_ASSERT(d == 777, "a failed of_tensor_dims wrote its output");
  }
  int32_t lazy = -1;
  FZ_MUST(of_tensor_is_lazy(t, &lazy));
  FZ_ASSERT(lazy == 0 || lazy == 1, "of_tensor_is_lazy is not 0 or 1");
  int32_t device_type = 0, device_index = -1;
  FZ_MUST(of_tensor_device(t, &device_type, &device_index));
  FZ_ASSERT(device_type == OF_DEVICE_CPU, "a tensor of these harnesses is not on the CPU");
  int32_t flag = -1;
  FZ_MUST(of_tensor_requires_grad(t, &flag));
  FZ_ASSERT(flag == 0 || flag == 1, "of_tensor_requires_grad is not 0 or 1");
  FZ_MUST(of_tensor_is_leaf(t, &flag));
  FZ_ASSERT(flag == 0 || flag == 1, "of_tensor_is_leaf is not 0 or 1");

  bool known = true;
  int64_t product = 1;
  bool overflow = false;
  for (size_t i = 0; i < ndim; ++i) {
    if (dims[i] < 0) {
      FZ_ASSERT(lazy == 1, "an eager tensor has an unknown or negative dim");
      known = false;
      continue;
    }
    if (!overflow && __builtin_mul_overflow(product, dims[i], &product)) overflow = true;
  }
  int64_t numel = -7;
  of_status_code_t code = FZ_CHECK(of_tensor_numel(t, &numel));
  size_t nbytes = 7;
  of_status_code_t code_bytes = FZ_CHECK(of_tensor_nbytes(t, &nbytes));
  if (!known) {
    FZ_ASSERT(code == OF_STATUS_INVALID_ARGUMENT && numel == -7, "numel of an unknown shape");
    FZ_ASSERT(code_bytes == OF_STATUS_INVALID_ARGUMENT && nbytes == 7, "nbytes of an unknown shape");
  } else {
    FZ_ASSERT(!overflow, "a tensor whose numel overflows int64");
    FZ_ASSERT(code == OF_STATUS_OK && numel == product, "numel is not the product of the dims");
    FZ_ASSERT(code_bytes == OF_STATUS_OK && nbytes == static_cast<size_t>(numel) * of_dtype_size(dtype),
              "nbytes is not numel * dtype size");
  }
  if (lazy == 1) {
    unsigned char byte = 0;
    FZ_ASSERT(FZ_CHECK(of_tensor_copy_to_host(t, &byte, known ? nbytes : 1)) == OF_STATUS_FAILED_PRECONDITION,
              "copying a lazy tensor out is not FAILED_PRECONDITION");
    return -1;
  }
  if (numel <= kMaxNumel) {
    std::vector<unsigned char> out(nbytes + 1, 0x5A);
    FZ_MUST(of_tensor_copy_to_host(t, out.data(), nbytes));
    FZ_ASSERT(out[nbytes] == 0x5A, "of_tensor_copy_to_host wrote past nbytes");
    FZ_ASSERT(FZ_CHECK(of_tensor_copy_to_host(t, out.data(), nbytes + 1)) == OF_STATUS_INVALID_ARGUMENT,
              "copying out with a wrong size is not INVALID_ARGUMENT");
  }
  return numel;
}

// A session for one input: one thread (fast, no thread pool), the given seed.
inline of_session_t* NewSession(uint64_t seed) {
  of_session_options_t options;
  of_session_options_init(&options);
  options.seed = seed;
  options.num_threads = 1;
  of_session_t* s = nullptr;
  FZ_MUST(of_session_create(&options, &s));
  return s;
}

}  // namespace fz
