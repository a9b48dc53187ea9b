/* Trains a small character-level transformer language model through the oneflow_c C ABI, with lazy
 * graphs whose sequence length is a named symbol.
 *
 *   train_char_lm [--epochs N] [--steps N] [--batch-size N] [--context N] [--width N] [--layers N]
 *                 [--heads N] [--lr X] [--threads N] [--seed N] [--corpus PATH]... [--out FILE]
 *                 [--save-init FILE] [--sample N] [--log-every N]
 *
 * The corpus: every file under /usr/share/common-licenses (Debian's base-files ships them), or the
 * files given with --corpus. Its bytes are the vocabulary (one token per distinct byte).
 *
 * The model (GPT-style, pre-norm): token and position embeddings; --layers blocks of
 *   x += proj(attention(layer_norm(x)))   causal scaled-dot-product attention over --heads heads
 *   x += fc2(gelu(fc1(layer_norm(x))))    a 4x-wide MLP
 * then a final layer norm and logits through the token embedding's transpose (weight tying). Trained
 * with AdamW on random --context-character windows, next-character cross-entropy.
 *
 * Two lazy graphs are traced once from the same forward code. Both declare their sequence length as
 * the session's named symbol `seq`:
 *   - the training step (forward, loss, backward, the AdamW update: one of_graph_run per step), run
 *     on (batch, context) windows;
 *   - the sampling graph (batch 1, logits of every position), run on prompts of growing length
 *     1, 2, ..., context (then a sliding window): each new length compiles one plan of the same graph.
 * Prints a progress bar, the mean loss per epoch, a few lines of sampled text, and saves the weights
 * (safetensors). --save-init writes the initial weights first (the PyTorch twin in bench/ starts from
 * them). */
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <oneflow/oneflow_c.h>

/* ---- error handling: print the status and stop ---------------------------------------------- */

static void check(of_status_t* st, const char* what, int line) {
  if (st == NULL) return;
  fprintf(stderr, "\nerror at line %d (%s): [%s] %s\n", line, what, of_status_code_name(of_status_code(st)),
          of_status_message(st));
  of_status_destroy(st);
  exit(1);
}
#define CHECK(call) check((call), #call, __LINE__)

static void* xmalloc(size_t n) {
  void* p = malloc(n ? n : 1);
  if (p == NULL) {
    fprintf(stderr, "out of memory\n");
    exit(1);
  }
  return p;
}

/* ---- the tensors of one trace or step, released together ------------------------------------- */

typedef struct {
  of_tensor_t** items;
  size_t count, capacity;
} arena_t;

static of_tensor_t* keep(arena_t* a, of_tensor_t* t) {
  if (a->count == a->capacity) {
    a->capacity = a->capacity ? 2 * a->capacity : 256;
    of_tensor_t** grown = realloc(a->items, a->capacity * sizeof *grown);
    if (grown == NULL) {
      fprintf(stderr, "out of memory\n");
      exit(1);
    }
    a->items = grown;
  }
  a->items[a->count++] = t;
  return t;
}

static void arena_clear(arena_t* a) {
  for (size_t i = 0; i < a->count; ++i) of_tensor_release(a->items[i]);
  a->count = 0;
}

/* ---- corpus ---------------------------------------------------------------------------------- */

typedef struct {
  uint8_t* text;
  size_t length;
  int64_t vocab;      /* distinct bytes */
  int64_t token[256]; /* byte -> token id, -1 where absent */
  uint8_t byte[256];  /* token id -> byte */
} corpus_t;

static void append_file(corpus_t* c, const char* path) {
  FILE* f = fopen(path, "rb");
  if (f == NULL) {
    fprintf(stderr, "cannot open %s\n", path);
    exit(1);
  }
  uint8_t buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
    uint8_t* grown = realloc(c->text, c->length + n);
    if (grown == NULL) {
      fprintf(stderr, "out of memory\n");
      exit(1);
    }
    c->text = grown;
    memcpy(c->text + c->length, buf, n);
    c->length += n;
  }
  fclose(f);
}

static int compare_names(const void* a, const void* b) { return strcmp(*(char* const*)a, *(char* const*)b); }

/* Every regular file of `dir`, in name order (so the corpus is the same on every machine). */
static void append_directory(corpus_t* c, const char* dir) {
  DIR* d = opendir(dir);
  if (d == NULL) {
    fprintf(stderr, "cannot open the corpus directory %s\n", dir);
    exit(1);
  }
  char* names[512];
  size_t n = 0;
  struct dirent* e;
  while ((e = readdir(d)) != NULL && n < 512) {
    if (e->d_name[0] == '.') continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    struct stat st;
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) names[n++] = strdup(path);
  }
  closedir(d);
  qsort(names, n, sizeof names[0], compare_names);
  for (size_t i = 0; i < n; ++i) {
    append_file(c, names[i]);
    free(names[i]);
  }
}

static void corpus_index(corpus_t* c) {
  int present[256] = {0};
  for (size_t i = 0; i < c->length; ++i) present[c->text[i]] = 1;
  c->vocab = 0;
  for (int b = 0; b < 256; ++b) {
    c->token[b] = present[b] ? c->vocab : -1;
    if (present[b]) c->byte[c->vocab++] = (uint8_t)b;
  }
}

/* ---- model ----------------------------------------------------------------------------------- */

typedef struct {
  char name[64];
  of_tensor_t* tensor;
} named_t;

typedef struct {
  of_tensor_t *ln1_w, *ln1_b, *qkv_w, *qkv_b, *proj_w, *proj_b;
  of_tensor_t *ln2_w, *ln2_b, *fc1_w, *fc1_b, *fc2_w, *fc2_b;
} block_t;

typedef struct {
  int64_t vocab, context, width, heads, layers;
  of_tensor_t *tok_emb, *pos_emb, *lnf_w, *lnf_b;
  block_t blocks[16];
  named_t all[256];
  size_t count;
} model_t;

/* A trainable float32 parameter: normal(0, std) when std > 0, else filled with `fill`. */
static of_tensor_t* param(of_session_t* s, model_t* m, const char* name, const int64_t* dims, size_t ndim,
                          double std, double fill) {
  of_tensor_t* t = NULL;
  CHECK(of_tensor_full(s, of_dtype_float32(), dims, ndim, fill, NULL, &t));
  if (std > 0) CHECK(of_init_normal(s, t, 0.0, std));
  CHECK(of_tensor_set_requires_grad(t, 1));
  named_t* n = &m->all[m->count++];
  snprintf(n->name, sizeof n->name, "%s", name);
  n->tensor = t;
  return t;
}

/* GPT-2's initialisation: weights normal(0, 0.02), the residual projections scaled by
 * 1/sqrt(2 * layers), biases 0, layer-norm gains 1. */
static void model_init(of_session_t* s, model_t* m, int64_t vocab, int64_t context, int64_t width, int64_t heads,
                       int64_t layers) {
  memset(m, 0, sizeof *m);
  m->vocab = vocab, m->context = context, m->width = width, m->heads = heads, m->layers = layers;
  const double std = 0.02, residual_std = 0.02 / sqrt(2.0 * (double)layers);
  const int64_t d = width, tok[2] = {vocab, d}, pos[2] = {context, d}, vec[1] = {d};
  m->tok_emb = param(s, m, "tok_emb.weight", tok, 2, std, 0);
  m->pos_emb = param(s, m, "pos_emb.weight", pos, 2, std, 0);
  char name[64];
#define PARAM(field, suffix, dims, ndim, sd, fill)                        \
  do {                                                                   \
    snprintf(name, sizeof name, "blocks.%d.%s", l, suffix);              \
    b->field = param(s, m, name, dims, ndim, sd, fill);                  \
  } while (0)
  for (int l = 0; l < (int)layers; ++l) {
    block_t* b = &m->blocks[l];
    const int64_t qkv[2] = {3 * d, d}, qkv_b[1] = {3 * d}, proj[2] = {d, d}, fc1[2] = {4 * d, d}, fc1_b[1] = {4 * d},
                  fc2[2] = {d, 4 * d};
    PARAM(ln1_w, "ln1.weight", vec, 1, 0, 1.0);
    PARAM(ln1_b, "ln1.bias", vec, 1, 0, 0.0);
    PARAM(qkv_w, "attn.qkv.weight", qkv, 2, std, 0);
    PARAM(qkv_b, "attn.qkv.bias", qkv_b, 1, 0, 0.0);
    PARAM(proj_w, "attn.proj.weight", proj, 2, residual_std, 0);
    PARAM(proj_b, "attn.proj.bias", vec, 1, 0, 0.0);
    PARAM(ln2_w, "ln2.weight", vec, 1, 0, 1.0);
    PARAM(ln2_b, "ln2.bias", vec, 1, 0, 0.0);
    PARAM(fc1_w, "mlp.fc1.weight", fc1, 2, std, 0);
    PARAM(fc1_b, "mlp.fc1.bias", fc1_b, 1, 0, 0.0);
    PARAM(fc2_w, "mlp.fc2.weight", fc2, 2, residual_std, 0);
    PARAM(fc2_b, "mlp.fc2.bias", vec, 1, 0, 0.0);
  }
#undef PARAM
  m->lnf_w = param(s, m, "ln_f.weight", vec, 1, 0, 1.0);
  m->lnf_b = param(s, m, "ln_f.bias", vec, 1, 0, 0.0);
}

static void model_free(model_t* m) {
  for (size_t i = 0; i < m->count; ++i) of_tensor_release(m->all[i].tensor);
  m->count = 0;
}

static void model_save(const model_t* m, const char* path) {
  const char* names[256];
  const of_tensor_t* tensors[256];
  for (size_t i = 0; i < m->count; ++i) {
    names[i] = m->all[i].name;
    tensors[i] = m->all[i].tensor;
  }
  CHECK(of_safetensors_save(path, names, tensors, m->count));
}

/* ---- forward --------------------------------------------------------------------------------- */

static of_tensor_t* layer_norm(of_session_t* s, arena_t* a, of_tensor_t* x, of_tensor_t* w, of_tensor_t* b,
                               int64_t width) {
  of_tensor_t* y = NULL;
  CHECK(of_layer_norm(s, x, &width, 1, w, b, 1e-5, &y));
  return keep(a, y);
}

static of_tensor_t* linear(of_session_t* s, arena_t* a, of_tensor_t* x, of_tensor_t* w, of_tensor_t* b) {
  of_tensor_t* y = NULL;
  CHECK(of_linear(s, x, w, b, &y));
  return keep(a, y);
}

static of_tensor_t* add(of_session_t* s, arena_t* a, of_tensor_t* x, of_tensor_t* y) {
  of_tensor_t* z = NULL;
  CHECK(of_add(s, x, y, &z));
  return keep(a, z);
}

/* (batch, seq, width) -> (batch, heads, seq, width / heads): `part` 0, 1, 2 of the fused qkv. */
static of_tensor_t* split_heads(of_session_t* s, arena_t* a, const model_t* m, of_tensor_t* qkv, int part,
                                int64_t batch, int64_t seq) {
  of_tensor_t *slice = NULL, *heads = NULL, *moved = NULL;
  CHECK(of_narrow(s, qkv, -1, part * m->width, m->width, &slice));
  const int64_t dims[4] = {batch, seq, m->heads, m->width / m->heads};
  CHECK(of_reshape(s, keep(a, slice), dims, 4, &heads));
  CHECK(of_transpose(s, keep(a, heads), 1, 2, &moved));
  return keep(a, moved);
}

/* tokens (batch, seq) int64 and positions (seq) int64 -> logits (batch, seq, vocab). `seq` is the
 * named symbol in a graph build, a concrete size eagerly. */
static of_tensor_t* forward(of_session_t* s, arena_t* a, const model_t* m, of_tensor_t* tokens,
                            of_tensor_t* positions, int64_t batch, int64_t seq) {
  of_tensor_t *tok = NULL, *pos = NULL;
  CHECK(of_embedding(s, m->tok_emb, tokens, -1, &tok));
  CHECK(of_embedding(s, m->pos_emb, positions, -1, &pos));
  of_tensor_t* x = add(s, a, keep(a, tok), keep(a, pos));
  of_attention_options_t ao;
  of_attention_options_init(&ao);
  ao.is_causal = 1;
  for (int64_t l = 0; l < m->layers; ++l) {
    const block_t* b = &m->blocks[l];
    of_tensor_t* qkv = linear(s, a, layer_norm(s, a, x, b->ln1_w, b->ln1_b, m->width), b->qkv_w, b->qkv_b);
    of_tensor_t* q = split_heads(s, a, m, qkv, 0, batch, seq);
    of_tensor_t* k = split_heads(s, a, m, qkv, 1, batch, seq);
    of_tensor_t* v = split_heads(s, a, m, qkv, 2, batch, seq);
    of_tensor_t *att = NULL, *merged = NULL, *flat = NULL;
    CHECK(of_scaled_dot_product_attention(s, q, k, v, NULL, &ao, &att));
    CHECK(of_transpose(s, keep(a, att), 1, 2, &merged));
    const int64_t dims[3] = {batch, seq, m->width};
    CHECK(of_reshape(s, keep(a, merged), dims, 3, &flat));
    x = add(s, a, x, linear(s, a, keep(a, flat), b->proj_w, b->proj_b));
    of_tensor_t *act = NULL;
    of_tensor_t* hidden = linear(s, a, layer_norm(s, a, x, b->ln2_w, b->ln2_b, m->width), b->fc1_w, b->fc1_b);
    CHECK(of_gelu(s, hidden, 0, &act));
    x = add(s, a, x, linear(s, a, keep(a, act), b->fc2_w, b->fc2_b));
  }
  /* Weight tying: the output layer is the token embedding, transposed (linear takes (out, in)). */
  return linear(s, a, layer_norm(s, a, x, m->lnf_w, m->lnf_b, m->width), m->tok_emb, NULL);
}

/* Mean next-token cross-entropy of logits (batch, seq, vocab) against targets (batch, seq). */
static of_tensor_t* lm_loss(of_session_t* s, arena_t* a, const model_t* m, of_tensor_t* logits, of_tensor_t* targets) {
  of_tensor_t *rows = NULL, *flat_targets = NULL, *loss = NULL;
  const int64_t rdims[2] = {-1, m->vocab}, tdims[1] = {-1};
  CHECK(of_reshape(s, logits, rdims, 2, &rows));
  CHECK(of_reshape(s, targets, tdims, 1, &flat_targets));
  CHECK(of_cross_entropy(s, keep(a, rows), keep(a, flat_targets), NULL, &loss));
  return keep(a, loss);
}

/* ---- graphs ---------------------------------------------------------------------------------- */

static void add_parameters(of_graph_t* g, const model_t* m) {
  for (size_t i = 0; i < m->count; ++i) CHECK(of_graph_add_parameter(g, m->all[i].tensor, m->all[i].name));
}

/* One training step over (batch, seq) windows: inputs tokens, positions, targets; output the loss. */
static of_graph_t* build_train_graph(of_session_t* s, const model_t* m, of_optimizer_t* opt, int64_t batch,
                                     int64_t seq) {
  arena_t a = {0};
  of_graph_t* g = NULL;
  CHECK(of_graph_create(s, "char_lm_train", NULL, &g));
  CHECK(of_graph_begin_build(g));
  add_parameters(g, m);
  of_tensor_t *tokens = NULL, *positions = NULL, *targets = NULL;
  const int64_t wdims[2] = {batch, seq}, pdims[1] = {seq};
  CHECK(of_graph_add_input(g, "tokens", of_dtype_int64(), wdims, 2, &tokens));
  CHECK(of_graph_add_input(g, "positions", of_dtype_int64(), pdims, 1, &positions));
  CHECK(of_graph_add_input(g, "targets", of_dtype_int64(), wdims, 2, &targets));
  keep(&a, tokens), keep(&a, positions), keep(&a, targets);
  of_tensor_t* loss = lm_loss(s, &a, m, forward(s, &a, m, tokens, positions, batch, seq), targets);
  CHECK(of_tensor_backward(s, loss, NULL, 0));
  CHECK(of_graph_add_optimizer(g, opt));
  CHECK(of_graph_add_output(g, loss));
  CHECK(of_graph_end_build(g));
  arena_clear(&a);
  free(a.items);
  return g;
}

/* Inference on one prompt (1, seq): output the logits (1, seq, vocab). One plan per prompt length. */
static of_graph_t* build_sample_graph(of_session_t* s, const model_t* m, int64_t seq) {
  int32_t previous = 1;
  CHECK(of_grad_set_enabled(0, &previous));
  arena_t a = {0};
  of_graph_options_t go;
  of_graph_options_init(&go);
  go.plan_cache_size = (int32_t)m->context; /* every prompt length keeps its plan */
  of_graph_t* g = NULL;
  CHECK(of_graph_create(s, "char_lm_sample", &go, &g));
  CHECK(of_graph_begin_build(g));
  add_parameters(g, m);
  of_tensor_t *tokens = NULL, *positions = NULL;
  const int64_t wdims[2] = {1, seq}, pdims[1] = {seq};
  CHECK(of_graph_add_input(g, "tokens", of_dtype_int64(), wdims, 2, &tokens));
  CHECK(of_graph_add_input(g, "positions", of_dtype_int64(), pdims, 1, &positions));
  keep(&a, tokens), keep(&a, positions);
  CHECK(of_graph_add_output(g, forward(s, &a, m, tokens, positions, 1, seq)));
  CHECK(of_graph_end_build(g));
  arena_clear(&a);
  free(a.items);
  CHECK(of_grad_set_enabled(previous, NULL));
  return g;
}

/* ---- batches --------------------------------------------------------------------------------- */

/* A 64-bit LCG (the same as the PyTorch twin's), so windows and samples depend only on the seed. */
static uint64_t next_random(uint64_t* state) {
  *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
  return *state >> 33;
}

/* `batch` windows at random offsets: tokens[b, t] = text[o + t], targets[b, t] = text[o + t + 1]. */
static void make_batch(of_session_t* s, const corpus_t* c, int64_t batch, int64_t seq, uint64_t* rng, int64_t* tbuf,
                       int64_t* ybuf, of_tensor_t** tokens, of_tensor_t** targets) {
  const uint64_t span = (uint64_t)(c->length - (size_t)seq - 1);
  for (int64_t b = 0; b < batch; ++b) {
    const size_t o = (size_t)(next_random(rng) % span);
    for (int64_t t = 0; t < seq; ++t) {
      tbuf[b * seq + t] = c->token[c->text[o + (size_t)t]];
      ybuf[b * seq + t] = c->token[c->text[o + (size_t)t + 1]];
    }
  }
  const int64_t dims[2] = {batch, seq};
  const size_t nbytes = (size_t)(batch * seq) * sizeof(int64_t);
  CHECK(of_tensor_from_data(s, of_dtype_int64(), dims, 2, tbuf, nbytes, NULL, tokens));
  CHECK(of_tensor_from_data(s, of_dtype_int64(), dims, 2, ybuf, nbytes, NULL, targets));
}

static of_tensor_t* positions_of(of_session_t* s, int64_t seq) {
  of_tensor_t* p = NULL;
  CHECK(of_tensor_arange(s, 0, (double)seq, 1, of_dtype_int64(), NULL, &p));
  return p;
}

/* ---- sampling -------------------------------------------------------------------------------- */

/* Continues `prompt` by `n` characters at temperature 0.8, printing them. */
static void sample(of_session_t* s, const model_t* m, of_graph_t* g, const corpus_t* c, const char* prompt, int n,
                   uint64_t* rng) {
  const int64_t ctx = m->context;
  int64_t* history = xmalloc((strlen(prompt) + (size_t)n) * sizeof(int64_t));
  size_t len = 0;
  for (const char* p = prompt; *p; ++p) {
    const int64_t t = c->token[(uint8_t)*p];
    if (t >= 0) history[len++] = t;
  }
  if (len == 0) history[len++] = c->token[c->text[0]];
  printf("  > %s", prompt);
  float* probs = xmalloc((size_t)m->vocab * sizeof(float));
  for (int i = 0; i < n; ++i) {
    const int64_t seq = (int64_t)len < ctx ? (int64_t)len : ctx;
    of_tensor_t *tokens = NULL, *logits = NULL;
    of_tensor_t* positions = positions_of(s, seq);
    const int64_t dims[2] = {1, seq};
    CHECK(of_tensor_from_data(s, of_dtype_int64(), dims, 2, history + len - (size_t)seq,
                              (size_t)seq * sizeof(int64_t), NULL, &tokens));
    const of_tensor_t* inputs[2] = {tokens, positions};
    CHECK(of_graph_run(g, inputs, 2, &logits, 1));
    float* all = xmalloc((size_t)(seq * m->vocab) * sizeof(float));
    CHECK(of_tensor_copy_to_host(logits, all, (size_t)(seq * m->vocab) * sizeof(float)));
    const float* last = all + (seq - 1) * m->vocab;
    float top = last[0];
    for (int64_t v = 1; v < m->vocab; ++v) top = last[v] > top ? last[v] : top;
    double total = 0;
    for (int64_t v = 0; v < m->vocab; ++v) total += probs[v] = expf((last[v] - top) / 0.8f);
    double r = (double)next_random(rng) / (double)(1ULL << 31) * total;
    int64_t pick = m->vocab - 1;
    for (int64_t v = 0; v < m->vocab; ++v) {
      if ((r -= probs[v]) <= 0) {
        pick = v;
        break;
      }
    }
    history[len++] = pick;
    const uint8_t ch = c->byte[pick];
    putchar(ch == '\n' ? '\n' : ch);
    if (ch == '\n') printf("    ");
    free(all);
    of_tensor_release(tokens);
    of_tensor_release(positions);
    of_tensor_release(logits);
  }
  printf("\n");
  free(probs);
  free(history);
}

/* ---- progress -------------------------------------------------------------------------------- */

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void progress(int epoch, int epochs, size_t done, size_t total, double tokens_per_s, double loss,
                     double eta, int tty) {
  const int width = 30, filled = (int)((double)width * (double)done / (double)total);
  char bar[64];
  for (int i = 0; i < width; ++i) bar[i] = i < filled ? '#' : (i == filled ? '>' : '.');
  bar[width] = '\0';
  fprintf(stderr, "%sepoch %d/%d [%s] %5zu/%zu steps  %7.0f tok/s  loss %.4f  ETA %3.0fs%s", tty ? "\r" : "", epoch,
          epochs, bar, done, total, tokens_per_s, loss, eta, tty ? "" : "\n");
  fflush(stderr);
}

/* ---- main ------------------------------------------------------------------------------------ */

typedef struct {
  int epochs, steps, batch, context, width, layers, heads, threads, sample_chars, log_every;
  double lr;
  unsigned long long seed;
  const char* corpus[16];
  int ncorpus;
  const char* out_path;
  const char* init_path;
} options_t;

static void usage(const char* prog) {
  fprintf(stderr,
          "usage: %s [--epochs N] [--steps N] [--batch-size N] [--context N] [--width N] [--layers N]\n"
          "          [--heads N] [--lr X] [--threads N] [--seed N] [--corpus PATH]... [--out FILE]\n"
          "          [--save-init FILE] [--sample N] [--log-every N]\n"
          "defaults: 3 epochs (an epoch: as many windows as the corpus has characters / context), batch 32,\n"
          "context 64, width 128, 2 layers, 4 heads, AdamW lr 2e-3 (weight decay 0.01), corpus\n"
          "/usr/share/common-licenses, weights saved to char_lm.safetensors, 160 sampled characters per prompt;\n"
          "--steps N stops after N steps in all (a short run); --log-every N prints the loss every N steps\n",
          prog);
}

static int parse_options(int argc, char** argv, options_t* o) {
  *o = (options_t){.epochs = 3, .batch = 32, .context = 64, .width = 128, .layers = 2, .heads = 4, .lr = 2e-3,
                   .seed = 42, .sample_chars = 160, .out_path = "char_lm.safetensors"};
  for (int i = 1; i < argc; ++i) {
    const char* arg = argv[i];
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) return -1;
    const char* val = i + 1 < argc ? argv[i + 1] : NULL;
    if (val == NULL) {
      fprintf(stderr, "%s needs a value\n", arg);
      return -1;
    }
    ++i;
    if (strcmp(arg, "--epochs") == 0) o->epochs = atoi(val);
    else if (strcmp(arg, "--steps") == 0) o->steps = atoi(val);
    else if (strcmp(arg, "--batch-size") == 0) o->batch = atoi(val);
    else if (strcmp(arg, "--context") == 0) o->context = atoi(val);
    else if (strcmp(arg, "--width") == 0) o->width = atoi(val);
    else if (strcmp(arg, "--layers") == 0) o->layers = atoi(val);
    else if (strcmp(arg, "--heads") == 0) o->heads = atoi(val);
    else if (strcmp(arg, "--lr") == 0) o->lr = atof(val);
    else if (strcmp(arg, "--threads") == 0) o->threads = atoi(val);
    else if (strcmp(arg, "--seed") == 0) o->seed = strtoull(val, NULL, 10);
    else if (strcmp(arg, "--sample") == 0) o->sample_chars = atoi(val);
    else if (strcmp(arg, "--log-every") == 0) o->log_every = atoi(val);
    else if (strcmp(arg, "--out") == 0) o->out_path = val;
    else if (strcmp(arg, "--save-init") == 0) o->init_path = val;
    else if (strcmp(arg, "--corpus") == 0 && o->ncorpus < 16) o->corpus[o->ncorpus++] = val;
    else {
      fprintf(stderr, "unknown option %s\n", arg);
      return -1;
    }
  }
  if (o->epochs < 1 || o->steps < 0 || o->batch < 1 || o->context < 2 || o->width < 1 || o->layers < 1 ||
      o->layers > 16 || o->heads < 1 || o->width % o->heads != 0 || o->threads < 0 || !(o->lr > 0) ||
      o->sample_chars < 0 || o->log_every < 0) {
    fprintf(stderr, "epochs, batch, layers (<= 16), heads >= 1, context >= 2, width a multiple of heads, lr > 0\n");
    return -1;
  }
  return 0;
}

int main(int argc, char** argv) {
  options_t opt;
  if (parse_options(argc, argv, &opt) != 0) {
    usage(argv[0]);
    return 2;
  }
  corpus_t corpus = {0};
  if (opt.ncorpus == 0) append_directory(&corpus, "/usr/share/common-licenses");
  for (int i = 0; i < opt.ncorpus; ++i) {
    struct stat st;
    if (stat(opt.corpus[i], &st) == 0 && S_ISDIR(st.st_mode)) append_directory(&corpus, opt.corpus[i]);
    else append_file(&corpus, opt.corpus[i]);
  }
  if (corpus.length < (size_t)opt.context + 2) {
    fprintf(stderr, "the corpus has %zu characters; it needs more than the context (%d)\n", corpus.length, opt.context);
    return 1;
  }
  corpus_index(&corpus);

  of_session_options_t so;
  of_session_options_init(&so);
  so.seed = opt.seed;
  so.num_threads = opt.threads;
  of_session_t* s = NULL;
  CHECK(of_session_create(&so, &s));
  int64_t seq = 0;
  CHECK(of_session_dim_symbol(s, "seq", &seq));

  model_t model;
  model_init(s, &model, corpus.vocab, opt.context, opt.width, opt.heads, opt.layers);
  if (opt.init_path != NULL) model_save(&model, opt.init_path);
  of_tensor_t* params[256];
  size_t nparams = 0, nvalues = 0;
  for (size_t i = 0; i < model.count; ++i) {
    params[nparams++] = model.all[i].tensor;
    int64_t numel = 0;
    CHECK(of_tensor_numel(model.all[i].tensor, &numel));
    nvalues += (size_t)numel;
  }
  of_adam_options_t adam;
  of_adam_options_init(&adam);
  adam.lr = opt.lr;
  adam.weight_decay = 0.01;
  adam.decoupled_weight_decay = 1;
  of_optimizer_t* optimizer = NULL;
  CHECK(of_optimizer_adam_create(s, params, nparams, &adam, &optimizer));

  const size_t steps_per_epoch =
      (corpus.length / (size_t)opt.context + (size_t)opt.batch - 1) / (size_t)opt.batch;
  size_t total_steps = steps_per_epoch * (size_t)opt.epochs;
  if (opt.steps > 0 && (size_t)opt.steps < total_steps) total_steps = (size_t)opt.steps;
  printf("corpus: %zu characters, %lld distinct; transformer: %d layers, width %d, %d heads, context %d, "
         "%.2fM parameters\n",
         corpus.length, (long long)corpus.vocab, opt.layers, opt.width, opt.heads, opt.context,
         (double)nvalues / 1e6);
  printf("%d epochs of %zu steps (batch %d), AdamW lr %.3g (weight decay 0.01), %zu steps in all\n", opt.epochs,
         steps_per_epoch, opt.batch, opt.lr, total_steps);

  const double t0 = now_seconds();
  of_graph_t* train_graph = build_train_graph(s, &model, optimizer, opt.batch, seq);
  of_graph_t* sample_graph = build_sample_graph(s, &model, seq);
  printf("lazy graphs: training step and sampling traced in %.0f ms with sequence length `seq`\n",
         1e3 * (now_seconds() - t0));
  fflush(stdout);

  int64_t* tbuf = xmalloc((size_t)(opt.batch * opt.context) * sizeof(int64_t));
  int64_t* ybuf = xmalloc((size_t)(opt.batch * opt.context) * sizeof(int64_t));
  of_tensor_t* positions = positions_of(s, opt.context);
  uint64_t rng = opt.seed;
  const int tty = isatty(fileno(stderr));
  const double run_started = now_seconds();
  size_t step = 0;
  double last_loss = 0, first_step_seconds = 0;
  for (int epoch = 1; epoch <= opt.epochs && step < total_steps; ++epoch) {
    const double started = now_seconds();
    double loss_sum = 0;
    size_t done = 0;
    for (; done < steps_per_epoch && step < total_steps; ++done, ++step) {
      of_tensor_t *tokens = NULL, *targets = NULL, *loss = NULL;
      make_batch(s, &corpus, opt.batch, opt.context, &rng, tbuf, ybuf, &tokens, &targets);
      const of_tensor_t* inputs[3] = {tokens, positions, targets};
      const double step_started = now_seconds();
      CHECK(of_graph_run(train_graph, inputs, 3, &loss, 1));
      float value = 0;
      CHECK(of_tensor_copy_to_host(loss, &value, sizeof value));
      if (step == 0) first_step_seconds = now_seconds() - step_started; /* compiles the plan */
      of_tensor_release(tokens);
      of_tensor_release(targets);
      of_tensor_release(loss);
      loss_sum += value;
      last_loss = value;
      if (opt.log_every > 0 && (step + 1) % (size_t)opt.log_every == 0) {
        printf("step %zu loss %.6f\n", step + 1, (double)value);
        fflush(stdout);
      }
      const double elapsed = now_seconds() - started;
      const double rate = (double)((done + 1) * (size_t)(opt.batch * opt.context)) / elapsed;
      const size_t left = (steps_per_epoch - done - 1 < total_steps - step - 1) ? steps_per_epoch - done - 1
                                                                                : total_steps - step - 1;
      if (tty ? (done % 5 == 0 || left == 0) : (left == 0 || done % 100 == 0)) {
        progress(epoch, opt.epochs, done + 1, steps_per_epoch, rate, loss_sum / (double)(done + 1),
                 elapsed / (double)(done + 1) * (double)left, tty);
      }
    }
    if (tty) fprintf(stderr, "\n");
    const double seconds = now_seconds() - started;
    printf("epoch %d/%d: mean loss %.4f over %zu steps, %.1f s, %.0f tokens/s\n", epoch, opt.epochs,
           loss_sum / (double)done, done, seconds, (double)(done * (size_t)(opt.batch * opt.context)) / seconds);
    fflush(stdout);
  }
  const double train_seconds = now_seconds() - run_started;
  printf("training: %zu steps in %.1f s, %.0f tokens/s after the first step (which compiled the graph: %.2f s), "
         "final loss %.4f\n",
         step, train_seconds,
         step > 1 ? (double)((step - 1) * (size_t)(opt.batch * opt.context)) / (train_seconds - first_step_seconds) : 0.0,
         first_step_seconds, last_loss);

  printf("samples (temperature 0.8):\n");
  const char* prompts[3] = {"This License", "The ", "you may "};
  const double s0 = now_seconds();
  for (int i = 0; i < 3; ++i) sample(s, &model, sample_graph, &corpus, prompts[i], opt.sample_chars, &rng);
  printf("sampling: %d characters in %.1f s through one graph (one plan per prompt length up to %d)\n",
         3 * opt.sample_chars, now_seconds() - s0, opt.context);

  model_save(&model, opt.out_path);
  printf("weights saved to %s (%zu tensors, safetensors)\n", opt.out_path, model.count);

  of_tensor_release(positions);
  of_graph_destroy(train_graph);
  of_graph_destroy(sample_graph);
  of_optimizer_destroy(optimizer);
  model_free(&model);
  of_session_destroy(s);
  free(tbuf);
  free(ybuf);
  free(corpus.text);
  return 0;
}
