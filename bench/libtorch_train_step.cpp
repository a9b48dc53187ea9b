// Times the CPU training steps of bench/cpu_train_step.c with libtorch, PyTorch's C++ API (Debian's
// libtorch-dev 1.13): forward, cross-entropy, backward and SGD (lr 0.01, momentum 0.9), median after
// warm-up, the same way as the other two sides. The MLP 64-128-10 is built with torch::nn; the ResNets
// are torchvision's, loaded from the TorchScript files bench/export_torchscript.py writes (torchvision's
// models are not part of the C++ API) and trained in C++ (module.train(), its parameters to
// torch::optim::SGD). No Python runs while timing: this is PyTorch without the interpreter's per-op cost.
//
//   libtorch_train_step [--model all|LIST] [--batch N] [--threads N] [--torchscript-dir DIR]
//                       [--format nchw|channels_last] [--warmup N] [--iters N]
//
// LIST is comma-separated (mlp, resnet18, resnet50); the batches default to cpu_train_step's. The ResNets
// need --torchscript-dir. --format channels_last converts the ResNets' 4-d parameters and the input to
// channels_last, as .to(memory_format=torch.channels_last) does in Python. Prints one line per model and
// batch, in the format of the other two: "model=... impl=libtorch mode=eager format=... batch=...
// threads=... warmup=... iters=... median_ms=... min_ms=... max_rss_mb=...".
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <torch/script.h>
#include <torch/torch.h>

namespace {

struct Options {
  std::string models = "all", torchscript_dir, format = "nchw";
  int64_t batch = 0;
  int threads = 0, warmup = -1, iters = -1;
};

// (warmup, iters) when not given: the rule of cpu_train_step.c and pytorch_train_step.py.
void default_steps(const std::string& name, int64_t batch, int* warmup, int* iters) {
  if (name == "mlp") {
    *warmup = 200, *iters = 2000;
    return;
  }
  const double images = static_cast<double>(batch) * (name == "resnet50" ? 1.0 : 0.1);
  *warmup = images <= 1 ? 3 : images <= 4 ? 2 : 1;
  *iters = images <= 1 ? 7 : images <= 4 ? 5 : 3;
}

double max_rss_mb() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);  // KiB on Linux
  return static_cast<double>(ru.ru_maxrss) / 1024.0;
}

// Times `step` and prints the line; `step` runs one forward, backward and update.
template <typename Step>
void time_steps(const std::string& name, const Options& o, const std::string& format, int64_t batch, Step step) {
  int warmup = 0, iters = 0;
  default_steps(name, batch, &warmup, &iters);
  if (o.warmup >= 0) warmup = o.warmup;
  if (o.iters > 0) iters = o.iters;
  std::vector<double> times;
  for (int i = 0; i < warmup + iters; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    step();
    const std::chrono::duration<double, std::milli> dt = std::chrono::steady_clock::now() - t0;
    if (i >= warmup) times.push_back(dt.count());
  }
  std::sort(times.begin(), times.end());
  std::printf(
      "model=%s impl=libtorch mode=eager format=%s batch=%lld threads=%d warmup=%d iters=%d median_ms=%.4f "
      "min_ms=%.4f max_rss_mb=%.1f\n",
      name.c_str(), format.c_str(), static_cast<long long>(batch), o.threads, warmup, iters, times[times.size() / 2],
      times[0], max_rss_mb());
  std::fflush(stdout);
}

void bench_mlp(const Options& o, int64_t batch) {
  torch::manual_seed(0);
  torch::nn::Sequential model(torch::nn::Linear(64, 128), torch::nn::ReLU(), torch::nn::Linear(128, 10));
  model->train();
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
  const torch::Tensor x = torch::randn({batch, 64});
  const torch::Tensor target = torch::randint(0, 10, {batch});
  time_steps("mlp", o, "nchw", batch, [&] {
    torch::Tensor loss = torch::nn::functional::cross_entropy(model->forward(x), target);
    opt.zero_grad();
    loss.backward();
    opt.step();
  });
}

void bench_resnet(const Options& o, const std::string& name, int64_t batch) {
  torch::manual_seed(0);
  torch::jit::Module model = torch::jit::load(o.torchscript_dir + "/" + name + ".pt");
  model.train();
  const int64_t side = name == "resnet50" ? 224 : 64;
  torch::Tensor x = torch::randn({batch, 3, side, side});
  std::vector<torch::Tensor> params;
  for (const torch::Tensor& p : model.parameters()) params.push_back(p);
  if (o.format == "channels_last") {
    torch::NoGradGuard no_grad;
    for (torch::Tensor& p : params) {
      if (p.dim() == 4) p.set_data(p.contiguous(at::MemoryFormat::ChannelsLast));
    }
    x = x.contiguous(at::MemoryFormat::ChannelsLast);
  }
  torch::optim::SGD opt(params, torch::optim::SGDOptions(0.01).momentum(0.9));
  const torch::Tensor target = torch::randint(0, 1000, {batch});
  const std::vector<torch::jit::IValue> inputs{x};
  time_steps(name, o, o.format, batch, [&] {
    torch::Tensor loss = torch::nn::functional::cross_entropy(model.forward(inputs).toTensor(), target);
    opt.zero_grad();
    loss.backward();
    opt.step();
  });
}

int usage(const char* prog) {
  std::fprintf(stderr,
               "usage: %s [--model all|LIST] [--batch N] [--threads N] [--torchscript-dir DIR] "
               "[--format nchw|channels_last] [--warmup N] [--iters N]\n",
               prog);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; i += 2) {
    if (i + 1 >= argc) return usage(argv[0]);
    const std::string arg = argv[i], val = argv[i + 1];
    if (arg == "--model") o.models = val;
    else if (arg == "--batch") o.batch = std::atoll(val.c_str());
    else if (arg == "--threads") o.threads = std::atoi(val.c_str());
    else if (arg == "--torchscript-dir") o.torchscript_dir = val;
    else if (arg == "--format") o.format = val;
    else if (arg == "--warmup") o.warmup = std::atoi(val.c_str());
    else if (arg == "--iters") o.iters = std::atoi(val.c_str());
    else return usage(argv[0]);
  }
  if (o.format != "nchw" && o.format != "channels_last") return usage(argv[0]);
  if (o.threads <= 0) o.threads = static_cast<int>(std::thread::hardware_concurrency());
  torch::set_num_threads(o.threads);

  std::vector<std::string> names;
  if (o.models == "all") {
    names = {"mlp", "resnet18", "resnet50"};
  } else {
    std::stringstream list(o.models);
    for (std::string name; std::getline(list, name, ',');) names.push_back(name);
  }
  for (const std::string& name : names) {
    if (name == "mlp") {
      bench_mlp(o, o.batch > 0 ? o.batch : 32);
    } else if (name == "resnet18" || name == "resnet50") {
      if (o.torchscript_dir.empty()) {
        std::fprintf(stderr, "%s needs --torchscript-dir DIR (bench/export_torchscript.py DIR writes it)\n",
                     name.c_str());
        return 2;
      }
      const std::vector<int64_t> batches =
          o.batch > 0 ? std::vector<int64_t>{o.batch} : name == "resnet50" ? std::vector<int64_t>{1, 4, 16}
                                                                           : std::vector<int64_t>{8};
      for (int64_t batch : batches) bench_resnet(o, name, batch);
    } else {
      std::fprintf(stderr, "unknown model %s\n", name.c_str());
      return usage(argv[0]);
    }
  }
  return 0;
}
