//! Devices: a copy of a transposed view is contiguous with the view's values; the CPU allocator's
//! counters follow the tensors; the errors name the device.
use oneflow::{device, Session, StatusCode};

#[test]
fn copies_and_memory_counters() -> oneflow::Result<()> {
    let s = Session::new()?;
    let before = device::memory_stats(device::CPU, 0)?;
    let x = s.from_slice(&[2, 3], &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0])?;
    let copy = x.transpose(0, 1)?.copy_to_device(device::CPU, 0)?;
    assert_eq!(copy.dims()?, vec![3, 2]);
    assert_eq!(copy.to_vec::<f32>()?, vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
    assert_eq!(copy.device()?, (device::CPU, 0));
    // Tests run on several threads: only counts that other tests' tensors cannot lower.
    let during = device::memory_stats(device::CPU, 0)?;
    assert!(during.allocations >= before.allocations + 2, "{before:?} {during:?}");
    assert!(during.bytes_reserved >= during.bytes_in_use && during.peak_bytes_in_use >= during.bytes_in_use);
    let err = x.copy_to_device(device::CUDA, 4096).expect_err("no such GPU");
    assert_eq!(err.code(), StatusCode::UNAVAILABLE);
    assert!(err.to_string().contains("cuda:4096"), "{err}");
    let err = x.copy_to_device(7, 0).expect_err("no such device type");
    assert_eq!(err.code(), StatusCode::INVALID_ARGUMENT);
    drop((x, copy));
    device::empty_cache(device::CPU, 0)?;
    assert!(device::memory_stats(device::CUDA, 4096).is_err());
    assert_eq!(device::empty_cache(device::CPU, -1).expect_err("negative index").code(), StatusCode::INVALID_ARGUMENT);
    Ok(())
}
