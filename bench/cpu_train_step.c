/* Times training steps on the CPU through the C ABI: forward, cross-entropy, backward and an SGD step
 * (momentum 0.9), run eagerly (op by op) and through a lazy graph (the same code traced once into a
 * graph with the backward and the update, compiled, then one of_graph_run per step). The same three
 * models as bench/pytorch_train_step.py, built the same way (torchvision's ResNet-50 and ResNet-18
 * layouts, an MLP 64-128-10):
 *
 *   resnet50  batch 1,  3x224x224, 1000 classes
 *   resnet18  batch 8,  3x64x64,   1000 classes
 *   mlp       batch 32, 64 -> 128 -> ReLU -> 10
 *
 *   cpu_train_step [--model all|resnet50|resnet18|mlp] [--mode both|eager|lazy] [--threads N]
 *                  [--warmup N] [--iters N]
 *
 * Prints one line per model and mode:
 * "model=<name> mode=eager|lazy batch=<n> threads=<t> median_ms=<x> min_ms=<y>" (bench/compare_cpu.py
 * reads these lines). Both modes train the same parameters in one session, each with its own optimizer,
 * and their steps alternate; neither reads the loss back (nor does the PyTorch side). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <oneflow/oneflow_c.h>

static void check(of_status_t* st, const char* what, int line) {
  if (st == NULL) return;
  fprintf(stderr, "error at line %d (%s): %s\n", line, what, of_status_message(st));
  of_status_destroy(st);
  exit(1);
}
#define CHECK(call) check((call), #call, __LINE__)

/* ---- parameters and per-step temporaries ----------------------------------------------------- */

enum { kMaxParams = 512, kMaxTemps = 2048 };

typedef struct {
  of_session_t* s;
  of_tensor_t* params[kMaxParams]; /* trainable */
  size_t nparams;
  of_tensor_t* state[kMaxParams]; /* batch-norm running statistics */
  size_t nstate;
  of_tensor_t* temps[kMaxTemps];
  size_t ntemps;
} net_t;

static of_tensor_t* temp(net_t* n, of_tensor_t* t) {
  if (n->ntemps == kMaxTemps) {
    fprintf(stderr, "too many temporaries\n");
    exit(1);
  }
  return n->temps[n->ntemps++] = t;
}

static void release_temps(net_t* n) {
  for (size_t i = 0; i < n->ntemps; ++i) of_tensor_release(n->temps[i]);
  n->ntemps = 0;
}

static of_tensor_t* param(net_t* n, const int64_t* dims, size_t ndim, double fill, int kaiming) {
  of_tensor_t* t = NULL;
  CHECK(of_tensor_full(n->s, of_dtype_float32(), dims, ndim, fill, NULL, &t));
  if (kaiming) CHECK(of_init_kaiming_uniform(n->s, t, NULL));
  CHECK(of_tensor_set_requires_grad(t, 1));
  n->params[n->nparams++] = t;
  return t;
}

static of_tensor_t* state(net_t* n, int64_t channels, double fill) {
  of_tensor_t* t = NULL;
  CHECK(of_tensor_full(n->s, of_dtype_float32(), &channels, 1, fill, NULL, &t));
  n->state[n->nstate++] = t;
  return t;
}

/* ---- layers ---------------------------------------------------------------------------------- */

typedef struct {
  of_tensor_t *weight, *gamma, *beta, *mean, *var;
  int stride, pad;
} conv_bn_t;

static conv_bn_t conv_bn(net_t* n, int64_t in, int64_t out, int64_t k, int stride, int pad) {
  const int64_t wdims[4] = {out, in, k, k};
  conv_bn_t c = {.stride = stride, .pad = pad};
  c.weight = param(n, wdims, 4, 0.0, 1);
  c.gamma = param(n, &out, 1, 1.0, 0);
  c.beta = param(n, &out, 1, 0.0, 0);
  c.mean = state(n, out, 0.0);
  c.var = state(n, out, 1.0);
  return c;
}

static of_tensor_t* run_conv_bn(net_t* n, const conv_bn_t* c, of_tensor_t* x, int relu) {
  of_conv2d_options_t co;
  of_conv2d_options_init(&co);
  co.stride[0] = co.stride[1] = c->stride;
  co.padding[0] = co.padding[1] = c->pad;
  of_batch_norm_options_t bo;
  of_batch_norm_options_init(&bo);
  of_tensor_t *y = NULL, *z = NULL;
  CHECK(of_conv2d(n->s, x, c->weight, NULL, &co, &y));
  CHECK(of_batch_norm(n->s, temp(n, y), c->gamma, c->beta, c->mean, c->var, &bo, &z));
  temp(n, z);
  if (!relu) return z;
  of_tensor_t* r = NULL;
  CHECK(of_relu(n->s, z, &r));
  return temp(n, r);
}

/* A residual block: torchvision's BasicBlock (two 3x3) or Bottleneck (1x1, 3x3 with the stride, 1x1 x4). */
typedef struct {
  conv_bn_t convs[3];
  int nconvs;
  conv_bn_t down;
  int has_down;
} block_t;

static block_t make_block(net_t* n, int64_t in, int64_t width, int stride, int bottleneck) {
  block_t b = {0};
  const int64_t out = bottleneck ? width * 4 : width;
  if (bottleneck) {
    b.convs[0] = conv_bn(n, in, width, 1, 1, 0);
    b.convs[1] = conv_bn(n, width, width, 3, stride, 1);
    b.convs[2] = conv_bn(n, width, out, 1, 1, 0);
    b.nconvs = 3;
  } else {
    b.convs[0] = conv_bn(n, in, width, 3, stride, 1);
    b.convs[1] = conv_bn(n, width, width, 3, 1, 1);
    b.nconvs = 2;
  }
  if (stride != 1 || in != out) {
    b.down = conv_bn(n, in, out, 1, stride, 0);
    b.has_down = 1;
  }
  return b;
}

static of_tensor_t* run_block(net_t* n, const block_t* b, of_tensor_t* x) {
  of_tensor_t* y = x;
  for (int i = 0; i < b->nconvs; ++i) y = run_conv_bn(n, &b->convs[i], y, i + 1 < b->nconvs);
  of_tensor_t* shortcut = b->has_down ? run_conv_bn(n, &b->down, x, 0) : x;
  of_tensor_t *sum = NULL, *r = NULL;
  CHECK(of_add(n->s, y, shortcut, &sum));
  CHECK(of_relu(n->s, temp(n, sum), &r));
  return temp(n, r);
}

/* ---- models ---------------------------------------------------------------------------------- */

typedef struct {
  const char* name;
  int64_t batch;
  int64_t input_dims[4];
  size_t input_ndim;
  int64_t classes;
  /* ResNet */
  conv_bn_t stem;
  block_t blocks[16];
  int nblocks;
  /* head (both): fc1 for the MLP's first layer */
  of_tensor_t *fc1_w, *fc1_b, *fc_w, *fc_b;
  int is_mlp;
} model_t;

static void build_resnet(net_t* n, model_t* m, const int* layers, int bottleneck) {
  m->stem = conv_bn(n, 3, 64, 7, 2, 3);
  int64_t in = 64;
  for (int stage = 0; stage < 4; ++stage) {
    const int64_t width = 64 << stage;
    for (int i = 0; i < layers[stage]; ++i) {
      const int stride = (stage > 0 && i == 0) ? 2 : 1;
      m->blocks[m->nblocks++] = make_block(n, in, width, stride, bottleneck);
      in = bottleneck ? width * 4 : width;
    }
  }
  const int64_t fc_dims[2] = {m->classes, in};
  m->fc_w = param(n, fc_dims, 2, 0.0, 1);
  m->fc_b = param(n, &m->classes, 1, 0.0, 0);
}

static void build_mlp(net_t* n, model_t* m) {
  const int64_t d1[2] = {128, 64}, d2[2] = {10, 128}, b1 = 128, b2 = 10;
  m->fc1_w = param(n, d1, 2, 0.0, 1);
  m->fc1_b = param(n, &b1, 1, 0.0, 0);
  m->fc_w = param(n, d2, 2, 0.0, 1);
  m->fc_b = param(n, &b2, 1, 0.0, 0);
}

static of_tensor_t* forward(net_t* n, const model_t* m, of_tensor_t* x) {
  of_tensor_t* h = x;
  if (m->is_mlp) {
    of_tensor_t *y = NULL, *r = NULL;
    CHECK(of_linear(n->s, x, m->fc1_w, m->fc1_b, &y));
    CHECK(of_relu(n->s, temp(n, y), &r));
    h = temp(n, r);
  } else {
    h = run_conv_bn(n, &m->stem, x, 1);
    of_pool2d_options_t po;
    of_pool2d_options_init(&po);
    po.kernel_size[0] = po.kernel_size[1] = 3;
    po.stride[0] = po.stride[1] = 2;
    po.padding[0] = po.padding[1] = 1;
    of_tensor_t* p = NULL;
    CHECK(of_max_pool2d(n->s, h, &po, &p));
    h = temp(n, p);
    for (int i = 0; i < m->nblocks; ++i) h = run_block(n, &m->blocks[i], h);
    of_tensor_t *g = NULL, *f = NULL;
    CHECK(of_adaptive_avg_pool2d(n->s, h, 1, 1, &g));
    CHECK(of_flatten(n->s, temp(n, g), 1, -1, &f));
    h = temp(n, f);
  }
  of_tensor_t* logits = NULL;
  CHECK(of_linear(n->s, h, m->fc_w, m->fc_b, &logits));
  return temp(n, logits);
}

/* ---- timing ---------------------------------------------------------------------------------- */

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int compare_double(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static void report(const char* name, const char* mode, int64_t batch, int threads, double* times, int iters) {
  qsort(times, (size_t)iters, sizeof(double), compare_double);
  printf("model=%s mode=%s batch=%lld threads=%d median_ms=%.4f min_ms=%.4f\n", name, mode, (long long)batch, threads,
         times[iters / 2], times[0]);
  fflush(stdout);
}

static of_optimizer_t* make_sgd(net_t* n) {
  of_sgd_options_t sgd;
  of_sgd_options_init(&sgd);
  sgd.lr = 0.01;
  sgd.momentum = 0.9;
  of_optimizer_t* opt = NULL;
  CHECK(of_optimizer_sgd_create(n->s, n->params, n->nparams, &sgd, &opt));
  return opt;
}

/* The eager step traced into a graph: inputs x and target (the bench's fixed shapes), output the loss;
 * a run also applies `opt`'s update and the batch-norm running-statistics update in place. */
static of_graph_t* build_train_graph(net_t* n, const model_t* m, of_optimizer_t* opt) {
  of_graph_t* g = NULL;
  CHECK(of_graph_create(n->s, m->name, NULL, &g));
  CHECK(of_graph_begin_build(g));
  of_tensor_t *x = NULL, *t = NULL, *loss = NULL;
  CHECK(of_graph_add_input(g, "x", of_dtype_float32(), m->input_dims, m->input_ndim, &x));
  temp(n, x);
  CHECK(of_graph_add_input(g, "target", of_dtype_int64(), &m->batch, 1, &t));
  temp(n, t);
  CHECK(of_cross_entropy(n->s, forward(n, m, x), t, NULL, &loss));
  temp(n, loss);
  CHECK(of_tensor_backward(n->s, loss, NULL, 0));
  CHECK(of_graph_add_optimizer(g, opt));
  CHECK(of_graph_add_output(g, loss));
  CHECK(of_graph_end_build(g));
  release_temps(n); /* the lazy handles */
  return g;
}

static void bench(const char* name, int threads, int warmup, int iters, int eager, int lazy) {
  of_session_options_t so;
  of_session_options_init(&so);
  so.num_threads = threads;
  net_t* n = calloc(1, sizeof *n);
  model_t* m = calloc(1, sizeof *m);
  CHECK(of_session_create(&so, &n->s));
  m->name = name;
  if (strcmp(name, "resnet50") == 0) {
    static const int layers[4] = {3, 4, 6, 3};
    *m = (model_t){.name = name, .batch = 1, .input_dims = {1, 3, 224, 224}, .input_ndim = 4, .classes = 1000};
    build_resnet(n, m, layers, 1);
  } else if (strcmp(name, "resnet18") == 0) {
    static const int layers[4] = {2, 2, 2, 2};
    *m = (model_t){.name = name, .batch = 8, .input_dims = {8, 3, 64, 64}, .input_ndim = 4, .classes = 1000};
    build_resnet(n, m, layers, 0);
  } else {
    *m = (model_t){.name = name, .batch = 32, .input_dims = {32, 64}, .input_ndim = 2, .classes = 10, .is_mlp = 1};
    build_mlp(n, m);
  }
  of_tensor_t *x = NULL, *target = NULL, *u = NULL, *scaled = NULL;
  CHECK(of_tensor_randn(n->s, of_dtype_float32(), m->input_dims, m->input_ndim, NULL, &x));
  CHECK(of_tensor_rand(n->s, of_dtype_float32(), &m->batch, 1, NULL, &u));
  CHECK(of_mul_scalar(n->s, u, (double)m->classes - 0.5, &scaled));
  CHECK(of_cast(n->s, scaled, of_dtype_int64(), &target));
  of_tensor_release(u);
  of_tensor_release(scaled);

  /* With both modes, eager and lazy steps alternate, so that load changes on a shared machine hit both. */
  of_optimizer_t* eager_opt = eager ? make_sgd(n) : NULL;
  of_optimizer_t* lazy_opt = lazy ? make_sgd(n) : NULL;
  of_graph_t* g = lazy ? build_train_graph(n, m, lazy_opt) : NULL;
  const of_tensor_t* inputs[2] = {x, target};
  double* eager_times = calloc((size_t)iters, sizeof(double));
  double* lazy_times = calloc((size_t)iters, sizeof(double));
  /* Step -1 is the lazy graph's first run, which compiles it for these shapes. */
  for (int i = lazy ? -1 : 0; i < warmup + iters; ++i) {
    if (eager && i >= 0) {
      const double t0 = now_ms();
      of_tensor_t* loss = NULL;
      CHECK(of_cross_entropy(n->s, forward(n, m, x), target, NULL, &loss));
      temp(n, loss);
      CHECK(of_optimizer_zero_grad(eager_opt));
      CHECK(of_tensor_backward(n->s, loss, NULL, 0));
      CHECK(of_optimizer_step(n->s, eager_opt));
      release_temps(n);
      if (i >= warmup) eager_times[i - warmup] = now_ms() - t0;
    }
    if (lazy) {
      const double t0 = now_ms();
      of_tensor_t* loss = NULL;
      CHECK(of_graph_run(g, inputs, 2, &loss, 1)); /* forward, backward and the update */
      of_tensor_release(loss);
      if (i >= warmup) lazy_times[i - warmup] = now_ms() - t0;
    }
  }
  if (eager) report(name, "eager", m->batch, threads, eager_times, iters);
  if (lazy) report(name, "lazy", m->batch, threads, lazy_times, iters);

  free(eager_times);
  free(lazy_times);
  of_graph_destroy(g);
  of_optimizer_destroy(eager_opt);
  of_optimizer_destroy(lazy_opt);
  of_tensor_release(x);
  of_tensor_release(target);
  for (size_t i = 0; i < n->nparams; ++i) of_tensor_release(n->params[i]);
  for (size_t i = 0; i < n->nstate; ++i) of_tensor_release(n->state[i]);
  of_session_destroy(n->s);
  free(n);
  free(m);
}

int main(int argc, char** argv) {
  const char* model = "all";
  const char* mode = "both";
  int threads = 0, warmup = -1, iters = -1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--model") == 0) model = argv[i + 1];
    else if (strcmp(argv[i], "--mode") == 0) mode = argv[i + 1];
    else if (strcmp(argv[i], "--threads") == 0) threads = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--warmup") == 0) warmup = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--iters") == 0) iters = atoi(argv[i + 1]);
    else {
      fprintf(stderr,
              "usage: %s [--model all|resnet50|resnet18|mlp] [--mode both|eager|lazy] [--threads N] [--warmup N] "
              "[--iters N]\n",
              argv[0]);
      return 2;
    }
  }
  const int eager = strcmp(mode, "both") == 0 || strcmp(mode, "eager") == 0;
  const int lazy = strcmp(mode, "both") == 0 || strcmp(mode, "lazy") == 0;
  if (!eager && !lazy) {
    fprintf(stderr, "--mode must be both, eager or lazy, got %s\n", mode);
    return 2;
  }
  static const char* const all[3] = {"mlp", "resnet18", "resnet50"};
  for (int i = 0; i < 3; ++i) {
    if (strcmp(model, "all") != 0 && strcmp(model, all[i]) != 0) continue;
    /* Defaults: enough steps for a stable median without taking minutes on two cores. */
    const int is_mlp = i == 0, is_r50 = i == 2;
    bench(all[i], threads, warmup >= 0 ? warmup : (is_mlp ? 200 : 3), iters > 0 ? iters : (is_mlp ? 2000 : (is_r50 ? 7 : 11)),
          eager, lazy);
  }
  return 0;
}
