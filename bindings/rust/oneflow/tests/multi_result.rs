//! Ops with several results (of_topk, of_sort, of_lstm_cell) return them as a tuple, in the header's
//! order; a failing call returns the error and no tensor.
use oneflow::{dtype, Session};

#[test]
fn topk_and_sort_return_values_and_indices() -> oneflow::Result<()> {
    let s = Session::new()?;
    let x = s.from_slice(&[5], &[3.0f32, 1.0, 4.0, 1.5, 9.0])?;
    let (values, indices) = x.topk(2, 0, true, true)?;
    assert_eq!(values.to_vec::<f32>()?, vec![9.0, 4.0]);
    assert!(indices.dtype()? == dtype::int64());
    assert_eq!(indices.to_vec::<i64>()?, vec![4, 2]);
    let (sorted, order) = x.sort(0, false)?;
    assert_eq!(sorted.to_vec::<f32>()?, vec![1.0, 1.5, 3.0, 4.0, 9.0]);
    assert_eq!(order.to_vec::<i64>()?, vec![1, 3, 0, 2, 4]);
    let err = x.topk(6, 0, true, true).expect_err("k past the size is refused");
    assert!(err.to_string().contains("topk"), "{err}");
    Ok(())
}
