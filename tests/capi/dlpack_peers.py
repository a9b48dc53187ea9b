#!/usr/bin/env python3
"""DLPack exchange with real peers, through ctypes (standard library): NumPy, and PyTorch's
torch.utils.dlpack where it is installed. Both speak the legacy DLManagedTensor in a PyCapsule named
"dltensor"; a consumer renames it "used_dltensor" and calls the deleter itself (the DLPack Python
protocol).

Usage: dlpack_peers.py LIBONEFLOW_C numpy|torch
Prints "SKIPPED: ..." and exits 0 when the peer is not installed (ctest shows the test as skipped).
"""
import ctypes as C
import sys


class DLDevice(C.Structure):
    _fields_ = [("device_type", C.c_int32), ("device_id", C.c_int32)]


class DLDataType(C.Structure):
    _fields_ = [("code", C.c_uint8), ("bits", C.c_uint8), ("lanes", C.c_uint16)]


class DLTensor(C.Structure):
    _fields_ = [("data", C.c_void_p), ("device", DLDevice), ("ndim", C.c_int32), ("dtype", DLDataType),
                ("shape", C.POINTER(C.c_int64)), ("strides", C.POINTER(C.c_int64)), ("byte_offset", C.c_uint64)]


class DLManagedTensor(C.Structure):
    pass


DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", C.c_void_p),
                            ("deleter", C.CFUNCTYPE(None, C.POINTER(DLManagedTensor)))]

DELETER = C.CFUNCTYPE(None, C.c_void_p, C.c_void_p)  # of_deleter_fn

capsule_get = C.pythonapi.PyCapsule_GetPointer
capsule_get.restype, capsule_get.argtypes = C.c_void_p, [C.py_object, C.c_char_p]
capsule_rename = C.pythonapi.PyCapsule_SetName
capsule_rename.restype, capsule_rename.argtypes = C.c_int, [C.py_object, C.c_char_p]
capsule_new = C.pythonapi.PyCapsule_New
capsule_new.restype, capsule_new.argtypes = C.py_object, [C.c_void_p, C.c_char_p, C.c_void_p]


class Oneflow:
    """The few C functions the test calls, with their signatures."""

    def __init__(self, path):
        lib = C.CDLL(path)
        P = C.c_void_p
        sigs = {
            "of_session_create": [P, C.POINTER(P)], "of_session_destroy": [P],
            "of_status_code": [P], "of_status_message": [P], "of_status_destroy": [P],
            "of_dtype_float32": [], "of_dtype_int64": [],
            "of_tensor_from_dlpack_legacy": [C.POINTER(DLManagedTensor), C.POINTER(P)],
            "of_tensor_to_dlpack_legacy": [P, C.POINTER(C.POINTER(DLManagedTensor))],
            "of_tensor_adopt_data": [P, P, C.POINTER(C.c_int64), C.c_size_t, P, C.c_size_t, DELETER, P, C.POINTER(P)],
            "of_tensor_copy_to_host": [P, P, C.c_size_t], "of_tensor_release": [P],
            "of_init_constant": [P, P, C.c_double], "of_mul_scalar": [P, P, C.c_double, C.POINTER(P)],
            "of_tensor_dims": [P, C.POINTER(C.c_int64), C.c_size_t],
        }
        for name, args in sigs.items():
            f = getattr(lib, name)
            f.argtypes = args
            f.restype = P
        lib.of_status_code.restype = C.c_int32
        lib.of_status_message.restype = C.c_char_p
        lib.of_status_destroy.restype = None
        lib.of_session_destroy.restype = None
        lib.of_tensor_release.restype = None
        self.lib = lib
        session = P()
        self.check(lib.of_session_create(None, C.byref(session)))
        self.session = session

    def call(self, status):
        """(code, message) of a status, freed; (0, "") for success."""
        if not status:
            return 0, ""
        code, message = self.lib.of_status_code(status), self.lib.of_status_message(status).decode()
        self.lib.of_status_destroy(status)
        return code, message

    def check(self, status):
        code, message = self.call(status)
        if code != 0:
            raise AssertionError(f"oneflow_c failed ({code}): {message}")

    def read(self, tensor, n, ctype):
        buf = (ctype * n)()
        self.check(self.lib.of_tensor_copy_to_host(tensor, buf, C.sizeof(buf)))
        return list(buf)

    def import_capsule(self, capsule):
        """A tensor over the memory of a "dltensor" capsule, which is consumed (renamed "used_dltensor")."""
        ptr = capsule_get(capsule, b"dltensor")
        capsule_rename(capsule, b"used_dltensor")  # the library now calls the deleter, exactly once
        t = C.c_void_p()
        code, message = self.call(self.lib.of_tensor_from_dlpack_legacy(C.cast(ptr, C.POINTER(DLManagedTensor)),
                                                                        C.byref(t)))
        return t, code, message

    def export_capsule(self, tensor):
        """A "dltensor" capsule over the tensor's memory, for a peer's from_dlpack (which consumes it)."""
        managed = C.POINTER(DLManagedTensor)()
        self.check(self.lib.of_tensor_to_dlpack_legacy(tensor, C.byref(managed)))
        return capsule_new(C.cast(managed, C.c_void_p), b"dltensor", None)

    def adopted(self, values, released):
        """A float32 tensor adopting a ctypes array, whose deleter appends to `released`."""
        buf = (C.c_float * len(values))(*values)

        def on_release(data, user):
            released.append(data)

        deleter = DELETER(on_release)
        self._keep = getattr(self, "_keep", []) + [buf, deleter]
        dims = (C.c_int64 * 1)(len(values))
        t = C.c_void_p()
        self.check(self.lib.of_tensor_adopt_data(self.session, self.lib.of_dtype_float32(), dims, 1, buf,
                                                 C.sizeof(buf), deleter, None, C.byref(t)))
        return t, C.addressof(buf)


INVALID_ARGUMENT = 3


def test_numpy(of):
    import numpy as np
    # NumPy -> oneflow_c, no copy: writes are seen on both sides.
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t, code, message = of.import_capsule(a.__dlpack__())
    assert code == 0, message
    a[0, 0] = 100.0
    assert of.read(t, 6, C.c_float) == [100.0, 1, 2, 3, 4, 5]
    of.check(of.lib.of_init_constant(of.session, t, 7.0))
    assert (a == 7.0).all(), a
    of.lib.of_tensor_release(t)  # NumPy's deleter runs here; the array stays NumPy's
    # A strided view (every other column) becomes a strided tensor.
    b = np.arange(12, dtype=np.int64).reshape(3, 4)[:, ::2]
    t, code, message = of.import_capsule(b.__dlpack__())
    assert code == 0, message
    doubled = C.c_void_p()
    of.check(of.lib.of_mul_scalar(of.session, t, 2.0, C.byref(doubled)))
    assert of.read(doubled, 6, C.c_int64) == [0, 4, 8, 12, 16, 20]
    of.lib.of_tensor_release(doubled)
    of.lib.of_tensor_release(t)
    # Negative strides are refused, with the deleter still called (NumPy's reference is dropped).
    rev = np.arange(4, dtype=np.float32)[::-1]
    before = sys.getrefcount(rev.base)
    t, code, message = of.import_capsule(rev.__dlpack__())
    assert code == INVALID_ARGUMENT and "negative" in message, (code, message)
    assert sys.getrefcount(rev.base) == before, "the deleter released NumPy's reference"
    # oneflow_c -> NumPy: numpy.from_dlpack shares the memory and releases it when the array dies.
    released = []
    t, address = of.adopted([1.0, 2.0, 3.0], released)

    class Exported:
        def __dlpack__(self, stream=None):
            return of.export_capsule(t)

        def __dlpack_device__(self):
            return (1, 0)

    arr = np.from_dlpack(Exported())
    assert arr.ctypes.data == address, "no copy"
    assert arr.tolist() == [1.0, 2.0, 3.0]
    # NumPy 1.24 makes DLPack imports read-only on its side; writes through oneflow_c are seen.
    of.check(of.lib.of_init_constant(of.session, t, 20.0))
    assert arr.tolist() == [20.0, 20.0, 20.0]
    of.lib.of_tensor_release(t)
    assert released == [], "NumPy still holds the memory"
    del arr
    assert len(released) == 1, "the array's death ran oneflow_c's deleter, which released the adopted buffer"
    print("numpy: import (contiguous, strided, negative strides refused), export, deleters: ok")


def test_torch(of):
    import torch
    import torch.utils.dlpack as tdl
    # PyTorch -> oneflow_c, no copy.
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3).t()  # a transposed (strided) view
    t, code, message = of.import_capsule(tdl.to_dlpack(x))
    assert code == 0, message
    dims = (C.c_int64 * 2)()
    of.check(of.lib.of_tensor_dims(t, dims, 2))
    assert list(dims) == [3, 2]
    doubled = C.c_void_p()
    of.check(of.lib.of_mul_scalar(of.session, t, 2.0, C.byref(doubled)))
    assert of.read(doubled, 6, C.c_float) == (x * 2).flatten().tolist()
    of.check(of.lib.of_init_constant(of.session, t, 5.0))
    assert (x == 5.0).all(), x
    of.lib.of_tensor_release(doubled)
    of.lib.of_tensor_release(t)
    # oneflow_c -> PyTorch.
    released = []
    t, address = of.adopted([4.0, 5.0], released)
    y = tdl.from_dlpack(of.export_capsule(t))
    assert y.data_ptr() == address and y.tolist() == [4.0, 5.0]
    y.mul_(10)
    assert of.read(t, 2, C.c_float) == [40.0, 50.0]
    of.lib.of_tensor_release(t)
    assert released == []
    del y
    assert len(released) == 1
    print("torch: import (strided view, writes seen by torch), export, deleters: ok")


def main():
    lib, peer = sys.argv[1], sys.argv[2]
    try:
        __import__({"numpy": "numpy", "torch": "torch.utils.dlpack"}[peer])
    except ImportError as e:
        print(f"SKIPPED: {peer} is not installed ({e}); scripts/install-deps.sh --bench installs PyTorch")
        return
    of = Oneflow(lib)
    {"numpy": test_numpy, "torch": test_torch}[peer](of)
    of.lib.of_session_destroy(of.session)


if __name__ == "__main__":
    main()
