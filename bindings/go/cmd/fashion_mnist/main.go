// Command fashion_mnist trains the small ResNet-style CNN of examples/fashion_mnist on Fashion-MNIST
// through lazy graphs of the Go binding, as the C example does with --graph: one training graph
// (forward, cross-entropy, backward, SGD update: one Graph.Run per step) and one evaluation graph
// (batch norm in inference mode; it returns the number of correct predictions). Same network, init,
// seed, schedule and options as the C program.
//
//	go run ./cmd/fashion_mnist [--epochs N] [--batch-size N] [--lr X] [--width N] [--threads N]
//	                           [--seed N] [--data DIR] [--out FILE] [--limit N] [--long]
package main

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	of "github.com/oneflow-c/oneflow-go/oneflow"
)

// ---- data: gzip-compressed IDX files ----

type dataset struct {
	count, rows, cols int
	images, labels    []byte
}

func loadIDX(path string, ndim int) ([]int, []byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot open %s (install Debian's dataset-fashion-mnist, or pass --data DIR): %w", path, err)
	}
	defer f.Close()
	z, err := gzip.NewReader(bufio.NewReader(f))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	header := make([]uint32, 1+ndim)
	if err := binary.Read(z, binary.BigEndian, header); err != nil {
		return nil, nil, fmt.Errorf("%s: truncated header: %w", path, err)
	}
	if header[0] != 0x800|uint32(ndim) {
		return nil, nil, fmt.Errorf("%s: not an IDX file of %d-d uint8 data", path, ndim)
	}
	dims, total := make([]int, ndim), 1
	for i := range dims {
		dims[i] = int(header[1+i])
		total *= dims[i]
	}
	data := make([]byte, total)
	if _, err := io.ReadFull(z, data); err != nil {
		return nil, nil, fmt.Errorf("%s: truncated data (expected %d bytes): %w", path, total, err)
	}
	return dims, data, nil
}

func loadDataset(dir, split string) (*dataset, error) {
	idims, images, err := loadIDX(filepath.Join(dir, split+"-images-idx3-ubyte.gz"), 3)
	if err != nil {
		return nil, err
	}
	ldims, labels, err := loadIDX(filepath.Join(dir, split+"-labels-idx1-ubyte.gz"), 1)
	if err != nil {
		return nil, err
	}
	if idims[0] != ldims[0] {
		return nil, fmt.Errorf("%s/%s: %d images but %d labels", dir, split, idims[0], ldims[0])
	}
	for i, l := range labels {
		if l > 9 {
			return nil, fmt.Errorf("%s: label %d of example %d is out of range 0..9", split, l, i)
		}
	}
	return &dataset{count: idims[0], rows: idims[1], cols: idims[2], images: images, labels: labels}, nil
}

// ---- model ----

type named struct {
	name      string
	tensor    *of.Tensor
	trainable bool // batch-norm running statistics are saved but not optimised
}

type bn struct{ weight, bias, runningMean, runningVar *of.Tensor }

type block struct {
	conv1, conv2, shortcut *of.Tensor // shortcut nil: identity
	bn1, bn2, shortcutBN   bn
	stride                 int64
}

type model struct {
	stem        *of.Tensor
	stemBN      bn
	blocks      [3]block
	fcW, fcB    *of.Tensor
	all         []named
	s           *of.Session
	err         error // the first error of the builders below
	kaimingOpts *of.KaimingOptions
}

func (m *model) add(name string, dims []int64, fill float64, trainable bool) *of.Tensor {
	if m.err != nil {
		return nil
	}
	t, err := m.s.Full(of.Float32, dims, fill, nil)
	if err == nil && trainable {
		err = t.SetRequiresGrad(true)
	}
	if err != nil {
		m.err = fmt.Errorf("%s: %w", name, err)
		return nil
	}
	m.all = append(m.all, named{name, t, trainable})
	return t
}

func (m *model) conv(name string, out, in, k int64) *of.Tensor {
	w := m.add(name, []int64{out, in, k, k}, 0, true)
	if m.err == nil {
		m.err = w.InitKaimingNormal(m.kaimingOpts)
	}
	return w
}

func (m *model) bn(prefix string, c int64) bn {
	return bn{m.add(prefix+".weight", []int64{c}, 1, true), m.add(prefix+".bias", []int64{c}, 0, true),
		m.add(prefix+".running_mean", []int64{c}, 0, false), m.add(prefix+".running_var", []int64{c}, 1, false)}
}

func newModel(s *of.Session, width int64) (*model, error) {
	ko := of.NewKaimingOptions()
	ko.Mode = of.FanModeFanOut
	ko.Nonlinearity = of.NonlinearityRelu
	m := &model{s: s, kaimingOpts: ko}
	m.stem = m.conv("stem.weight", width, 1, 3)
	m.stemBN = m.bn("stem.bn", width)
	in := width
	for b := range m.blocks {
		blk := &m.blocks[b]
		out := width << b
		blk.stride = 1
		if b > 0 {
			blk.stride = 2
		}
		blk.conv1 = m.conv(fmt.Sprintf("block%d.conv1.weight", b), out, in, 3)
		blk.bn1 = m.bn(fmt.Sprintf("block%d.bn1", b), out)
		blk.conv2 = m.conv(fmt.Sprintf("block%d.conv2.weight", b), out, out, 3)
		blk.bn2 = m.bn(fmt.Sprintf("block%d.bn2", b), out)
		if blk.stride != 1 || in != out {
			blk.shortcut = m.conv(fmt.Sprintf("block%d.shortcut.weight", b), out, in, 1)
			blk.shortcutBN = m.bn(fmt.Sprintf("block%d.shortcut.bn", b), out)
		}
		in = out
	}
	bound := 1 / math.Sqrt(float64(in))
	m.fcW = m.add("fc.weight", []int64{10, in}, 0, true)
	if m.err == nil {
		m.err = m.fcW.InitUniform(-bound, bound)
	}
	m.fcB = m.add("fc.bias", []int64{10}, 0, true)
	if m.err == nil {
		m.err = m.fcB.InitUniform(-bound, bound)
	}
	return m, m.err
}

func (m *model) close() {
	for _, n := range m.all {
		n.tensor.Close()
	}
}

// tracer runs the forward pass (traced inside Graph.Build), keeping every intermediate to close.
type tracer struct {
	kept []*of.Tensor
	err  error
}

func (t *tracer) keep(x *of.Tensor, err error) *of.Tensor {
	if t.err != nil {
		return nil
	}
	if err != nil {
		t.err = err
		return nil
	}
	t.kept = append(t.kept, x)
	return x
}

func (t *tracer) close() {
	for _, x := range t.kept {
		x.Close()
	}
	t.kept = nil
}

func (t *tracer) conv(x, w *of.Tensor, stride, pad int64) *of.Tensor {
	if t.err != nil {
		return nil
	}
	o := of.NewConv2dOptions()
	o.Stride = [2]int64{stride, stride}
	o.Padding = [2]int64{pad, pad}
	return t.keep(x.Conv2d(w, nil, o))
}

func (t *tracer) bn(x *of.Tensor, b bn, training bool) *of.Tensor {
	if t.err != nil {
		return nil
	}
	o := of.NewBatchNormOptions()
	o.Training = training
	return t.keep(x.BatchNorm(b.weight, b.bias, b.runningMean, b.runningVar, o))
}

// bnAddRelu: relu(bn(x) + addend) as one op; addend may be nil.
func (t *tracer) bnAddRelu(x *of.Tensor, b bn, training bool, addend *of.Tensor) *of.Tensor {
	if t.err != nil {
		return nil
	}
	o := of.NewBatchNormOptions()
	o.Training = training
	return t.keep(x.BatchNormAddRelu(addend, b.weight, b.bias, b.runningMean, b.runningVar, o))
}

// forward: images (N, 1, 28, 28) -> logits (N, 10).
func (t *tracer) forward(m *model, x *of.Tensor, training bool) *of.Tensor {
	h := t.bnAddRelu(t.conv(x, m.stem, 1, 1), m.stemBN, training, nil)
	for _, blk := range m.blocks {
		y := t.bnAddRelu(t.conv(h, blk.conv1, blk.stride, 1), blk.bn1, training, nil)
		shortcut := h
		if blk.shortcut != nil {
			shortcut = t.bn(t.conv(h, blk.shortcut, blk.stride, 0), blk.shortcutBN, training)
		}
		h = t.bnAddRelu(t.conv(y, blk.conv2, 1, 1), blk.bn2, training, shortcut)
	}
	if t.err != nil {
		return nil
	}
	pooled := t.keep(h.AdaptiveAvgPool2d(1, 1))
	if t.err != nil {
		return nil
	}
	flat := t.keep(pooled.Flatten(1, -1))
	if t.err != nil {
		return nil
	}
	return t.keep(flat.Linear(m.fcW, m.fcB))
}

// buildGraph traces a graph over the model with inputs images (?, 1, rows, cols) float32 and labels (?)
// int64; body adds the rest.
func buildGraph(s *of.Session, m *model, name string, rows, cols int64,
	body func(b *of.Builder, t *tracer, images, labels *of.Tensor) error) (*of.Graph, error) {
	g, err := s.NewGraph(name, nil)
	if err != nil {
		return nil, err
	}
	t := &tracer{}
	defer t.close() // lazy handles are released like any tensor
	err = g.Build(func(b *of.Builder) error {
		for _, n := range m.all {
			if n.trainable {
				if err := b.AddParameter(n.tensor, n.name); err != nil {
					return err
				}
			}
		}
		images := t.keep(b.Input("images", of.Float32, []int64{of.DimUnknown, 1, rows, cols}))
		labels := t.keep(b.Input("labels", of.Int64, []int64{of.DimUnknown}))
		if t.err != nil {
			return t.err
		}
		return body(b, t, images, labels)
	})
	return g, err
}

func buildTrainGraph(s *of.Session, m *model, opt *of.Optimizer, rows, cols int64) (*of.Graph, error) {
	return buildGraph(s, m, "fashion_mnist_train", rows, cols, func(b *of.Builder, t *tracer, images, labels *of.Tensor) error {
		logits := t.forward(m, images, true)
		if t.err != nil {
			return t.err
		}
		loss := t.keep(logits.CrossEntropy(labels, nil))
		if t.err != nil {
			return t.err
		}
		if err := loss.Backward(nil, false); err != nil { // traces the backward ops
			return err
		}
		if err := b.AddOptimizer(opt); err != nil { // traces each parameter's SGD update
			return err
		}
		return b.AddOutput(loss)
	})
}

func buildEvalGraph(s *of.Session, m *model, rows, cols int64) (g *of.Graph, err error) {
	// nothing to differentiate: trace no backward records
	err = of.NoGrad(func() error {
		g, err = buildGraph(s, m, "fashion_mnist_eval", rows, cols, func(b *of.Builder, t *tracer, images, labels *of.Tensor) error {
			logits := t.forward(m, images, false)
			if t.err != nil {
				return t.err
			}
			pred := t.keep(logits.Argmax(1, false))
			if t.err != nil {
				return t.err
			}
			hits := t.keep(pred.Eq(labels))
			if t.err != nil {
				return t.err
			}
			correct := t.keep(hits.Sum(nil, false))
			if t.err != nil {
				return t.err
			}
			return b.AddOutput(correct)
		})
		return err
	})
	return g, err
}

func printMemoryPlan(g *of.Graph, what string) error {
	st, err := g.MemoryStats()
	if err != nil {
		return err
	}
	const mib = 1024 * 1024
	fmt.Printf("%s graph: %d steps after fusion; memory plan: peak %.2f MiB for %.2f MiB of intermediates "+
		"(%d buffers, %d in place)\n", what, st.NodeCount, float64(st.PlannedPeakBytes)/mib,
		float64(st.IntermediateBytes)/mib, st.BufferCount, st.InplaceCount)
	return nil
}

// ---- batches ----

const (
	mean, std = 0.2860, 0.3530 // of the Fashion-MNIST training images
	evalBatch = 256
)

type batcher struct {
	s      *of.Session
	images []float32
	labels []int64
}

// make returns normalised images and int64 labels of examples order[first:first+n] (order nil: in
// file order).
func (b *batcher) make(ds *dataset, order []int, first, n int) (*of.Tensor, *of.Tensor, error) {
	pixels := ds.rows * ds.cols
	for i := 0; i < n; i++ {
		idx := first + i
		if order != nil {
			idx = order[first+i]
		}
		src := ds.images[idx*pixels : (idx+1)*pixels]
		dst := b.images[i*pixels : (i+1)*pixels]
		for p, v := range src {
			dst[p] = (float32(v)/255 - mean) / std
		}
		b.labels[i] = int64(ds.labels[idx])
	}
	images, err := b.s.FromFloat32([]int64{int64(n), 1, int64(ds.rows), int64(ds.cols)}, b.images[:n*pixels])
	if err != nil {
		return nil, nil, err
	}
	labels, err := b.s.FromInt64([]int64{int64(n)}, b.labels[:n])
	if err != nil {
		images.Close()
		return nil, nil, err
	}
	return images, labels, nil
}

// shuffle is Fisher-Yates with the C example's LCG, so the order depends only on the seed.
func shuffle(order []int, state *uint64) {
	for i := range order {
		order[i] = i
	}
	for i := len(order); i > 1; i-- {
		*state = *state*6364136223846793005 + 1442695040888963407
		j := int((*state >> 33) % uint64(i))
		order[i-1], order[j] = order[j], order[i-1]
	}
}

func evaluate(g *of.Graph, b *batcher, test *dataset, printPlan *bool) (float64, error) {
	correct := int64(0)
	err := of.NoGrad(func() error {
		for first := 0; first < test.count; first += evalBatch {
			n := test.count - first
			if n > evalBatch {
				n = evalBatch
			}
			images, labels, err := b.make(test, nil, first, n)
			if err != nil {
				return err
			}
			out, err := g.Run(images, labels)
			images.Close()
			labels.Close()
			if err != nil {
				return err
			}
			if *printPlan {
				if err := printMemoryPlan(g, "evaluation"); err != nil {
					return err
				}
				*printPlan = false
			}
			v, err := out[0].Int64s()
			out[0].Close()
			if err != nil {
				return err
			}
			correct += v[0]
		}
		return nil
	})
	return float64(correct) / float64(test.count), err
}

func progress(epoch, epochs, done, total int, loss float64, started time.Time) {
	elapsed := time.Since(started).Seconds()
	rate := 0.0
	if elapsed > 0 {
		rate = float64(done) / elapsed
	}
	eta := 0.0
	if rate > 0 {
		eta = float64(total-done) / rate
	}
	const width = 30
	filled := width * done / total
	bar := make([]byte, width)
	for i := range bar {
		switch {
		case i < filled:
			bar[i] = '#'
		case i == filled:
			bar[i] = '>'
		default:
			bar[i] = '.'
		}
	}
	fmt.Fprintf(os.Stderr, "epoch %d/%d [%s] %6d/%d  %6.0f img/s  loss %.4f  ETA %3.0fs\n", epoch, epochs, bar, done,
		total, rate, loss, eta)
}

func run() error {
	epochs := flag.Int("epochs", 2, "training epochs")
	batchSize := flag.Int("batch-size", 64, "training batch size")
	lr := flag.Float64("lr", 0.05, "peak learning rate (cosine schedule)")
	width := flag.Int("width", 16, "channels of the first stage")
	threads := flag.Int("threads", 0, "CPU threads (0: all cores)")
	seed := flag.Uint64("seed", 42, "random seed")
	dataDir := flag.String("data", "/usr/share/datasets/fashion-mnist", "directory of the IDX files")
	outPath := flag.String("out", "fashion_mnist.safetensors", "where to save the weights")
	limit := flag.Int("limit", 0, "use only the first N training examples (0: all)")
	long := flag.Bool("long", false, "train for 6 epochs")
	flag.Parse()
	if *long {
		*epochs = 6
	}
	if *epochs < 1 || *batchSize < 1 || *width < 1 || *threads < 0 || !(*lr > 0) {
		return fmt.Errorf("epochs, batch size and width must be >= 1, threads >= 0, lr > 0")
	}
	train, err := loadDataset(*dataDir, "train")
	if err != nil {
		return err
	}
	test, err := loadDataset(*dataDir, "t10k")
	if err != nil {
		return err
	}
	if *limit > 0 && *limit < train.count {
		train.count = *limit
	}

	so := of.NewSessionOptions()
	so.Seed = *seed
	so.NumThreads = int32(*threads)
	s, err := of.NewSession(so)
	if err != nil {
		return err
	}
	defer s.Close()
	m, err := newModel(s, int64(*width))
	if err != nil {
		return err
	}
	defer m.close()
	var params []*of.Tensor
	for _, n := range m.all {
		if n.trainable {
			params = append(params, n.tensor)
		}
	}
	sgd := of.NewSGDOptions()
	sgd.LR, sgd.Momentum, sgd.Nesterov, sgd.WeightDecay = *lr, 0.9, true, 5e-4
	opt, err := s.NewSGD(params, sgd)
	if err != nil {
		return err
	}
	defer opt.Close()
	fmt.Printf("Fashion-MNIST: %d training and %d test images; ResNet-style CNN, width %d, %d parameter tensors\n",
		train.count, test.count, *width, len(params))
	fmt.Printf("%d epochs, batch %d, SGD lr %.3g (cosine schedule), momentum 0.9, nesterov, weight decay 5e-4\n",
		*epochs, *batchSize, *lr)

	t0 := time.Now()
	trainGraph, err := buildTrainGraph(s, m, opt, int64(train.rows), int64(train.cols))
	if err != nil {
		return err
	}
	defer trainGraph.Close()
	evalGraph, err := buildEvalGraph(s, m, int64(test.rows), int64(test.cols))
	if err != nil {
		return err
	}
	defer evalGraph.Close()
	fmt.Printf("lazy graphs: training step and evaluation traced in %.0f ms (compiled at their first run)\n",
		float64(time.Since(t0).Microseconds())/1e3)
	printTrainPlan, printEvalPlan := true, true

	bufExamples := *batchSize
	if bufExamples < evalBatch {
		bufExamples = evalBatch
	}
	b := &batcher{s: s, images: make([]float32, bufExamples*train.rows*train.cols), labels: make([]int64, bufExamples)}
	order := make([]int, train.count)
	rng := *seed
	stepsPerEpoch := (train.count + *batchSize - 1) / *batchSize
	totalSteps := stepsPerEpoch * *epochs
	step := 0
	accuracy := 0.0
	runStarted := time.Now()
	for epoch := 1; epoch <= *epochs; epoch++ {
		shuffle(order, &rng)
		started := time.Now()
		lossSum, seen := 0.0, 0
		for first := 0; first < train.count; first, step = first+*batchSize, step+1 {
			n := train.count - first
			if n > *batchSize {
				n = *batchSize
			}
			// cosine decay from lr to 0 over the whole run
			if err := opt.SetLR(*lr * 0.5 * (1 + math.Cos(math.Pi*float64(step)/float64(totalSteps)))); err != nil {
				return err
			}
			images, labels, err := b.make(train, order, first, n)
			if err != nil {
				return err
			}
			// the whole step in one call: forward, backward, the update with the lr just set
			out, err := trainGraph.Run(images, labels)
			images.Close()
			labels.Close()
			if err != nil {
				return err
			}
			if printTrainPlan {
				if err := printMemoryPlan(trainGraph, "training"); err != nil {
					return err
				}
				printTrainPlan = false
			}
			loss, err := out[0].Float32s()
			out[0].Close()
			if err != nil {
				return err
			}
			lossSum += float64(loss[0]) * float64(n)
			seen += n
			if seen == train.count || step%200 == 0 {
				progress(epoch, *epochs, seen, train.count, lossSum/float64(seen), started)
			}
		}
		if accuracy, err = evaluate(evalGraph, b, test, &printEvalPlan); err != nil {
			return err
		}
		fmt.Printf("epoch %d/%d: train loss %.4f, test accuracy %.2f%%, %.1f s\n", epoch, *epochs,
			lossSum/float64(seen), 100*accuracy, time.Since(started).Seconds())
	}

	names := make([]string, len(m.all))
	tensors := make([]*of.Tensor, len(m.all))
	for i, n := range m.all {
		names[i], tensors[i] = n.name, n.tensor
	}
	if err := of.SaveSafetensors(*outPath, names, tensors); err != nil {
		return err
	}
	fmt.Printf("final test accuracy %.2f%% after %.0f s; weights saved to %s (%d tensors, safetensors)\n",
		100*accuracy, time.Since(runStarted).Seconds(), *outPath, len(m.all))
	return nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
