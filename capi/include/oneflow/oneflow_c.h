/*
 * oneflow_c.h — the C ABI of oneflow_c, an embeddable deep-learning runtime.
 *
 * This header is C11 and compiles as C++. It is the only interface of liboneflow_c; the Java, Rust
 * and Go bindings are generated from it.
 *
 * Conventions (they hold for every function below unless its comment says otherwise):
 *
 *  Errors    Every fallible function returns `of_status_t*`: NULL on success, otherwise a status the
 *            caller owns and frees with of_status_free(). Its code is one of OF_STATUS_* and its
 *            message (UTF-8) names the argument and the problem. A failed call has no effect: it
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
#else
#define OF_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/*===--- versions ---------------------------------------------------------------------------===*/

/* The version of this header. Compare with of_version() to detect a header/library mismatch. */
#define OF_VERSION_MAJOR 0
#define OF_VERSION_MINOR 1
#define OF_VERSION_PATCH 0
/* Raised whenever the ABI changes incompatibly; a library only serves callers built against the
 * same OF_ABI_VERSION. */
#define OF_ABI_VERSION 1

/* The library's version. Each out pointer may be NULL (that part is not written). Thread-safe. */
OF_API void of_version(int32_t* out_major, int32_t* out_minor, int32_t* out_patch);
/* The library's version as "MAJOR.MINOR.PATCH"; a static string, never NULL. */
OF_API const char* of_version_string(void);
/* The library's OF_ABI_VERSION. */
OF_API int32_t of_abi_version(void);

/*===--- status -----------------------------------------------------------------------------===*/

typedef struct of_status_t of_status_t;

/* Status codes: the canonical codes shared by TensorFlow, PJRT and absl. Append only. */
typedef int32_t of_status_code_t;
enum of_status_code {
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
OF_API void of_status_free(of_status_t* status);

/*===--- dtypes -----------------------------------------------------------------------------===*/

typedef struct of_dtype_t of_dtype_t;

/* Stable dtype codes (of_dtype_code, of_dtype_from_code). Append only; 0 is never a dtype. */
enum of_dtype_code {
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
OF_API int32_t of_dtype_is_floating_point(const of_dtype_t* dtype); /* 1 or 0 */
OF_API int32_t of_dtype_is_signed(const of_dtype_t* dtype); /* holds negative values: 1 or 0 */
OF_API int32_t of_dtype_is_integer(const of_dtype_t* dtype); /* int8..int64 and uint8, not bool */
OF_API int32_t of_dtype_is_complex(const of_dtype_t* dtype); /* 0: there is no complex dtype yet */

/*===--- dims -------------------------------------------------------------------------------===*/

/* An unknown dimension size (INT64_MIN, equal to MLIR's kDynamic). Written as a literal so that
 * binding generators can evaluate it. */
#define OF_DIM_UNKNOWN (-9223372036854775807LL - 1)

/* 1 if `dim` is a concrete size (>= 0), else 0. */
OF_API int32_t of_dim_is_known(int64_t dim);
/* 1 if `dim` is a named symbol made by of_session_dim_symbol, else 0. */
OF_API int32_t of_dim_is_symbol(int64_t dim);
/* The name of a named symbol. *out_name is NUL-terminated, borrowed and valid for the life of the
 * process; *out_length is its length in bytes. INVALID_ARGUMENT if `dim` is not a symbol. */
OF_API of_status_t* of_dim_symbol_name(int64_t dim, const char** out_name, size_t* out_length);

/*===--- devices ----------------------------------------------------------------------------===*/

/* Device types; the values are DLPack's DLDeviceType. Append only. */
enum of_device_type {
  OF_DEVICE_CPU = 1,
  OF_DEVICE_CUDA = 2
};

/* 1 if this build of the library includes the CUDA backend, else 0. */
OF_API int32_t of_cuda_is_built(void);

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
 * (of_session_options_init). UNAVAILABLE if the default device cannot be used. The caller owns the
 * session and destroys it with of_session_destroy. Thread-safe. */
OF_API of_status_t* of_session_create(const of_session_options_t* options, of_session_t** out_session);
/* Destroys a session. Tensors made in it stay valid (they do not depend on the session). NULL is
 * fine. Must not race with other calls on the same session. */
OF_API void of_session_destroy(of_session_t* session);
/* Restarts the session's random generator from `seed`: the random tensors that follow repeat. */
OF_API of_status_t* of_session_manual_seed(of_session_t* session, uint64_t seed);
/* The session's named dim symbol `name` (NUL-terminated, non-empty, not starting with a digit, not
 * "?", which is how an unknown dim prints),
 * created on first use: in one session the same name gives the same value; symbols of different
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
 * Sizes whose product overflows int64 give OUT_OF_RANGE; a tensor too large to allocate gives
 * RESOURCE_EXHAUSTED.
 * `session` is used for its default device (and, for rand/randn, its generator); the tensor does
 * not depend on it afterwards. */

/* A tensor holding a copy of `data`, `nbytes` bytes of row-major elements; nbytes must equal
 * numel * of_dtype_size(dtype). */
OF_API of_status_t* of_tensor_from_data(of_session_t* session, const of_dtype_t* dtype, const int64_t* dims,
                                        size_t ndim, const void* data, size_t nbytes,
                                        const of_tensor_options_t* options, of_tensor_t** out_tensor);
/* A CPU tensor over caller-owned host memory, without a copy. `data` must hold exactly
 * numel * of_dtype_size(dtype) bytes, aligned to the dtype's size, and stay valid until
 * deleter(data, user_data) is called. The deleter (may be NULL) is called exactly once: when the
 * tensor's last reference is released, or before this function returns if it fails. */
OF_API of_status_t* of_tensor_adopt_data(of_session_t* session, const of_dtype_t* dtype, const int64_t* dims,
                                         size_t ndim, void* data, size_t nbytes, of_deleter_fn deleter,
                                         void* user_data, of_tensor_t** out_tensor);
/* Uninitialised contents. */
OF_API of_status_t* of_tensor_empty(of_session_t* session, const of_dtype_t* dtype, const int64_t* dims,
                                    size_t ndim, const of_tensor_options_t* options, of_tensor_t** out_tensor);
OF_API of_status_t* of_tensor_zeros(of_session_t* session, const of_dtype_t* dtype, const int64_t* dims,
                                    size_t ndim, const of_tensor_options_t* options, of_tensor_t** out_tensor);
OF_API of_status_t* of_tensor_ones(of_session_t* session, const of_dtype_t* dtype, const int64_t* dims,
                                   size_t ndim, const of_tensor_options_t* options, of_tensor_t** out_tensor);
/* Every element `value`, which must be representable in `dtype`; INVALID_ARGUMENT otherwise. For
 * integer dtypes it must be integral and in range; for bool 0 or 1; for floating dtypes a finite value
 * must lie within the dtype's finite range (float16: |value| <= 65504; bfloat16: <= 3.39e38; float32:
 * <= 3.40e38), and inf and NaN are accepted. In-range values round to nearest even. */
OF_API of_status_t* of_tensor_full(of_session_t* session, const of_dtype_t* dtype, const int64_t* dims,
                                   size_t ndim, double value, const of_tensor_options_t* options,
                                   of_tensor_t** out_tensor);
/* Uniform in [0, 1) / standard normal, from the session's generator (reproducible for a seed).
 * Floating dtypes only. Thread-safe; concurrent calls on one session draw disjoint ranges. */
OF_API of_status_t* of_tensor_rand(of_session_t* session, const of_dtype_t* dtype, const int64_t* dims,
                                   size_t ndim, const of_tensor_options_t* options, of_tensor_t** out_tensor);
OF_API of_status_t* of_tensor_randn(of_session_t* session, const of_dtype_t* dtype, const int64_t* dims,
                                    size_t ndim, const of_tensor_options_t* options, of_tensor_t** out_tensor);
/* The 1-d tensor start, start + step, ... up to but excluding `end`: ceil((end - start) / step)
 * elements. step must be non-zero and point from start towards end; for integer dtypes the values
 * must be integral. */
OF_API of_status_t* of_tensor_arange(of_session_t* session, double start, double end, double step,
                                     const of_dtype_t* dtype, const of_tensor_options_t* options,
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
OF_API of_status_t* of_tensor_numel(const of_tensor_t* tensor, int64_t* out_numel);
OF_API of_status_t* of_tensor_nbytes(const of_tensor_t* tensor, size_t* out_nbytes);
/* The device holding the tensor: *out_device_type is OF_DEVICE_*. */
OF_API of_status_t* of_tensor_device(const of_tensor_t* tensor, int32_t* out_device_type,
                                     int32_t* out_device_index);
/* Copies the elements, row-major, into host memory `dst` of `nbytes` bytes, which must equal
 * of_tensor_nbytes (INVALID_ARGUMENT otherwise, naming both sizes). */
OF_API of_status_t* of_tensor_copy_to_host(const of_tensor_t* tensor, void* dst, size_t nbytes);

/*===--- ops ------------------------------------------------------------------------------===*/

/*===--- end of ops -------------------------------------------------------------------------===*/

/*===--- autograd ---------------------------------------------------------------------------===*/

/*===--- end of autograd --------------------------------------------------------------------===*/

/*===--- training: initialisers and optimizers ----------------------------------------------===*/

/*===--- end of training --------------------------------------------------------------------===*/

/*===--- saving and loading: safetensors ----------------------------------------------------===*/

/*===--- end of saving and loading ----------------------------------------------------------===*/

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ONEFLOW_C_H_ */
