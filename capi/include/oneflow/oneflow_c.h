/*
 * oneflow_c.h — the C ABI of oneflow_c, an embeddable deep-learning runtime.
 *
 * This header is C11 and compiles as C++. It is the only interface of liboneflow_c; the Java, Rust
 * and Go bindings are generated from it.
 *
 * Conventions (they hold for every function below unless its comment says otherwise):
 *
 *  Errors    Every fallible function returns `of_status_t*`: NULL on success, otherwise a status the
 *            caller owns and frees with of_status_destroy(). Its code is one of OF_STATUS_* and its
 *            message names the argument and the problem: valid UTF-8 without embedded NUL, at most a
 *            few KiB, with strings the caller passed (names, paths) quoted, escaped (\xNN for bytes
 *            that are not printable UTF-8) and cut when long. A failed call has no effect: it
 *            leaves its out_* parameters untouched, changes no state (a session's random generator
 *            included) and leaks nothing. No function aborts the process on bad input,
 *            and there is no thread-local "last error".
 *  Outputs   Out parameters come last and are named out_*; they must not be NULL.
 *  Ownership "new reference": the caller owns one reference and must release it.
 *            "borrowed": valid as long as the object it came from, not to be freed.
 *            Release and free functions accept NULL and return nothing.
 *  Handles   All handle types are opaque. A dtype handle (`const of_dtype_t*`) is interned: the same
 *            dtype is always the same pointer, whichever function returned it, for the life of the
 *            process; compare dtypes with ==.
 *  Dims      Dimension sizes are int64_t. OF_DIM_UNKNOWN marks an unknown size and named symbols
 *            (of_session_dim_symbol) mark sizes that must agree; eager tensors need concrete sizes.
 *  Versions  Enum values and functions are only ever appended. Options structs begin with
 *            `struct_size`: fill it with sizeof(the struct) by calling its *_init function, so that
 *            a newer library knows which fields an older caller set. See capi/CHANGELOG.md.
 *  Threads   Dtype and status functions are thread-safe. Sessions are thread-safe. A tensor may be
 *            read (queried, copied out) from several threads at once and released from any thread.
 */
#ifndef ONEFLOW_C_H_
#define ONEFLOW_C_H_

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#if defined(OF_BUILDING_LIBRARY)
#define OF_API __declspec(dllexport)
#else
#define OF_API __declspec(dllimport)
#endif
#elif defined(SWIG)
#define OF_API /* SWIG cannot parse the attribute; it only needs the declarations */
#else
#define OF_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* A flag: 1 (true) or 0 (false). Any other value passed in is INVALID_ARGUMENT. Binding generators map
 * it to their language's boolean. */
typedef int32_t of_bool_t;

/* Marks a pointer parameter that may be NULL (the comment says what NULL means). It expands to
 * nothing; binding generators read it (an optional argument: Rust's Option, Java's null, Go's nil). */
#define OF_NULLABLE

/*===--- versions ---------------------------------------------------------------------------===*/

/* The version of this header. Compare with of_version() to detect a header/library mismatch. */
#define OF_VERSION_MAJOR 0
#define OF_VERSION_MINOR 2
#define OF_VERSION_PATCH 0
/* Raised whenever the ABI changes incompatibly; a library only serves callers built against the
 * same OF_ABI_VERSION. */
#define OF_ABI_VERSION 2

/* The library's version. Each out pointer may be NULL (that part is not written). Thread-safe. */
OF_API void of_version(OF_NULLABLE int32_t* out_major, OF_NULLABLE int32_t* out_minor, OF_NULLABLE int32_t* out_patch);
/* The library's version as "MAJOR.MINOR.PATCH"; a static string, never NULL. */
OF_API const char* of_version_string(void);
/* The library's OF_ABI_VERSION. */
OF_API int32_t of_abi_version(void);

/*===--- status -----------------------------------------------------------------------------===*/

typedef struct of_status_t of_status_t;

/* Status codes: the canonical codes shared by TensorFlow, PJRT and absl. Append only. */
typedef int32_t of_status_code_t;
enum of_status_codes {
  OF_STATUS_OK = 0,
  OF_STATUS_CANCELLED = 1,
  OF_STATUS_UNKNOWN = 2,
  OF_STATUS_INVALID_ARGUMENT = 3, /* bad argument: NULL handle, wrong shape, size or dtype */
  OF_STATUS_DEADLINE_EXCEEDED = 4,
  OF_STATUS_NOT_FOUND = 5, /* e.g. no dtype with that code or name */
  OF_STATUS_ALREADY_EXISTS = 6,
  OF_STATUS_PERMISSION_DENIED = 7,
  OF_STATUS_RESOURCE_EXHAUSTED = 8, /* out of memory */
  OF_STATUS_FAILED_PRECONDITION = 9,
  OF_STATUS_ABORTED = 10,
  OF_STATUS_OUT_OF_RANGE = 11,
  OF_STATUS_UNIMPLEMENTED = 12,
  OF_STATUS_INTERNAL = 13, /* a bug in oneflow_c: please report it */
  OF_STATUS_UNAVAILABLE = 14, /* e.g. a CUDA device in a build or on a machine without one */
  OF_STATUS_DATA_LOSS = 15
};

/* The status's code; OF_STATUS_OK for NULL. */
OF_API of_status_code_t of_status_code(const of_status_t* status);
/* The status's message, NUL-terminated UTF-8; "" for NULL. Borrowed: valid until the status is
 * freed. */
OF_API const char* of_status_message(const of_status_t* status);
/* A static name for a code ("INVALID_ARGUMENT"); "UNRECOGNIZED" for a value this library does not
 * know. */
OF_API const char* of_status_code_name(of_status_code_t code);
/* Frees a status. NULL is fine. */
OF_API void of_status_destroy(of_status_t* status);

/*===--- dtypes -----------------------------------------------------------------------------===*/

typedef struct of_dtype_t of_dtype_t;

/* Stable dtype codes (of_dtype_code, of_dtype_from_code). Append only; 0 is never a dtype. */
enum of_dtype_codes {
  OF_DTYPE_INVALID = 0,
  OF_DTYPE_BOOL = 1,
  OF_DTYPE_INT8 = 2,
  OF_DTYPE_UINT8 = 3,
  OF_DTYPE_INT16 = 4,
  OF_DTYPE_INT32 = 5,
  OF_DTYPE_INT64 = 6,
  OF_DTYPE_FLOAT16 = 7,
  OF_DTYPE_BFLOAT16 = 8,
  OF_DTYPE_FLOAT32 = 9,
  OF_DTYPE_FLOAT64 = 10
};

/* The interned dtypes. Never NULL; the same pointer on every call. Thread-safe. */
OF_API const of_dtype_t* of_dtype_bool(void);
OF_API const of_dtype_t* of_dtype_int8(void);
OF_API const of_dtype_t* of_dtype_uint8(void);
OF_API const of_dtype_t* of_dtype_int16(void);
OF_API const of_dtype_t* of_dtype_int32(void);
OF_API const of_dtype_t* of_dtype_int64(void);
OF_API const of_dtype_t* of_dtype_float16(void);
OF_API const of_dtype_t* of_dtype_bfloat16(void);
OF_API const of_dtype_t* of_dtype_float32(void);
OF_API const of_dtype_t* of_dtype_float64(void);

/* The dtype with `code` (OF_DTYPE_*). NOT_FOUND for a code that names no dtype, 0 included. */
OF_API of_status_t* of_dtype_from_code(int32_t code, const of_dtype_t** out_dtype);
/* The dtype called `name` (NUL-terminated): "float32", ..., or the aliases "float", "double",
 * "half", "int", "long", "short". NOT_FOUND otherwise. */
OF_API of_status_t* of_dtype_from_name(const char* name, const of_dtype_t** out_dtype);
/* The dtype of DLPack's DLDataType {code, bits, lanes} (kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4,
 * kDLBool 6; lanes must be 1). NOT_FOUND when no dtype matches. */
OF_API of_status_t* of_dtype_from_dlpack(uint8_t code, uint8_t bits, uint16_t lanes,
                                         const of_dtype_t** out_dtype);
/* The dtype's DLPack DLDataType. INVALID_ARGUMENT for a NULL dtype. */
OF_API of_status_t* of_dtype_to_dlpack(const of_dtype_t* dtype, uint8_t* out_code, uint8_t* out_bits,
                                       uint16_t* out_lanes);
/* The dtype of a binary op's result on operands of dtypes a and b (PyTorch's promotion for these
 * types: bool < integers < floats; uint8 with int8 is int16; float16 with bfloat16 is float32). */
OF_API of_status_t* of_dtype_promote(const of_dtype_t* a, const of_dtype_t* b, const of_dtype_t** out_dtype);

/* Attributes. These cannot fail for a dtype handle; for NULL they return 0 / "" as noted. */
OF_API int32_t of_dtype_code(const of_dtype_t* dtype);     /* OF_DTYPE_*; OF_DTYPE_INVALID for NULL */
OF_API const char* of_dtype_name(const of_dtype_t* dtype); /* "float32"; static; "" for NULL */
OF_API size_t of_dtype_size(const of_dtype_t* dtype);      /* bytes per element; 0 for NULL */
OF_API of_bool_t of_dtype_is_floating_point(const of_dtype_t* dtype); /* 1 or 0 */
OF_API of_bool_t of_dtype_is_signed(const of_dtype_t* dtype); /* holds negative values: 1 or 0 */
OF_API of_bool_t of_dtype_is_integer(const of_dtype_t* dtype); /* int8..int64 and uint8, not bool */
OF_API of_bool_t of_dtype_is_complex(const of_dtype_t* dtype); /* 0: there is no complex dtype yet */

/*===--- dims -------------------------------------------------------------------------------===*/

/* An unknown dimension size (INT64_MIN, equal to MLIR's kDynamic). Written as a literal so that
 * binding generators can evaluate it. */
#define OF_DIM_UNKNOWN (-9223372036854775807LL - 1)

/* 1 if `dim` is a concrete size (>= 0), else 0. */
OF_API of_bool_t of_dim_is_known(int64_t dim);
/* 1 if `dim` is a named symbol made by of_session_dim_symbol, else 0. */
OF_API of_bool_t of_dim_is_symbol(int64_t dim);
/* The name of a named symbol. *out_name is NUL-terminated, borrowed and valid for the life of the
 * process; *out_length is its length in bytes. INVALID_ARGUMENT if `dim` is not a symbol. */
OF_API of_status_t* of_dim_symbol_name(int64_t dim, const char** out_name, size_t* out_length);

/*===--- devices ----------------------------------------------------------------------------===*/

/* Device types; the values are DLPack's DLDeviceType. Append only. */
enum of_device_types {
  OF_DEVICE_CPU = 1,
  OF_DEVICE_CUDA = 2
};

/* 1 if this build of the library includes the CUDA backend, else 0. */
OF_API of_bool_t of_cuda_is_built(void);

/* The counters of one device's memory allocator. Allocators are per process: every session's tensors
 * on the device count. A CUDA device's memory is taken in segments and handed out in blocks, which
 * freed tensors return to a cache for the next ones (as PyTorch's caching allocator does); the CPU
 * caches freed blocks by size class. Byte counts are since the process started, not since a reset. */
typedef struct of_device_memory_stats_t {
  size_t struct_size;           /* set by the caller to sizeof(of_device_memory_stats_t) */
  uint64_t bytes_in_use;        /* storage of live tensors and graph arenas, as asked (before rounding) */
  uint64_t peak_bytes_in_use;
  uint64_t bytes_reserved;      /* held from the device: in use, rounding slack and the cache */
  uint64_t peak_bytes_reserved;
  uint64_t bytes_cached;        /* of bytes_reserved, what no allocation uses (of_device_empty_cache frees
                                   the wholly unused segments of it) */
  uint64_t allocations;         /* successful allocations */
  uint64_t device_allocations;  /* of which took new memory from the device (cudaMalloc, aligned_alloc) */
  uint64_t device_frees;        /* memory given back to the device */
  uint64_t out_of_memory;       /* allocations that failed with RESOURCE_EXHAUSTED; the device stays usable */
} of_device_memory_stats_t;
/* Fills the first out_stats->struct_size bytes (at least sizeof(size_t), INVALID_ARGUMENT otherwise) with
 * the counters of the device (device_type OF_DEVICE_*, device_index). UNAVAILABLE for a device this
 * build or machine does not have. Thread-safe. */
OF_API of_status_t* of_device_memory_stats(int32_t device_type, int32_t device_index,
                                           of_device_memory_stats_t* out_stats);
/* Gives the device's cached memory that no tensor uses back to the device (cudaFree; free() on the
 * CPU). Tensors are unaffected; the next allocations take fresh memory from the device. An allocation
 * that finds the device full does this by itself before failing. Thread-safe. */
OF_API of_status_t* of_device_empty_cache(int32_t device_type, int32_t device_index);

/*===--- sessions ---------------------------------------------------------------------------===*/

typedef struct of_session_t of_session_t;

typedef struct of_session_options_t {
  size_t struct_size;      /* sizeof(of_session_options_t), set by of_session_options_init */
  uint64_t seed;           /* seed of the session's random generator; default 0x5eed */
  int32_t num_threads;     /* CPU threads for kernels, the caller's included; 0 (default) = one per
                              hardware thread. Results do not depend on it. */
  int32_t device_type;     /* default device for new tensors: OF_DEVICE_* (0 is not a device here);
                              default OF_DEVICE_CPU */
  int32_t device_index;    /* default 0 */
} of_session_options_t;

/* Fills `options` with the defaults above and sets struct_size. NULL is ignored. */
OF_API void of_session_options_init(of_session_options_t* options);

/* Creates a session. `options` may be NULL for the defaults; otherwise its struct_size must be set
 * (of_session_options_init). UNAVAILABLE if the default device cannot be used; RESOURCE_EXHAUSTED if
 * the system refuses to start the threads (none is left running). The caller owns the session and
 * destroys it with of_session_destroy. Thread-safe. */
OF_API of_status_t* of_session_create(OF_NULLABLE const of_session_options_t* options, of_session_t** out_session);
/* Destroys the session handle. Handles may be destroyed and released in any order: tensors made in
 * the session stay valid (they do not depend on it), and so do its graphs, which keep the session's
 * state (thread pool, generator, the store of their variables) alive and keep working until the last
 * of them is destroyed. NULL is fine. Must not race with other calls that pass this handle. */
OF_API void of_session_destroy(of_session_t* session);
/* Restarts the session's random generator from `seed`: the random tensors that follow repeat. */
OF_API of_status_t* of_session_manual_seed(of_session_t* session, uint64_t seed);
/* The session's named dim symbol `name` (NUL-terminated UTF-8 of 1 to 256 bytes without control
 * characters, not starting with a digit, not "?", which is how an unknown dim prints), created on
 * first use: in one session the same name gives the same value; symbols of different
 * sessions and different names differ. The value is a negative int64_t to put in a dims array. */
OF_API of_status_t* of_session_dim_symbol(of_session_t* session, const char* name, int64_t* out_dim);

/*===--- tensors ----------------------------------------------------------------------------===*/

typedef struct of_tensor_t of_tensor_t;

/* Per-call options of tensor creation. Pass NULL for the session's defaults. */
typedef struct of_tensor_options_t {
  size_t struct_size;   /* sizeof(of_tensor_options_t), set by of_tensor_options_init */
  int32_t device_type;  /* OF_DEVICE_*; 0 (the default) = the session's default device */
  int32_t device_index; /* used when device_type is not 0 */
} of_tensor_options_t;

/* Fills `options` with the defaults (device_type 0: the session's device) and sets struct_size.
 * NULL is ignored. */
OF_API void of_tensor_options_init(of_tensor_options_t* options);

/* Called once with (data, user_data) when the library no longer needs adopted memory. It may run on
 * any thread. */
typedef void (*of_deleter_fn)(void* data, void* user_data);

/* Every creation function below returns a new reference in *out_tensor, owned by the caller and
 * released with of_tensor_release. `dims` holds `ndim` sizes (it may be NULL when ndim is 0, for a
 * 0-d tensor); every size must be concrete (>= 0): OF_DIM_UNKNOWN or a symbol is INVALID_ARGUMENT.
 * Sizes whose product overflows int64 give OUT_OF_RANGE (the non-zero sizes count even when another
 * size is 0: (2^62, 2^62, 0) and (0, 2^62, 2^62) alike); a tensor too large to allocate gives
 * RESOURCE_EXHAUSTED.
 * `session` is used for its default device (and, for rand/randn, its generator); the tensor does
 * not depend on it afterwards. */

/* A tensor holding a copy of `data`, `nbytes` bytes of row-major elements; nbytes must equal
 * numel * of_dtype_size(dtype). A bool element is one byte, 0 (false) or 1 (true): bool data holding
 * any other byte is INVALID_ARGUMENT naming the element (here and in of_tensor_adopt_data). */
OF_API of_status_t* of_tensor_from_data(of_session_t* session, const of_dtype_t* dtype, const int64_t* dims,
                                        size_t ndim, const void* data, size_t nbytes,
                                        OF_NULLABLE const of_tensor_options_t* options, of_tensor_t** out_tensor);
/* A CPU tensor over caller-owned host memory, without a copy. `data` must hold exactly
 * numel * of_dtype_size(dtype) bytes, aligned to the dtype's size, and stay valid until
 * deleter(data, user_data) is called. The deleter (may be NULL) is called exactly once: when the
 * tensor's last reference is released, or before this function returns if it fails. Bool memory is
 * checked once, here: while the tensor lives, the caller must not write bytes other than 0 and 1 into
 * it (nor write it at all while an op may be reading it). */
OF_API of_status_t* of_tensor_adopt_data(of_session_t* session, const of_dtype_t* dtype, const int64_t* dims,
                                         size_t ndim, void* data, size_t nbytes, OF_NULLABLE of_deleter_fn deleter,
                                         OF_NULLABLE void* user_data, of_tensor_t** out_tensor);
/* Uninitialised contents; bool tensors come zeroed (false), since a byte other than 0 or 1 is not a
 * bool. */
OF_API of_status_t* of_tensor_empty(of_session_t* session, const of_dtype_t* dtype, const int64_t* dims,
                                    size_t ndim, OF_NULLABLE const of_tensor_options_t* options, of_tensor_t** out_tensor);
OF_API of_status_t* of_tensor_zeros(of_session_t* session, const of_dtype_t* dtype, const int64_t* dims,
                                    size_t ndim, OF_NULLABLE const of_tensor_options_t* options, of_tensor_t** out_tensor);
OF_API of_status_t* of_tensor_ones(of_session_t* session, const of_dtype_t* dtype, const int64_t* dims,
                                   size_t ndim, OF_NULLABLE const of_tensor_options_t* options, of_tensor_t** out_tensor);
/* Every element `value`, which must be representable in `dtype`; INVALID_ARGUMENT otherwise. For
 * integer dtypes it must be integral and in range; for bool 0 or 1; for floating dtypes a finite value
 * must lie within the dtype's finite range (float16: |value| <= 65504; bfloat16: <= 3.39e38; float32:
 * <= 3.40e38), and inf and NaN are accepted. In-range values round to nearest even. */
OF_API of_status_t* of_tensor_full(of_session_t* session, const of_dtype_t* dtype, const int64_t* dims,
                                   size_t ndim, double value, OF_NULLABLE const of_tensor_options_t* options,
                                   of_tensor_t** out_tensor);
/* Uniform in [0, 1) / standard normal, from the session's generator (reproducible for a seed).
 * Floating dtypes only. Thread-safe; concurrent calls on one session draw disjoint ranges. */
OF_API of_status_t* of_tensor_rand(of_session_t* session, const of_dtype_t* dtype, const int64_t* dims,
                                   size_t ndim, OF_NULLABLE const of_tensor_options_t* options, of_tensor_t** out_tensor);
OF_API of_status_t* of_tensor_randn(of_session_t* session, const of_dtype_t* dtype, const int64_t* dims,
                                    size_t ndim, OF_NULLABLE const of_tensor_options_t* options, of_tensor_t** out_tensor);
/* The 1-d tensor start, start + step, ... up to but excluding `end`: ceil((end - start) / step)
 * elements (OUT_OF_RANGE past int64, RESOURCE_EXHAUSTED when they cannot be allocated). step must be
 * non-zero and point from start towards end; for integer dtypes the values must be integral. */
OF_API of_status_t* of_tensor_arange(of_session_t* session, double start, double end, double step,
                                     const of_dtype_t* dtype, OF_NULLABLE const of_tensor_options_t* options,
                                     of_tensor_t** out_tensor);

/* Adds a reference. NULL is fine. Thread-safe. */
OF_API void of_tensor_retain(of_tensor_t* tensor);
/* Drops a reference; the tensor is destroyed with the last one. NULL is fine. Thread-safe.
 * Releasing more references than were owned is undefined behaviour, as with any reference count
 * (the AddressSanitizer test build reports it). */
OF_API void of_tensor_release(of_tensor_t* tensor);

/* Queries. *out_dtype is borrowed (interned, never freed). */
OF_API of_status_t* of_tensor_dtype(const of_tensor_t* tensor, const of_dtype_t** out_dtype);
OF_API of_status_t* of_tensor_ndim(const of_tensor_t* tensor, size_t* out_ndim);
/* Copies the sizes into `out_dims`, which has room for `capacity` values; capacity must be at least
 * the tensor's ndim (OUT_OF_RANGE otherwise). out_dims may be NULL when capacity is 0. */
OF_API of_status_t* of_tensor_dims(const of_tensor_t* tensor, int64_t* out_dims, size_t capacity);
/* The dims of a lazy tensor (see "lazy graphs") may be OF_DIM_UNKNOWN or symbols; its numel and nbytes
 * are then unknown (INVALID_ARGUMENT naming the shape). */
OF_API of_status_t* of_tensor_numel(const of_tensor_t* tensor, int64_t* out_numel);
OF_API of_status_t* of_tensor_nbytes(const of_tensor_t* tensor, size_t* out_nbytes);
/* *out_is_lazy = 1 for a lazy tensor (a value of a graph being built: no data), else 0. */
OF_API of_status_t* of_tensor_is_lazy(const of_tensor_t* tensor, of_bool_t* out_is_lazy);
/* The device holding the tensor: *out_device_type is OF_DEVICE_*. */
OF_API of_status_t* of_tensor_device(const of_tensor_t* tensor, int32_t* out_device_type,
                                     int32_t* out_device_index);
/* Copies the elements, row-major, into host memory `out_data` of `nbytes` bytes, which must equal
 * of_tensor_nbytes (INVALID_ARGUMENT otherwise, naming both sizes). FAILED_PRECONDITION for a lazy
 * tensor, which has no data. */
OF_API of_status_t* of_tensor_copy_to_host(const of_tensor_t* tensor, void* out_data, size_t nbytes);
/* A new contiguous tensor on the device (device_type OF_DEVICE_*, device_index) with the same dtype,
 * dims and values: a copy even when `tensor` is already there, so the two never share memory. The copy
 * has no autograd history (as a detached tensor; of_tensor_requires_grad is 0). FAILED_PRECONDITION for
 * a lazy tensor; UNAVAILABLE for a device this build or machine does not have. The caller owns
 * *out_tensor. */
OF_API of_status_t* of_tensor_copy_to_device(const of_tensor_t* tensor, int32_t device_type, int32_t device_index,
                                             of_tensor_t** out_tensor);

/*===--- DLPack exchange --------------------------------------------------------------------===*/

/* Tensors shared with other libraries (NumPy, PyTorch, CuPy, JAX, ...) without a copy, through DLPack's
 * managed tensors (https://dmlc.github.io/dlpack/latest/). Their fields are defined by DLPack's
 * dlpack.h or by <oneflow/dlpack.h> (the same layout, under DLPack's include guard: include either);
 * this header only names them, so it never clashes with a dlpack.h. DLPack 1.x's
 * DLManagedTensorVersioned is the standard; the legacy DLManagedTensor is what NumPy 1.24 and
 * PyTorch 1.13 speak. In both, the consumer calls the struct's deleter exactly once, from any thread,
 * when it no longer needs the memory. */
struct DLManagedTensor;
struct DLManagedTensorVersioned;

/* Exports `tensor` (an eager tensor, borrowed) as a new DLManagedTensorVersioned (version 1.1) that
 * shares its memory, without a copy, and keeps it alive until the consumer calls its deleter (the
 * tensor handle may be released before). dl_tensor.data points at the first element (byte_offset is
 * 0, as PyTorch exports), strides are always given (in elements; views keep theirs, 0 for expanded
 * dims), device_type/device_id are the tensor's device (OF_DEVICE_* are DLPack's values); flags has
 * DLPACK_FLAG_BITMASK_READ_ONLY for a tensor imported read-only, else 0 (never IS_COPIED: there is no
 * copy). A CUDA tensor's device work is finished first (its device's stream is synchronised), so the
 * consumer may read it from any stream. FAILED_PRECONDITION for a lazy tensor. Thread-safe as a tensor
 * read. */
OF_API of_status_t* of_tensor_to_dlpack(const of_tensor_t* tensor, struct DLManagedTensorVersioned** out_managed);
/* The same as a legacy DLManagedTensor. FAILED_PRECONDITION for a read-only tensor, which the
 * legacy struct cannot mark read-only (export it with of_tensor_to_dlpack). */
OF_API of_status_t* of_tensor_to_dlpack_legacy(const of_tensor_t* tensor, struct DLManagedTensor** out_managed);

/* Imports `managed` (DLPack 1.x, the caller's producer's) as a tensor over its memory, without a copy:
 * a new reference in *out_tensor. The library takes the struct over: it calls managed->deleter (when
 * not NULL) exactly once — when the tensor's last reference, and the last view of it, is released,
 * or before this function returns if it fails. Accepted: version.major 1 (another major version is
 * INVALID_ARGUMENT; only the deleter is touched then), CPU memory (kDLCPU; CUDA memory is
 * UNIMPLEMENTED until the CUDA backend has kernels; other device types are INVALID_ARGUMENT naming
 * them), the ten dtypes with lanes 1 (complex, vectors and other codes are INVALID_ARGUMENT naming
 * them), ndim >= 0 with sizes >= 0, strides NULL (row-major) or >= 0 (a strided tensor; negative
 * strides are INVALID_ARGUMENT), a byte_offset (the first element at data + byte_offset, which must
 * be aligned to the element size), and bool elements that are 0 or 1 (Note [Bool bytes]). With
 * DLPACK_FLAG_BITMASK_READ_ONLY the memory is never written through oneflow_c: in-place writers (an
 * optimizer over it, initialisers, of_safetensors_load_into, batch_norm's running statistics, graph
 * updates) refuse it with INVALID_ARGUMENT naming it read-only. */
OF_API of_status_t* of_tensor_from_dlpack(struct DLManagedTensorVersioned* managed, of_tensor_t** out_tensor);
/* The same for a legacy DLManagedTensor (no version or flags: writable). */
OF_API of_status_t* of_tensor_from_dlpack_legacy(struct DLManagedTensor* managed, of_tensor_t** out_tensor);

/*===--- end of DLPack exchange -------------------------------------------------------------===*/

/*===--- ops ------------------------------------------------------------------------------===*/

/* Every function of this section runs one op of the engine, eagerly.
 *
 *  Session   `session` is required (INVALID_ARGUMENT when NULL): kernels run on its thread pool and
 *            random ops (dropout) draw from its generator. The result does not depend on the session
 *            afterwards. Ops may be called from several threads at once, on one session or several.
 *  Tensors   Input tensors are borrowed and never modified (batch_norm's running statistics in
 *            training are the one exception, and say so); they must all be on one device. *out_tensor is a
 *            new reference, released with of_tensor_release. View ops (reshape when the strides
 *            allow, view, flatten, squeeze, unsqueeze, transpose, permute, narrow, expand; contiguous
 *            of a contiguous tensor) return tensors that share the input's memory.
 *  Layout    A result's elements may be laid out in another order than row-major: float32 2-D
 *            convolutions write (N, C, H, W) results channels last (NHWC in memory, oneDNN's fastest
 *            plain layout), and batch_norm, the poolings and the elementwise ops keep a channels-last
 *            input's layout. The dims are the same either way; of_tensor_copy_to_host copies row-major
 *            and DLPack exports carry the strides. of_contiguous gives a row-major copy.
 *  Broadcast Binary ops, where and the losses' shapes follow NumPy broadcasting: shapes are aligned
 *            at their last dim and each pair of sizes must be equal or one of them 1.
 *  Promotion The result dtype of a binary op is of_dtype_promote of its operands' dtypes. A scalar
 *            operand (the *_scalar functions) is first made a 0-d tensor: of a's dtype when a is
 *            floating, or when the scalar is integral and a is an integer type; int64 for an integral
 *            scalar with a bool tensor; float32 otherwise (PyTorch's rule for Python scalars, an
 *            integral double standing for Python's int). The result dtype so never depends on the
 *            scalar's magnitude: a scalar outside that dtype's range is INVALID_ARGUMENT (int8 with
 *            300, float16 with 1e6), for every *_scalar function and dtype.
 *  Dims      A dim argument may be negative, counting from the end (-1 is the last dim); it must
 *            lie in [-ndim, ndim). Arrays of dims are (pointer, count); the pointer may be NULL only
 *            when the count is 0. Eager tensors have concrete sizes: OF_DIM_UNKNOWN or a named symbol
 *            in a target shape is INVALID_ARGUMENT.
 *  Booleans  of_bool_t arguments take 0 or 1; other values are INVALID_ARGUMENT.
 *  Autograd  While grad mode is on (of_grad_is_enabled) and an input requires grad, a differentiable
 *            op records how to compute gradients: its result requires grad and is not a leaf.
 *  Errors    INVALID_ARGUMENT names the op, the argument and the problem (shapes and dtypes
 *            included: "add: cannot broadcast a (2, 3) with b (4, 3)"). Sizes and attributes whose
 *            arithmetic would overflow int64 (a dilated kernel, a padded input) are INVALID_ARGUMENT
 *            naming the attribute, never a wrapped result. A call that the op's checks accept is
 *            never INTERNAL (which always means a bug in oneflow_c).
 *  DTypes    One rule: a dtype the op is defined for but has no kernel for (on the tensors'
 *            device) is UNIMPLEMENTED naming the op and the dtype ("conv2d: no kernel for dtype
 *            int64 on cpu"). A dtype the op is not
 *            defined for is INVALID_ARGUMENT naming the argument: bool where the op computes with
 *            numbers (matmul, linear, conv2d, max_pool2d); an integer dtype where the result would
 *            be fractions in the input's dtype (mean, batch_norm, avg_pool2d, adaptive_avg_pool2d);
 *            operands of different dtypes where the op takes one dtype. Every op that takes
 *            float32 also takes float16 and bfloat16: the result is stored in the half dtype and
 *            computed in float32 (elementwise ops in float, the others through their float32
 *            kernel, on the half values widened exactly), so a half op differs from the float32 op
 *            on the same values only by the final rounding. Mixed precision: of_autocast_set.
 *            On failure *out_tensor is untouched. */

/* Elementwise binary ops (broadcasting, promoting): a + b, a - b, a * b, a / b, a ** b, max(a, b),
 * min(a, b). of_div is true division: integer operands give float32. */
OF_API of_status_t* of_add(of_session_t* session, const of_tensor_t* a, const of_tensor_t* b, of_tensor_t** out_tensor);
OF_API of_status_t* of_sub(of_session_t* session, const of_tensor_t* a, const of_tensor_t* b, of_tensor_t** out_tensor);
OF_API of_status_t* of_mul(of_session_t* session, const of_tensor_t* a, const of_tensor_t* b, of_tensor_t** out_tensor);
OF_API of_status_t* of_div(of_session_t* session, const of_tensor_t* a, const of_tensor_t* b, of_tensor_t** out_tensor);
OF_API of_status_t* of_pow(of_session_t* session, const of_tensor_t* a, const of_tensor_t* b, of_tensor_t** out_tensor);
OF_API of_status_t* of_maximum(of_session_t* session, const of_tensor_t* a, const of_tensor_t* b, of_tensor_t** out_tensor);
OF_API of_status_t* of_minimum(of_session_t* session, const of_tensor_t* a, const of_tensor_t* b, of_tensor_t** out_tensor);

/* The same with a scalar second operand (see Promotion above). */
OF_API of_status_t* of_add_scalar(of_session_t* session, const of_tensor_t* a, double b, of_tensor_t** out_tensor);
OF_API of_status_t* of_sub_scalar(of_session_t* session, const of_tensor_t* a, double b, of_tensor_t** out_tensor);
OF_API of_status_t* of_mul_scalar(of_session_t* session, const of_tensor_t* a, double b, of_tensor_t** out_tensor);
OF_API of_status_t* of_div_scalar(of_session_t* session, const of_tensor_t* a, double b, of_tensor_t** out_tensor);
OF_API of_status_t* of_pow_scalar(of_session_t* session, const of_tensor_t* a, double b, of_tensor_t** out_tensor);
OF_API of_status_t* of_maximum_scalar(of_session_t* session, const of_tensor_t* a, double b, of_tensor_t** out_tensor);
OF_API of_status_t* of_minimum_scalar(of_session_t* session, const of_tensor_t* a, double b, of_tensor_t** out_tensor);

/* Comparisons a > b, a >= b, a < b, a <= b, a == b, a != b (broadcasting; compared in the promoted
 * dtype). Results are bool and not differentiable. */
OF_API of_status_t* of_gt(of_session_t* session, const of_tensor_t* a, const of_tensor_t* b, of_tensor_t** out_tensor);
OF_API of_status_t* of_ge(of_session_t* session, const of_tensor_t* a, const of_tensor_t* b, of_tensor_t** out_tensor);
OF_API of_status_t* of_lt(of_session_t* session, const of_tensor_t* a, const of_tensor_t* b, of_tensor_t** out_tensor);
OF_API of_status_t* of_le(of_session_t* session, const of_tensor_t* a, const of_tensor_t* b, of_tensor_t** out_tensor);
OF_API of_status_t* of_eq(of_session_t* session, const of_tensor_t* a, const of_tensor_t* b, of_tensor_t** out_tensor);
OF_API of_status_t* of_ne(of_session_t* session, const of_tensor_t* a, const of_tensor_t* b, of_tensor_t** out_tensor);
OF_API of_status_t* of_gt_scalar(of_session_t* session, const of_tensor_t* a, double b, of_tensor_t** out_tensor);
OF_API of_status_t* of_ge_scalar(of_session_t* session, const of_tensor_t* a, double b, of_tensor_t** out_tensor);
OF_API of_status_t* of_lt_scalar(of_session_t* session, const of_tensor_t* a, double b, of_tensor_t** out_tensor);
OF_API of_status_t* of_le_scalar(of_session_t* session, const of_tensor_t* a, double b, of_tensor_t** out_tensor);
OF_API of_status_t* of_eq_scalar(of_session_t* session, const of_tensor_t* a, double b, of_tensor_t** out_tensor);
OF_API of_status_t* of_ne_scalar(of_session_t* session, const of_tensor_t* a, double b, of_tensor_t** out_tensor);

/* cond ? a : b elementwise. cond must be bool; cond, a and b broadcast together and a and b promote. */
OF_API of_status_t* of_where(of_session_t* session, const of_tensor_t* cond, const of_tensor_t* a, const of_tensor_t* b,
                             of_tensor_t** out_tensor);

/* Logical and, or, not. Inputs of any dtype are read as truth values (non-zero is true); results
 * are bool. */
OF_API of_status_t* of_logical_and(of_session_t* session, const of_tensor_t* a, const of_tensor_t* b, of_tensor_t** out_tensor);
OF_API of_status_t* of_logical_or(of_session_t* session, const of_tensor_t* a, const of_tensor_t* b, of_tensor_t** out_tensor);
OF_API of_status_t* of_logical_not(of_session_t* session, const of_tensor_t* x, of_tensor_t** out_tensor);

/* Elementwise unary ops: -x, |x|, e^x, ln x, sqrt x, 1/sqrt x, max(x, 0), 1/(1+e^-x), tanh x.
 * exp, log, sqrt, rsqrt, sigmoid, tanh (and gelu) keep a floating dtype and give float32 for integer
 * and bool inputs; neg, abs and relu keep the input's dtype. */
OF_API of_status_t* of_neg(of_session_t* session, const of_tensor_t* x, of_tensor_t** out_tensor);
OF_API of_status_t* of_abs(of_session_t* session, const of_tensor_t* x, of_tensor_t** out_tensor);
OF_API of_status_t* of_exp(of_session_t* session, const of_tensor_t* x, of_tensor_t** out_tensor);
OF_API of_status_t* of_log(of_session_t* session, const of_tensor_t* x, of_tensor_t** out_tensor);
OF_API of_status_t* of_sqrt(of_session_t* session, const of_tensor_t* x, of_tensor_t** out_tensor);
OF_API of_status_t* of_rsqrt(of_session_t* session, const of_tensor_t* x, of_tensor_t** out_tensor);
OF_API of_status_t* of_relu(of_session_t* session, const of_tensor_t* x, of_tensor_t** out_tensor);
OF_API of_status_t* of_sigmoid(of_session_t* session, const of_tensor_t* x, of_tensor_t** out_tensor);
OF_API of_status_t* of_tanh(of_session_t* session, const of_tensor_t* x, of_tensor_t** out_tensor);
/* GELU: x * Phi(x) with the exact normal CDF, or with PyTorch's tanh approximation when
 * tanh_approximation is 1. */
OF_API of_status_t* of_gelu(of_session_t* session, const of_tensor_t* x, of_bool_t tanh_approximation, of_tensor_t** out_tensor);
/* x converted to `dtype` (any to any: floating to integer truncates toward zero, non-zero to bool is
 * true). */
OF_API of_status_t* of_cast(of_session_t* session, const of_tensor_t* x, const of_dtype_t* dtype, of_tensor_t** out_tensor);

/* Reductions over `dims` (ndims values, each dim at most once; ndims 0 = every dim, and dims may then
 * be NULL). keepdim 1 keeps each reduced dim with size 1, 0 removes it. sum of bool and integer
 * inputs gives int64; mean needs a floating input; max and min give the values (no indices). */
OF_API of_status_t* of_sum(of_session_t* session, const of_tensor_t* x, const int64_t* dims, size_t ndims,
                           of_bool_t keepdim, of_tensor_t** out_tensor);
OF_API of_status_t* of_mean(of_session_t* session, const of_tensor_t* x, const int64_t* dims, size_t ndims,
                            of_bool_t keepdim, of_tensor_t** out_tensor);
OF_API of_status_t* of_max(of_session_t* session, const of_tensor_t* x, const int64_t* dims, size_t ndims,
                           of_bool_t keepdim, of_tensor_t** out_tensor);
OF_API of_status_t* of_min(of_session_t* session, const of_tensor_t* x, const int64_t* dims, size_t ndims,
                           of_bool_t keepdim, of_tensor_t** out_tensor);
/* The index (int64) of the first maximum along `dim`. */
OF_API of_status_t* of_argmax(of_session_t* session, const of_tensor_t* x, int64_t dim, of_bool_t keepdim,
                              of_tensor_t** out_tensor);
/* Variance over `dims` (as of_sum) with Bessel's `correction`: sum((x - mean)^2) / (n - correction);
 * 1 is the unbiased estimate, 0 the population variance. of_std is its square root. */
OF_API of_status_t* of_var(of_session_t* session, const of_tensor_t* x, const int64_t* dims, size_t ndims,
                           int64_t correction, of_bool_t keepdim, of_tensor_t** out_tensor);
OF_API of_status_t* of_std(of_session_t* session, const of_tensor_t* x, const int64_t* dims, size_t ndims,
                           int64_t correction, of_bool_t keepdim, of_tensor_t** out_tensor);

/* Matrix product: 2-D (m, k) @ (k, n) -> (m, n); a 1-D operand is a vector as in NumPy; batched
 * (..., m, k) @ (..., k, n) with broadcast batch dims. a and b have one dtype: float32, float64 or an
 * integer type (int8, uint8, int16, int32, int64), which is the result's; integer products wrap
 * around as two's complement on overflow (as PyTorch's) and are not differentiable. k = 0 gives
 * zeros. */
OF_API of_status_t* of_matmul(of_session_t* session, const of_tensor_t* a, const of_tensor_t* b, of_tensor_t** out_tensor);
/* x (..., in) @ weight (out, in)^T + bias (out). bias may be NULL (no bias). x, weight and bias have
 * one dtype, as of_matmul's (integers included). */
OF_API of_status_t* of_linear(of_session_t* session, const of_tensor_t* x, const of_tensor_t* weight,
                              OF_NULLABLE const of_tensor_t* bias, of_tensor_t** out_tensor);

/* Options of of_conv2d. Each pair is (height, width). */
typedef struct of_conv2d_options_t {
  size_t struct_size;  /* sizeof(of_conv2d_options_t), set by of_conv2d_options_init */
  int64_t stride[2];   /* >= 1; default 1, 1 */
  int64_t padding[2];  /* zeros added on both sides, >= 0; default 0, 0 */
  int64_t dilation[2]; /* spacing of the kernel taps, >= 1; default 1, 1 */
  int64_t groups;      /* >= 1, dividing both the input and the output channels; default 1 */
  int64_t padding_end[2]; /* zeros added after the input (bottom, right), >= 0; -1 (default -1, -1)
                             = that dim's padding. padding is then the (top, left) padding only */
} of_conv2d_options_t;
/* Fills `options` with the defaults and sets struct_size. NULL is ignored. */
OF_API void of_conv2d_options_init(of_conv2d_options_t* options);
/* 2-D convolution (cross-correlation, as PyTorch): x (N, C, H, W), weight (O, C / groups, kH, kW),
 * bias (O) or NULL, all float32 or all float64; the result is (N, O, H', W') with
 * H' = (H + padding[0] + padding_end[0] - dilation[0] * (kH - 1) - 1) / stride[0] + 1 (rounded down),
 * W' alike, which must be >= 1. With padding_end (asymmetric padding, as ONNX Conv's pads or
 * TensorFlow's SAME) the result is PyTorch's F.pad(x, (padding[1], padding_end[1], padding[0],
 * padding_end[0])) convolved with padding 0. kH and kW must be >= 1; H + padding + padding_end and
 * dilation * (kH - 1) + 1 (W alike) must fit in int64. Empty operands follow PyTorch: zero input channels (C = 0) or taps that all
 * fall in the padding give the bias (zeros without one); N = 0 or O = 0 give an empty result.
 * options may be NULL for the defaults. */
OF_API of_status_t* of_conv2d(of_session_t* session, const of_tensor_t* x, const of_tensor_t* weight,
                              OF_NULLABLE const of_tensor_t* bias, OF_NULLABLE const of_conv2d_options_t* options,
                              of_tensor_t** out_tensor);

/* Options of of_batch_norm. */
typedef struct of_batch_norm_options_t {
  size_t struct_size; /* sizeof(of_batch_norm_options_t), set by of_batch_norm_options_init */
  of_bool_t training;   /* 1 (default): normalise with the batch statistics; 0: with the running ones */
  double momentum;    /* running = (1 - momentum) * running + momentum * batch statistic; in [0, 1],
                         default 0.1 */
  double eps;         /* added to the variance; finite and > 0, default 1e-5 */
} of_batch_norm_options_t;
/* Fills `options` with the defaults and sets struct_size. NULL is ignored. */
OF_API void of_batch_norm_options_init(of_batch_norm_options_t* options);
/* Batch normalisation over channel dim 1 of x (N, C, ...): (x - mean) / sqrt(var + eps) * weight + bias.
 * weight, bias, running_mean and running_var are (C) tensors, each may be NULL (weight 1, bias 0).
 * Training: mean and (biased) var are the batch statistics; when running_mean and running_var are
 * given they are UPDATED IN PLACE with `momentum` (the unbiased batch variance goes into
 * running_var), so they must not be in use by another thread. Training needs more than one value
 * per channel, except that an empty batch (no values: N = 0 or an empty spatial dim) gives an empty
 * result and leaves the running statistics unchanged, as PyTorch. Inference (training 0): the
 * running statistics are required and used. x is floating point. options may be NULL for the
 * defaults. */
OF_API of_status_t* of_batch_norm(of_session_t* session, const of_tensor_t* x, OF_NULLABLE const of_tensor_t* weight,
                                  OF_NULLABLE const of_tensor_t* bias, OF_NULLABLE of_tensor_t* running_mean,
                                  OF_NULLABLE of_tensor_t* running_var, OF_NULLABLE const of_batch_norm_options_t* options,
                                  of_tensor_t** out_tensor);

/* relu(of_batch_norm(x, ...) + addend): batch normalisation, a residual add and a ReLU in one op, as a
 * ResNet block ends (OneFlow's normalization_add_relu). addend may be NULL (relu(batch_norm(x))); when
 * given it has x's dtype and shape. Everything else (the parameters, the running statistics updated
 * in place in training, the options) is as of_batch_norm's, and so are the results up to float
 * rounding. On float32 channels-last x with a multiple of 8 channels the normalisation, the add and
 * the ReLU are one pass over memory; the backward is the ReLU's gradient (also the addend's), then batch
 * norm's. Without an addend (float32, float64) the backward is one op, which on that layout takes the
 * ReLU's mask from x in batch norm's backward passes instead of reading y (the same results). A lazy
 * graph folds it into a preceding convolution in inference when there is no addend. */
OF_API of_status_t* of_batch_norm_add_relu(of_session_t* session, const of_tensor_t* x,
                                           OF_NULLABLE const of_tensor_t* addend, OF_NULLABLE const of_tensor_t* weight,
                                           OF_NULLABLE const of_tensor_t* bias, OF_NULLABLE of_tensor_t* running_mean,
                                           OF_NULLABLE of_tensor_t* running_var,
                                           OF_NULLABLE const of_batch_norm_options_t* options,
                                           of_tensor_t** out_tensor);

/* Options of of_max_pool2d and of_avg_pool2d. Each pair is (height, width). */
typedef struct of_pool2d_options_t {
  size_t struct_size;        /* sizeof(of_pool2d_options_t), set by of_pool2d_options_init */
  int64_t kernel_size[2];    /* required, >= 1: the default 0, 0 is an error */
  int64_t stride[2];         /* >= 1; 0 (default) = that dim's kernel size */
  int64_t padding[2];        /* >= 0 and at most half the kernel size; default 0, 0 */
  int64_t dilation[2];       /* max pooling only; >= 1, default 1, 1 */
  of_bool_t ceil_mode;         /* 1: round the output size up instead of down; default 0 */
  of_bool_t count_include_pad; /* avg pooling: 1 (default) divides by the full window, padding
                                included; 0 only by the input elements under it */
  int64_t padding_end[2];    /* padding after the input (bottom, right), >= 0 and at most half the
                                kernel size; -1 (default -1, -1) = that dim's padding, which is then
                                the (top, left) padding only */
} of_pool2d_options_t;
/* Fills `options` with the defaults and sets struct_size. NULL is ignored. */
OF_API void of_pool2d_options_init(of_pool2d_options_t* options);
/* Max / average pooling of x (N, C, H, W) over kernel_size windows. options is required
 * (it carries the kernel size). Output size per dim: (H + padding + padding_end - dilation * (k - 1)
 * - 1) / stride + 1, rounded down (or up with ceil_mode, when the last window starts inside the input
 * or its top / left padding); it must be >= 1, and H + padding + padding_end and dilation * (k - 1)
 * + 1 must fit in int64. H and W must be >= 1 (as PyTorch); N = 0 or C = 0 give an empty result. x
 * is floating point. Padding: max pooling pads with -inf (PyTorch's F.pad(x, (padding[1],
 * padding_end[1], padding[0], padding_end[0]), value=-inf) pooled with padding 0); average pooling
 * with count_include_pad 1 divides by the window clipped to the padded input, padding on both sides
 * counted (as PyTorch for symmetric padding and ONNX AveragePool with pads and count_include_pad 1:
 * the same as F.pad with zeros then padding 0, except that a ceil_mode window reaching past the
 * padded input counts only its part within), with 0 by the input cells under the window. */
OF_API of_status_t* of_max_pool2d(of_session_t* session, const of_tensor_t* x, const of_pool2d_options_t* options,
                                  of_tensor_t** out_tensor);
OF_API of_status_t* of_avg_pool2d(of_session_t* session, const of_tensor_t* x, const of_pool2d_options_t* options,
                                  of_tensor_t** out_tensor);
/* Average pooling of x (N, C, H, W) to (out_h, out_w) (each >= 1), windows chosen as
 * PyTorch's: output cell i covers input rows [floor(i * H / out_h), ceil((i + 1) * H / out_h)).
 * H and W must be >= 1; x is floating point. */
OF_API of_status_t* of_adaptive_avg_pool2d(of_session_t* session, const of_tensor_t* x, int64_t out_h, int64_t out_w,
                                           of_tensor_t** out_tensor);

/* Views and layout. A target shape (dims, ndim) may hold one -1, inferred from the element count.
 * of_reshape returns a view when the strides allow and a copy otherwise; of_view always returns a
 * view and is INVALID_ARGUMENT when x's strides do not allow one (call of_contiguous first). */
OF_API of_status_t* of_reshape(of_session_t* session, const of_tensor_t* x, const int64_t* dims, size_t ndim,
                               of_tensor_t** out_tensor);
OF_API of_status_t* of_view(of_session_t* session, const of_tensor_t* x, const int64_t* dims, size_t ndim,
                            of_tensor_t** out_tensor);
/* Merges dims start_dim..end_dim (inclusive) into one. */
OF_API of_status_t* of_flatten(of_session_t* session, const of_tensor_t* x, int64_t start_dim, int64_t end_dim,
                               of_tensor_t** out_tensor);
/* Removes the listed dims, each of which must have size 1; ndims 0 removes every size-1 dim. */
OF_API of_status_t* of_squeeze(of_session_t* session, const of_tensor_t* x, const int64_t* dims, size_t ndims,
                               of_tensor_t** out_tensor);
/* Inserts a size-1 dim at `dim`, in [-(ndim + 1), ndim + 1). */
OF_API of_status_t* of_unsqueeze(of_session_t* session, const of_tensor_t* x, int64_t dim, of_tensor_t** out_tensor);
/* Swaps dims dim0 and dim1. */
OF_API of_status_t* of_transpose(of_session_t* session, const of_tensor_t* x, int64_t dim0, int64_t dim1,
                                 of_tensor_t** out_tensor);
/* Reorders the dims: result dim i is x's dim dims[i]; dims is a permutation of x's ndim dims. */
OF_API of_status_t* of_permute(of_session_t* session, const of_tensor_t* x, const int64_t* dims, size_t ndims,
                               of_tensor_t** out_tensor);
/* x laid out row-major: a new reference to x itself when it already is. */
OF_API of_status_t* of_contiguous(of_session_t* session, const of_tensor_t* x, of_tensor_t** out_tensor);
/* Elements start .. start + length - 1 of dim `dim` (start may be negative, counted from the end). */
OF_API of_status_t* of_narrow(of_session_t* session, const of_tensor_t* x, int64_t dim, int64_t start, int64_t length,
                              of_tensor_t** out_tensor);
/* Concatenates the n >= 1 tensors (an array of n non-NULL handles, borrowed) along existing dim
 * `dim`; all other sizes must agree and the dtypes promote. */
OF_API of_status_t* of_cat(of_session_t* session, const of_tensor_t* const* tensors, size_t n, int64_t dim,
                           of_tensor_t** out_tensor);
/* Stacks the n >= 1 tensors, all of one shape, along a new dim `dim` in [-(ndim + 1), ndim + 1); the
 * dtypes promote as for of_cat. */
OF_API of_status_t* of_stack(of_session_t* session, const of_tensor_t* const* tensors, size_t n, int64_t dim,
                             of_tensor_t** out_tensor);
/* Broadcasts x's size-1 dims to the sizes in (dims, ndim), without copying: -1 keeps a dim, and new
 * leading dims may be added. */
OF_API of_status_t* of_expand(of_session_t* session, const of_tensor_t* x, const int64_t* dims, size_t ndim,
                              of_tensor_t** out_tensor);

/* softmax and log_softmax along `dim` (floating inputs), computed stably. */
OF_API of_status_t* of_softmax(of_session_t* session, const of_tensor_t* x, int64_t dim, of_tensor_t** out_tensor);
OF_API of_status_t* of_log_softmax(of_session_t* session, const of_tensor_t* x, int64_t dim, of_tensor_t** out_tensor);

/* How a loss reduces its per-sample values. Append only. */
typedef int32_t of_reduction_t;
enum of_reductions {
  OF_REDUCTION_NONE = 0, /* one value per sample, shape (N) */
  OF_REDUCTION_MEAN = 1, /* the mean over the samples whose target is not ignore_index (0-d) */
  OF_REDUCTION_SUM = 2   /* the sum (0-d) */
};
/* Options of the losses. */
typedef struct of_loss_options_t {
  size_t struct_size;       /* sizeof(of_loss_options_t), set by of_loss_options_init */
  of_reduction_t reduction; /* OF_REDUCTION_*; default OF_REDUCTION_MEAN */
  int64_t ignore_index;     /* samples with this target contribute nothing (and a 0 with NONE);
                               default -100 */
  double label_smoothing;   /* cross_entropy only, in [0, 1]: the target distribution puts
                               1 - label_smoothing + label_smoothing / C on the class and
                               label_smoothing / C on every other; default 0 */
} of_loss_options_t;
/* Fills `options` with the defaults and sets struct_size. NULL is ignored. */
OF_API void of_loss_options_init(of_loss_options_t* options);
/* Cross-entropy of logits (N, C) (floating) against target (N) int64 class indices in [0, C) or
 * ignore_index: -log_softmax(logits)[i, target[i]], reduced as options say (NULL = defaults).
 * logits (N, C, d1, ...) with target (N, d1, ...) take the softmax over dim 1 for every (n, d1, ...);
 * OF_REDUCTION_NONE then gives target's shape. */
OF_API of_status_t* of_cross_entropy(of_session_t* session, const of_tensor_t* logits, const of_tensor_t* target,
                                     OF_NULLABLE const of_loss_options_t* options, of_tensor_t** out_tensor);
/* Negative log-likelihood of log_probs (N, C) (e.g. of_log_softmax's result) against target as for
 * of_cross_entropy: -log_probs[i, target[i]]. label_smoothing must be 0 here. */
OF_API of_status_t* of_nll_loss(of_session_t* session, const of_tensor_t* log_probs, const of_tensor_t* target,
                                OF_NULLABLE const of_loss_options_t* options, of_tensor_t** out_tensor);

/* Dropout: with training 1, zeroes each element with probability p (in [0, 1]) and scales the others
 * by 1 / (1 - p), drawing from the session's generator (reproducible for a seed); with training 0 or
 * p 0 the result equals x. */
OF_API of_status_t* of_dropout(of_session_t* session, const of_tensor_t* x, double p, of_bool_t training,
                               of_tensor_t** out_tensor);

/* Tensors of x's shape, dtype and device filled with 0, 1 or `value` (which must be representable in
 * the dtype, as for of_tensor_full). Not differentiable. */
OF_API of_status_t* of_zeros_like(of_session_t* session, const of_tensor_t* x, of_tensor_t** out_tensor);
OF_API of_status_t* of_ones_like(of_session_t* session, const of_tensor_t* x, of_tensor_t** out_tensor);
OF_API of_status_t* of_full_like(of_session_t* session, const of_tensor_t* x, double value, of_tensor_t** out_tensor);

/* ---- indexing ---- */
/* Embedding lookup: weight (num, dim) floating, indices int64 of any shape (0-d and empty included)
 * -> indices' shape + (dim), the rows of weight that the indices name. Every index must lie in
 * [0, num) (INVALID_ARGUMENT naming the index, its position and the range otherwise; indices are not
 * wrapped). The gradient w.r.t. weight sums the result's gradient rows into the rows they came from;
 * row padding_idx, when in [0, num), gets none. C has no None: a negative padding_idx means no padding
 * row (PyTorch's negative padding_idx, counted from the end, is not taken); padding_idx >= num is
 * INVALID_ARGUMENT. */
OF_API of_status_t* of_embedding(of_session_t* session, const of_tensor_t* weight, const of_tensor_t* indices,
                                 int64_t padding_idx, of_tensor_t** out_tensor);
/* ---- normalization (layer_norm, group_norm, instance_norm) ----
 * Each computes (x - mean) / sqrt(var + eps) * weight + bias over groups of x's elements, with the
 * biased variance of each group (computed in float64); weight and bias may each be NULL (1 and 0)
 * and must have x's dtype. x is floating point (other dtypes are INVALID_ARGUMENT); eps must be
 * finite and >= 0 (PyTorch's default is 1e-5). Differentiable in x, weight and bias. */

/* Layer normalisation over the last ndims dims of x, which must equal normalized_shape (ndims >= 1):
 * x (..., *normalized_shape); weight and bias have shape normalized_shape. */
OF_API of_status_t* of_layer_norm(of_session_t* session, const of_tensor_t* x, const int64_t* normalized_shape,
                                  size_t ndims, OF_NULLABLE const of_tensor_t* weight,
                                  OF_NULLABLE const of_tensor_t* bias, double eps, of_tensor_t** out_tensor);
/* Group normalisation of x (N, C, ...): the C channels of each sample are split into num_groups
 * (>= 1, dividing C) groups of consecutive channels, each normalised over its channels and spatial
 * elements; weight and bias are (C), per channel. */
OF_API of_status_t* of_group_norm(of_session_t* session, const of_tensor_t* x, int64_t num_groups,
                                  OF_NULLABLE const of_tensor_t* weight, OF_NULLABLE const of_tensor_t* bias,
                                  double eps, of_tensor_t** out_tensor);
/* Instance normalisation of x (N, C, ...) with at least one spatial dim and more than one spatial
 * element: each (sample, channel) normalised over its spatial elements; weight and bias (C). Always
 * uses the input's statistics (PyTorch's use_input_stats): there are no running statistics. */
OF_API of_status_t* of_instance_norm(of_session_t* session, const of_tensor_t* x, OF_NULLABLE const of_tensor_t* weight,
                                     OF_NULLABLE const of_tensor_t* bias, double eps, of_tensor_t** out_tensor);
/* ---- attention ---- */

/* Options of of_scaled_dot_product_attention. */
typedef struct of_attention_options_t {
  size_t struct_size; /* sizeof(of_attention_options_t), set by of_attention_options_init */
  double dropout_p;   /* probability of dropping each attention weight, in [0, 1); default 0 */
  of_bool_t is_causal; /* 1: query i attends to keys j <= i only (top-left aligned, as PyTorch), and
                          attn_mask must be NULL; default 0 */
  double scale;       /* the factor on q k^T, finite; 0 (default) = 1 / sqrt(E) */
} of_attention_options_t;
/* Fills `options` with the defaults and sets struct_size. NULL is ignored. */
OF_API void of_attention_options_init(of_attention_options_t* options);
/* softmax(q k^T * scale + mask) v, as PyTorch's scaled_dot_product_attention, fused: q (..., L, E),
 * k (..., S, E), v (..., S, Ev), all float32 or all float64, batch dims (...) broadcasting with each
 * other (e.g. (N, H)); the result is (..., L, Ev). attn_mask may be NULL; otherwise it broadcasts to
 * (..., L, S) and is bool (true = attend) or of q's dtype (added to the scores, -inf = not attended).
 * A query row that attends to no key gives zeros (not NaN). Dropout (dropout_p > 0) is applied to the
 * attention weights, drawing from the session's generator (reproducible for a seed). Differentiable
 * in q, k and v (not in attn_mask). options may be NULL for the defaults. */
OF_API of_status_t* of_scaled_dot_product_attention(of_session_t* session, const of_tensor_t* q, const of_tensor_t* k,
                                                    const of_tensor_t* v, OF_NULLABLE const of_tensor_t* attn_mask,
                                                    OF_NULLABLE const of_attention_options_t* options,
                                                    of_tensor_t** out_tensor);

/* ---- losses ---- */

/* Elementwise losses of input against target: one floating dtype and one shape (PyTorch broadcasts
 * mse/l1/kl_div targets with a warning; here a shape mismatch is INVALID_ARGUMENT). options (NULL =
 * defaults) gives the reduction: OF_REDUCTION_NONE keeps input's shape, MEAN averages over all
 * elements (NaN for none), SUM sums; ignore_index is not used and label_smoothing must be 0.
 * Differentiable in input and target. */
/* (input - target)^2. */
OF_API of_status_t* of_mse_loss(of_session_t* session, const of_tensor_t* input, const of_tensor_t* target,
                                OF_NULLABLE const of_loss_options_t* options, of_tensor_t** out_tensor);
/* |input - target|. */
OF_API of_status_t* of_l1_loss(of_session_t* session, const of_tensor_t* input, const of_tensor_t* target,
                               OF_NULLABLE const of_loss_options_t* options, of_tensor_t** out_tensor);
/* d = input - target: 0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta. beta finite and >= 0
 * (PyTorch's default is 1; 0 gives of_l1_loss). */
OF_API of_status_t* of_smooth_l1_loss(of_session_t* session, const of_tensor_t* input, const of_tensor_t* target,
                                      double beta, OF_NULLABLE const of_loss_options_t* options,
                                      of_tensor_t** out_tensor);
/* -weight [pos_weight target log sigmoid(input) + (1 - target) log(1 - sigmoid(input))] computed
 * stably from the logits `input`. weight and pos_weight may be NULL (1); otherwise of input's dtype
 * and broadcasting to input's shape (pos_weight typically (C) for input (N, C)); they are not
 * differentiated. */
OF_API of_status_t* of_binary_cross_entropy_with_logits(of_session_t* session, const of_tensor_t* input,
                                                        const of_tensor_t* target, OF_NULLABLE const of_tensor_t* weight,
                                                        OF_NULLABLE const of_tensor_t* pos_weight,
                                                        OF_NULLABLE const of_loss_options_t* options,
                                                        of_tensor_t** out_tensor);
/* Kullback-Leibler divergence of input (log-probabilities) from target: target (log target - input)
 * (0 where target is 0), or with log_target 1 (target holds log-probabilities) exp(target)
 * (target - input). MEAN is the mean over all elements, as PyTorch's "mean" (divide a SUM by the
 * batch size for "batchmean"). */
OF_API of_status_t* of_kl_div(of_session_t* session, const of_tensor_t* input, const of_tensor_t* target,
                              of_bool_t log_target, OF_NULLABLE const of_loss_options_t* options,
                              of_tensor_t** out_tensor);
/* of_cross_entropy and of_nll_loss with class weights: weight (C) of the input's dtype, or NULL (1 for
 * every class, the same as of_cross_entropy / of_nll_loss). Sample i counts weight[target_i]; MEAN
 * divides by the sum of the weights of the targets that are not ignore_index (PyTorch's weighted
 * mean; NaN when that is 0). Label smoothing weighs class c by weight[c], as PyTorch. Like the
 * unweighted functions they take input (N, C) with target (N), or (N, C, d1, ...) with target
 * (N, d1, ...) (NONE then gives target's shape). weight is not differentiated. */
OF_API of_status_t* of_weighted_cross_entropy(of_session_t* session, const of_tensor_t* logits, const of_tensor_t* target,
                                              OF_NULLABLE const of_tensor_t* weight,
                                              OF_NULLABLE const of_loss_options_t* options, of_tensor_t** out_tensor);
OF_API of_status_t* of_weighted_nll_loss(of_session_t* session, const of_tensor_t* log_probs, const of_tensor_t* target,
                                         OF_NULLABLE const of_tensor_t* weight,
                                         OF_NULLABLE const of_loss_options_t* options, of_tensor_t** out_tensor);

/* ---- recurrent ---- */

/* One step of an LSTM cell, as PyTorch's LSTMCell: x (N, I), h and c (N, H), w_ih (4H, I), w_hh (4H, H),
 * b_ih and b_hh (4H) or NULL (no bias), all float32 or all float64. The gates x w_ih^T + b_ih +
 * h w_hh^T + b_hh are taken in PyTorch's order (i, f, g, o): c' = sigmoid(f) c + sigmoid(i) tanh(g),
 * h' = sigmoid(o) tanh(c'). *out_h receives h' and *out_c c' (both (N, H), new references; both
 * required). Differentiable in every input. */
OF_API of_status_t* of_lstm_cell(of_session_t* session, const of_tensor_t* x, const of_tensor_t* h, const of_tensor_t* c,
                                 const of_tensor_t* w_ih, const of_tensor_t* w_hh, OF_NULLABLE const of_tensor_t* b_ih,
                                 OF_NULLABLE const of_tensor_t* b_hh, of_tensor_t** out_h, of_tensor_t** out_c);
/* One step of a GRU cell, as PyTorch's GRUCell: x (N, I), h (N, H), w_ih (3H, I), w_hh (3H, H), biases
 * (3H) or NULL, one floating dtype. With the chunks (r, z, n) of x w_ih^T + b_ih (x_*) and of
 * h w_hh^T + b_hh (h_*): r = sigmoid(x_r + h_r), z = sigmoid(x_z + h_z), n = tanh(x_n + r h_n),
 * h' = (1 - z) n + z h, (N, H). Differentiable in every input. */
OF_API of_status_t* of_gru_cell(of_session_t* session, const of_tensor_t* x, const of_tensor_t* h,
                                const of_tensor_t* w_ih, const of_tensor_t* w_hh, OF_NULLABLE const of_tensor_t* b_ih,
                                OF_NULLABLE const of_tensor_t* b_hh, of_tensor_t** out_tensor);
/* ---- math: trigonometric and special functions, activations, rounding, bitwise, clamp ---- */

/* Elementwise sin, cos, tan, asin, acos, atan, sinh, cosh, asinh, acosh, atanh, erf, erfinv (the
 * inverse of erf: +-inf at +-1, NaN outside [-1, 1]), log1p (ln(1 + x)), expm1 (e^x - 1) and
 * reciprocal (1 / x), with PyTorch's semantics (NaN outside a function's domain). Floating inputs keep
 * their dtype; integer and bool inputs give float32. Differentiable. */
OF_API of_status_t* of_sin(of_session_t* session, const of_tensor_t* x, of_tensor_t** out_tensor);
OF_API of_status_t* of_cos(of_session_t* session, const of_tensor_t* x, of_tensor_t** out_tensor);
OF_API of_status_t* of_tan(of_session_t* session, const of_tensor_t* x, of_tensor_t** out_tensor);
OF_API of_status_t* of_asin(of_session_t* session, const of_tensor_t* x, of_tensor_t** out_tensor);
OF_API of_status_t* of_acos(of_session_t* session, const of_tensor_t* x, of_tensor_t** out_tensor);
OF_API of_status_t* of_atan(of_session_t* session, const of_tensor_t* x, of_tensor_t** out_tensor);
OF_API of_status_t* of_sinh(of_session_t* session, const of_tensor_t* x, of_tensor_t** out_tensor);
OF_API of_status_t* of_cosh(of_session_t* session, const of_tensor_t* x, of_tensor_t** out_tensor);
OF_API of_status_t* of_asinh(of_session_t* session, const of_tensor_t* x, of_tensor_t** out_tensor);
OF_API of_status_t* of_acosh(of_session_t* session, const of_tensor_t* x, of_tensor_t** out_tensor);
OF_API of_status_t* of_atanh(of_session_t* session, const of_tensor_t* x, of_tensor_t** out_tensor);
OF_API of_status_t* of_erf(of_session_t* session, const of_tensor_t* x, of_tensor_t** out_tensor);
OF_API of_status_t* of_erfinv(of_session_t* session, const of_tensor_t* x, of_tensor_t** out_tensor);
OF_API of_status_t* of_log1p(of_session_t* session, const of_tensor_t* x, of_tensor_t** out_tensor);
OF_API of_status_t* of_expm1(of_session_t* session, const of_tensor_t* x, of_tensor_t** out_tensor);
OF_API of_status_t* of_reciprocal(of_session_t* session, const of_tensor_t* x, of_tensor_t** out_tensor);

/* Activations, dtypes as above (integer and bool inputs give float32; PyTorch refuses them):
 * silu x * sigmoid(x); mish x * tanh(softplus(x)); selu scale * (x > 0 ? x : alpha (e^x - 1)) with
 * alpha 1.6732632423543772848, scale 1.0507009873554804934; hardswish x * relu6(x + 3) / 6;
 * hardsigmoid relu6(x + 3) / 6. Differentiable (hardswish's and hardsigmoid's gradients as
 * PyTorch's at the kinks). */
OF_API of_status_t* of_silu(of_session_t* session, const of_tensor_t* x, of_tensor_t** out_tensor);
OF_API of_status_t* of_mish(of_session_t* session, const of_tensor_t* x, of_tensor_t** out_tensor);
OF_API of_status_t* of_selu(of_session_t* session, const of_tensor_t* x, of_tensor_t** out_tensor);
OF_API of_status_t* of_hardswish(of_session_t* session, const of_tensor_t* x, of_tensor_t** out_tensor);
OF_API of_status_t* of_hardsigmoid(of_session_t* session, const of_tensor_t* x, of_tensor_t** out_tensor);
/* softplus: log(1 + e^(beta x)) / beta, and x itself where beta x > threshold (PyTorch's defaults are
 * beta 1, threshold 20). beta must be finite and non-zero, threshold not NaN. */
OF_API of_status_t* of_softplus(of_session_t* session, const of_tensor_t* x, double beta, double threshold,
                                of_tensor_t** out_tensor);
/* elu: x > 0 ? x : alpha (e^x - 1) (PyTorch's default alpha 1); alpha must be finite. */
OF_API of_status_t* of_elu(of_session_t* session, const of_tensor_t* x, double alpha, of_tensor_t** out_tensor);
/* leaky_relu: x > 0 ? x : negative_slope * x (PyTorch's default 0.01); negative_slope must be finite. */
OF_API of_status_t* of_leaky_relu(of_session_t* session, const of_tensor_t* x, double negative_slope,
                                  of_tensor_t** out_tensor);
/* hardtanh: x clamped to [min_val, max_val] (PyTorch's defaults -1, 1); min_val <= max_val, neither
 * NaN. The gradient is zero at and beyond the bounds. */
OF_API of_status_t* of_hardtanh(of_session_t* session, const of_tensor_t* x, double min_val, double max_val,
                                of_tensor_t** out_tensor);

/* Rounding: floor, ceil, round (halves to even: 0.5 -> 0, 1.5 -> 2, 2.5 -> 2, -0.5 -> -0) and trunc,
 * and sign (-1, 0 or 1; 0 for NaN and for -0). The result keeps x's dtype; integer inputs pass through
 * unchanged; bool is INVALID_ARGUMENT, except for sign, which returns it. Their gradients are zero. */
OF_API of_status_t* of_floor(of_session_t* session, const of_tensor_t* x, of_tensor_t** out_tensor);
OF_API of_status_t* of_ceil(of_session_t* session, const of_tensor_t* x, of_tensor_t** out_tensor);
OF_API of_status_t* of_round(of_session_t* session, const of_tensor_t* x, of_tensor_t** out_tensor);
OF_API of_status_t* of_trunc(of_session_t* session, const of_tensor_t* x, of_tensor_t** out_tensor);
OF_API of_status_t* of_sign(of_session_t* session, const of_tensor_t* x, of_tensor_t** out_tensor);

/* Whether each element is NaN, +-inf, or neither (finite). Any dtype (integers and bool are finite);
 * results are bool and not differentiable. */
OF_API of_status_t* of_isnan(of_session_t* session, const of_tensor_t* x, of_tensor_t** out_tensor);
OF_API of_status_t* of_isinf(of_session_t* session, const of_tensor_t* x, of_tensor_t** out_tensor);
OF_API of_status_t* of_isfinite(of_session_t* session, const of_tensor_t* x, of_tensor_t** out_tensor);

/* Binary (broadcasting, promoting, differentiable): atan2(a, b), the angle of (b, a) in [-pi, pi]
 * (integer operands give float32); fmod, a - trunc(a / b) * b, with the sign of a (C's fmod); remainder,
 * a - floor(a / b) * b, with the sign of b (Python's %). fmod and remainder take every dtype but bool;
 * an integer b with a zero element is INVALID_ARGUMENT ("division by zero"), a floating zero gives NaN.
 * Their gradients are dy for a and -dy * trunc(a / b) (fmod) or -dy * floor(a / b) (remainder) for b. */
OF_API of_status_t* of_atan2(of_session_t* session, const of_tensor_t* a, const of_tensor_t* b, of_tensor_t** out_tensor);
OF_API of_status_t* of_fmod(of_session_t* session, const of_tensor_t* a, const of_tensor_t* b, of_tensor_t** out_tensor);
OF_API of_status_t* of_remainder(of_session_t* session, const of_tensor_t* a, const of_tensor_t* b,
                                 of_tensor_t** out_tensor);

/* Bitwise and, or, xor (broadcasting, promoting) and not, of bool and integer dtypes (on bool they are
 * the logical ops); a floating operand, after promotion, is INVALID_ARGUMENT naming its dtype. Not
 * differentiable. */
OF_API of_status_t* of_bitwise_and(of_session_t* session, const of_tensor_t* a, const of_tensor_t* b,
                                   of_tensor_t** out_tensor);
OF_API of_status_t* of_bitwise_or(of_session_t* session, const of_tensor_t* a, const of_tensor_t* b,
                                  of_tensor_t** out_tensor);
OF_API of_status_t* of_bitwise_xor(of_session_t* session, const of_tensor_t* a, const of_tensor_t* b,
                                   of_tensor_t** out_tensor);
OF_API of_status_t* of_bitwise_not(of_session_t* session, const of_tensor_t* x, of_tensor_t** out_tensor);
/* a << b and a >> b (broadcasting, promoting) of integer dtypes (bool and floating are
 * INVALID_ARGUMENT); the right shift is arithmetic for signed a. As PyTorch, a count that is negative
 * or at least the dtype's width gives 0 for the left shift and the sign fill (0, or -1 for a negative
 * a) for the right shift; bits shifted out of the left are lost (int8 64 << 1 is -128). Not
 * differentiable. */
OF_API of_status_t* of_bitwise_left_shift(of_session_t* session, const of_tensor_t* a, const of_tensor_t* b,
                                          of_tensor_t** out_tensor);
OF_API of_status_t* of_bitwise_right_shift(of_session_t* session, const of_tensor_t* a, const of_tensor_t* b,
                                           of_tensor_t** out_tensor);

/* clamp: min(max(x, min), max), x, min and max broadcast together and promoted to one dtype (bool is
 * INVALID_ARGUMENT). min or max may be NULL (unbounded on that side); with both NULL *out_tensor is
 * x itself (a new reference). Where min > max the result is max; a NaN in x or in a bound gives NaN.
 * The gradient goes to x where min <= x <= max, else to the bound the result came from. */
OF_API of_status_t* of_clamp(of_session_t* session, const of_tensor_t* x, OF_NULLABLE const of_tensor_t* min,
                             OF_NULLABLE const of_tensor_t* max, of_tensor_t** out_tensor);
/* The same with scalar bounds, each made a 0-d tensor as the *_scalar functions do (an integer x with
 * a fractional bound gives float32, a bool x with integral bounds int64); min -inf and max +inf mean
 * unbounded on that side. */
OF_API of_status_t* of_clamp_scalar(of_session_t* session, const of_tensor_t* x, double min, double max,
                                    of_tensor_t** out_tensor);

/* ---- reductions (prod, logsumexp, all, any, norm) and scans (cumsum, cumprod) ----
 * Over `dims` with keepdim as of_sum (ndims 0 = every dim). */

/* Product. Floating x keeps its dtype; bool and integer x give int64 (wrapping on overflow, as
 * PyTorch); an empty product is 1. Differentiable, zeros in x included. */
OF_API of_status_t* of_prod(of_session_t* session, const of_tensor_t* x, const int64_t* dims, size_t ndims,
                            of_bool_t keepdim, of_tensor_t** out_tensor);
/* log(sum(exp(x))), computed stably (the maximum is subtracted first, so large x do not overflow).
 * x floating (other dtypes are INVALID_ARGUMENT); an empty reduction gives -inf. Differentiable. */
OF_API of_status_t* of_logsumexp(of_session_t* session, const of_tensor_t* x, const int64_t* dims, size_t ndims,
                                 of_bool_t keepdim, of_tensor_t** out_tensor);
/* Whether every (of_all) / any (of_any) element is non-zero (NaN counts as non-zero). x of any dtype;
 * the result is bool; an empty reduction gives 1 (all) and 0 (any). Not differentiable. */
OF_API of_status_t* of_all(of_session_t* session, const of_tensor_t* x, const int64_t* dims, size_t ndims,
                           of_bool_t keepdim, of_tensor_t** out_tensor);
OF_API of_status_t* of_any(of_session_t* session, const of_tensor_t* x, const int64_t* dims, size_t ndims,
                           of_bool_t keepdim, of_tensor_t** out_tensor);
/* The vector p-norm: p = 1 (sum |x|), 2 (sqrt(sum x^2)), INFINITY (max |x|) or -INFINITY (min |x|);
 * any other p is INVALID_ARGUMENT. x floating; the inf-norms of an empty reduction are
 * INVALID_ARGUMENT. Differentiable (as PyTorch: the 2-norm's gradient at 0 is 0; the inf-norms share
 * the gradient evenly among the elements that attain them). */
OF_API of_status_t* of_norm(of_session_t* session, const of_tensor_t* x, double p, const int64_t* dims, size_t ndims,
                            of_bool_t keepdim, of_tensor_t** out_tensor);

/* Running sum / product along `dim` (in [-ndim, ndim); a 0-d x is one element along dim 0 or -1):
 * out[..., i, ...] = x[..., 0, ...] + ... + x[..., i, ...] (times for of_cumprod), of x's shape.
 * Floating x keeps its dtype; bool and integer x give int64 (wrapping on overflow, as PyTorch).
 * Differentiable, zeros in x included. */
OF_API of_status_t* of_cumsum(of_session_t* session, const of_tensor_t* x, int64_t dim, of_tensor_t** out_tensor);
OF_API of_status_t* of_cumprod(of_session_t* session, const of_tensor_t* x, int64_t dim, of_tensor_t** out_tensor);

/* Gathers along `dim`: index (int64) has x's number of dims and sizes no larger than x's in every
 * dim but `dim`; the result has index's shape and x's dtype, with y[i][j] = x[index[i][j]][j] for
 * dim 0 and y[i][j] = x[i][index[i][j]] for dim 1. Every index must lie in [0, x's size at dim).
 * Any dtype; differentiable w.r.t. x (the gradient sums into the gathered positions). */
OF_API of_status_t* of_gather(of_session_t* session, const of_tensor_t* x, int64_t dim, const of_tensor_t* index,
                              of_tensor_t** out_tensor);
/* The slices of x along `dim` that index (int64, 1-D, or 0-d for one slice) names, in its order
 * (repeats allowed): x's shape with dim `dim` of index's length. Any dtype; x 0-d is INVALID_ARGUMENT. */
OF_API of_status_t* of_index_select(of_session_t* session, const of_tensor_t* x, int64_t dim,
                                    const of_tensor_t* index, of_tensor_t** out_tensor);
/* Out of place (x is not modified): a new tensor equal to x except y[index[i][j]][j] = src[i][j]
 * (dim 0; as of_gather for the other dims). index as for of_gather; src has index's shape (PyTorch
 * also accepts a larger src and reads its leading part) and x's dtype. Where index repeats a
 * position, the last write in index order wins. Any dtype. The gradient w.r.t. x is zero at the
 * written positions; w.r.t. src it is the result's gradient gathered at index. */
OF_API of_status_t* of_scatter(of_session_t* session, const of_tensor_t* x, int64_t dim, const of_tensor_t* index,
                               const of_tensor_t* src, of_tensor_t** out_tensor);
/* As of_scatter but y[index[i][j]][j] += src[i][j]: repeated positions sum (integer dtypes wrap).
 * Numeric dtypes (not bool, float16, bfloat16). The gradient w.r.t. x passes through. */
OF_API of_status_t* of_scatter_add(of_session_t* session, const of_tensor_t* x, int64_t dim,
                                   const of_tensor_t* index, const of_tensor_t* src, of_tensor_t** out_tensor);
/* x where mask (bool) is 0 and `value` where it is 1; x and mask broadcast, and the result has their
 * broadcast shape and x's dtype. value must be representable in x's dtype (INVALID_ARGUMENT
 * otherwise, as for of_full_like); -INFINITY for attention masks is fine in floating dtypes. */
OF_API of_status_t* of_masked_fill(of_session_t* session, const of_tensor_t* x, const of_tensor_t* mask, double value,
                                   of_tensor_t** out_tensor);
/* One-hot encoding: indices (int64, any shape) in [0, num_classes) -> indices' shape + (num_classes),
 * int64, 1 at each index and 0 elsewhere. num_classes must be >= 1: PyTorch's -1 (the largest index
 * + 1) would make the result's shape depend on the data, which a lazy graph cannot know when it is
 * built. Not differentiable. */
OF_API of_status_t* of_one_hot(of_session_t* session, const of_tensor_t* indices, int64_t num_classes,
                               of_tensor_t** out_tensor);
/* The positions of x's non-zero elements (NaN counts as non-zero; any dtype): int64 (count, ndim),
 * one row per element in row-major order ((count, 0) for a 0-d x). Eager only: the number of rows
 * depends on x's values, and no graph value can have a data-dependent size, so a call while a graph
 * is being built is INVALID_ARGUMENT. Not differentiable. */
OF_API of_status_t* of_nonzero(of_session_t* session, const of_tensor_t* x, of_tensor_t** out_tensor);

/* The lower (of_tril) or upper (of_triu) triangle of each matrix in x's last two dims (x has at least
 * 2 dims; leading dims are a batch): element (i, j) is kept where j - i <= diagonal (tril) or
 * j - i >= diagonal (triu) and is 0 elsewhere. diagonal 0 is the main diagonal, > 0 above it. Any
 * dtype. */
OF_API of_status_t* of_tril(of_session_t* session, const of_tensor_t* x, int64_t diagonal, of_tensor_t** out_tensor);
OF_API of_status_t* of_triu(of_session_t* session, const of_tensor_t* x, int64_t diagonal, of_tensor_t** out_tensor);
/* x with the order of the elements reversed along each of `dims` (no dim twice; none = a copy). Any
 * dtype; the result is a new tensor (a copy, as PyTorch's flip). */
OF_API of_status_t* of_flip(of_session_t* session, const of_tensor_t* x, const int64_t* dims, size_t ndims,
                            of_tensor_t** out_tensor);
/* Rolls x by shifts[k] positions along dims[k] (elements leaving one end come back at the other;
 * negative shifts roll backwards; a dim named twice rolls by the sum). nshifts must equal ndims,
 * except that with ndims 0 a single shift rolls the flattened tensor, whose result keeps x's shape (as
 * PyTorch). INT64_MIN as a shift is INVALID_ARGUMENT. Any dtype. */
OF_API of_status_t* of_roll(of_session_t* session, const of_tensor_t* x, const int64_t* shifts, size_t nshifts,
                            const int64_t* dims, size_t ndims, of_tensor_t** out_tensor);
/* PyTorch's Tensor.repeat: x tiled repeats[d] times along dim d. nrepeats must be >= x's number of
 * dims; x first gets leading size-1 dims to match (so (3) with repeats (2, 2) gives (2, 6)). Each
 * repeat >= 0. Any dtype. */
OF_API of_status_t* of_repeat(of_session_t* session, const of_tensor_t* x, const int64_t* repeats, size_t nrepeats,
                              of_tensor_t** out_tensor);
/* x[start:end:step] along `dim`, with NumPy's rules: a negative start or end counts from the end of the
 * dim, then both are clamped to the dim, so out-of-range bounds are not errors; INT64_MAX and
 * INT64_MIN stand for an omitted bound (x[::-1] is start INT64_MAX, end INT64_MIN, step -1). step must
 * not be 0 and may be negative, which PyTorch forbids (NumPy allows it). For step > 0 the result is a
 * view sharing x's memory; for step < 0 a copy. Any dtype. */
OF_API of_status_t* of_slice(of_session_t* session, const of_tensor_t* x, int64_t dim, int64_t start, int64_t end,
                             int64_t step, of_tensor_t** out_tensor);

/* Ordering. NaN counts as larger than every number (PyTorch's order): an ascending sort puts NaNs
 * last, a descending one and largest-topk first. Numeric dtypes (not bool, float16, bfloat16).
 * The index (int64) of the first minimum along `dim` (the first NaN when the line has one, as for
 * of_argmax); a dim of size 0 is INVALID_ARGUMENT. Not differentiable. */
OF_API of_status_t* of_argmin(of_session_t* session, const of_tensor_t* x, int64_t dim, of_bool_t keepdim,
                              of_tensor_t** out_tensor);
/* The k largest (largest 1) or smallest (0) elements along `dim`, k in [0, size of dim]: values (x's
 * dtype) and their int64 positions along dim, both x's shape with dim of size k. The values always
 * come sorted (largest first for largest 1); sorted 0 is accepted and changes nothing. Ties go to the
 * lower position. Both results are new references, written only on success; the values are
 * differentiable (the gradient goes back to the positions they came from). */
OF_API of_status_t* of_topk(of_session_t* session, const of_tensor_t* x, int64_t k, int64_t dim, of_bool_t largest,
                            of_bool_t sorted, of_tensor_t** out_values, of_tensor_t** out_indices);
/* Sorts along `dim`, ascending (descending 0) or descending: values and int64 positions as for
 * of_topk, with x's shape. Always stable: equal elements keep their order, in both directions
 * (PyTorch's stable=True). */
OF_API of_status_t* of_sort(of_session_t* session, const of_tensor_t* x, int64_t dim, of_bool_t descending,
                            of_tensor_t** out_values, of_tensor_t** out_indices);

/* ---- window: max pooling with its indices, max unpooling (conv2d and the poolings are above) ---- */
/* Max pooling as of_max_pool2d (the same options, asymmetric padding_end included), with the int64
 * indices of the maxima as well: h * W + w within each (n, c) plane of x, as PyTorch's
 * return_indices; the first maximum in the window (row-major) on ties, the last NaN where the window
 * holds NaNs (the value is then NaN); -1 (value -inf) where a dilated window misses the input.
 * values and indices have one shape. The values are differentiable (the gradient goes back to the
 * indices' positions), the indices are not. Both are new references, written only on success. */
OF_API of_status_t* of_max_pool2d_with_indices(of_session_t* session, const of_tensor_t* x,
                                               const of_pool2d_options_t* options, of_tensor_t** out_values,
                                               of_tensor_t** out_indices);
/* The inverse of max pooling (PyTorch's max_unpool2d): zeros of (N, C, H', W') with x (N, C, H, W)
 * written at `indices` (int64, x's shape, flat positions h' * W' + w' within each output plane, as
 * of_max_pool2d_with_indices gives). output_size (n values) gives (H', W'): n = 0 for the default
 * (H - 1) * stride - padding - padding_end + kernel_size (W' alike) from options (required: the
 * kernel size; dilation, ceil_mode and count_include_pad are not read), n = 2 for (H', W'), n = 4 for
 * (N, C, H', W') of which the last two count; a given size must lie within stride of the default,
 * and each must be >= 1. An index outside [0, H' * W') is INVALID_ARGUMENT naming its position.
 * Where indices repeat, the later element of x wins. x takes every numeric dtype (not bool);
 * differentiable in x: the gradient gathers at the indices (as PyTorch's, repeated ones included). */
OF_API of_status_t* of_max_unpool2d(of_session_t* session, const of_tensor_t* x, const of_tensor_t* indices,
                                    const of_pool2d_options_t* options, const int64_t* output_size, size_t n,
                                    of_tensor_t** out_tensor);

/* ---- convolution: transposed and 1-D (conv2d is above) ---- */

/* Options of of_conv_transpose2d. Each pair is (height, width). */
typedef struct of_conv_transpose2d_options_t {
  size_t struct_size;        /* sizeof(of_conv_transpose2d_options_t), set by of_conv_transpose2d_options_init */
  int64_t stride[2];         /* >= 1; default 1, 1 */
  int64_t padding[2];        /* removed from both sides of the output, >= 0; default 0, 0 */
  int64_t output_padding[2]; /* added to one side of the output, >= 0 and smaller than stride or than
                                dilation (as PyTorch); default 0, 0 */
  int64_t dilation[2];       /* spacing of the kernel taps, >= 1; default 1, 1 */
  int64_t groups;            /* >= 1, dividing the input channels; default 1 */
} of_conv_transpose2d_options_t;
/* Fills `options` with the defaults and sets struct_size. NULL is ignored. */
OF_API void of_conv_transpose2d_options_init(of_conv_transpose2d_options_t* options);
/* 2-D transposed convolution (PyTorch's conv_transpose2d, the adjoint of of_conv2d with the same
 * options): x (N, C_in, H, W), weight (C_in, C_out / groups, kH, kW) as PyTorch lays it out, bias
 * (C_out) or NULL, all float32 or all float64; the result is (N, C_out, H', W') with
 * H' = (H - 1) * stride[0] - 2 * padding[0] + dilation[0] * (kH - 1) + output_padding[0] + 1, W' alike,
 * which must be >= 1. H and W must be >= 1 and kH, kW >= 1; (H - 1) * stride + dilation * (kH - 1) +
 * output_padding + 1 (W alike) must fit in int64. N = 0, C_in = 0 (the result is the bias) and
 * C_out = 0 are allowed. Differentiable in x, weight and bias. options may be NULL for the defaults. */
OF_API of_status_t* of_conv_transpose2d(of_session_t* session, const of_tensor_t* x, const of_tensor_t* weight,
                                        OF_NULLABLE const of_tensor_t* bias,
                                        OF_NULLABLE const of_conv_transpose2d_options_t* options,
                                        of_tensor_t** out_tensor);

/* Options of of_conv1d. */
typedef struct of_conv1d_options_t {
  size_t struct_size; /* sizeof(of_conv1d_options_t), set by of_conv1d_options_init */
  int64_t stride;     /* >= 1; default 1 */
  int64_t padding;    /* zeros added on both sides, >= 0; default 0 */
  int64_t dilation;   /* spacing of the kernel taps, >= 1; default 1 */
  int64_t groups;     /* >= 1, dividing both the input and the output channels; default 1 */
} of_conv1d_options_t;
/* Fills `options` with the defaults and sets struct_size. NULL is ignored. */
OF_API void of_conv1d_options_init(of_conv1d_options_t* options);
/* 1-D convolution (cross-correlation, as PyTorch): x (N, C, L), weight (O, C / groups, K), bias (O) or
 * NULL, all float32 or all float64; the result is (N, O, L') with
 * L' = (L + 2 * padding - dilation * (K - 1) - 1) / stride + 1 (rounded down), which must be >= 1.
 * Computed as of_conv2d of x viewed as (N, C, 1, L) (its rules for empty operands and extreme
 * attributes apply; errors it finds name conv1d and the 2-D view). options may be NULL for the
 * defaults. */
OF_API of_status_t* of_conv1d(of_session_t* session, const of_tensor_t* x, const of_tensor_t* weight,
                              OF_NULLABLE const of_tensor_t* bias, OF_NULLABLE const of_conv1d_options_t* options,
                              of_tensor_t** out_tensor);

/* Options of of_conv_transpose1d. */
typedef struct of_conv_transpose1d_options_t {
  size_t struct_size;     /* sizeof(of_conv_transpose1d_options_t), set by of_conv_transpose1d_options_init */
  int64_t stride;         /* >= 1; default 1 */
  int64_t padding;        /* removed from both sides of the output, >= 0; default 0 */
  int64_t output_padding; /* added to one side of the output, >= 0 and smaller than stride or than
                             dilation; default 0 */
  int64_t dilation;       /* spacing of the kernel taps, >= 1; default 1 */
  int64_t groups;         /* >= 1, dividing the input channels; default 1 */
} of_conv_transpose1d_options_t;
/* Fills `options` with the defaults and sets struct_size. NULL is ignored. */
OF_API void of_conv_transpose1d_options_init(of_conv_transpose1d_options_t* options);
/* 1-D transposed convolution (PyTorch's conv_transpose1d): x (N, C_in, L), weight
 * (C_in, C_out / groups, K), bias (C_out) or NULL, all float32 or all float64; the result is
 * (N, C_out, L') with L' = (L - 1) * stride - 2 * padding + dilation * (K - 1) + output_padding + 1,
 * which must be >= 1; L >= 1. Computed as of_conv_transpose2d of x viewed as (N, C_in, 1, L).
 * options may be NULL for the defaults. */
OF_API of_status_t* of_conv_transpose1d(of_session_t* session, const of_tensor_t* x, const of_tensor_t* weight,
                                        OF_NULLABLE const of_tensor_t* bias,
                                        OF_NULLABLE const of_conv_transpose1d_options_t* options,
                                        of_tensor_t** out_tensor);

/* Options of of_conv3d. Arrays are (depth, height, width). */
typedef struct of_conv3d_options_t {
  size_t struct_size;  /* sizeof(of_conv3d_options_t), set by of_conv3d_options_init */
  int64_t stride[3];   /* each >= 1; default 1 */
  int64_t padding[3];  /* zeros added on both sides, each >= 0; default 0 */
  int64_t dilation[3]; /* spacing of the kernel taps, each >= 1; default 1 */
  int64_t groups;      /* >= 1, dividing both the input and the output channels; default 1 */
} of_conv3d_options_t;
/* Fills `options` with the defaults and sets struct_size. NULL is ignored. */
OF_API void of_conv3d_options_init(of_conv3d_options_t* options);
/* 3-D convolution (cross-correlation, as PyTorch): x (N, C, D, H, W), weight (O, C / groups, kD, kH, kW),
 * bias (O) or NULL, all of one floating dtype; the result is (N, O, D', H', W') with
 * D' = (D + 2 * padding[0] - dilation[0] * (kD - 1) - 1) / stride[0] + 1 (rounded down; H', W' alike),
 * each of which must be >= 1. Zero input channels give the bias; empty kernels are refused, as are
 * other ranks and dtypes (INVALID_ARGUMENT naming the argument; integer dtypes UNIMPLEMENTED).
 * Differentiable in x, weight and bias. options may be NULL for the defaults. */
OF_API of_status_t* of_conv3d(of_session_t* session, const of_tensor_t* x, const of_tensor_t* weight,
                              OF_NULLABLE const of_tensor_t* bias, OF_NULLABLE const of_conv3d_options_t* options,
                              of_tensor_t** out_tensor);

/* ---- resampling (pad, interpolate, pixel_shuffle, pixel_unshuffle) ---- */

/* How of_pad fills the border. Append only. */
typedef int32_t of_pad_mode_t;
enum of_pad_modes {
  OF_PAD_CONSTANT = 0,  /* options->value */
  OF_PAD_REFLECT = 1,   /* x mirrored at its edge, the edge not repeated: (1 2 3) padded by 2 is (3 2 1 2 3 2 1) */
  OF_PAD_REPLICATE = 2, /* the edge element repeated: (1 1 1 2 3 3 3) */
  OF_PAD_CIRCULAR = 3   /* x wrapped around: (2 3 1 2 3 1 2) */
};
/* Options of of_pad. */
typedef struct of_pad_options_t {
  size_t struct_size; /* sizeof(of_pad_options_t), set by of_pad_options_init */
  of_pad_mode_t mode; /* OF_PAD_*; default OF_PAD_CONSTANT */
  double value;       /* the fill of OF_PAD_CONSTANT, representable in x's dtype (as for of_full_like);
                         must be 0 for the other modes; default 0 */
} of_pad_options_t;
/* Fills `options` with the defaults and sets struct_size. NULL is ignored. */
OF_API void of_pad_options_init(of_pad_options_t* options);
/* Pads x as PyTorch's F.pad: `pads` pairs up from the last dim backwards, (left, right) of the last
 * dim, then (top, bottom) of the one before, and so on; npads is even and at most 2 * ndim (0: a copy
 * of x). Each padded dim grows by its two pads. OF_PAD_CONSTANT takes any pads: negative ones crop
 * (the result's sizes must stay >= 0). The other modes need pads >= 0, and per padded dim of size n:
 * REFLECT each pad < n, REPLICATE n >= 1, CIRCULAR each pad <= n. Unlike PyTorch, which limits them
 * to the last 1-3 dims of a 2-5-D input, every mode pads any trailing dims of any rank. Any dtype
 * (elements are copied, never converted). Differentiable: the gradient of CONSTANT is the gradient's
 * crop; the others sum the gradient of every padded cell into the cell it copies. options may be NULL
 * for the defaults (constant padding with 0). This takes the mode and value in an options struct where
 * F.pad takes keyword arguments. */
OF_API of_status_t* of_pad(of_session_t* session, const of_tensor_t* x, const int64_t* pads, size_t npads,
                           OF_NULLABLE const of_pad_options_t* options, of_tensor_t** out_tensor);

/* How of_interpolate computes each output. Append only. */
typedef int32_t of_interpolate_mode_t;
enum of_interpolate_modes {
  OF_INTERPOLATE_NEAREST = 0,       /* PyTorch's 'nearest': input floor(dst * scale) */
  OF_INTERPOLATE_NEAREST_EXACT = 1, /* 'nearest-exact': input floor((dst + 0.5) * scale) */
  OF_INTERPOLATE_LINEAR = 2,        /* 'linear', 'bilinear' or 'trilinear' by the spatial rank */
  OF_INTERPOLATE_BICUBIC = 3        /* 'bicubic': PyTorch's cubic convolution (A = -0.75) over 4 inputs
                                       per spatial dim, clamped to the edge; also for 1 and 3 spatial
                                       dims (the same separable filter), which PyTorch does not take */
};
/* Options of of_interpolate. */
typedef struct of_interpolate_options_t {
  size_t struct_size;         /* sizeof(of_interpolate_options_t), set by of_interpolate_options_init */
  of_interpolate_mode_t mode; /* OF_INTERPOLATE_*; default OF_INTERPOLATE_NEAREST */
  of_bool_t align_corners;    /* LINEAR and BICUBIC only (as PyTorch): 1 maps the corner pixels'
                                 centres onto each other, scale (in - 1) / (out - 1); default 0 */
  double scale_factor[3];     /* per spatial dim (the first nsize entries; the rest must be 0), finite
                                 and >= 0: the coordinate mapping's scale is 1 / scale_factor, as
                                 F.interpolate(scale_factor=s, recompute_scale_factor=False); 0
                                 (default) = in / out. align_corners ignores it */
} of_interpolate_options_t;
/* Fills `options` with the defaults and sets struct_size. NULL is ignored. */
OF_API void of_interpolate_options_init(of_interpolate_options_t* options);
/* Resamples x (N, C, spatial...) with 1-3 spatial dims, each of size >= 1, to (N, C, size...) as
 * PyTorch's F.interpolate: nsize is the number of spatial dims and size[k] the output's size k (>= 1),
 * or 0 to take floor(in * scale_factor[k]) (which must then be > 0 and give >= 1). With both given,
 * size is the output's and scale_factor maps coordinates (aten's upsample_*(x, size, scales)). The
 * nearest modes compute the scale in float32, as PyTorch; LINEAR interpolates between the two nearest
 * inputs of each spatial dim (source coordinates clamped to [0, in - 1], as PyTorch), BICUBIC over four
 * (its results may overshoot the inputs' range), in float32 for float32 x and float64 for float64 x.
 * x is floating point (other dtypes are INVALID_ARGUMENT). Differentiable in x: the gradient sums each
 * output's gradient into the inputs it read, with their weights. options may be NULL for the defaults
 * (nearest). */
OF_API of_status_t* of_interpolate(of_session_t* session, const of_tensor_t* x, const int64_t* size, size_t nsize,
                                   OF_NULLABLE const of_interpolate_options_t* options, of_tensor_t** out_tensor);
/* Pixel shuffle: x (..., C * r * r, H, W) -> (..., C, H * r, W * r) with r = upscale_factor (>= 1),
 * out[..., c, h * r + i, w * r + j] = x[..., c * r * r + i * r + j, h, w], as PyTorch's
 * F.pixel_shuffle; x has at least 3 dims and its channels are divisible by r * r. of_pixel_unshuffle
 * is the inverse, (..., C, H * r, W * r) -> (..., C * r * r, H, W) with r = downscale_factor, H * r
 * and W * r divisible by r. Any dtype (elements are copied). Differentiable: each is the other's
 * gradient. */
OF_API of_status_t* of_pixel_shuffle(of_session_t* session, const of_tensor_t* x, int64_t upscale_factor,
                                     of_tensor_t** out_tensor);
OF_API of_status_t* of_pixel_unshuffle(of_session_t* session, const of_tensor_t* x, int64_t downscale_factor,
                                       of_tensor_t** out_tensor);

/* The op registry, for bindings and tools: the number of registered ops, and the name of op `index`
 * in [0, count) in name order ("add", "conv2d", ... including backward-helper ops). *out_name is a
 * static NUL-terminated string, borrowed for the life of the process. OUT_OF_RANGE for an index past
 * the end. Thread-safe. */
OF_API of_status_t* of_op_count(size_t* out_count);
OF_API of_status_t* of_op_name(size_t index, const char** out_name);

/*===--- end of ops -------------------------------------------------------------------------===*/

/*===--- autograd ---------------------------------------------------------------------------===*/

/* Eager autograd. A leaf tensor marked requires_grad (floating dtypes only) makes every
 * differentiable op that uses it, while grad mode is on, record a node of the backward graph; the
 * result is then a non-leaf tensor that requires grad. of_tensor_backward walks that graph from a
 * root and ADDS the root's gradient with respect to each leaf that requires grad into the leaf's
 * grad (it accumulates across calls; clear it with of_tensor_set_grad(t, NULL)).
 *
 * Threads: grad mode is a property of the CALLING THREAD (as in PyTorch), on by default on every
 * thread. Go callers must runtime.LockOSThread() around a region that switches it off, since a
 * goroutine may otherwise move to another thread in the middle. The autograd state of a tensor
 * (requires_grad, grad, and the graph it roots) must not be used from two threads at once, and two
 * backward calls through a shared part of a graph must not run at the same time. */

/* Marks a leaf tensor as needing gradients (1) or not (0). INVALID_ARGUMENT for a non-leaf tensor
 * (its requirement follows from its inputs: use of_tensor_detach) and for setting 1 on a tensor that
 * is not floating. */
OF_API of_status_t* of_tensor_set_requires_grad(of_tensor_t* tensor, of_bool_t requires_grad);
/* 1 if gradients flow to or through the tensor, else 0. */
OF_API of_status_t* of_tensor_requires_grad(const of_tensor_t* tensor, of_bool_t* out_requires_grad);
/* 1 for a leaf (made by the user, by an op while grad mode was off or from inputs that do not
 * require grad, or by of_tensor_detach), 0 for a tensor that an op recorded in the backward graph. */
OF_API of_status_t* of_tensor_is_leaf(const of_tensor_t* tensor, of_bool_t* out_is_leaf);
/* The tensor's accumulated gradient: a new reference (release it), or NULL when the tensor has no
 * gradient yet (only leaves get one). The gradient tensor is never modified afterwards: a later
 * backward stores a new one. */
OF_API of_status_t* of_tensor_grad(const of_tensor_t* tensor, of_tensor_t** out_grad);
/* Replaces the tensor's gradient by `grad` (borrowed: the tensor keeps its own reference to grad's
 * data, without grad's autograd state), or clears it when grad is NULL (zero_grad). grad must have
 * the tensor's shape, dtype and device (INVALID_ARGUMENT naming both otherwise). */
OF_API of_status_t* of_tensor_set_grad(of_tensor_t* tensor, OF_NULLABLE const of_tensor_t* grad);
/* A new leaf tensor (new reference) sharing the tensor's data, that does not require grad and is
 * outside every backward graph. */
OF_API of_status_t* of_tensor_detach(const of_tensor_t* tensor, of_tensor_t** out_tensor);
/* Computes the gradients of `tensor` (which must require grad) and accumulates them into the leaves'
 * grads. grad is the gradient of `tensor` (same shape, dtype and device; borrowed), or NULL for an
 * implicit 1, which needs a tensor of one element (a scalar loss); a leaf's stored gradient never
 * shares memory with `grad` or with the leaf (it is copied where it would). Unless retain_graph is 1, the
 * graph's saved tensors are freed once the walk is done, and a second backward through any part of it
 * is FAILED_PRECONDITION. Backward ops run on `session`'s thread pool, with grad mode off.
 * A tensor an op saved for its gradient (mul's operands, relu's result, ...) and that was then written
 * in place (an initialiser, an optimizer step, of_safetensors_load_into, an op that updates its input,
 * through any view of the same memory) makes backward FAILED_PRECONDITION naming the op and the
 * tensor: its gradient would be wrong. Writes to adopted memory behind the library's back are not
 * seen. A failed backward stores no gradient and frees nothing. */
OF_API of_status_t* of_tensor_backward(of_session_t* session, of_tensor_t* tensor, OF_NULLABLE const of_tensor_t* grad,
                                       of_bool_t retain_graph);
/* Switches grad mode on (1) or off (0) for the calling thread; *out_previous (when not NULL) receives
 * the mode before the call, to restore it afterwards. While it is off, ops record nothing (no-grad
 * evaluation, optimizer updates). */
OF_API of_status_t* of_grad_set_enabled(of_bool_t enabled, OF_NULLABLE of_bool_t* out_previous);
/* The calling thread's grad mode: 1 (on, the default) or 0. */
OF_API of_status_t* of_grad_is_enabled(of_bool_t* out_enabled);
/* Autocast, mixed precision for the calling thread (PyTorch's torch.autocast). While its dtype is
 * float16 or bfloat16, the ops whose cost is arithmetic (conv2d, conv3d, conv_transpose2d, matmul,
 * linear) take their float32 inputs cast to it (they store half and accumulate in float32; their
 * outputs are in it), and the ops that need float32's range or precision (softmax, log_softmax,
 * cross_entropy, nll_loss and the other losses, batch_norm, layer_norm, group_norm, instance_norm,
 * logsumexp) take float16/bfloat16 inputs cast to float32. Other ops run in their inputs' dtypes
 * (mixed operands promote: bfloat16 + float32 is float32). float64 inputs and the inputs an op
 * updates in place (running statistics) are never cast. The casts are cast ops: autograd carries the
 * gradients back through them, so float32 parameters (the master weights an optimizer updates) get
 * float32 gradients, and a graph traced in the mode holds them as nodes. Backward runs with autocast
 * off (gradients keep the forward's dtypes). `dtype` NULL switches it off (the default); other dtypes
 * are INVALID_ARGUMENT and change nothing. *out_previous (when not NULL) receives the dtype before the
 * call (NULL when it was off), to restore it afterwards. */
OF_API of_status_t* of_autocast_set(OF_NULLABLE const of_dtype_t* dtype, OF_NULLABLE const of_dtype_t** out_previous);
/* The calling thread's autocast dtype: float16, bfloat16, or NULL when off. */
OF_API of_status_t* of_autocast_get(const of_dtype_t** out_dtype);

/*===--- end of autograd --------------------------------------------------------------------===*/

/*===--- training: initialisers and optimizers ----------------------------------------------===*/

/* Initialisers (PyTorch's torch.nn.init) fill `tensor` IN PLACE: a floating-point CPU tensor of any
 * layout whose elements do not share memory (an expanded view is INVALID_ARGUMENT; borrowed; it must
 * not be in use by another thread). The random ones draw from `session`'s generator (reproducible
 * for a seed, whatever the thread count) and run on its thread pool. They write no autograd state
 * (but count as an in-place write for of_tensor_backward). A zero-element tensor is left as it is.
 * INVALID_ARGUMENT for a NULL session or tensor, a tensor that is not floating or not on the CPU, a
 * non-finite parameter, parameters whose values the dtype cannot represent (they would be written as
 * inf), and as each function says; a failed call writes nothing and leaves the generator alone. */

/* Uniform in [a, b); a <= b, both representable in the dtype, and b - a finite. */
OF_API of_status_t* of_init_uniform(of_session_t* session, of_tensor_t* tensor, double a, double b);
/* Normal with mean `mean` and standard deviation `std` >= 0, such that |mean| + std * zmax is
 * representable in the dtype, zmax being the largest draw (about 5.77 for float32 and the 16-bit
 * dtypes, drawn in float32; 8.57 for float64). Kaiming and Xavier below follow the same rules. */
OF_API of_status_t* of_init_normal(of_session_t* session, of_tensor_t* tensor, double mean, double std);
/* Every element `value`, which must be representable in the dtype (as for of_tensor_full). */
OF_API of_status_t* of_init_constant(of_session_t* session, of_tensor_t* tensor, double value);

/* Which fan the Kaiming initialisers divide by. For a weight (out, in, k...) such as a linear (out, in)
 * or conv2d (O, I / groups, kH, kW) weight, fan_in = in * prod(k) and fan_out = out * prod(k); tensors
 * with fewer than 2 dims have no fans (INVALID_ARGUMENT). Append only. */
typedef int32_t of_fan_mode_t;
enum of_fan_modes {
  OF_FAN_MODE_FAN_IN = 0, /* preserves the variance of the activations in the forward pass */
  OF_FAN_MODE_FAN_OUT = 1 /* preserves the variance of the gradients in the backward pass */
};
/* The nonlinearity that follows the layer, which sets the gain (PyTorch's calculate_gain). Append
 * only. */
typedef int32_t of_nonlinearity_t;
enum of_nonlinearities {
  OF_NONLINEARITY_LINEAR = 0,    /* gain 1 */
  OF_NONLINEARITY_SIGMOID = 1,   /* gain 1 */
  OF_NONLINEARITY_TANH = 2,      /* gain 5/3 */
  OF_NONLINEARITY_RELU = 3,      /* gain sqrt(2) */
  OF_NONLINEARITY_LEAKY_RELU = 4 /* gain sqrt(2 / (1 + a^2)) */
};
/* Options of the Kaiming (He) initialisers. */
typedef struct of_kaiming_options_t {
  size_t struct_size;              /* sizeof(of_kaiming_options_t), set by of_kaiming_options_init */
  double a;                        /* negative slope of leaky_relu; default 0 */
  of_fan_mode_t mode;              /* OF_FAN_MODE_*; default OF_FAN_MODE_FAN_IN */
  of_nonlinearity_t nonlinearity;  /* OF_NONLINEARITY_*; default OF_NONLINEARITY_LEAKY_RELU */
} of_kaiming_options_t;
/* Fills `options` with the defaults (PyTorch's) and sets struct_size. NULL is ignored. */
OF_API void of_kaiming_options_init(of_kaiming_options_t* options);
/* std = gain / sqrt(fan): uniform in [-sqrt(3) * std, sqrt(3) * std), or normal(0, std).
 * options may be NULL for the defaults; an unknown mode or nonlinearity is INVALID_ARGUMENT. */
OF_API of_status_t* of_init_kaiming_uniform(of_session_t* session, of_tensor_t* tensor,
                                            OF_NULLABLE const of_kaiming_options_t* options);
OF_API of_status_t* of_init_kaiming_normal(of_session_t* session, of_tensor_t* tensor,
                                           OF_NULLABLE const of_kaiming_options_t* options);
/* Xavier (Glorot): std = gain * sqrt(2 / (fan_in + fan_out)), gain >= 0 (1 for PyTorch's default):
 * uniform in [-sqrt(3) * std, sqrt(3) * std), or normal(0, std). */
OF_API of_status_t* of_init_xavier_uniform(of_session_t* session, of_tensor_t* tensor, double gain);
OF_API of_status_t* of_init_xavier_normal(of_session_t* session, of_tensor_t* tensor, double gain);

/* Optimizers update a fixed list of parameters (leaf tensors) from their grads, with PyTorch's
 * semantics. An optimizer holds a reference to each parameter (so they live at least as long as it)
 * and its own state (momentum buffers, moment estimates). It is not thread-safe: one thread at a time
 * may use it, and no other thread may use the parameters during of_optimizer_step. */
typedef struct of_optimizer_t of_optimizer_t;

/* Options of SGD. */
typedef struct of_sgd_options_t {
  size_t struct_size;  /* sizeof(of_sgd_options_t), set by of_sgd_options_init */
  double lr;           /* learning rate, >= 0; default 0.001 */
  double momentum;     /* >= 0; default 0 (no momentum buffer) */
  double dampening;    /* default 0 */
  double weight_decay; /* L2 penalty added to the gradient, >= 0; default 0 */
  of_bool_t nesterov;    /* 1: Nesterov momentum (needs momentum > 0 and dampening 0); default 0 */
} of_sgd_options_t;
/* Fills `options` with the defaults and sets struct_size. NULL is ignored. */
OF_API void of_sgd_options_init(of_sgd_options_t* options);

/* Options of Adam and AdamW. */
typedef struct of_adam_options_t {
  size_t struct_size;             /* sizeof(of_adam_options_t), set by of_adam_options_init */
  double lr;                      /* learning rate, >= 0; default 0.001 */
  double beta1;                   /* in [0, 1); default 0.9 */
  double beta2;                   /* in [0, 1); default 0.999 */
  double eps;                     /* >= 0; default 1e-8 */
  double weight_decay;            /* >= 0; default 0 (PyTorch's AdamW uses 0.01) */
  of_bool_t decoupled_weight_decay; /* 0 (default): Adam, weight decay added to the gradient;
                                     1: AdamW, param *= 1 - lr * weight_decay before the update */
} of_adam_options_t;
/* Fills `options` with the defaults and sets struct_size. NULL is ignored. */
OF_API void of_adam_options_init(of_adam_options_t* options);

/* Creates an optimizer over the n >= 1 parameters `params` (an array of n distinct, non-NULL handles;
 * the optimizer retains each). Every parameter must be a contiguous floating-point CPU leaf
 * tensor (INVALID_ARGUMENT naming its index otherwise), and the options valid (INVALID_ARGUMENT
 * naming the field); options may be NULL for the defaults. `session` is required and the optimizer
 * does not depend on it afterwards. *out_optimizer is owned by the caller: free it with
 * of_optimizer_destroy. */
OF_API of_status_t* of_optimizer_sgd_create(of_session_t* session, of_tensor_t* const* params, size_t n,
                                            OF_NULLABLE const of_sgd_options_t* options, of_optimizer_t** out_optimizer);
/* Adam, or AdamW with options->decoupled_weight_decay. Bias correction uses each parameter's own step
 * count (the number of steps in which it had a grad). */
OF_API of_status_t* of_optimizer_adam_create(of_session_t* session, of_tensor_t* const* params, size_t n,
                                             OF_NULLABLE const of_adam_options_t* options, of_optimizer_t** out_optimizer);
/* Updates, in place, every parameter that has a grad (see of_tensor_grad), running on `session`'s
 * thread pool with grad mode off; parameters without a grad are skipped and their state is not
 * advanced. A grad whose dtype, shape or device differs from its parameter's is INVALID_ARGUMENT
 * naming the parameter's index; all grads are checked before any parameter is updated. */
OF_API of_status_t* of_optimizer_step(of_session_t* session, of_optimizer_t* optimizer);
/* Clears every parameter's grad (sets it to none, as PyTorch's zero_grad). */
OF_API of_status_t* of_optimizer_zero_grad(of_optimizer_t* optimizer);
/* The learning rate used by the following steps (e.g. for a schedule): finite and >= 0. */
OF_API of_status_t* of_optimizer_set_lr(of_optimizer_t* optimizer, double lr);
OF_API of_status_t* of_optimizer_lr(const of_optimizer_t* optimizer, double* out_lr);
/* Frees the optimizer and releases its references to the parameters. NULL is fine. */
OF_API void of_optimizer_destroy(of_optimizer_t* optimizer);

/* Dynamic loss scaling, for float16 mixed precision (PyTorch's GradScaler): float16 gradients
 * underflow, so the loss is multiplied by a scale S before backward and the optimizer divides the
 * gradients by S again. Each step (of_optimizer_step, or a graph run with the optimizer attached) first
 * checks every gradient for inf/NaN; if one holds any, the step is skipped (no parameter or state is
 * written; Adam's step count does not advance) and S is multiplied by backoff_factor, otherwise the
 * update reads grad / S, and after growth_interval such steps in a row S is multiplied by
 * growth_factor (when that stays finite in float32). In a graph this happens inside the run, and a
 * data-parallel graph checks the averaged gradients, so every rank skips the same steps. bfloat16
 * autocast has float32's range and needs no scaling. */
typedef struct of_loss_scale_options_t {
  size_t struct_size;      /* sizeof(of_loss_scale_options_t), set by of_loss_scale_options_init */
  double init_scale;       /* the first S: finite, > 0; default 65536 (2^16) */
  double growth_factor;    /* finite, > 1; default 2 */
  double backoff_factor;   /* in (0, 1); default 0.5 */
  int64_t growth_interval; /* steps without inf/NaN before S grows, >= 1; default 2000 */
} of_loss_scale_options_t;
/* Fills `options` with the defaults and sets struct_size. NULL is ignored. */
OF_API void of_loss_scale_options_init(of_loss_scale_options_t* options);
/* Turns loss scaling on (options NULL: the defaults); INVALID_ARGUMENT naming a bad field.
 * FAILED_PRECONDITION when it is already on, or after the optimizer's first step or of_graph_add_optimizer
 * (the scale must be there from the start). */
OF_API of_status_t* of_optimizer_enable_loss_scaling(of_session_t* session, of_optimizer_t* optimizer,
                                                     OF_NULLABLE const of_loss_scale_options_t* options);
/* *out_scaled = loss * S, a new tensor owned by the caller: call of_tensor_backward on it instead of on
 * the loss. It is an op like any other: differentiable, and in a graph build traced so that each run
 * reads the current S. `loss` must be floating point (keep it float32: autocast computes losses in
 * float32, and float16 cannot hold S's default); FAILED_PRECONDITION when loss scaling is off. */
OF_API of_status_t* of_optimizer_scale_loss(of_session_t* session, of_optimizer_t* optimizer, of_tensor_t* loss,
                                            of_tensor_t** out_scaled);
/* The current scale (1 when loss scaling is off) and the number of steps skipped so far (0 when off);
 * either out pointer may be NULL. */
OF_API of_status_t* of_optimizer_loss_scale(const of_optimizer_t* optimizer, OF_NULLABLE double* out_scale,
                                            OF_NULLABLE int64_t* out_skipped_steps);

/*===--- end of training --------------------------------------------------------------------===*/

/*===--- saving and loading: safetensors ----------------------------------------------------===*/

/* Named tensors in the safetensors format (https://github.com/huggingface/safetensors), which
 * PyTorch, JAX and the Hugging Face libraries read and write: an 8-byte little-endian header size N,
 * N bytes of JSON {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...},
 * then the tensors' bytes. Dtypes: BOOL U8 I8 I16 I32 I64 F16 BF16 F32 F64. Paths are NUL-terminated
 * and passed to the C library as they are. Tensor names are NUL-terminated UTF-8.
 *
 * Errors name the file: NOT_FOUND or PERMISSION_DENIED when it cannot be opened; DATA_LOSS for a
 * truncated or malformed file (bad header size or JSON, offsets outside the data, overlapping or not
 * matching the dtype and shape, duplicate names); INVALID_ARGUMENT for a dtype this library lacks. */

/* A list of named tensors, in file order. */
typedef struct of_tensor_list_t of_tensor_list_t;
/* The number of tensors; 0 for NULL. */
OF_API size_t of_tensor_list_count(const of_tensor_list_t* list);
/* The name of tensor `index`: NUL-terminated UTF-8, borrowed until the list is freed. OUT_OF_RANGE
 * for an index >= the size. */
OF_API of_status_t* of_tensor_list_name(const of_tensor_list_t* list, size_t index, const char** out_name);
/* Tensor `index`: a new reference (release it); it outlives the list. OUT_OF_RANGE as above. */
OF_API of_status_t* of_tensor_list_get(const of_tensor_list_t* list, size_t index, of_tensor_t** out_tensor);
/* Frees the list and releases its references. NULL is fine. */
OF_API void of_tensor_list_destroy(of_tensor_list_t* list);

/* Writes the n tensors (borrowed; any layout) under the names names[i] (non-empty, distinct, UTF-8,
 * not "__metadata__") in that order. The file is written under a temporary name next to `path` and
 * then renamed over it, so a failed save leaves an existing file as it was. */
OF_API of_status_t* of_safetensors_save(const char* path, const char* const* names, const of_tensor_t* const* tensors,
                                        size_t n);
/* Reads every tensor of the file onto `session`'s default device. *out_list is owned by the caller:
 * free it with of_tensor_list_destroy. */
OF_API of_status_t* of_safetensors_load(of_session_t* session, const char* path, of_tensor_list_t** out_list);
/* Copies the file's tensors into the n existing tensors `tensors` (borrowed, modified in place: CPU
 * tensors of any layout, or contiguous tensors on another device) by name, e.g. a model's parameters.
 * A destination whose elements share memory (an expanded view), or two destinations that overlap in
 * memory, would lose the file's data: INVALID_ARGUMENT naming them.
 * Each must have the file's dtype and shape (INVALID_ARGUMENT naming the tensor and both). strict 1:
 * every name must be in the file (NOT_FOUND otherwise) and every tensor of the file must be named
 * (INVALID_ARGUMENT otherwise); strict 0: only the names present in both are copied. Everything is
 * checked and read before the first tensor is written: a failed call modifies nothing. */
OF_API of_status_t* of_safetensors_load_into(const char* path, const char* const* names, of_tensor_t* const* tensors,
                                             size_t n, of_bool_t strict);

/*===--- end of saving and loading ----------------------------------------------------------===*/

/*===--- lazy graphs -------------------------------------------------------------------------===*/
/* A graph is built by tracing and then run many times (OneFlow's nn.Graph):
 *
 *   of_graph_create(session, "train", NULL, &g);
 *   of_graph_begin_build(g);                      lazy mode on for this thread and session
 *   of_graph_add_input(g, "x", f32, dims, 4, &x); dims may hold OF_DIM_UNKNOWN or session symbols
 *   ... the usual op functions on x and eager parameters: they record nodes and return lazy tensors ...
 *   of_tensor_backward(session, loss, NULL, 0);   traces the backward ops
 *   of_graph_add_optimizer(g, opt);               traces the parameter updates
 *   of_graph_add_output(g, loss);
 *   of_graph_end_build(g);
 *   for each batch: of_graph_run(g, &batch, 1, &loss_value, 1);   one training step
 *
 * While a build is open, op calls on the building thread that pass the graph's session record nodes;
 * other threads and other sessions keep running eagerly. Tensors created by of_tensor_* functions are
 * eager even inside a build. An eager tensor reaching a lazy op becomes a variable of the graph, bound
 * to that tensor's memory when the graph runs (no copy): a trainable one if it is a requires_grad leaf
 * or was registered with of_graph_add_parameter, else a non-trainable one — a *free tensor* (e.g. the
 * scalar of of_gt_scalar, a mask made during the build). The graph's variables are held by the session,
 * not by the graph, until the graph is destroyed. A run writes parameters, optimizer state and
 * batch-norm running statistics in place: after a training run the eager parameter tensors hold the
 * updated values. Parameters' .grad is not set by graph runs.
 *
 * A lazy tensor has dtype and dims but no data (of_tensor_copy_to_host is FAILED_PRECONDITION); using it
 * outside its build, or in another graph's build, is FAILED_PRECONDITION / INVALID_ARGUMENT naming the
 * graph. Release lazy handles like any tensor.
 *
 * One built graph runs any concrete sizes that fit its declared dims, compiling once per concrete input
 * shape (concrete shape inference, dead-code elimination, fusion, in-place reuse, memory planning) and
 * caching the result. Thread-safety: the build functions must be called on the thread that began the
 * build; of_graph_run and the queries may be called from any thread (runs of one graph are serialised).
 * Lifetimes: a graph keeps its session's state alive, so graphs, their session, optimizers and tensors
 * may be destroyed or released in any order; a graph whose session handle was destroyed keeps
 * working. */
typedef struct of_graph_t of_graph_t;

typedef struct of_graph_options_t {
  size_t struct_size;  /* sizeof(of_graph_options_t), set by of_graph_options_init */
  of_bool_t fuse;        /* 1 (default): conv2d+batch_norm(inference)[+relu] and elementwise chains fused */
  of_bool_t inplace;     /* 1 (default): elementwise ops, batch norm's gradient and batch norm + add +
                            ReLU's output may write into an input buffer that dies there */
  of_bool_t plan_memory; /* 1 (default): intermediates share one arena by liveness; 0: a buffer each */
  int32_t plan_cache_size; /* compiled plans kept, one per concrete input shape, >= 1; default 8. A run
                              of a new shape beyond it evicts the least recently run plan (and its
                              arena); that shape is compiled again if it comes back */
  of_bool_t profile;       /* 0 (default); 1: every step of every run is timed (on a CUDA device each
                              step waits for its kernels) and of_graph_dump shows each step's time per
                              run and each op's share; a profiled CUDA graph runs slower */
} of_graph_options_t;
/* Fills `options` with the defaults and sets struct_size. NULL is ignored. */
OF_API void of_graph_options_init(of_graph_options_t* options);

/* Creates an empty graph in `session` (required). `name` (may be NULL or empty: "graph_<id>") appears in
 * messages and the dump; options may be NULL for the defaults. Free *out_graph with of_graph_destroy. */
OF_API of_status_t* of_graph_create(of_session_t* session, OF_NULLABLE const char* name,
                                    OF_NULLABLE const of_graph_options_t* options,
                                    of_graph_t** out_graph);
/* Destroys the graph: ends an open build, releases the graph's variables (its free tensors and its
 * references to parameters) and an attached optimizer. NULL is fine. */
OF_API void of_graph_destroy(of_graph_t* graph);

/* Opens the graph's one build on the calling thread. FAILED_PRECONDITION if the graph was built or is
 * being built, or another build is open on this thread. */
OF_API of_status_t* of_graph_begin_build(of_graph_t* graph);
/* Declares the next input: a lazy tensor (*out_tensor, owned by the caller) of `dtype` and the ndim dims
 * `dims`, each a size >= 0, OF_DIM_UNKNOWN, or a symbol of the graph's session (of_session_dim_symbol;
 * a symbol of another session is INVALID_ARGUMENT naming both sessions): inputs sharing a symbol must
 * be given equal sizes at run time. `name` is required and unique. */
OF_API of_status_t* of_graph_add_input(of_graph_t* graph, const char* name, const of_dtype_t* dtype,
                                       const int64_t* dims, size_t ndim, of_tensor_t** out_tensor);
/* Registers the eager floating-point leaf `tensor` as a trainable variable named `name` (required,
 * unique), before its first use in the build, and marks it requires_grad (as a parameter is), so that a
 * traced backward reaches it and an optimizer can update it. Leaves with requires_grad need no
 * registration (they are named param_<k>); registering names them in the dump. */
OF_API of_status_t* of_graph_add_parameter(of_graph_t* graph, of_tensor_t* tensor, const char* name);
/* Declares a lazy tensor of this graph as the next output (borrowed). */
OF_API of_status_t* of_graph_add_output(of_graph_t* graph, const of_tensor_t* tensor);
/* Traces, for every parameter of `optimizer` that received a gradient from an of_tensor_backward traced
 * in this build, its update (the optimizer's state is created first and bound as free tensors). The graph
 * keeps the optimizer alive; each run uses its current learning rate (of_optimizer_set_lr between runs
 * works) and advances its state. FAILED_PRECONDITION if no parameter received a gradient. */
OF_API of_status_t* of_graph_add_optimizer(of_graph_t* graph, of_optimizer_t* optimizer);
/* Closes the build. FAILED_PRECONDITION without outputs and optimizer. */
OF_API of_status_t* of_graph_end_build(of_graph_t* graph);

/* Runs the built graph: `inputs` are n_inputs eager tensors (borrowed) matching the declared inputs in
 * order — dtype, device, rank, known sizes, and equal sizes for equal symbols (INVALID_ARGUMENT naming the
 * input otherwise). On success out_tensors[0..n_out_tensors) receive new tensors owned by the caller;
 * n_out_tensors must equal the number of declared outputs (out_tensors may be NULL when it is 0).
 * FAILED_PRECONDITION if the graph was never built. */
OF_API of_status_t* of_graph_run(of_graph_t* graph, const of_tensor_t* const* inputs, size_t n_inputs,
                                 of_tensor_t** out_tensors, size_t n_out_tensors);
/* The number of declared inputs and outputs. */
OF_API of_status_t* of_graph_input_count(const of_graph_t* graph, size_t* out_count);
OF_API of_status_t* of_graph_output_count(const of_graph_t* graph, size_t* out_count);

/* The graph's free tensors (non-trainable variables) held for it by the session: their number, and the
 * name of free tensor `index` (OUT_OF_RANGE past the count; *out_name is valid until the graph is
 * destroyed). */
OF_API of_status_t* of_graph_free_tensor_count(const of_graph_t* graph, size_t* out_count);
OF_API of_status_t* of_graph_free_tensor_name(const of_graph_t* graph, size_t index, const char** out_name);

/* The graph as text: inputs, variables (with trainable / non-trainable), traced nodes with their dtypes
 * and shapes (unknown dims print as ?, symbols by name), outputs, then for each compiled specialization
 * its steps after the passes (fused steps name the nodes they replace), where each value lives (arena
 * offset, in place of another value, output, view) and the memory plan; for a graph created with
 * options.profile, the plan's runs (time per run and best run, whole and in the steps), each step's time
 * per run and its best run, and each op's steps together with their share of the plan's time (a
 * statement of the runs so far, not a benchmark). Writes at most capacity - 1
 * characters and a NUL into `out_buffer` (which may be NULL when capacity is 0) and the full length, without
 * the NUL, into *out_length: call with capacity 0 to size the buffer. */
OF_API of_status_t* of_graph_dump(const of_graph_t* graph, char* out_buffer, size_t capacity, size_t* out_length);

/* The memory plan of the most recent run's specialization (all zero before the first run). */
typedef struct of_graph_memory_stats_t {
  size_t struct_size;            /* set by the caller to sizeof(of_graph_memory_stats_t) */
  uint64_t planned_peak_bytes;   /* the arena holding every intermediate */
  uint64_t intermediate_bytes;   /* the sum of all intermediate buffers: what no reuse would need */
  uint64_t buffer_count;         /* intermediates */
  uint64_t inplace_count;        /* intermediates written into a dying input's buffer */
  uint64_t node_count;           /* steps after the passes */
  uint64_t specialization_count; /* compiled plans in the cache now (at most options.plan_cache_size) */
  uint64_t compile_count;        /* compilations so far, those of shapes evicted and seen again included */
  uint64_t cached_plan_bytes;    /* the arenas of the cached plans together */
} of_graph_memory_stats_t;
/* Fills the first out_stats->struct_size bytes (at least sizeof(size_t), INVALID_ARGUMENT otherwise). */
OF_API of_status_t* of_graph_memory_stats(const of_graph_t* graph, of_graph_memory_stats_t* out_stats);

/*===--- end of lazy graphs -----------------------------------------------------------------===*/

/*===--- process groups and data-parallel training ----------------------------------------===*/

/* A process group: the ranks 0 .. world_size - 1 of one job, each a process (on this machine or others),
 * and the collectives between them, carried by Gloo over TCP for CPU tensors and by NCCL for CUDA tensors
 * (one GPU per rank: the device of a rank's first CUDA collective; NCCL, libnccl.so.2 of the CUDA
 * install, is loaded then, and a CUDA collective without it is UNAVAILABLE). Every rank creates the group
 * with the same world size and rendezvous and its own rank; then every rank must make the same collective
 * calls in the same order, with the same dtypes and shapes (a mismatch is INVALID_ARGUMENT naming the
 * ranks that differ). Each call waits at most the group's timeout for its peers: a peer that exited is
 * UNAVAILABLE naming its rank and process, one that did not take part in time DEADLINE_EXCEEDED naming
 * its rank; after such a failure the group is broken (its calls are FAILED_PRECONDITION saying why) while
 * the session, tensors and graphs keep working. Destroy the group with of_process_group_destroy, in any
 * order with everything else (a data-parallel graph keeps its group alive). Thread-safety: the calls of
 * one group are serialised; the order of collectives must be the same on every rank.
 *
 * scripts/run-distributed.sh N -- program args starts N local ranks with OF_RANK, OF_WORLD_SIZE and
 * OF_RENDEZVOUS in their environment. */
typedef struct of_process_group_t of_process_group_t;

typedef struct of_process_group_options_t {
  size_t struct_size;     /* sizeof(of_process_group_options_t), set by of_process_group_options_init */
  int32_t rank;           /* this process's rank, in [0, world_size); default 0 */
  int32_t world_size;     /* >= 1; default 1 */
  const char* rendezvous; /* where the ranks meet (borrowed for the call, required): a directory all of
                             them can write, empty and used by this group only ("file://" prefix
                             optional), or "tcp://host:port", which rank 0 listens on */
  int64_t timeout_ms;     /* > 0: joining, and each collective; default 30000 */
  const char* host;       /* the address this rank's connections use (NULL: "127.0.0.1", one machine) */
} of_process_group_options_t;
/* Fills `options` with the defaults and sets struct_size. NULL is ignored. */
OF_API void of_process_group_options_init(of_process_group_options_t* options);
/* Joins the group; returns once every rank has joined. INVALID_ARGUMENT for options out of range, a
 * rendezvous directory that cannot be written, ranks that disagree on the world size or a rank claimed by
 * two processes; DEADLINE_EXCEEDED naming the ranks that did not join within the timeout. Free
 * *out_group with of_process_group_destroy. The first group of a process sets SIGPIPE to ignored if it
 * still has its default action (as Python does): otherwise Gloo's writes to a peer that has exited would
 * kill this process instead of failing the call; a handler the program installed is kept. */
OF_API of_status_t* of_process_group_create(const of_process_group_options_t* options,
                                            of_process_group_t** out_group);
/* Leaves the group (the other ranks' later collectives with it fail). A graph made data-parallel with it
 * keeps the group until the graph is destroyed. NULL is fine. */
OF_API void of_process_group_destroy(of_process_group_t* group);
OF_API of_status_t* of_process_group_rank(const of_process_group_t* group, int32_t* out_rank);
OF_API of_status_t* of_process_group_world_size(const of_process_group_t* group, int32_t* out_world_size);
/* Returns once every rank has called it (or fails as the collectives do). */
OF_API of_status_t* of_process_group_barrier(of_process_group_t* group);

/* How all_reduce combines the ranks' values. Append only. */
typedef int32_t of_reduce_op_t;
enum of_reduce_ops {
  OF_REDUCE_SUM = 0,  /* integers wrap around */
  OF_REDUCE_MEAN = 1, /* floating dtypes only: the sum divided by world_size */
  OF_REDUCE_MAX = 2,  /* NaN wins */
  OF_REDUCE_MIN = 3
};
/* Collectives as ops (group borrowed), eagerly and in graphs: *out_tensor is new on every rank. They are not
 * differentiable. A graph that traces them needs the group alive when it runs (FAILED_PRECONDITION once it
 * is destroyed) and never drops them.
 * all_reduce: x's elements combined over the ranks, x's dtype and shape (numeric dtypes, not bool; on
 * CUDA not int16 either, UNIMPLEMENTED: NCCL has no such reduction). On CUDA, x must be contiguous.
 * broadcast: rank `root`'s x on every rank (any dtype).
 * all_gather: shape (world_size, *x.shape), rank r's x at index r (any dtype). */
OF_API of_status_t* of_all_reduce(of_session_t* session, of_process_group_t* group, const of_tensor_t* x,
                                  of_reduce_op_t op, of_tensor_t** out_tensor);
OF_API of_status_t* of_broadcast(of_session_t* session, of_process_group_t* group, const of_tensor_t* x,
                                 int32_t root, of_tensor_t** out_tensor);
OF_API of_status_t* of_all_gather(of_session_t* session, of_process_group_t* group, const of_tensor_t* x,
                                  of_tensor_t** out_tensor);

/* Data-parallel training through a graph. */
typedef struct of_data_parallel_options_t {
  size_t struct_size;            /* sizeof(of_data_parallel_options_t), set by of_data_parallel_options_init */
  int64_t bucket_bytes;          /* > 0: gradients averaged by one all_reduce; default 25 MiB */
  of_bool_t sync_batch_norm_stats; /* 1: average the batch norms' running statistics over the ranks after
                                      each step; default 0: each rank keeps its own, as PyTorch's
                                      DistributedDataParallel without broadcast_buffers */
} of_data_parallel_options_t;
/* Fills `options` with the defaults and sets struct_size. NULL is ignored. */
OF_API void of_data_parallel_options_init(of_data_parallel_options_t* options);
/* Makes every run of `graph` (a training step: built with an optimizer) one data-parallel step over
 * `group` (kept alive by the graph; options may be NULL), each rank running the graph on its own inputs,
 * such as its share of the global batch. The first run broadcasts rank 0's parameters and batch-norm
 * running statistics; each step averages the gradients over the ranks, in buckets, before the optimizer's
 * updates, so that every rank applies the same update. Each compiled plan is first checked to be the same
 * program on every rank (INVALID_ARGUMENT naming the ranks that differ). FAILED_PRECONDITION once the
 * graph has run, or for a built graph without an optimizer. */
OF_API of_status_t* of_graph_set_data_parallel(of_graph_t* graph, of_process_group_t* group,
                                               OF_NULLABLE const of_data_parallel_options_t* options);

/*===--- end of process groups ----------------------------------------------------------------===*/

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ONEFLOW_C_H_ */
