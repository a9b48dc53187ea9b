//! The nine scenarios that every binding tests under the same names (shared/BINDINGS.md).
use oneflow::{
    dim, dtype, safetensors, AdamOptions, Conv2dOptions, DType, Error, Optimizer, Session, SessionOptions,
    SgdOptions, StatusCode, Tensor,
};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

type R = oneflow::Result<()>;

fn session() -> Session {
    Session::with_options(&SessionOptions { num_threads: 2, ..Default::default() }).unwrap()
}

fn assert_close(got: &[f32], want: &[f32], tol: f32) {
    assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() <= tol * (1.0 + w.abs()), "{got:?} vs {want:?}");
    }
}

fn expect_err<T: std::fmt::Debug>(r: oneflow::Result<T>, code: StatusCode, needles: &[&str]) -> Error {
    let e = r.expect_err("the call should have failed");
    assert_eq!(e.code(), code, "{e}");
    for n in needles {
        assert!(e.message().contains(n), "message {:?} should name {n:?}", e.message());
    }
    e
}

/// An owner of elements that counts its drops: observes when the library releases adopted memory.
struct Counted(Vec<f32>, Arc<AtomicUsize>);
impl AsMut<[f32]> for Counted {
    fn as_mut(&mut self) -> &mut [f32] {
        &mut self.0
    }
}
impl Drop for Counted {
    fn drop(&mut self) {
        self.1.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn dtype_identity() -> R {
    let s = session();
    let all = [
        ("bool", dtype::bool()),
        ("int8", dtype::int8()),
        ("uint8", dtype::uint8()),
        ("int16", dtype::int16()),
        ("int32", dtype::int32()),
        ("int64", dtype::int64()),
        ("float16", dtype::float16()),
        ("bfloat16", dtype::bfloat16()),
        ("float32", dtype::float32()),
        ("float64", dtype::float64()),
    ];
    let mut g = s.graph("dtypes")?;
    let mut b = g.build()?;
    for (i, (name, d)) in all.iter().enumerate() {
        assert_eq!(d.name(), *name);
        assert!(std::ptr::eq(*d, DType::from_code(d.code())?), "{name} by code");
        assert!(*d == DType::from_name(name)?, "{name} by name");
        let (code, bits, lanes) = d.to_dlpack();
        assert!(*d == DType::from_dlpack(code, bits, lanes)?, "{name} by DLPack");
        assert!(*d == DType::promote(d, d), "{name} promoted with itself");
        assert!(*d == s.zeros(d, &[2])?.dtype()?, "{name} of an eager tensor");
        assert!(*d == b.input(&format!("x{i}"), d, &[dim::UNKNOWN])?.dtype()?, "{name} of a lazy tensor");
        for (other_name, other) in &all {
            assert_eq!(*d == *other, name == other_name);
        }
    }
    drop(b);
    assert!(DType::from_name("float")? == dtype::float32() && DType::from_name("long")? == dtype::int64());
    assert!(DType::promote(dtype::uint8(), dtype::int8()) == dtype::int16());
    assert!(DType::promote(dtype::float16(), dtype::bfloat16()) == dtype::float32());
    assert!(s.from_slice(&[1], &[1.5f64])?.dtype()? == dtype::float64());
    assert!(!dtype::int8().is_floating_point() && dtype::float16().is_floating_point());
    assert!(dtype::int8().is_signed() && !dtype::uint8().is_signed() && !dtype::bool().is_integer());
    assert!(!dtype::float64().is_complex() && dtype::float64().size() == 8);
    expect_err(DType::from_code(0), StatusCode::NOT_FOUND, &["0"]);
    expect_err(DType::from_code(99), StatusCode::NOT_FOUND, &["99"]);
    expect_err(DType::from_name("quaternion"), StatusCode::NOT_FOUND, &["quaternion"]);
    expect_err(DType::from_name("flo\0at"), StatusCode::INVALID_ARGUMENT, &["NUL"]);
    expect_err(DType::from_dlpack(2, 32, 4), StatusCode::NOT_FOUND, &[]);
    Ok(())
}

#[test]
fn unknown_dims() -> R {
    let s = session();
    let mut g = s.graph("unknown_dims")?;
    let mut b = g.build()?;
    let x = b.input("x", dtype::float32(), &[dim::UNKNOWN, 4])?;
    assert!(x.is_lazy()?);
    let u = x.unsqueeze(0)?;
    assert_eq!(u.dims()?, vec![1, dim::UNKNOWN, 4]);
    assert_eq!(dim::format(&u.dims()?), "(1, ?, 4)");
    let total = u.sum(&[1], false)?;
    assert_eq!(total.dims()?, vec![1, 4]);
    expect_err(x.numel(), StatusCode::INVALID_ARGUMENT, &["?"]);
    b.output(&total)?;
    b.finish()?;
    let out = g.run(&[&s.ones(dtype::float32(), &[3, 4])?])?;
    assert_eq!(out[0].to_vec::<f32>()?, vec![3.0; 4]);

    let (n, m) = (s.dim_symbol("N")?, s.dim_symbol("M")?);
    assert_ne!(n, m);
    assert_eq!(n, s.dim_symbol("N")?);
    assert!(dim::is_symbol(n) && !dim::is_known(n) && dim::is_known(0) && !dim::is_symbol(dim::UNKNOWN));
    assert_eq!(dim::symbol_name(m)?, "M");
    expect_err(dim::symbol_name(dim::UNKNOWN), StatusCode::INVALID_ARGUMENT, &[]);
    expect_err(s.dim_symbol("?"), StatusCode::INVALID_ARGUMENT, &["?"]);
    let mut g = s.graph("symbols")?;
    let mut b = g.build()?;
    let a = b.input("a", dtype::float32(), &[n, 2])?;
    let c = b.input("c", dtype::float32(), &[n, 2])?;
    assert_eq!(dim::format(&a.dims()?), "(N, 2)");
    b.output(&a.add(&c)?)?;
    b.finish()?;
    let ok = g.run(&[&s.ones(dtype::float32(), &[3, 2])?, &s.ones(dtype::float32(), &[3, 2])?])?;
    assert_eq!(ok[0].to_vec::<f32>()?, vec![2.0; 6]);
    let e = expect_err(
        g.run(&[&s.ones(dtype::float32(), &[3, 2])?, &s.ones(dtype::float32(), &[4, 2])?]),
        StatusCode::INVALID_ARGUMENT,
        &["N"],
    );
    assert!(e.message().contains("\"c\"") || e.message().contains("'c'") || e.message().contains(" c"), "{e}");
    Ok(())
}

#[test]
fn eager_ops() -> R {
    let s = session();
    let a = s.from_slice(&[2, 3], &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0])?;
    let row = s.from_slice(&[3], &[10.0f32, 20.0, 30.0])?;
    assert_eq!(a.add(&row)?.to_vec::<f32>()?, vec![11.0, 22.0, 33.0, 14.0, 25.0, 36.0]);
    assert_eq!(a.sub_scalar(1.0)?.mul_scalar(2.0)?.to_vec::<f32>()?, vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
    // Promotion: int32 + float32 is float32; int64 with an integral scalar stays int64; true division of
    // integers is float32.
    let i = s.from_slice(&[3], &[1i32, 2, 3])?;
    let sum = i.add(&row)?;
    assert!(sum.dtype()? == dtype::float32());
    assert_eq!(sum.to_vec::<f32>()?, vec![11.0, 22.0, 33.0]);
    let l = s.from_slice(&[2], &[7i64, 9])?;
    assert_eq!(l.add_scalar(2.0)?.to_vec::<i64>()?, vec![9, 11]);
    assert_eq!(l.div_scalar(2.0)?.to_vec::<f32>()?, vec![3.5, 4.5]);
    assert_eq!(l.gt_scalar(8.0)?.to_vec::<bool>()?, vec![false, true]);
    // matmul (2, 3) @ (3, 2)
    let w = s.from_slice(&[3, 2], &[1.0f32, 0.0, 0.0, 1.0, 1.0, 1.0])?;
    assert_eq!(a.matmul(&w)?.to_vec::<f32>()?, vec![4.0, 5.0, 10.0, 11.0]);
    // conv2d: a 3x3 image 0..8 with a 2x2 kernel of ones, and padding 1 with stride 2
    let img = s.from_slice(&[1, 1, 3, 3], &[0.0f32, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0])?;
    let k = s.ones(dtype::float32(), &[1, 1, 2, 2])?;
    let y = img.conv2d(&k, None, None)?;
    assert_eq!(y.dims()?, vec![1, 1, 2, 2]);
    assert_eq!(y.to_vec::<f32>()?, vec![8.0, 12.0, 20.0, 24.0]);
    let opts = Conv2dOptions { stride: [2, 2], padding: [1, 1], ..Default::default() };
    let bias = s.from_slice(&[1], &[0.5f32])?;
    assert_eq!(img.conv2d(&k, Some(&bias), Some(&opts))?.to_vec::<f32>()?, vec![0.5, 3.5, 9.5, 24.5]);
    // reductions
    assert_eq!(a.sum(&[1], false)?.to_vec::<f32>()?, vec![6.0, 15.0]);
    assert_eq!(a.sum(&[0], true)?.dims()?, vec![1, 3]);
    assert_eq!(a.mean(&[], false)?.item::<f32>()?, 3.5);
    assert_eq!(a.max(&[0], false)?.to_vec::<f32>()?, vec![4.0, 5.0, 6.0]);
    assert_eq!(a.argmax(1, false)?.to_vec::<i64>()?, vec![2, 2]);
    assert_close(&a.var(&[1], 1, false)?.to_vec::<f32>()?, &[1.0, 1.0], 1e-6);
    assert_eq!(i.sum(&[], false)?.item::<i64>()?, 6);
    // views
    let t = a.transpose(0, 1)?;
    assert_eq!(t.dims()?, vec![3, 2]);
    assert_eq!(t.contiguous()?.to_vec::<f32>()?, vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
    assert_eq!(a.reshape(&[3, -1])?.dims()?, vec![3, 2]);
    assert_eq!(a.narrow(1, 1, 2)?.to_vec::<f32>()?, vec![2.0, 3.0, 5.0, 6.0]);
    assert_eq!(s.cat(&[&a, &a], 0)?.dims()?, vec![4, 3]);
    assert_eq!(s.stack(&[&row, &row], 1)?.dims()?, vec![3, 2]);
    let cond = row.gt_scalar(15.0)?;
    assert_eq!(cond.where_(&row, &row.neg()?)?.to_vec::<f32>()?, vec![-10.0, 20.0, 30.0]);
    assert_close(&row.softmax(0)?.sum(&[], false)?.to_vec::<f32>()?, &[1.0], 1e-6);
    // creation
    assert_eq!(s.arange(0.0, 5.0, 2.0, dtype::int64())?.to_vec::<i64>()?, vec![0, 2, 4]);
    assert_eq!(s.full(dtype::int8(), &[2], -3.0)?.to_vec::<i8>()?, vec![-3, -3]);
    assert_eq!(s.from_vec(&[2, 2], vec![1u8, 2, 3, 4])?.sum(&[0], false)?.to_vec::<i64>()?, vec![4, 6]);
    let half = s.from_slice(&[2], &[oneflow::F16(0x3c00), oneflow::F16(0x4000)])?; // 1.0, 2.0
    assert_eq!(half.cast(dtype::float32())?.to_vec::<f32>()?, vec![1.0, 2.0]);
    // errors name the shapes
    let bad = s.zeros(dtype::float32(), &[4, 3])?;
    expect_err(a.add(&bad), StatusCode::INVALID_ARGUMENT, &["(2, 3)", "(4, 3)"]);
    Ok(())
}

#[test]
fn autograd() -> R {
    let s = session();
    let x = s.from_slice(&[3], &[1.0f64, -2.0, 0.5])?;
    x.set_requires_grad(true)?;
    assert!(x.is_leaf()? && x.requires_grad()?);
    // d/dx sum(x * x + 3 x) = 2 x + 3
    let y = x.mul(&x)?.add(&x.mul_scalar(3.0)?)?.sum(&[], false)?;
    assert!(!y.is_leaf()? && y.requires_grad()?);
    y.backward(None, false)?;
    assert_eq!(x.grad()?.unwrap().to_vec::<f64>()?, vec![5.0, -1.0, 4.0]);
    // Gradients accumulate; set_grad(None) clears them.
    x.exp()?.sum(&[], false)?.backward(None, false)?;
    let want: Vec<f64> = [1.0f64, -2.0, 0.5].iter().map(|v| 2.0 * v + 3.0 + v.exp()).collect();
    let got = x.grad()?.unwrap().to_vec::<f64>()?;
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() < 1e-12, "{got:?} vs {want:?}");
    }
    x.set_grad(None)?;
    assert!(x.grad()?.is_none());
    // A second backward through freed saved tensors is an error.
    let z = x.mul(&x)?.sum(&[], false)?;
    z.backward(None, false)?;
    expect_err(z.backward(None, false), StatusCode::FAILED_PRECONDITION, &[]);
    // No-grad scope: nothing recorded, the mode restored after it.
    {
        let _guard = oneflow::no_grad();
        assert!(!oneflow::is_grad_enabled());
        assert!(!x.mul(&x)?.requires_grad()?);
    }
    assert!(oneflow::is_grad_enabled());
    assert!(oneflow::set_grad_enabled(false)?);
    assert!(!oneflow::set_grad_enabled(true)?);
    // detach: shares the data, outside the graph
    let d = x.detach()?;
    assert!(!d.requires_grad()? && d.is_leaf()?);
    assert_eq!(d.to_vec::<f64>()?, x.to_vec::<f64>()?);
    // An explicit output gradient
    x.set_grad(None)?;
    let v = x.mul_scalar(2.0)?;
    v.backward(Some(&s.from_slice(&[3], &[1.0f64, 10.0, 100.0])?), false)?;
    assert_eq!(x.grad()?.unwrap().to_vec::<f64>()?, vec![2.0, 20.0, 200.0]);
    let g = s.from_slice(&[3], &[1.0f64, 1.0, 1.0])?;
    x.set_grad(Some(&g))?;
    assert_eq!(x.grad()?.unwrap().to_vec::<f64>()?, vec![1.0, 1.0, 1.0]);
    Ok(())
}

struct Mlp {
    w1: Tensor,
    b1: Tensor,
    w2: Tensor,
    b2: Tensor,
}

impl Mlp {
    fn new(s: &Session) -> oneflow::Result<Mlp> {
        let w1: Vec<f32> = (0..32).map(|i| ((i * 7 % 13) as f32 - 6.0) / 10.0).collect();
        let w2: Vec<f32> = (0..8).map(|i| ((i * 5 % 7) as f32 - 3.0) / 5.0).collect();
        let m = Mlp {
            w1: s.from_slice(&[8, 4], &w1)?,
            b1: s.zeros(dtype::float32(), &[8])?,
            w2: s.from_slice(&[1, 8], &w2)?,
            b2: s.full(dtype::float32(), &[1], 0.1)?,
        };
        for p in m.params() {
            p.set_requires_grad(true)?;
        }
        Ok(m)
    }

    fn params(&self) -> [&Tensor; 4] {
        [&self.w1, &self.b1, &self.w2, &self.b2]
    }

    fn loss(&self, x: &Tensor, y: &Tensor) -> oneflow::Result<Tensor> {
        let h = x.linear(&self.w1, Some(&self.b1))?.relu()?;
        let d = h.linear(&self.w2, Some(&self.b2))?.sub(y)?;
        d.mul(&d)?.mean(&[], false)
    }
}

fn batch(s: &Session) -> oneflow::Result<(Tensor, Tensor)> {
    let x: Vec<f32> = (0..24).map(|i| ((i * 3 % 11) as f32 - 5.0) / 4.0).collect();
    let y: Vec<f32> = (0..6).map(|i| (i as f32 - 2.5) / 2.0).collect();
    Ok((s.from_slice(&[6, 4], &x)?, s.from_slice(&[6, 1], &y)?))
}

fn eager_losses(adam: bool, steps: usize) -> oneflow::Result<Vec<f32>> {
    let s = session();
    let m = Mlp::new(&s)?;
    let (x, y) = batch(&s)?;
    let mut opt = if adam {
        Optimizer::adam(&s, &m.params(), &AdamOptions { lr: 0.01, ..Default::default() })?
    } else {
        Optimizer::sgd(&s, &m.params(), &SgdOptions { lr: 0.05, momentum: 0.9, ..Default::default() })?
    };
    let mut losses = vec![];
    for _ in 0..steps {
        let loss = m.loss(&x, &y)?;
        losses.push(loss.item::<f32>()?);
        loss.backward(None, false)?;
        opt.step()?;
        opt.zero_grad()?;
    }
    Ok(losses)
}

fn graph_losses(adam: bool, steps: usize) -> oneflow::Result<Vec<f32>> {
    let s = session();
    let m = Mlp::new(&s)?;
    let (x, y) = batch(&s)?;
    let opt = if adam {
        Optimizer::adam(&s, &m.params(), &AdamOptions { lr: 0.01, ..Default::default() })?
    } else {
        Optimizer::sgd(&s, &m.params(), &SgdOptions { lr: 0.05, momentum: 0.9, ..Default::default() })?
    };
    let mut g = s.graph("train")?;
    let mut b = g.build()?;
    let (gx, gy) = (b.input("x", dtype::float32(), &[dim::UNKNOWN, 4])?, b.input("y", dtype::float32(), &[dim::UNKNOWN, 1])?);
    let loss = m.loss(&gx, &gy)?;
    loss.backward(None, false)?;
    b.optimizer(&opt)?;
    b.output(&loss)?;
    b.finish()?;
    (0..steps).map(|_| g.run(&[&x, &y])?[0].item::<f32>()).collect()
}

#[test]
fn training() -> R {
    for adam in [false, true] {
        let eager = eager_losses(adam, 8)?;
        let lazy = graph_losses(adam, 8)?;
        assert_close(&lazy, &eager, 1e-5);
        assert!(eager[7] < eager[0] * 0.9, "the loss should fall: {eager:?}");
    }
    // safetensors round trip: identical values and dtypes
    let s = session();
    let m = Mlp::new(&s)?;
    let dir = std::env::temp_dir().join(format!("oneflow_rust_training_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("mlp.safetensors");
    let ints = s.from_slice(&[3], &[1i64, -2, 3])?;
    let named = [("w1", &m.w1), ("b1", &m.b1), ("w2", &m.w2), ("b2", &m.b2), ("ints", &ints)];
    safetensors::save(&path, &named)?;
    let loaded = safetensors::load(&s, &path)?;
    assert_eq!(loaded.len(), 5);
    for ((name, t), (lname, l)) in named.iter().zip(&loaded) {
        assert_eq!(name, lname);
        assert!(t.dtype()? == l.dtype()? && t.dims()? == l.dims()?);
    }
    assert_eq!(loaded[0].1.to_vec::<f32>()?, m.w1.to_vec::<f32>()?);
    assert_eq!(loaded[4].1.to_vec::<i64>()?, vec![1, -2, 3]);
    let fresh = Mlp::new(&s)?;
    fresh.w1.init_constant(0.0)?;
    let fresh_ints = s.zeros(dtype::int64(), &[3])?;
    safetensors::load_into(
        &path,
        &[("w1", &fresh.w1), ("b1", &fresh.b1), ("w2", &fresh.w2), ("b2", &fresh.b2), ("ints", &fresh_ints)],
        true,
    )?;
    assert_eq!(fresh.w1.to_vec::<f32>()?, m.w1.to_vec::<f32>()?);
    assert_eq!(fresh_ints.to_vec::<i64>()?, vec![1, -2, 3]);
    expect_err(safetensors::load_into(&path, &[("w1", &fresh.w1)], true), StatusCode::INVALID_ARGUMENT, &[]);
    std::fs::remove_dir_all(&dir).unwrap();
    Ok(())
}

#[test]
fn lazy_graph_free_tensor() -> R {
    let s = session();
    let released = Arc::new(AtomicUsize::new(0));
    let mut g = s.graph("free_tensors")?;
    {
        let mut b = g.build()?;
        let x = b.input("x", dtype::float32(), &[dim::UNKNOWN, 4])?;
        // Made inside the build: eager tensors that become the graph's free tensors.
        let mask = s.from_owner(&[4], Counted(vec![1.0, 0.0, 1.0, 2.0], released.clone()))?;
        let y = x.gt_scalar(0.5)?.cast(dtype::float32())?.mul(&mask)?;
        drop(mask); // the graph keeps it
        b.output(&y)?;
        b.finish()?;
    }
    let free = g.free_tensor_names()?;
    assert!(free.len() >= 2, "the scalar 0.5 and the mask: {free:?}");
    for n in [1usize, 3, 5] {
        let data: Vec<f32> = (0..n * 4).map(|i| (i % 5) as f32 * 0.3).collect();
        let out = g.run(&[&s.from_slice(&[n as i64, 4], &data)?])?;
        let want: Vec<f32> =
            data.iter().enumerate().map(|(i, v)| if *v > 0.5 { [1.0, 0.0, 1.0, 2.0][i % 4] } else { 0.0 }).collect();
        assert_eq!(out[0].dims()?, vec![n as i64, 4]);
        assert_eq!(out[0].to_vec::<f32>()?, want);
    }
    assert!(g.dump()?.contains("free_tensors"));
    assert_eq!(g.memory_stats()?.specialization_count, 3);
    assert_eq!(released.load(Ordering::SeqCst), 0, "the graph holds the mask");
    drop(g);
    assert_eq!(released.load(Ordering::SeqCst), 1, "destroying the graph releases its free tensors");
    Ok(())
}

#[test]
fn errors() -> R {
    let s = session();
    let a = s.zeros(dtype::float32(), &[2, 3])?;
    // 1. shapes
    expect_err(a.matmul(&a), StatusCode::INVALID_ARGUMENT, &["matmul", "(2, 3)"]);
    // 2. data of the wrong size
    expect_err(s.from_slice(&[2, 2], &[1.0f32, 2.0, 3.0]), StatusCode::INVALID_ARGUMENT, &["12", "16"]);
    // 3. the wrong element type on the way out
    expect_err(a.to_vec::<i64>(), StatusCode::INVALID_ARGUMENT, &["float32", "int64"]);
    // 4. requires_grad on an integer tensor
    let i = s.zeros(dtype::int32(), &[2])?;
    expect_err(i.set_requires_grad(true), StatusCode::INVALID_ARGUMENT, &["int32"]);
    // 5. a file that is not there, named
    expect_err(safetensors::load(&s, "/nonexistent/w.safetensors"), StatusCode::NOT_FOUND, &["/nonexistent/w.safetensors"]);
    // 6. an unknown dim in an eager tensor
    expect_err(s.zeros(dtype::float32(), &[dim::UNKNOWN]), StatusCode::INVALID_ARGUMENT, &[]);
    // 7. a graph that was never built
    let g = s.graph("unbuilt")?;
    expect_err(g.run(&[]), StatusCode::FAILED_PRECONDITION, &["unbuilt"]);
    // 8. a lazy tensor after its build, and its data
    let mut g = s.graph("done")?;
    let mut b = g.build()?;
    let x = b.input("x", dtype::float32(), &[2])?;
    expect_err(x.to_vec::<f32>(), StatusCode::FAILED_PRECONDITION, &[]);
    b.output(&x.relu()?)?;
    b.finish()?;
    expect_err(x.relu(), StatusCode::FAILED_PRECONDITION, &[]);
    // 9. options out of range, naming the field
    let bad = Conv2dOptions { stride: [0, 1], ..Default::default() };
    let img = s.zeros(dtype::float32(), &[1, 1, 3, 3])?;
    let k = s.zeros(dtype::float32(), &[1, 1, 2, 2])?;
    expect_err(img.conv2d(&k, None, Some(&bad)), StatusCode::INVALID_ARGUMENT, &["stride"]);
    // 10. backward of a tensor that does not require grad
    expect_err(a.sum(&[], false)?.backward(None, false), StatusCode::INVALID_ARGUMENT, &[]);
    // The error type: Display, std::error::Error, open codes.
    let e = a.matmul(&a).unwrap_err();
    assert!(e.to_string().starts_with("INVALID_ARGUMENT: "));
    let boxed: Box<dyn std::error::Error> = Box::new(e.clone());
    assert_eq!(boxed.to_string(), e.to_string());
    let unknown = Error::new(StatusCode(99), "from a newer library");
    assert_eq!((unknown.code().0, unknown.code_name()), (99, "UNRECOGNIZED"));
    assert_eq!(StatusCode::DATA_LOSS.name(), "DATA_LOSS");
    Ok(())
}

fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

#[test]
fn close_stress() -> R {
    let s = Session::with_options(&SessionOptions { num_threads: 1, ..Default::default() })?;
    let released = Arc::new(AtomicUsize::new(0));
    let cycles = 1_000_000usize;
    let warmup = 50_000usize;
    let mut rss_after_warmup = 0;
    for i in 0..cycles {
        // Adopted memory released through the library, an op, a clone: every C reference dropped.
        let t = s.from_owner(&[4], Counted(vec![i as f32, 1.0, 2.0, 3.0], released.clone()))?;
        let u = t.add_scalar(1.0)?;
        let v = u.clone();
        drop(u);
        if i % 100_000 == 0 {
            assert_eq!(v.to_vec::<f32>()?[0], i as f32 + 1.0);
        }
        if i + 1 == warmup {
            rss_after_warmup = rss_bytes();
        }
    }
    let growth = rss_bytes() as i64 - rss_after_warmup as i64;
    assert!(growth < 4 << 20, "resident memory grew by {growth} bytes over {cycles} cycles");
    assert_eq!(released.load(Ordering::SeqCst), cycles, "every adopted buffer was released");
    // A clone is the same tensor: dropping the original leaves the clone working. A use after the
    // last drop cannot be written in safe Rust (the borrow checker refuses it).
    let t = s.from_slice(&[2], &[1.0f32, 2.0])?;
    let c = t.clone();
    drop(t);
    assert_eq!(c.to_vec::<f32>()?, vec![1.0, 2.0]);
    // Values outliving their session value: the C session stays alive until the last of them.
    let s2 = session();
    let t2 = s2.ones(dtype::float32(), &[2])?;
    let mut g = s2.graph("outlives")?;
    drop(s2);
    let mut b = g.build()?;
    let x = b.input("x", dtype::float32(), &[2])?;
    b.output(&x.add(&t2)?)?;
    b.finish()?;
    assert_eq!(g.run(&[&t2])?[0].to_vec::<f32>()?, vec![2.0, 2.0]);
    Ok(())
}

#[test]
fn threads() -> R {
    let s = session();
    let shared = s.from_slice(&[2, 2], &[1.0f32, 2.0, 3.0, 4.0])?;
    let mut g = s.graph("shared")?;
    let mut b = g.build()?;
    let x = b.input("x", dtype::float32(), &[dim::UNKNOWN, 2])?;
    b.output(&x.matmul(&shared)?)?;
    b.finish()?;
    let g = g; // built: runs from any thread
    std::thread::scope(|scope| {
        for t in 0..4 {
            let (s, shared, g) = (&s, &shared, &g);
            scope.spawn(move || -> R {
                for i in 0..200 {
                    let k = (t * 1000 + i) as f32;
                    let v = s.from_slice(&[1, 2], &[k, 1.0])?;
                    let eager = v.matmul(shared)?.to_vec::<f32>()?;
                    assert_eq!(eager, vec![k + 3.0, 2.0 * k + 4.0]);
                    if i % 10 == 0 {
                        assert_eq!(g.run(&[&v])?[0].to_vec::<f32>()?, eager);
                    }
                    let _ng = oneflow::no_grad();
                    assert_eq!(shared.sum(&[], false)?.item::<f32>()?, 10.0);
                }
                Ok(())
            });
        }
    });
    // A session and a tensor moved into threads, released there.
    let handles: Vec<_> = (0..2)
        .map(|_| {
            let (s, t) = (s.clone(), shared.clone());
            std::thread::spawn(move || t.mul_scalar(2.0).and_then(|u| u.to_vec::<f32>()).map(|v| (v, s)))
        })
        .collect();
    for h in handles {
        assert_eq!(h.join().unwrap()?.0, vec![2.0, 4.0, 6.0, 8.0]);
    }
    Ok(())
}
