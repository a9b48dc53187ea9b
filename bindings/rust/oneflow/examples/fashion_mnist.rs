//! Trains the Fashion-MNIST CNN of examples/fashion_mnist (the C example) through lazy graphs, from Rust.
//!
//!   cargo run --release --example fashion_mnist -- [--epochs N] [--batch-size N] [--lr X] [--width N]
//!       [--threads N] [--seed N] [--data DIR] [--out FILE] [--limit N]
//!
//! The network: conv3x3 -> BN -> ReLU, three residual blocks (the last two halve the resolution and
//! double the width, with a 1x1 conv + BN shortcut), global average pooling and a linear layer; SGD
//! (momentum 0.9, nesterov, weight decay 5e-4) with a cosine learning-rate schedule. One graph run per
//! training step (forward, cross-entropy, backward, update) and an evaluation graph; the batch dim is
//! unknown, so the last, smaller batch runs the same graphs. Data: Debian's dataset-fashion-mnist
//! (gzip-compressed IDX files, read through `gzip -dc`).
use oneflow::{
    dim, dtype, safetensors, BatchNormOptions, Conv2dOptions, FanMode, Graph, KaimingOptions, Nonlinearity,
    Optimizer, Session, SessionOptions, SgdOptions, Tensor,
};
use std::io::Write;
use std::process::Command;
use std::time::Instant;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

struct Options {
    epochs: usize,
    batch_size: usize,
    lr: f64,
    width: i64,
    threads: i32,
    seed: u64,
    data: String,
    out: String,
    limit: usize,
}

fn parse_options() -> Result<Options> {
    let mut o = Options {
        epochs: 2,
        batch_size: 64,
        lr: 0.05,
        width: 16,
        threads: 0,
        seed: 42,
        data: "/usr/share/datasets/fashion-mnist".into(),
        out: "fashion_mnist.safetensors".into(),
        limit: 0,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let value = args.get(i + 1).ok_or_else(|| format!("{} needs a value", args[i]))?;
        match args[i].as_str() {
            "--epochs" => o.epochs = value.parse()?,
            "--batch-size" => o.batch_size = value.parse()?,
            "--lr" => o.lr = value.parse()?,
            "--width" => o.width = value.parse()?,
            "--threads" => o.threads = value.parse()?,
            "--seed" => o.seed = value.parse()?,
            "--data" => o.data = value.clone(),
            "--out" => o.out = value.clone(),
            "--limit" => o.limit = value.parse()?,
            other => return Err(format!("unknown option {other}").into()),
        }
        i += 2;
    }
    if o.epochs < 1 || o.batch_size < 1 || o.width < 1 || o.threads < 0 || o.lr.is_nan() || o.lr <= 0.0 {
        return Err("epochs, batch size and width must be >= 1, threads >= 0, lr > 0".into());
    }
    Ok(o)
}

/// One gzip-compressed IDX file of uint8 data: (dims, data).
fn load_idx(path: &str, ndim: usize) -> Result<(Vec<usize>, Vec<u8>)> {
    let out = Command::new("gzip").args(["-dc", path]).output()?;
    if !out.status.success() {
        return Err(format!("cannot read {path} (install Debian's dataset-fashion-mnist, or pass --data DIR)").into());
    }
    let bytes = out.stdout;
    let be = |i: usize| u32::from_be_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]) as usize;
    if bytes.len() < 4 + 4 * ndim || be(0) != 0x800 | ndim {
        return Err(format!("{path}: not an IDX file of {ndim}-d uint8 data").into());
    }
    let dims: Vec<usize> = (0..ndim).map(|d| be(4 + 4 * d)).collect();
    let data = bytes[4 + 4 * ndim..].to_vec();
    if data.len() != dims.iter().product::<usize>() {
        return Err(format!("{path}: truncated").into());
    }
    Ok((dims, data))
}

struct Dataset {
    images: Vec<u8>,
    labels: Vec<u8>,
    count: usize,
}

fn load_dataset(dir: &str, split: &str) -> Result<Dataset> {
    let (dims, images) = load_idx(&format!("{dir}/{split}-images-idx3-ubyte.gz"), 3)?;
    let (_, labels) = load_idx(&format!("{dir}/{split}-labels-idx1-ubyte.gz"), 1)?;
    if dims[1..] != [28, 28] || labels.len() != dims[0] {
        return Err(format!("{dir}: unexpected {split} sizes {dims:?}").into());
    }
    Ok(Dataset { images, labels, count: dims[0] })
}

struct Bn {
    weight: Tensor,
    bias: Tensor,
    running_mean: Tensor,
    running_var: Tensor,
}

struct Block {
    conv1: Tensor,
    bn1: Bn,
    conv2: Tensor,
    bn2: Bn,
    shortcut: Option<(Tensor, Bn)>,
    stride: i64,
}

struct Model {
    stem: Tensor,
    stem_bn: Bn,
    blocks: Vec<Block>,
    fc_weight: Tensor,
    fc_bias: Tensor,
    named: Vec<(String, Tensor, bool)>, // (name, tensor, trainable)
}

impl Model {
    fn tensor(&mut self, s: &Session, name: &str, dims: &[i64], fill: f64, trainable: bool) -> Result<Tensor> {
        let t = s.full(dtype::float32(), dims, fill)?;
        if trainable {
            t.set_requires_grad(true)?;
        }
        self.named.push((name.to_string(), t.clone(), trainable));
        Ok(t)
    }

    fn conv(&mut self, s: &Session, name: &str, out: i64, inp: i64, k: i64) -> Result<Tensor> {
        let w = self.tensor(s, name, &[out, inp, k, k], 0.0, true)?;
        w.init_kaiming_normal(&KaimingOptions {
            mode: FanMode::FAN_OUT,
            nonlinearity: Nonlinearity::RELU,
            ..Default::default()
        })?;
        Ok(w)
    }

    fn bn(&mut self, s: &Session, prefix: &str, c: i64) -> Result<Bn> {
        Ok(Bn {
            weight: self.tensor(s, &format!("{prefix}.weight"), &[c], 1.0, true)?,
            bias: self.tensor(s, &format!("{prefix}.bias"), &[c], 0.0, true)?,
            running_mean: self.tensor(s, &format!("{prefix}.running_mean"), &[c], 0.0, false)?,
            running_var: self.tensor(s, &format!("{prefix}.running_var"), &[c], 1.0, false)?,
        })
    }

    fn new(s: &Session, width: i64) -> Result<Model> {
        let placeholder = s.zeros(dtype::float32(), &[1])?;
        let mut m = Model {
            stem: placeholder.clone(),
            stem_bn: Bn {
                weight: placeholder.clone(),
                bias: placeholder.clone(),
                running_mean: placeholder.clone(),
                running_var: placeholder.clone(),
            },
            blocks: vec![],
            fc_weight: placeholder.clone(),
            fc_bias: placeholder,
            named: vec![],
        };
        m.stem = m.conv(s, "stem.weight", width, 1, 3)?;
        m.stem_bn = m.bn(s, "stem.bn", width)?;
        let mut inp = width;
        for b in 0..3 {
            let out = width << b;
            let stride = if b == 0 { 1 } else { 2 };
            let conv1 = m.conv(s, &format!("block{b}.conv1.weight"), out, inp, 3)?;
            let bn1 = m.bn(s, &format!("block{b}.bn1"), out)?;
            let conv2 = m.conv(s, &format!("block{b}.conv2.weight"), out, out, 3)?;
            let bn2 = m.bn(s, &format!("block{b}.bn2"), out)?;
            let shortcut = if stride != 1 || inp != out {
                let w = m.conv(s, &format!("block{b}.shortcut.weight"), out, inp, 1)?;
                Some((w, m.bn(s, &format!("block{b}.shortcut.bn"), out)?))
            } else {
                None
            };
            m.blocks.push(Block { conv1, bn1, conv2, bn2, shortcut, stride });
            inp = out;
        }
        let bound = 1.0 / (inp as f64).sqrt();
        m.fc_weight = m.tensor(s, "fc.weight", &[10, inp], 0.0, true)?;
        m.fc_weight.init_uniform(-bound, bound)?;
        m.fc_bias = m.tensor(s, "fc.bias", &[10], 0.0, true)?;
        m.fc_bias.init_uniform(-bound, bound)?;
        Ok(m)
    }

    fn trainable(&self) -> Vec<&Tensor> {
        self.named.iter().filter(|(_, _, t)| *t).map(|(_, t, _)| t).collect()
    }

    /// images (N, 1, 28, 28) -> logits (N, 10); traced when a graph build is open.
    fn forward(&self, x: &Tensor, training: bool) -> oneflow::Result<Tensor> {
        let conv = |x: &Tensor, w: &Tensor, stride: i64, pad: i64| {
            x.conv2d(w, None, Some(&Conv2dOptions { stride: [stride; 2], padding: [pad; 2], ..Default::default() }))
        };
        let bn = |x: &Tensor, p: &Bn| {
            let o = BatchNormOptions { training, ..Default::default() };
            x.batch_norm(Some(&p.weight), Some(&p.bias), Some(&p.running_mean), Some(&p.running_var), Some(&o))
        };
        // relu(bn(x) + addend) as one op
        let bn_add_relu = |x: &Tensor, p: &Bn, addend: Option<&Tensor>| {
            let o = BatchNormOptions { training, ..Default::default() };
            let (w, b, m, v) = (Some(&p.weight), Some(&p.bias), Some(&p.running_mean), Some(&p.running_var));
            x.batch_norm_add_relu(addend, w, b, m, v, Some(&o))
        };
        let mut h = bn_add_relu(&conv(x, &self.stem, 1, 1)?, &self.stem_bn, None)?;
        for blk in &self.blocks {
            let y = bn_add_relu(&conv(&h, &blk.conv1, blk.stride, 1)?, &blk.bn1, None)?;
            let shortcut = match &blk.shortcut {
                Some((w, p)) => bn(&conv(&h, w, blk.stride, 0)?, p)?,
                None => h.clone(),
            };
            h = bn_add_relu(&conv(&y, &blk.conv2, 1, 1)?, &blk.bn2, Some(&shortcut))?;
        }
        h.adaptive_avg_pool2d(1, 1)?.flatten(1, -1)?.linear(&self.fc_weight, Some(&self.fc_bias))
    }
}

const MEAN: f32 = 0.2860;
const STD: f32 = 0.3530;

fn make_batch(s: &Session, ds: &Dataset, order: &[usize]) -> oneflow::Result<(Tensor, Tensor)> {
    let mut images = Vec::with_capacity(order.len() * 784);
    let mut labels = Vec::with_capacity(order.len());
    for &i in order {
        images.extend(ds.images[i * 784..(i + 1) * 784].iter().map(|&p| (p as f32 / 255.0 - MEAN) / STD));
        labels.push(ds.labels[i] as i64);
    }
    let n = order.len() as i64;
    Ok((s.from_vec(&[n, 1, 28, 28], images)?, s.from_vec(&[n], labels)?))
}

/// Opens a build over the model's parameters with inputs images (?, 1, 28, 28) and labels (?).
fn build_graph(
    s: &Session,
    m: &Model,
    name: &str,
    body: impl FnOnce(&mut oneflow::GraphBuilder, &Tensor, &Tensor) -> oneflow::Result<()>,
) -> oneflow::Result<Graph> {
    let mut g = s.graph(name)?;
    let mut b = g.build()?;
    for (name, t, trainable) in &m.named {
        if *trainable {
            b.parameter(t, name)?;
        }
    }
    let images = b.input("images", dtype::float32(), &[dim::UNKNOWN, 1, 28, 28])?;
    let labels = b.input("labels", dtype::int64(), &[dim::UNKNOWN])?;
    body(&mut b, &images, &labels)?;
    b.finish()?;
    Ok(g)
}

fn shuffle(order: &mut [usize], state: &mut u64) {
    for (i, o) in order.iter_mut().enumerate() {
        *o = i;
    }
    for i in (2..=order.len()).rev() {
        *state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let j = ((*state >> 33) % i as u64) as usize;
        order.swap(i - 1, j);
    }
}

fn main() -> Result<()> {
    let o = parse_options()?;
    let mut train = load_dataset(&o.data, "train")?;
    let test = load_dataset(&o.data, "t10k")?;
    if o.limit > 0 && o.limit < train.count {
        train.count = o.limit;
    }
    let s = Session::with_options(&SessionOptions { seed: o.seed, num_threads: o.threads, ..Default::default() })?;
    let model = Model::new(&s, o.width)?;
    let sgd = SgdOptions { lr: o.lr, momentum: 0.9, nesterov: true, weight_decay: 5e-4, ..Default::default() };
    let mut optimizer = Optimizer::sgd(&s, &model.trainable(), &sgd)?;
    println!(
        "Fashion-MNIST: {} training and {} test images; ResNet-style CNN, width {}, {} parameter tensors",
        train.count,
        test.count,
        o.width,
        model.trainable().len()
    );
    println!(
        "{} epochs, batch {}, SGD lr {} (cosine schedule), momentum 0.9, nesterov, weight decay 5e-4; lazy graphs",
        o.epochs, o.batch_size, o.lr
    );
    let train_graph = build_graph(&s, &model, "fashion_mnist_train", |b, images, labels| {
        let loss = model.forward(images, true)?.cross_entropy(labels, None)?;
        loss.backward(None, false)?;
        b.optimizer(&optimizer)?;
        b.output(&loss)
    })?;
    let eval_graph = {
        let _no_grad = oneflow::no_grad();
        build_graph(&s, &model, "fashion_mnist_eval", |b, images, labels| {
            let pred = model.forward(images, false)?.argmax(1, false)?;
            b.output(&pred.eq(labels)?.sum(&[], false)?)
        })?
    };

    let steps_per_epoch = train.count.div_ceil(o.batch_size);
    let total_steps = (steps_per_epoch * o.epochs) as f64;
    let mut order = vec![0usize; train.count];
    let mut rng = o.seed;
    let mut step = 0usize;
    let mut accuracy = 0.0;
    let run_started = Instant::now();
    for epoch in 1..=o.epochs {
        shuffle(&mut order, &mut rng);
        let started = Instant::now();
        let (mut loss_sum, mut seen) = (0.0f64, 0usize);
        for chunk in order.chunks(o.batch_size) {
            optimizer.set_lr(o.lr * 0.5 * (1.0 + (std::f64::consts::PI * step as f64 / total_steps).cos()))?;
            let (images, labels) = make_batch(&s, &train, chunk)?;
            let loss = train_graph.run(&[&images, &labels])?[0].item::<f32>()?;
            loss_sum += loss as f64 * chunk.len() as f64;
            seen += chunk.len();
            step += 1;
            if step.is_multiple_of(200) || seen == train.count {
                let rate = seen as f64 / started.elapsed().as_secs_f64();
                eprintln!("epoch {epoch}/{}: {seen}/{} images, {rate:.0} img/s, loss {:.4}", o.epochs, train.count,
                          loss_sum / seen as f64);
            }
        }
        let test_order: Vec<usize> = (0..test.count).collect();
        let mut correct = 0i64;
        for chunk in test_order.chunks(256) {
            let (images, labels) = make_batch(&s, &test, chunk)?;
            correct += eval_graph.run(&[&images, &labels])?[0].item::<i64>()?;
        }
        accuracy = correct as f64 / test.count as f64;
        println!(
            "epoch {epoch}/{}: train loss {:.4}, test accuracy {:.2}%, {:.1} s",
            o.epochs,
            loss_sum / seen as f64,
            100.0 * accuracy,
            started.elapsed().as_secs_f64()
        );
        std::io::stdout().flush()?;
    }
    let named: Vec<(&str, &Tensor)> = model.named.iter().map(|(n, t, _)| (n.as_str(), t)).collect();
    safetensors::save(&o.out, &named)?;
    println!(
        "final test accuracy {:.2}% after {:.0} s; weights saved to {} ({} tensors, safetensors)",
        100.0 * accuracy,
        run_started.elapsed().as_secs_f64(),
        o.out,
        named.len()
    );
    Ok(())
}
