/*
 * oneflow/dlpack.h — the DLPack 1.1 structs (https://dmlc.github.io/dlpack/latest/c_api.html), written
 * to DLPack's published layout for callers of oneflow_c's DLPack functions that have no dlpack.h of
 * their own.
 *
 * Note [DLPack header]: this header uses DLPack's own include guard, DLPACK_DLPACK_H_, so it and a
 * caller's dlpack.h (1.x) never both define the structs in one translation unit: whichever is
 * included first is the one in effect, and both describe the same layout (the ABI tests check sizes
 * and offsets). oneflow_c.h itself only forward-declares `struct DLManagedTensor` and
 * `struct DLManagedTensorVersioned`, so including it never clashes with any dlpack.h; include this
 * header (or DLPack's) to read or fill their fields.
 *
 * Names, values and layout are DLPack's; only the enum values oneflow_c or its callers use are
 * spelled here (a value not listed still round-trips through the integer fields).
 */
#ifndef DLPACK_DLPACK_H_
#define DLPACK_DLPACK_H_

#include <stddef.h>
#include <stdint.h>

#define DLPACK_MAJOR_VERSION 1
#define DLPACK_MINOR_VERSION 1

#ifdef __cplusplus
extern "C" {
#endif

/* The DLPack version a DLManagedTensorVersioned follows: a different major version means a
 * different layout (only the deleter may then be called). */
typedef struct {
  uint32_t major;
  uint32_t minor;
} DLPackVersion;

/* Device types (DLDevice.device_type). */
#ifdef __cplusplus
typedef enum : int32_t {
#else
typedef enum {
#endif
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3, /* pinned host memory (cudaMallocHost) */
  kDLOpenCL = 4,
  kDLVulkan = 7,
  kDLMetal = 8,
  kDLVPI = 9,
  kDLROCM = 10,
  kDLROCMHost = 11,
  kDLExtDev = 12,
  kDLCUDAManaged = 13,
  kDLOneAPI = 14,
  kDLWebGPU = 15,
  kDLHexagon = 16,
  kDLMAIA = 17
} DLDeviceType;

typedef struct {
  DLDeviceType device_type;
  int32_t device_id; /* 0 for CPU memory */
} DLDevice;

/* Type codes (DLDataType.code). */
typedef enum {
  kDLInt = 0U,
  kDLUInt = 1U,
  kDLFloat = 2U,
  kDLOpaqueHandle = 3U,
  kDLBfloat = 4U,
  kDLComplex = 5U,
  kDLBool = 6U
} DLDataTypeCode;

/* An element type: {code, bits, lanes}; float32 is {kDLFloat, 32, 1}, bool {kDLBool, 8, 1}. */
typedef struct {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} DLDataType;

/* A tensor's memory and metadata; the element at index (i0, i1, ...) is at
 * (char*)data + byte_offset + (i0 * strides[0] + i1 * strides[1] + ...) * element size. */
typedef struct {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  const int64_t* shape;   /* ndim sizes */
  const int64_t* strides; /* ndim strides in elements, or NULL for row-major (contiguous) */
  uint64_t byte_offset;
} DLTensor;

/* The legacy (unversioned) managed tensor: the consumer calls deleter(self) exactly once when done. */
typedef struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensor* self);
} DLManagedTensor;

/* DLManagedTensorVersioned.flags */
#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL) /* the consumer must not write the memory */
#define DLPACK_FLAG_BITMASK_IS_COPIED (1UL << 1UL) /* the producer made a copy the consumer owns */
#define DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED (1UL << 2UL)

/* The managed tensor of DLPack 1.x: the consumer calls deleter(self) exactly once when done. */
typedef struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned* self);
  uint64_t flags;
  DLTensor dl_tensor;
} DLManagedTensorVersioned;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* DLPACK_DLPACK_H_ */
