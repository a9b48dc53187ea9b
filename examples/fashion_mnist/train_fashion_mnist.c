/* Trains a small ResNet-style CNN on Fashion-MNIST through the oneflow_c C ABI on the CPU, eagerly or
 * (--graph) through lazy graphs.
 *
 *   train_fashion_mnist [--epochs N] [--batch-size N] [--lr X] [--width N] [--threads N]
 *                       [--seed N] [--data DIR] [--out FILE] [--limit N] [--long] [--graph] [--summary]
 *                       [--precision f32|bf16|f16] [--world-size N --rank R --rendezvous DIR|tcp://HOST:PORT]
 *
 * The network: conv3x3 -> BN -> ReLU, then three residual blocks (the last two halve the resolution
 * and double the width, with a 1x1 conv + BN shortcut), global average pooling and a linear layer;
 * each BN -> ReLU, and each block's last BN -> add shortcut -> ReLU, is one of_batch_norm_add_relu
 * call (the same function as the three ops, in one pass over memory); trained with SGD (momentum 0.9, nesterov, weight decay 5e-4) and a cosine learning-rate schedule.
 * Prints a progress bar (rate, loss, ETA), the training loss and test accuracy per epoch, and saves the
 * weights (and batch-norm running statistics) as safetensors. --long trains for 6 epochs.
 *
 * --graph traces the same code once into two lazy graphs instead of running it op by op: a training
 * graph (forward, cross-entropy, backward and the SGD update: one of_graph_run per step) and an
 * evaluation graph (batch norm in inference mode, which the compiler fuses with its conv and ReLU; it
 * returns the number of correct predictions). Their batch dim is OF_DIM_UNKNOWN, so the last, smaller
 * batch runs the same graph (compiled once more for that size). The learning rate still changes
 * between runs (of_optimizer_set_lr), and each run updates the eager parameter tensors in place, which
 * are what gets saved.
 *
 * Data parallelism: with --world-size N > 1 (or OF_WORLD_SIZE, OF_RANK and OF_RENDEZVOUS in the
 * environment, as scripts/run-distributed.sh N -- train_fashion_mnist ... sets them), N processes train
 * one model together: each joins the process group (of_process_group_create), takes its 1/N share of
 * every global batch of --batch-size images (the same shuffled order everywhere; a batch's remainder
 * after an even split is left out) and runs the training graph made data-parallel
 * (of_graph_set_data_parallel: rank 0's weights to start, gradients averaged over the ranks every step,
 * batch-norm running statistics averaged too, so every rank evaluates the same model). It implies
 * --graph. Each rank prints its images/s and rank 0 the total (an of_all_reduce of the rates); rank 0
 * alone saves the weights.
 *
 * --precision bf16 trains in bfloat16 mixed precision (of_autocast_set for the whole run): the
 * convolutions and the linear layer run in bfloat16 on the float32 weights, batch norm, the loss and
 * the softmax in float32; the parameters, their gradients and the optimizer stay float32 (the master
 * weights), and the saved weights are float32. With --graph the casts are traced into the graphs.
 * --precision f16 does the same in float16, whose gradients would underflow: the optimizer scales the
 * loss (of_optimizer_enable_loss_scaling, of_optimizer_scale_loss) and skips the steps whose gradients
 * overflow, lowering the scale (the number of skipped steps is printed at the end).
 *
 * --summary adds one line per epoch for programs (bench/compare_fashion_mnist.py):
 * "bench: epoch=<n> train_s=<s> eval_s=<s> images_per_s=<x> loss=<x> accuracy=<0..1>", the training and
 * the evaluation part of the epoch timed separately (with --graph, each includes its graph's compilation
 * in the first epoch). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <oneflow/oneflow_c.h>

#include "data.h"

/* ---- error handling: print the status and stop ---------------------------------------------- */

static void check(of_status_t* st, const char* what, int line) {
  if (st == NULL) return;
  fprintf(stderr, "\nerror at line %d (%s): [%s] %s\n", line, what, of_status_code_name(of_status_code(st)),
          of_status_message(st));
  of_status_destroy(st);
  exit(1);
}
#define CHECK(call) check((call), #call, __LINE__)

/* ---- the tensors of one step, released together ---------------------------------------------- */

typedef struct {
  of_tensor_t* items[256];
  size_t count;
} arena_t;

static of_tensor_t* keep(arena_t* a, of_tensor_t* t) {
  if (a->count == sizeof a->items / sizeof a->items[0]) {
    fprintf(stderr, "arena full\n");
    exit(1);
  }
  a->items[a->count++] = t;
  return t;
}

static void arena_clear(arena_t* a) {
  for (size_t i = 0; i < a->count; ++i) of_tensor_release(a->items[i]);
  a->count = 0;
}

/* ---- model ----------------------------------------------------------------------------------- */

typedef struct {
  char name[64];
  of_tensor_t* tensor;
  int trainable; /* batch-norm running statistics are saved but not optimised */
} named_t;

typedef struct {
  of_tensor_t *weight, *bias, *running_mean, *running_var;
} bn_t;

typedef struct {
  of_tensor_t* conv1;
  bn_t bn1;
  of_tensor_t* conv2;
  bn_t bn2;
  of_tensor_t* shortcut; /* NULL for an identity shortcut */
  bn_t shortcut_bn;
  int stride;
} block_t;

typedef struct {
  of_tensor_t* stem;
  bn_t stem_bn;
  block_t blocks[3];
  of_tensor_t *fc_weight, *fc_bias;
  named_t all[64];
  size_t count;
} model_t;

static of_tensor_t* add_tensor(of_session_t* s, model_t* m, const char* name, const int64_t* dims, size_t ndim,
                               double fill, int trainable) {
  of_tensor_t* t = NULL;
  CHECK(of_tensor_full(s, of_dtype_float32(), dims, ndim, fill, NULL, &t));
  named_t* n = &m->all[m->count++];
  snprintf(n->name, sizeof n->name, "%s", name);
  n->tensor = t;
  n->trainable = trainable;
  if (trainable) CHECK(of_tensor_set_requires_grad(t, 1));
  return t;
}

static of_tensor_t* add_conv(of_session_t* s, model_t* m, const char* name, int64_t out, int64_t in, int64_t k) {
  const int64_t dims[4] = {out, in, k, k};
  of_tensor_t* w = add_tensor(s, m, name, dims, 4, 0.0, 1);
  of_kaiming_options_t ko;
  of_kaiming_options_init(&ko);
  ko.mode = OF_FAN_MODE_FAN_OUT;
  ko.nonlinearity = OF_NONLINEARITY_RELU;
  CHECK(of_init_kaiming_normal(s, w, &ko));
  return w;
}

static bn_t add_bn(of_session_t* s, model_t* m, const char* prefix, int64_t channels) {
  char name[64];
  bn_t bn;
  snprintf(name, sizeof name, "%s.weight", prefix);
  bn.weight = add_tensor(s, m, name, &channels, 1, 1.0, 1);
  snprintf(name, sizeof name, "%s.bias", prefix);
  bn.bias = add_tensor(s, m, name, &channels, 1, 0.0, 1);
  snprintf(name, sizeof name, "%s.running_mean", prefix);
  bn.running_mean = add_tensor(s, m, name, &channels, 1, 0.0, 0);
  snprintf(name, sizeof name, "%s.running_var", prefix);
  bn.running_var = add_tensor(s, m, name, &channels, 1, 1.0, 0);
  return bn;
}

static void model_init(of_session_t* s, model_t* m, int64_t width) {
  memset(m, 0, sizeof *m);
  char name[64];
  m->stem = add_conv(s, m, "stem.weight", width, 1, 3);
  m->stem_bn = add_bn(s, m, "stem.bn", width);
  int64_t in = width;
  for (int b = 0; b < 3; ++b) {
    block_t* blk = &m->blocks[b];
    const int64_t out = width << b;
    blk->stride = b == 0 ? 1 : 2;
    snprintf(name, sizeof name, "block%d.conv1.weight", b);
    blk->conv1 = add_conv(s, m, name, out, in, 3);
    snprintf(name, sizeof name, "block%d.bn1", b);
    blk->bn1 = add_bn(s, m, name, out);
    snprintf(name, sizeof name, "block%d.conv2.weight", b);
    blk->conv2 = add_conv(s, m, name, out, out, 3);
    snprintf(name, sizeof name, "block%d.bn2", b);
    blk->bn2 = add_bn(s, m, name, out);
    if (blk->stride != 1 || in != out) {
      snprintf(name, sizeof name, "block%d.shortcut.weight", b);
      blk->shortcut = add_conv(s, m, name, out, in, 1);
      snprintf(name, sizeof name, "block%d.shortcut.bn", b);
      blk->shortcut_bn = add_bn(s, m, name, out);
    }
    in = out;
  }
  const int64_t fc_dims[2] = {10, in};
  m->fc_weight = add_tensor(s, m, "fc.weight", fc_dims, 2, 0.0, 1);
  const double bound = 1.0 / sqrt((double)in);
  CHECK(of_init_uniform(s, m->fc_weight, -bound, bound));
  const int64_t ten = 10;
  m->fc_bias = add_tensor(s, m, "fc.bias", &ten, 1, 0.0, 1);
  CHECK(of_init_uniform(s, m->fc_bias, -bound, bound));
}

static void model_free(model_t* m) {
  for (size_t i = 0; i < m->count; ++i) of_tensor_release(m->all[i].tensor);
  m->count = 0;
}

static of_tensor_t* conv(of_session_t* s, of_tensor_t* x, of_tensor_t* w, int stride, int pad) {
  of_conv2d_options_t o;
  of_conv2d_options_init(&o);
  o.stride[0] = o.stride[1] = stride;
  o.padding[0] = o.padding[1] = pad;
  of_tensor_t* y = NULL;
  CHECK(of_conv2d(s, x, w, NULL, &o, &y));
  return y;
}

/* batch_norm(x) (relu == 0), or relu(batch_norm(x) + addend) (relu == 1; addend may be NULL) as one op.
 * Consumes x (a convolution's output that nothing else reads): releases it. */
static of_tensor_t* batch_norm(of_session_t* s, of_tensor_t* x, const bn_t* bn, int training, int relu,
                               of_tensor_t* addend) {
  of_batch_norm_options_t o;
  of_batch_norm_options_init(&o);
  o.training = training;
  of_tensor_t* y = NULL;
  if (relu) {
    CHECK(of_batch_norm_add_relu(s, x, addend, bn->weight, bn->bias, bn->running_mean, bn->running_var, &o, &y));
  } else {
    CHECK(of_batch_norm(s, x, bn->weight, bn->bias, bn->running_mean, bn->running_var, &o, &y));
  }
  of_tensor_release(x);
  return y;
}

/* images (N, 1, 28, 28) -> logits (N, 10), kept in `a`. Run eagerly, or traced when a graph build is open.
 * Each activation is released as soon as the last op that reads it has run, as PyTorch frees them: an
 * evaluation (no autograd records holding them) then reuses memory that is still in the cache. */
static of_tensor_t* forward(of_session_t* s, arena_t* a, const model_t* m, of_tensor_t* x, int training) {
  of_tensor_t* h = batch_norm(s, conv(s, x, m->stem, 1, 1), &m->stem_bn, training, 1, NULL);
  for (int b = 0; b < 3; ++b) {
    const block_t* blk = &m->blocks[b];
    of_tensor_t* y = batch_norm(s, conv(s, h, blk->conv1, blk->stride, 1), &blk->bn1, training, 1, NULL);
    of_tensor_t* shortcut = h;
    if (blk->shortcut != NULL) {
      shortcut = batch_norm(s, conv(s, h, blk->shortcut, blk->stride, 0), &blk->shortcut_bn, training, 0, NULL);
      of_tensor_release(h);
    }
    /* relu(bn2(conv2(y)) + shortcut) */
    of_tensor_t* z = conv(s, y, blk->conv2, 1, 1);
    of_tensor_release(y);
    h = batch_norm(s, z, &blk->bn2, training, 1, shortcut);
    of_tensor_release(shortcut);
  }
  of_tensor_t *pooled = NULL, *flat = NULL, *logits = NULL;
  CHECK(of_adaptive_avg_pool2d(s, h, 1, 1, &pooled));
  of_tensor_release(h);
  CHECK(of_flatten(s, keep(a, pooled), 1, -1, &flat));
  CHECK(of_linear(s, keep(a, flat), m->fc_weight, m->fc_bias, &logits));
  return keep(a, logits);
}

/* ---- batches --------------------------------------------------------------------------------- */

static const float kMean = 0.2860f, kStd = 0.3530f; /* of the Fashion-MNIST training images */
enum { kEvalBatch = 256 };

/* Normalised images and int64 labels of examples order[first .. first+n), as two new tensors. */
static void make_batch(of_session_t* s, const fm_dataset_t* ds, const size_t* order, size_t first, size_t n,
                       float* image_buf, int64_t* label_buf, of_tensor_t** images, of_tensor_t** labels) {
  const size_t pixels = ds->rows * ds->cols;
  for (size_t i = 0; i < n; ++i) {
    const size_t idx = order ? order[first + i] : first + i;
    const uint8_t* src = ds->images + idx * pixels;
    for (size_t p = 0; p < pixels; ++p) image_buf[i * pixels + p] = ((float)src[p] / 255.0f - kMean) / kStd;
    label_buf[i] = ds->labels[idx];
  }
  const int64_t idims[4] = {(int64_t)n, 1, (int64_t)ds->rows, (int64_t)ds->cols};
  const int64_t ldims[1] = {(int64_t)n};
  CHECK(of_tensor_from_data(s, of_dtype_float32(), idims, 4, image_buf, n * pixels * sizeof(float), NULL, images));
  CHECK(of_tensor_from_data(s, of_dtype_int64(), ldims, 1, label_buf, n * sizeof(int64_t), NULL, labels));
}

/* ---- lazy graphs (--graph) ------------------------------------------------------------------- */

/* Names the trainable tensors in the graph after the model's names (for of_graph_dump); without this
 * they would still be bound, as param_<k>. */
static void add_parameters(of_graph_t* g, const model_t* m) {
  for (size_t i = 0; i < m->count; ++i) {
    if (m->all[i].trainable) CHECK(of_graph_add_parameter(g, m->all[i].tensor, m->all[i].name));
  }
}

/* Opens the build of graph `name` over the model's parameters, with the inputs images (?, 1, rows, cols)
 * float32 and labels (?) int64 (kept in `a`): an unknown batch size lets the last, smaller batch reuse
 * the graph. */
static of_graph_t* begin_graph(of_session_t* s, const model_t* m, const char* name, int64_t rows, int64_t cols,
                               arena_t* a, of_tensor_t** images, of_tensor_t** labels) {
  of_graph_t* g = NULL;
  CHECK(of_graph_create(s, name, NULL, &g));
  CHECK(of_graph_begin_build(g));
  add_parameters(g, m);
  const int64_t idims[4] = {OF_DIM_UNKNOWN, 1, rows, cols}, ldims[1] = {OF_DIM_UNKNOWN};
  CHECK(of_graph_add_input(g, "images", of_dtype_float32(), idims, 4, images));
  keep(a, *images);
  CHECK(of_graph_add_input(g, "labels", of_dtype_int64(), ldims, 1, labels));
  keep(a, *labels);
  return g;
}

/* Backward from the loss, or from the loss times the optimizer's loss scale when it scales (float16). */
static int g_scale_loss = 0;
static void backward(of_session_t* s, arena_t* a, of_optimizer_t* opt, of_tensor_t* loss) {
  if (g_scale_loss) {
    of_tensor_t* scaled = NULL;
    CHECK(of_optimizer_scale_loss(s, opt, loss, &scaled));
    keep(a, scaled);
    loss = scaled;
  }
  CHECK(of_tensor_backward(s, loss, NULL, 0));
}

/* One training step traced from the eager code: output the mean cross-entropy. Running it also applies
 * `opt`'s update to the parameters and updates the batch-norm running statistics, in place. */
static of_graph_t* build_train_graph(of_session_t* s, const model_t* m, of_optimizer_t* opt, int64_t rows,
                                     int64_t cols) {
  arena_t a = {0};
  of_tensor_t *images = NULL, *labels = NULL, *loss = NULL;
  of_graph_t* g = begin_graph(s, m, "fashion_mnist_train", rows, cols, &a, &images, &labels);
  CHECK(of_cross_entropy(s, forward(s, &a, m, images, 1), labels, NULL, &loss));
  keep(&a, loss);
  backward(s, &a, opt, loss);            /* traces the backward ops */
  CHECK(of_graph_add_optimizer(g, opt)); /* traces each parameter's SGD update */
  CHECK(of_graph_add_output(g, loss));
  CHECK(of_graph_end_build(g));
  arena_clear(&a); /* lazy handles are released like any tensor */
  return g;
}

/* Evaluation of one batch traced from the eager code, batch norm in inference mode: output the number of
 * correct predictions (int64, 0-d). */
static of_graph_t* build_eval_graph(of_session_t* s, const model_t* m, int64_t rows, int64_t cols) {
  int32_t previous = 1;
  CHECK(of_grad_set_enabled(0, &previous)); /* nothing to differentiate: trace no backward records */
  arena_t a = {0};
  of_tensor_t *images = NULL, *labels = NULL, *pred = NULL, *hits = NULL, *correct = NULL;
  of_graph_t* g = begin_graph(s, m, "fashion_mnist_eval", rows, cols, &a, &images, &labels);
  CHECK(of_argmax(s, forward(s, &a, m, images, 0), 1, 0, &pred));
  CHECK(of_eq(s, keep(&a, pred), labels, &hits));
  CHECK(of_sum(s, keep(&a, hits), NULL, 0, 0, &correct));
  CHECK(of_graph_add_output(g, keep(&a, correct)));
  CHECK(of_graph_end_build(g));
  arena_clear(&a);
  CHECK(of_grad_set_enabled(previous, NULL));
  return g;
}

/* The memory plan of the graph's most recent run (one concrete batch size). */
static void print_memory_plan(const of_graph_t* g, const char* what) {
  of_graph_memory_stats_t st;
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  CHECK(of_graph_memory_stats(g, &st));
  const double mib = 1024.0 * 1024.0;
  printf("%s graph: %llu steps after fusion; memory plan: peak %.2f MiB for %.2f MiB of intermediates "
         "(%llu buffers, %llu in place)\n",
         what, (unsigned long long)st.node_count, (double)st.planned_peak_bytes / mib,
         (double)st.intermediate_bytes / mib, (unsigned long long)st.buffer_count, (unsigned long long)st.inplace_count);
  fflush(stdout);
}

/* ---- progress bar ---------------------------------------------------------------------------- */

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void progress(int epoch, int epochs, size_t done, size_t total, double loss, double started, int tty) {
  const double elapsed = now_seconds() - started;
  const double rate = elapsed > 0 ? (double)done / elapsed : 0.0;
  const double eta = rate > 0 ? (double)(total - done) / rate : 0.0;
  const int width = 30, filled = (int)((double)width * (double)done / (double)total);
  char bar[64];
  for (int i = 0; i < width; ++i) bar[i] = i < filled ? '#' : (i == filled ? '>' : '.');
  bar[width] = '\0';
  fprintf(stderr, "%sepoch %d/%d [%s] %6zu/%zu  %6.0f img/s  loss %.4f  ETA %3.0fs%s", tty ? "\r" : "", epoch, epochs,
          bar, done, total, rate, loss, eta, tty ? "" : "\n");
  fflush(stderr);
}

/* Data parallelism: this rank's training rate, and (on the leader) all ranks' together. */
static void report_rates(of_session_t* s, of_process_group_t* group, double rate, int leader) {
  of_tensor_t *mine = NULL, *total = NULL;
  const int64_t one = 1;
  CHECK(of_tensor_from_data(s, of_dtype_float64(), &one, 1, &rate, sizeof rate, NULL, &mine));
  CHECK(of_all_reduce(s, group, mine, OF_REDUCE_SUM, &total));
  double sum = 0.0;
  CHECK(of_tensor_copy_to_host(total, &sum, sizeof sum));
  printf("training: %.0f img/s on this rank", rate);
  if (leader) printf("; all ranks: %.0f img/s", sum);
  printf("\n");
  of_tensor_release(mine);
  of_tensor_release(total);
}

/* ---- main ------------------------------------------------------------------------------------ */

typedef struct {
  int epochs, batch_size, width, threads;
  double lr;
  unsigned long long seed;
  const char* data_dir;
  const char* out_path;
  size_t limit; /* use only the first N training examples (0 = all) */
  int graph;    /* train and evaluate through lazy graphs */
  int summary;  /* print a "bench: key=value ..." line per epoch */
  const char* precision; /* "f32", or "bf16" / "f16" mixed precision (autocast) */
  int world_size, rank;    /* data parallelism: this process is rank `rank` of `world_size` */
  const char* rendezvous;  /* where the ranks meet */
} options_t;

static void usage(const char* prog) {
  fprintf(stderr,
          "usage: %s [--epochs N] [--batch-size N] [--lr X] [--width N] [--threads N] [--seed N]\n"
          "          [--data DIR] [--out FILE] [--limit N] [--long] [--graph] [--summary] [--precision f32|bf16|f16]\n"
          "defaults: 2 epochs, batch 64, lr 0.05, width 16, all cores, data in /usr/share/datasets/fashion-mnist,\n"
          "weights saved to fashion_mnist.safetensors; --long = 6 epochs (slower, more accurate);\n"
          "--graph = train and evaluate through lazy graphs (traced once, compiled, run per batch);\n"
          "--summary = also print per epoch \"bench: epoch=N train_s=S eval_s=S images_per_s=X loss=X accuracy=A\"\n"
          "(training and evaluation timed separately; for bench/compare_fashion_mnist.py);\n"
          "--precision bf16 = bfloat16 mixed precision (convolutions and linear in bfloat16, float32 weights);\n"
          "--precision f16 = the same in float16, with dynamic loss scaling\n"
          "data parallel: --world-size N --rank R --rendezvous DIR|tcp://HOST:PORT (defaults: OF_WORLD_SIZE,\n"
          "OF_RANK, OF_RENDEZVOUS, as scripts/run-distributed.sh N -- %s ... sets them); implies --graph\n",
          prog, prog);
}

static int parse_options(int argc, char** argv, options_t* o) {
  const char* env_world = getenv("OF_WORLD_SIZE");
  const char* env_rank = getenv("OF_RANK");
  *o = (options_t){.epochs = 2, .batch_size = 64, .width = 16, .threads = 0, .lr = 0.05, .seed = 42,
                   .data_dir = "/usr/share/datasets/fashion-mnist", .out_path = "fashion_mnist.safetensors",
                   .world_size = env_world ? atoi(env_world) : 1, .rank = env_rank ? atoi(env_rank) : 0,
                   .rendezvous = getenv("OF_RENDEZVOUS"), .precision = "f32"};
  for (int i = 1; i < argc; ++i) {
    const char* arg = argv[i];
    const char* val = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(arg, "--long") == 0) {
      o->epochs = 6;
      continue;
    }
    if (strcmp(arg, "--graph") == 0) {
      o->graph = 1;
      continue;
    }
    if (strcmp(arg, "--summary") == 0) {
      o->summary = 1;
      continue;
    }
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) return -1;
    if (val == NULL) {
      fprintf(stderr, "%s needs a value\n", arg);
      return -1;
    }
    ++i;
    if (strcmp(arg, "--epochs") == 0) o->epochs = atoi(val);
    else if (strcmp(arg, "--batch-size") == 0) o->batch_size = atoi(val);
    else if (strcmp(arg, "--lr") == 0) o->lr = atof(val);
    else if (strcmp(arg, "--width") == 0) o->width = atoi(val);
    else if (strcmp(arg, "--threads") == 0) o->threads = atoi(val);
    else if (strcmp(arg, "--seed") == 0) o->seed = strtoull(val, NULL, 10);
    else if (strcmp(arg, "--data") == 0) o->data_dir = val;
    else if (strcmp(arg, "--out") == 0) o->out_path = val;
    else if (strcmp(arg, "--limit") == 0) o->limit = (size_t)strtoull(val, NULL, 10);
    else if (strcmp(arg, "--world-size") == 0) o->world_size = atoi(val);
    else if (strcmp(arg, "--rank") == 0) o->rank = atoi(val);
    else if (strcmp(arg, "--rendezvous") == 0) o->rendezvous = val;
    else if (strcmp(arg, "--precision") == 0) {
      if (strcmp(val, "f32") != 0 && strcmp(val, "bf16") != 0 && strcmp(val, "f16") != 0) {
        fprintf(stderr, "--precision takes f32, bf16 or f16, got %s\n", val);
        return -1;
      }
      o->precision = val;
    }
    else {
      fprintf(stderr, "unknown option %s\n", arg);
      return -1;
    }
  }
  if (o->epochs < 1 || o->batch_size < 1 || o->width < 1 || o->threads < 0 || !(o->lr > 0)) {
    fprintf(stderr, "epochs, batch size and width must be >= 1, threads >= 0, lr > 0\n");
    return -1;
  }
  if (o->world_size < 1 || o->rank < 0 || o->rank >= o->world_size || o->batch_size < o->world_size ||
      (o->world_size > 1 && o->rendezvous == NULL)) {
    fprintf(stderr, "data parallel: world size >= 1, rank in [0, world size), batch size >= world size, and a "
                    "rendezvous for more than one rank\n");
    return -1;
  }
  if (o->world_size > 1) o->graph = 1;
  return 0;
}

/* Fisher-Yates with a small LCG, so the order depends only on the seed. */
static void shuffle(size_t* order, size_t n, unsigned long long* state) {
  for (size_t i = 0; i < n; ++i) order[i] = i;
  for (size_t i = n; i > 1; --i) {
    *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
    const size_t j = (size_t)((*state >> 33) % i);
    const size_t t = order[i - 1];
    order[i - 1] = order[j];
    order[j] = t;
  }
}

/* Test accuracy in [0, 1], with batch norm in inference mode and gradients off: eagerly, or by running
 * `graph` (build_eval_graph) when it is not NULL. print_plan: print the graph's memory plan once. */
static double evaluate(of_session_t* s, const model_t* m, of_graph_t* graph, const fm_dataset_t* test, int batch,
                       float* ibuf, int64_t* lbuf, int* print_plan) {
  int32_t previous = 1;
  CHECK(of_grad_set_enabled(0, &previous));
  size_t correct = 0;
  arena_t a = {0};
  for (size_t first = 0; first < test->count; first += (size_t)batch) {
    const size_t n = test->count - first < (size_t)batch ? test->count - first : (size_t)batch;
    of_tensor_t *images = NULL, *labels = NULL, *pred = NULL, *hits = NULL, *total = NULL;
    make_batch(s, test, NULL, first, n, ibuf, lbuf, &images, &labels);
    keep(&a, images);
    keep(&a, labels);
    if (graph != NULL) {
      const of_tensor_t* inputs[2] = {images, labels};
      CHECK(of_graph_run(graph, inputs, 2, &total, 1));
      if (*print_plan) {
        print_memory_plan(graph, "evaluation");
        *print_plan = 0;
      }
    } else {
      of_tensor_t* logits = forward(s, &a, m, images, 0);
      CHECK(of_argmax(s, logits, 1, 0, &pred));
      CHECK(of_eq(s, keep(&a, pred), labels, &hits));
      CHECK(of_sum(s, keep(&a, hits), NULL, 0, 0, &total));
    }
    int64_t count = 0;
    CHECK(of_tensor_copy_to_host(keep(&a, total), &count, sizeof count));
    correct += (size_t)count;
    arena_clear(&a);
  }
  CHECK(of_grad_set_enabled(previous, NULL));
  return (double)correct / (double)test->count;
}

int main(int argc, char** argv) {
  options_t opt;
  if (parse_options(argc, argv, &opt) != 0) {
    usage(argv[0]);
    return 2;
  }
  fm_dataset_t train, test;
  if (fm_dataset_load(opt.data_dir, "train", &train) != 0) return 1;
  if (fm_dataset_load(opt.data_dir, "t10k", &test) != 0) {
    fm_dataset_free(&train);
    return 1;
  }
  if (opt.limit > 0 && opt.limit < train.count) train.count = opt.limit;

  of_session_options_t so;
  of_session_options_init(&so);
  so.seed = opt.seed;
  so.num_threads = opt.threads;
  of_session_t* s = NULL;
  CHECK(of_session_create(&so, &s));
  /* Mixed precision for everything this thread runs or traces from here on (Note [Autocast]). */
  const int f16 = strcmp(opt.precision, "f16") == 0;
  if (strcmp(opt.precision, "bf16") == 0) CHECK(of_autocast_set(of_dtype_bfloat16(), NULL));
  if (f16) CHECK(of_autocast_set(of_dtype_float16(), NULL));
  of_process_group_t* group = NULL;
  const int leader = opt.rank == 0; /* the rank that reports and saves */
  if (opt.world_size > 1) {
    of_process_group_options_t po;
    of_process_group_options_init(&po);
    po.rank = opt.rank;
    po.world_size = opt.world_size;
    po.rendezvous = opt.rendezvous;
    po.timeout_ms = 120000; /* the first step compiles the graph */
    CHECK(of_process_group_create(&po, &group));
  }

  model_t model;
  model_init(s, &model, opt.width);
  of_tensor_t* params[64];
  size_t nparams = 0;
  for (size_t i = 0; i < model.count; ++i) {
    if (model.all[i].trainable) params[nparams++] = model.all[i].tensor;
  }
  of_sgd_options_t sgd;
  of_sgd_options_init(&sgd);
  sgd.lr = opt.lr;
  sgd.momentum = 0.9;
  sgd.nesterov = 1;
  sgd.weight_decay = 5e-4;
  of_optimizer_t* optimizer = NULL;
  CHECK(of_optimizer_sgd_create(s, params, nparams, &sgd, &optimizer));
  if (f16) {  /* float16's gradients need the loss scaled (Note [Loss scaling]) */
    CHECK(of_optimizer_enable_loss_scaling(s, optimizer, NULL));
    g_scale_loss = 1;
  }

  printf("Fashion-MNIST: %zu training and %zu test images; ResNet-style CNN, width %d, %zu parameter tensors\n",
         train.count, test.count, opt.width, nparams);
  printf("%d epochs, batch %d, SGD lr %.3g (cosine schedule), momentum 0.9, nesterov, weight decay 5e-4\n",
         opt.epochs, opt.batch_size, opt.lr);
  if (group != NULL) {
    printf("data parallel: rank %d of %d, %d images of each batch of %d\n", opt.rank, opt.world_size,
           opt.batch_size / opt.world_size, opt.batch_size);
  }
  of_graph_t *train_graph = NULL, *eval_graph = NULL;
  if (opt.graph) {
    const double t0 = now_seconds();
    train_graph = build_train_graph(s, &model, optimizer, (int64_t)train.rows, (int64_t)train.cols);
    if (group != NULL) {
      of_data_parallel_options_t dp;
      of_data_parallel_options_init(&dp);
      dp.sync_batch_norm_stats = 1;
      CHECK(of_graph_set_data_parallel(train_graph, group, &dp));
    }
    eval_graph = build_eval_graph(s, &model, (int64_t)test.rows, (int64_t)test.cols);
    printf("lazy graphs: training step and evaluation traced in %.0f ms (compiled at their first run)\n",
           1e3 * (now_seconds() - t0));
  }
  int print_train_plan = opt.graph, print_eval_plan = opt.graph;
  fflush(stdout);

  const size_t pixels = train.rows * train.cols;
  const size_t buf_examples = (size_t)(opt.batch_size > kEvalBatch ? opt.batch_size : kEvalBatch);
  float* ibuf = malloc(buf_examples * pixels * sizeof(float));
  int64_t* lbuf = malloc(buf_examples * sizeof(int64_t));
  size_t* order = malloc(train.count * sizeof(size_t));
  if (ibuf == NULL || lbuf == NULL || order == NULL) {
    fprintf(stderr, "out of memory\n");
    return 1;
  }
  unsigned long long rng = opt.seed;
  const int tty = leader && isatty(fileno(stderr));
  const size_t steps_per_epoch = (train.count + (size_t)opt.batch_size - 1) / (size_t)opt.batch_size;
  const size_t total_steps = steps_per_epoch * (size_t)opt.epochs;
  size_t step = 0;
  double accuracy = 0.0;
  const double run_started = now_seconds();
  arena_t a = {0};
  for (int epoch = 1; epoch <= opt.epochs; ++epoch) {
    shuffle(order, train.count, &rng);
    const double started = now_seconds();
    double loss_sum = 0.0;
    size_t seen = 0;
    for (size_t first = 0; first < train.count; first += (size_t)opt.batch_size, ++step) {
      const size_t global = train.count - first < (size_t)opt.batch_size ? train.count - first : (size_t)opt.batch_size;
      /* This rank's share of the global batch (all of it in one process). */
      const size_t n = global / (size_t)opt.world_size;
      if (n == 0) break;
      /* Cosine decay from lr to 0 over the whole run. */
      CHECK(of_optimizer_set_lr(optimizer, opt.lr * 0.5 * (1.0 + cos(M_PI * (double)step / (double)total_steps))));
      of_tensor_t *images = NULL, *labels = NULL, *loss = NULL;
      make_batch(s, &train, order, first + (size_t)opt.rank * n, n, ibuf, lbuf, &images, &labels);
      keep(&a, images);
      keep(&a, labels);
      if (train_graph != NULL) {
        /* The whole step in one call: forward, backward, the update with the lr just set. */
        const of_tensor_t* inputs[2] = {images, labels};
        CHECK(of_graph_run(train_graph, inputs, 2, &loss, 1));
        keep(&a, loss);
        if (print_train_plan) {
          print_memory_plan(train_graph, "training");
          print_train_plan = 0;
        }
      } else {
        of_tensor_t* logits = forward(s, &a, &model, images, 1);
        CHECK(of_cross_entropy(s, logits, labels, NULL, &loss));
        keep(&a, loss);
        CHECK(of_optimizer_zero_grad(optimizer));
        backward(s, &a, optimizer, loss);
        CHECK(of_optimizer_step(s, optimizer));
      }
      float loss_value = 0.0f;
      CHECK(of_tensor_copy_to_host(loss, &loss_value, sizeof loss_value));
      arena_clear(&a);
      loss_sum += (double)loss_value * (double)n;
      seen += n;
      const size_t share = train.count / (size_t)opt.world_size; /* this rank's images per epoch, about */
      if (leader && (tty ? (step % 10 == 0 || seen >= share) : (seen >= share || step % 200 == 0))) {
        progress(epoch, opt.epochs, seen, share, loss_sum / (double)seen, started, tty);
      }
    }
    if (tty) fprintf(stderr, "\n");
    const double trained = now_seconds();
    accuracy = evaluate(s, &model, eval_graph, &test, kEvalBatch, ibuf, lbuf, &print_eval_plan);
    const double evaluated = now_seconds();
    printf("epoch %d/%d: train loss %.4f, test accuracy %.2f%%, %.1f s\n", epoch, opt.epochs,
           loss_sum / (double)seen, 100.0 * accuracy, evaluated - started);
    if (group != NULL) report_rates(s, group, (double)seen / (trained - started), leader);
    if (opt.summary) {
      printf("bench: epoch=%d train_s=%.4f eval_s=%.4f images_per_s=%.1f loss=%.4f accuracy=%.4f\n", epoch,
             trained - started, evaluated - trained, (double)seen / (trained - started), loss_sum / (double)seen,
             accuracy);
    }
    fflush(stdout);
  }

  const char* names[64];
  const of_tensor_t* tensors[64];
  for (size_t i = 0; i < model.count; ++i) {
    names[i] = model.all[i].name;
    tensors[i] = model.all[i].tensor;
  }
  if (leader) {
    CHECK(of_safetensors_save(opt.out_path, names, tensors, model.count));
    printf("final test accuracy %.2f%% after %.0f s; weights saved to %s (%zu tensors, safetensors)\n",
           100.0 * accuracy, now_seconds() - run_started, opt.out_path, model.count);
  } else {
    printf("final test accuracy %.2f%% after %.0f s\n", 100.0 * accuracy, now_seconds() - run_started);
  }

  of_process_group_destroy(group); /* any order: the training graph keeps its group */
  of_graph_destroy(train_graph); /* graphs go before their session */
  of_graph_destroy(eval_graph);
  if (f16 && leader) {
    double scale = 0;
    int64_t skipped = 0;
    CHECK(of_optimizer_loss_scale(optimizer, &scale, &skipped));
    printf("float16 loss scaling: scale %g, %lld steps skipped for inf/NaN gradients\n", scale, (long long)skipped);
  }
  of_optimizer_destroy(optimizer);
  model_free(&model);
  of_session_destroy(s);
  free(ibuf);
  free(lbuf);
  free(order);
  fm_dataset_free(&train);
  fm_dataset_free(&test);
  return 0;
}
