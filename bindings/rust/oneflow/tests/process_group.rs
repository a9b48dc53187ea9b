//! Process groups, collectives and data-parallel graphs in one process (a group of world size 1, in a
//! fresh temporary rendezvous directory): what the collectives give there, the errors, and that a
//! group and a data-parallel graph may be dropped in either order. Groups of several processes are
//! the library's tests (tests/dist/).
use oneflow::{
    dim, dtype, DataParallelOptions, Error, Graph, Optimizer, ProcessGroup, ProcessGroupOptions, ReduceOp, Session,
    SessionOptions, SgdOptions, StatusCode, Tensor,
};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

type R = oneflow::Result<()>;

/// A new empty directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
        let p = std::env::temp_dir().join(format!(
            "oneflow-rust-pg-{}-{}-{nanos}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        std::fs::create_dir(&p).unwrap();
        TempDir(p)
    }

    fn path(&self) -> &Path {
        &self.0
    }

    fn rendezvous(&self) -> Option<String> {
        Some(self.0.to_str().unwrap().to_string())
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn one_rank(dir: &TempDir) -> oneflow::Result<ProcessGroup> {
    ProcessGroup::new(&ProcessGroupOptions { rendezvous: dir.rendezvous(), timeout_ms: 10_000, ..Default::default() })
}

fn session() -> Session {
    Session::with_options(&SessionOptions { num_threads: 2, ..Default::default() }).unwrap()
}

fn expect_err<T: std::fmt::Debug>(r: oneflow::Result<T>, code: StatusCode, needles: &[&str]) -> Error {
    let e = r.expect_err("the call should have failed");
    assert_eq!(e.code(), code, "{e}");
    for n in needles {
        assert!(e.message().contains(n), "message {:?} should name {n:?}", e.message());
    }
    e
}

#[test]
fn options_defaults_come_from_the_library() {
    let o = ProcessGroupOptions::default();
    assert_eq!((o.rank, o.world_size, o.timeout_ms), (0, 1, 30_000));
    assert_eq!((o.rendezvous, o.host), (None, None));
    let d = DataParallelOptions::default();
    assert_eq!(d.bucket_bytes, 25 << 20);
    assert!(!d.sync_batch_norm_stats);
}

#[test]
fn one_rank_collectives() -> R {
    let dir = TempDir::new();
    let group = one_rank(&dir)?;
    assert_eq!((group.rank()?, group.world_size()?), (0, 1));
    assert_eq!(format!("{group:?}"), "ProcessGroup(rank 0 of 1)");
    group.barrier()?;
    let s = session();
    let values = [1.5f32, -2.0, 3.0, 0.25, 8.0, -1.0];
    let x = s.from_slice(&[2, 3], &values)?;
    for op in [ReduceOp::SUM, ReduceOp::MEAN, ReduceOp::MAX, ReduceOp::MIN] {
        let y = group.all_reduce(&x, op)?;
        assert_eq!((y.dims()?, y.to_vec::<f32>()?), (vec![2, 3], values.to_vec()), "{op:?}");
    }
    let ints = s.from_slice(&[3], &[7i64, -8, 9])?;
    assert_eq!(group.all_reduce(&ints, ReduceOp::SUM)?.to_vec::<i64>()?, vec![7, -8, 9]);
    let b = group.broadcast(&x, 0)?;
    assert_eq!((b.dims()?, b.to_vec::<f32>()?), (vec![2, 3], values.to_vec()));
    let g = group.all_gather(&x)?;
    assert_eq!((g.dims()?, g.to_vec::<f32>()?), (vec![1, 2, 3], values.to_vec()));
    assert!(g.dtype()? == dtype::float32());
    Ok(())
}

#[test]
fn reduce_op_is_an_open_set() -> R {
    // A value this crate does not name survives as its number; the library refuses it.
    let unknown = ReduceOp(42);
    assert_eq!(unknown.0, 42);
    assert_eq!(ReduceOp(unknown.0), unknown);
    assert_eq!(ReduceOp(2), ReduceOp::MAX);
    let dir = TempDir::new();
    let group = one_rank(&dir)?;
    let s = session();
    let x = s.from_slice(&[2], &[1.0f32, 2.0])?;
    expect_err(group.all_reduce(&x, unknown), StatusCode::INVALID_ARGUMENT, &["op", "42"]);
    Ok(())
}

#[test]
fn errors() -> R {
    let dir = TempDir::new();
    // A rank outside [0, world_size).
    let opts = ProcessGroupOptions { rank: 1, world_size: 1, rendezvous: dir.rendezvous(), ..Default::default() };
    expect_err(ProcessGroup::new(&opts), StatusCode::INVALID_ARGUMENT, &["rank must be in [0, world_size = 1)", "got 1"]);
    // A rendezvous directory that cannot be written (its parent is a file).
    let file = dir.path().join("a-file");
    std::fs::write(&file, b"x").unwrap();
    let bad = file.join("sub");
    let opts = ProcessGroupOptions { rendezvous: Some(bad.to_str().unwrap().into()), ..Default::default() };
    expect_err(ProcessGroup::new(&opts), StatusCode::INVALID_ARGUMENT, &[bad.to_str().unwrap(), "is not a writable directory"]);
    // No rendezvous at all, and one the binding cannot pass to C.
    expect_err(ProcessGroup::new(&ProcessGroupOptions::default()), StatusCode::INVALID_ARGUMENT, &["rendezvous"]);
    let opts = ProcessGroupOptions { rendezvous: Some("a\0b".into()), ..Default::default() };
    expect_err(ProcessGroup::new(&opts), StatusCode::INVALID_ARGUMENT, &["rendezvous", "NUL"]);
    // Collectives: a root out of range, a bool all_reduce, mean of integers.
    let group = one_rank(&dir)?;
    let s = session();
    let x = s.from_slice(&[2], &[1.0f32, 2.0])?;
    expect_err(group.broadcast(&x, 1), StatusCode::INVALID_ARGUMENT, &["root must be a rank in [0, 1)", "got 1"]);
    let flags = s.from_slice(&[2], &[true, false])?;
    expect_err(group.all_reduce(&flags, ReduceOp::SUM), StatusCode::INVALID_ARGUMENT, &["bool"]);
    let ints = s.from_slice(&[2], &[1i32, 2])?;
    expect_err(group.all_reduce(&ints, ReduceOp::MEAN), StatusCode::INVALID_ARGUMENT, &["mean needs a floating x"]);
    Ok(())
}

/// A linear regression trained by a graph: its parameters, optimizer, graph and a batch.
struct Trainer {
    params: Vec<Tensor>,
    _opt: Optimizer,
    graph: Graph,
    x: Tensor,
    y: Tensor,
}

fn trainer(s: &Session) -> oneflow::Result<Trainer> {
    let w = s.from_slice(&[1, 3], &[0.1f32, -0.2, 0.3])?;
    let b = s.zeros(dtype::float32(), &[1])?;
    for p in [&w, &b] {
        p.set_requires_grad(true)?;
    }
    let opt = Optimizer::sgd(s, &[&w, &b], &SgdOptions { lr: 0.1, momentum: 0.9, ..Default::default() })?;
    let mut graph = s.graph("dp_train")?;
    let mut builder = graph.build()?;
    let gx = builder.input("x", dtype::float32(), &[dim::UNKNOWN, 3])?;
    let gy = builder.input("y", dtype::float32(), &[dim::UNKNOWN, 1])?;
    let d = gx.linear(&w, Some(&b))?.sub(&gy)?;
    let loss = d.mul(&d)?.mean(&[], false)?;
    loss.backward(None, false)?;
    builder.optimizer(&opt)?;
    builder.output(&loss)?;
    builder.finish()?;
    let x = s.from_slice(&[4, 3], &[1.0f32, 0.0, 2.0, -1.0, 1.0, 0.5, 0.0, 2.0, -1.0, 3.0, 1.0, 1.0])?;
    let y = s.from_slice(&[4, 1], &[1.0f32, -0.5, 2.0, 0.0])?;
    Ok(Trainer { params: vec![w, b], _opt: opt, graph, x, y })
}

fn losses(t: &Trainer, steps: usize) -> oneflow::Result<Vec<f32>> {
    (0..steps).map(|_| t.graph.run(&[&t.x, &t.y])?[0].item::<f32>()).collect()
}

#[test]
fn data_parallel_training_step() -> R {
    let s = session();
    let plain = trainer(&s)?;
    let want = losses(&plain, 4)?;
    assert!(want[3] < want[0], "the loss should fall: {want:?}");

    let dir = TempDir::new();
    let group = one_rank(&dir)?;
    let mut dp = trainer(&s)?;
    dp.graph.set_data_parallel(&group, Some(&DataParallelOptions { bucket_bytes: 8, ..Default::default() }))?;
    // One rank: averaging over the ranks changes nothing.
    assert_eq!(losses(&dp, 4)?, want);
    assert_eq!(dp.params[0].to_vec::<f32>()?, plain.params[0].to_vec::<f32>()?);
    // Only before the first run, and only for a training graph.
    expect_err(dp.graph.set_data_parallel(&group, None), StatusCode::FAILED_PRECONDITION, &["already run"]);
    let mut inference = s.graph("no_optimizer")?;
    let mut b = inference.build()?;
    let x = b.input("x", dtype::float32(), &[2])?;
    b.output(&x.relu()?)?;
    b.finish()?;
    expect_err(inference.set_data_parallel(&group, None), StatusCode::FAILED_PRECONDITION, &["no optimizer"]);
    Ok(())
}

#[test]
fn group_and_graph_drop_in_any_order() -> R {
    let s = session();
    // The group first: the data-parallel graph keeps it alive and keeps training.
    let dir = TempDir::new();
    let group = one_rank(&dir)?;
    let mut t = trainer(&s)?;
    t.graph.set_data_parallel(&group, None)?;
    drop(group);
    let l = losses(&t, 3)?;
    assert!(l[2] < l[0], "{l:?}");
    drop(t);
    // The graph first.
    let dir = TempDir::new();
    let group = one_rank(&dir)?;
    let mut t = trainer(&s)?;
    t.graph.set_data_parallel(&group, None)?;
    losses(&t, 1)?;
    drop(t);
    group.barrier()?;
    drop(group);
    // A graph that traced collectives needs its group when it runs.
    let dir = TempDir::new();
    let group = one_rank(&dir)?;
    let mut g = s.graph("gather")?;
    let mut b = g.build()?;
    let x = b.input("x", dtype::float32(), &[dim::UNKNOWN, 2])?;
    b.output(&group.all_gather(&group.all_reduce(&x, ReduceOp::SUM)?)?)?;
    b.finish()?;
    let input = s.from_slice(&[1, 2], &[3.0f32, 4.0])?;
    let out = g.run(&[&input])?;
    assert_eq!((out[0].dims()?, out[0].to_vec::<f32>()?), (vec![1, 1, 2], vec![3.0, 4.0]));
    drop(group);
    expect_err(g.run(&[&input]), StatusCode::FAILED_PRECONDITION, &["destroyed"]);
    Ok(())
}
