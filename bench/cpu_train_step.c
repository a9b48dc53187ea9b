/* Times training steps on the CPU through the C ABI: forward, cross-entropy, backward and an SGD step
 * (momentum 0.9), run eagerly (op by op) and through a lazy graph (the same code traced once into a
 * graph with the backward and the update, compiled, then one of_graph_run per step). The same models as
 * bench/pytorch_train_step.py and bench/libtorch_train_step.cpp, built the same way (torchvision's
 * ResNet-50 and ResNet-18 layouts, an MLP 64-128-10), at these batch sizes unless --batch overrides:
 *
 *   resnet50  batch 1, 4 and 16, 3x224x224, 1000 classes
 *   resnet18  batch 8,           3x64x64,   1000 classes
 *   mlp       batch 32,          64 -> 128 -> ReLU -> 10
 *
 *   cpu_train_step [--model all|LIST] [--batch N] [--mode both|eager|lazy] [--threads N]
 *                  [--warmup N] [--iters N] [--profile FILE]
 *
 * --profile FILE: the lazy graphs are profiled (of_graph_options_t.profile) and their dumps appended to
 * FILE after the timed steps: each step's time per run and at best, and each op's share.
 *
 * LIST is comma-separated (e.g. resnet50,mlp). Prints one line per model, batch and mode:
 * "model=<name> impl=oneflow_c mode=eager|lazy format=nchw batch=<n> threads=<t> warmup=<w> iters=<i>
 * median_ms=<x> min_ms=<y> gflop=<f> gflops=<g> max_rss_mb=<m>" (bench/compare_cpu.py reads these lines):
 * gflop is the step's floating-point work, counted from the shapes as 3x the forward's convolutions and
 * linear layers (2 flops per multiply-add; the backward computes two products of the forward's size),
 * gflops = gflop / median; max_rss_mb is the process's peak resident memory so far (getrusage), so run
 * one model and one mode per process for a per-model figure (compare_cpu.py does). With --mode both,
 * both modes train the same parameters in one session, each with its own optimizer, and their steps
 * alternate; neither reads the loss back (nor do the PyTorch sides). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <oneflow/oneflow_c.h>

static const char* profile_path = NULL; /* --profile */

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
  double forward_flops; /* of the convolutions and linear layers run since it was last reset */
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

/* Adds the flops of an op whose output `y` has `outputs` elements per multiply-add chain of length `chain`
 * (conv: Cin * k * k per output element; linear: in_features per output element). */
static void count_flops(net_t* n, const of_tensor_t* y, double chain) {
  int64_t dims[8];
  size_t ndim = 0;
  CHECK(of_tensor_ndim(y, &ndim));
  CHECK(of_tensor_dims(y, dims, 8));
  double outputs = 1.0;
  for (size_t i = 0; i < ndim; ++i) outputs *= (double)dims[i];
  n->forward_flops += 2.0 * outputs * chain;
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
  int64_t chain; /* in channels x k x k: multiply-adds per output element */
} conv_bn_t;

static conv_bn_t conv_bn(net_t* n, int64_t in, int64_t out, int64_t k, int stride, int pad) {
  const int64_t wdims[4] = {out, in, k, k};
  conv_bn_t c = {.stride = stride, .pad = pad, .chain = in * k * k};
  c.weight = param(n, wdims, 4, 0.0, 1);
  c.gamma = param(n, &out, 1, 1.0, 0);
  c.beta = param(n, &out, 1, 0.0, 0);
  c.mean = state(n, out, 0.0);
  c.var = state(n, out, 1.0);
  return c;
}

/* conv -> batch norm, then (relu) + addend -> ReLU: each batch norm that a ReLU follows (with a block's
 * residual add between them) is one of_batch_norm_add_relu call, as in the main job (the same function as
 * the ops one by one, in one pass over memory; torchvision's models run ReLU and the add in place). */
static of_tensor_t* run_conv_bn(net_t* n, const conv_bn_t* c, of_tensor_t* x, int relu, of_tensor_t* addend) {
  of_conv2d_options_t co;
  of_conv2d_options_init(&co);
  co.stride[0] = co.stride[1] = c->stride;
  co.padding[0] = co.padding[1] = c->pad;
  of_batch_norm_options_t bo;
  of_batch_norm_options_init(&bo);
  of_tensor_t *y = NULL, *z = NULL;
  CHECK(of_conv2d(n->s, x, c->weight, NULL, &co, &y));
  count_flops(n, y, (double)c->chain);
  if (relu) {
    CHECK(of_batch_norm_add_relu(n->s, temp(n, y), addend, c->gamma, c->beta, c->mean, c->var, &bo, &z));
  } else {
    CHECK(of_batch_norm(n->s, temp(n, y), c->gamma, c->beta, c->mean, c->var, &bo, &z));
  }
  return temp(n, z);
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
  of_tensor_t* shortcut = b->has_down ? run_conv_bn(n, &b->down, x, 0, NULL) : x;
  of_tensor_t* y = x;
  for (int i = 0; i < b->nconvs; ++i) y = run_conv_bn(n, &b->convs[i], y, 1, i + 1 < b->nconvs ? NULL : shortcut);
  return y;
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
  int64_t fc_in; /* the last linear layer's in features */
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
  m->fc_in = in;
  m->fc_w = param(n, fc_dims, 2, 0.0, 1);
  m->fc_b = param(n, &m->classes, 1, 0.0, 0);
}

static void build_mlp(net_t* n, model_t* m) {
  const int64_t d1[2] = {128, 64}, d2[2] = {10, 128}, b1 = 128, b2 = 10;
  m->fc1_w = param(n, d1, 2, 0.0, 1);
  m->fc1_b = param(n, &b1, 1, 0.0, 0);
  m->fc_w = param(n, d2, 2, 0.0, 1);
  m->fc_b = param(n, &b2, 1, 0.0, 0);
  m->fc_in = 128;
}

static of_tensor_t* forward(net_t* n, const model_t* m, of_tensor_t* x) {
  of_tensor_t* h = x;
  if (m->is_mlp) {
    of_tensor_t *y = NULL, *r = NULL;
    CHECK(of_linear(n->s, x, m->fc1_w, m->fc1_b, &y));
    count_flops(n, y, 64.0);
    CHECK(of_relu(n->s, temp(n, y), &r));
    h = temp(n, r);
  } else {
    h = run_conv_bn(n, &m->stem, x, 1, NULL);
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
  count_flops(n, logits, (double)m->fc_in);
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

typedef struct {
  const char* mode;
  int64_t batch;
  int threads, warmup, iters;
  double step_gflop;
} run_t;

static void report(const char* name, const run_t* r, double* times) {
  qsort(times, (size_t)r->iters, sizeof(double), compare_double);
  const double median = times[r->iters / 2];
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru); /* ru_maxrss in KiB on Linux */
  printf("model=%s impl=oneflow_c mode=%s format=nchw batch=%lld threads=%d warmup=%d iters=%d median_ms=%.4f "
         "min_ms=%.4f gflop=%.4f gflops=%.2f max_rss_mb=%.1f\n",
         name, r->mode, (long long)r->batch, r->threads, r->warmup, r->iters, median, times[0], r->step_gflop,
         r->step_gflop / (median * 1e-3), (double)ru.ru_maxrss / 1024.0);
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
  of_graph_options_t options;
  of_graph_options_init(&options);
  options.profile = profile_path != NULL;
  of_graph_t* g = NULL;
  CHECK(of_graph_create(n->s, m->name, &options, &g));
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

/* Appends the dump of `g` to the file at `path`. */
static void write_dump(const of_graph_t* g, const char* path) {
  size_t length = 0;
  CHECK(of_graph_dump(g, NULL, 0, &length));
  char* text = malloc(length + 1);
  CHECK(of_graph_dump(g, text, length + 1, &length));
  FILE* f = fopen(path, "a");
  if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0) {
    fprintf(stderr, "cannot write the profile to %s\n", path);
    exit(1);
  }
  free(text);
}

/* (warmup, iters) when not given: enough steps for a stable median without taking minutes on two cores
 * (the same rule as bench/pytorch_train_step.py). */
static void default_steps(const char* name, int64_t batch, int* warmup, int* iters) {
  if (strcmp(name, "mlp") == 0) {
    *warmup = 200, *iters = 2000;
    return;
  }
  const double images = (double)batch * (strcmp(name, "resnet50") == 0 ? 1.0 : 0.1); /* resnet18 at 64x64 */
  *warmup = images <= 1 ? 3 : images <= 4 ? 2 : 1;
  *iters = images <= 1 ? 7 : images <= 4 ? 5 : 3;
}

static void bench(const char* name, int64_t batch, int threads, int warmup, int iters, int eager, int lazy) {
  of_session_options_t so;
  of_session_options_init(&so);
  so.num_threads = threads;
  net_t* n = calloc(1, sizeof *n);
  model_t* m = calloc(1, sizeof *m);
  CHECK(of_session_create(&so, &n->s));
  if (strcmp(name, "resnet50") == 0) {
    static const int layers[4] = {3, 4, 6, 3};
    *m = (model_t){.name = name, .batch = batch, .input_dims = {batch, 3, 224, 224}, .input_ndim = 4, .classes = 1000};
    build_resnet(n, m, layers, 1);
  } else if (strcmp(name, "resnet18") == 0) {
    static const int layers[4] = {2, 2, 2, 2};
    *m = (model_t){.name = name, .batch = batch, .input_dims = {batch, 3, 64, 64}, .input_ndim = 4, .classes = 1000};
    build_resnet(n, m, layers, 0);
  } else {
    *m = (model_t){.name = name, .batch = batch, .input_dims = {batch, 64}, .input_ndim = 2, .classes = 10, .is_mlp = 1};
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
  n->forward_flops = 0.0;
  of_graph_t* g = lazy ? build_train_graph(n, m, lazy_opt) : NULL;
  const of_tensor_t* inputs[2] = {x, target};
  double* eager_times = calloc((size_t)iters, sizeof(double));
  double* lazy_times = calloc((size_t)iters, sizeof(double));
  /* Step -1 is the lazy graph's first run, which compiles it for these shapes. */
  for (int i = lazy ? -1 : 0; i < warmup + iters; ++i) {
    if (eager && i >= 0) {
      const double t0 = now_ms();
      n->forward_flops = 0.0;
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
  /* forward_flops holds one forward's count (the eager steps' last, or the lazy trace's). */
  run_t r = {.batch = batch, .threads = threads, .warmup = warmup, .iters = iters,
             .step_gflop = 3.0 * n->forward_flops * 1e-9};
  if (eager) {
    r.mode = "eager";
    report(name, &r, eager_times);
  }
  if (lazy) {
    r.mode = "lazy";
    report(name, &r, lazy_times);
  }

  if (g != NULL && profile_path != NULL) write_dump(g, profile_path);
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

static int usage(const char* prog) {
  fprintf(stderr,
          "usage: %s [--model all|LIST] [--batch N] [--mode both|eager|lazy] [--threads N] [--warmup N] [--iters N]\n"
          "       [--profile FILE]\n"
          "LIST: comma-separated names among mlp, resnet18, resnet50\n",
          prog);
  return 2;
}

/* Whether `name` is in the comma-separated `list` (or the list is "all"). */
static int selected(const char* list, const char* name) {
  if (strcmp(list, "all") == 0) return 1;
  const size_t len = strlen(name);
  for (const char* p = list; p != NULL; p = strchr(p, ',')) {
    if (*p == ',') ++p;
    if (strncmp(p, name, len) == 0 && (p[len] == ',' || p[len] == '\0')) return 1;
  }
  return 0;
}

int main(int argc, char** argv) {
  const char* model = "all";
  const char* mode = "both";
  int threads = 0, warmup = -1, iters = -1, batch = 0;
  for (int i = 1; i < argc; i += 2) {
    if (i + 1 >= argc) return usage(argv[0]);
    if (strcmp(argv[i], "--model") == 0) model = argv[i + 1];
    else if (strcmp(argv[i], "--mode") == 0) mode = argv[i + 1];
    else if (strcmp(argv[i], "--threads") == 0) threads = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--warmup") == 0) warmup = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--iters") == 0) iters = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--batch") == 0) batch = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--profile") == 0)
      profile_path = argv[i + 1];
    else return usage(argv[0]);
  }
  const int eager = strcmp(mode, "both") == 0 || strcmp(mode, "eager") == 0;
  const int lazy = strcmp(mode, "both") == 0 || strcmp(mode, "lazy") == 0;
  if (!eager && !lazy) {
    fprintf(stderr, "--mode must be both, eager or lazy, got %s\n", mode);
    return 2;
  }
  if (threads <= 0) threads = (int)sysconf(_SC_NPROCESSORS_ONLN); /* the session's default: all cores */
  static const struct {
    const char* name;
    int64_t batches[3];
  } models[3] = {{"mlp", {32}}, {"resnet18", {8}}, {"resnet50", {1, 4, 16}}};
  int found = 0;
  for (int i = 0; i < 3; ++i) {
    if (!selected(model, models[i].name)) continue;
    ++found;
    for (int b = 0; b < 3; ++b) {
      const int64_t bs = batch > 0 ? batch : models[i].batches[b];
      if (bs == 0 || (batch > 0 && b > 0)) break;
      int w = 0, it = 0;
      default_steps(models[i].name, bs, &w, &it);
      bench(models[i].name, bs, threads, warmup >= 0 ? warmup : w, iters > 0 ? iters : it, eager, lazy);
    }
  }
  if (!found) {
    fprintf(stderr, "no known model in --model %s\n", model);
    return usage(argv[0]);
  }
  return 0;
}
