// fuzz_safetensors: the input is a file (the corpus holds plain .safetensors files). It is written to
// a memfd and read through the C ABI: of_safetensors_load, then of_safetensors_load_into into a
// subset of pre-made tensors of several dtypes, shapes and layouts (contiguous, transposed, narrowed,
// expanded, 0-d, 0-size), strict or not; loaded files are saved again and reloaded (round trip).
// The choices that are not file bytes (which targets, strict, misuse) come from a hash of the input,
// so that every corpus file stays a plain safetensors file.
//
// A finding is: a crash or sanitizer report, a hang, an OF_STATUS_INTERNAL status, a failed load that
// wrote its out parameter or failed with a code the header does not give for a bad file (DATA_LOSS,
// INVALID_ARGUMENT for a dtype this library lacks, RESOURCE_EXHAUSTED for a tensor too large), a
// loaded tensor that does not answer its queries or cannot be copied out (also after the list is
// freed), a failed load_into that modified a target, a successful one whose targets do not hold the
// file's values (or that touched a target not in the file), a strict load_into that accepts a file
// that of_safetensors_load finds malformed, and a save/load round trip that changes names, dtypes, shapes
// or bytes.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <map>

#include "fuzz_common.h"

namespace {

using namespace fz;

// The file under test: one memfd for the process, read through /proc/self/fd/N.
const std::string& InputPath(const uint8_t* data, size_t size) {
  static int fd = -1;
  static std::string path;
  if (fd < 0) {
    fd = memfd_create("fuzz_safetensors", 0);
    FZ_ASSERT(fd >= 0, "memfd_create");
    path = "/proc/self/fd/" + std::to_string(fd);
  }
  FZ_ASSERT(ftruncate(fd, 0) == 0, "ftruncate");
  size_t done = 0;
  while (done < size) {
    const ssize_t n = pwrite(fd, data + done, size - done, static_cast<off_t>(done));
    FZ_ASSERT(n > 0, "pwrite");
    done += static_cast<size_t>(n);
  }
  return path;
}

// Where the round trip saves (of_safetensors_save renames a temporary file, so a real directory).
const std::string& SavePath() {
  static const std::string path = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string dir = std::string(tmp != nullptr && tmp[0] != '\0' ? tmp : "/tmp") + "/fuzz_safetensors.XXXXXX";
    FZ_ASSERT(mkdtemp(dir.data()) != nullptr, "mkdtemp");
    return dir + "/roundtrip.safetensors";
  }();
  return path;
}

struct Loaded {
  std::string name;
  of_tensor_t* tensor;
};

// Loads `path`; returns the status code. On success `out` holds the named tensors (references).
of_status_code_t Load(of_session_t* s, const char* path, std::vector<Loaded>* out) {
  of_tensor_list_t* const sentinel = reinterpret_cast<of_tensor_list_t*>(TensorSentinel());
  of_tensor_list_t* list = sentinel;
  const of_status_code_t code = FZ_CHECK(of_safetensors_load(s, path, &list));
  if (code != OF_STATUS_OK) {
    FZ_ASSERT(list == sentinel, "a failed of_safetensors_load wrote its out parameter");
    return code;
  }
  FZ_ASSERT(list != sentinel && list != nullptr, "of_safetensors_load succeeded without a list");
  const size_t n = of_tensor_list_count(list);
  for (size_t i = 0; i < n; ++i) {
    const char* name = nullptr;
    FZ_MUST(of_tensor_list_name(list, i, &name));
    FZ_ASSERT(name != nullptr, "a NULL tensor name");
    of_tensor_t* t = nullptr;
    FZ_MUST(of_tensor_list_get(list, i, &t));
    out->push_back({name, t});
  }
  const char* name = "untouched";
  FZ_ASSERT(FZ_CHECK(of_tensor_list_name(list, n, &name)) == OF_STATUS_OUT_OF_RANGE && std::strcmp(name, "untouched") == 0,
            "of_tensor_list_name past the end");
  of_tensor_t* t = TensorSentinel();
  FZ_ASSERT(FZ_CHECK(of_tensor_list_get(list, n, &t)) == OF_STATUS_OUT_OF_RANGE && t == TensorSentinel(),
            "of_tensor_list_get past the end");
  of_tensor_list_destroy(list);  // the tensors outlive the list
  std::map<std::string, int> seen;
  for (const Loaded& l : *out) {
    FZ_ASSERT(++seen[l.name] == 1, "a loaded file has two tensors of one name");
    Inspect(l.tensor);
  }
  return OF_STATUS_OK;
}

void Release(std::vector<Loaded>& list) {
  for (Loaded& l : list) of_tensor_release(l.tensor);
  list.clear();
}

// The targets of load_into: each a name and a tensor of some dtype, shape and layout.
struct Target {
  const char* name;
  of_tensor_t* tensor;
};

std::vector<Target> MakeTargets(of_session_t* s) {
  std::vector<Target> targets;
  auto zeros = [&](const of_dtype_t* dtype, std::vector<int64_t> dims) {
    of_tensor_t* t = nullptr;
    FZ_MUST(of_tensor_zeros(s, dtype, dims.data(), dims.size(), nullptr, &t));
    return t;
  };
  auto view = [&](of_tensor_t* base, of_status_t* st, of_tensor_t* v) {
    FZ_MUST(st);
    of_tensor_release(base);
    return v;
  };
  targets.push_back({"a", zeros(of_dtype_float32(), {2, 3})});
  {
    of_tensor_t* base = zeros(of_dtype_float64(), {2, 3});
    of_tensor_t* v = nullptr;
    of_status_t* st = of_transpose(s, base, 0, 1, &v);
    targets.push_back({"b", view(base, st, v)});  // (3, 2), transposed
  }
  targets.push_back({"c", zeros(of_dtype_int64(), {4})});
  targets.push_back({"d", zeros(of_dtype_bfloat16(), {2, 2})});
  targets.push_back({"e", zeros(of_dtype_uint8(), {})});
  targets.push_back({"f", zeros(of_dtype_float16(), {0, 3})});
  targets.push_back({"g", zeros(of_dtype_bool(), {3})});
  {
    of_tensor_t* base = zeros(of_dtype_int16(), {4});
    of_tensor_t* v = nullptr;
    of_status_t* st = of_narrow(s, base, 0, 1, 2, &v);
    targets.push_back({"h", view(base, st, v)});  // (2), offset 1
  }
  {
    of_tensor_t* base = zeros(of_dtype_float32(), {1, 3});
    of_tensor_t* v = nullptr;
    const int64_t dims[2] = {2, 3};
    of_status_t* st = of_expand(s, base, dims, 2, &v);
    targets.push_back({"i", view(base, st, v)});  // (2, 3), stride 0 in dim 0
  }
  targets.push_back({"x", zeros(of_dtype_int8(), {2, 2})});
  targets.push_back({"y", zeros(of_dtype_int32(), {1})});
  return targets;
}

uint64_t HashBytes(const uint8_t* data, size_t size) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < size; ++i) h = (h ^ data[i]) * 1099511628211ull;
  return h;
}

bool Allowed(of_status_code_t code) {
  return code == OF_STATUS_DATA_LOSS || code == OF_STATUS_INVALID_ARGUMENT || code == OF_STATUS_RESOURCE_EXHAUSTED;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  uint64_t control = HashBytes(data, size);
  auto bits = [&](int n) {
    const uint64_t v = control & ((uint64_t{1} << n) - 1);
    control >>= n;
    return v;
  };
  of_session_t* s = NewSession(7);
  const std::string& path = InputPath(data, size);

  // 1. load everything
  std::vector<Loaded> loaded;
  const of_status_code_t load_code = Load(s, path.c_str(), &loaded);
  if (load_code != OF_STATUS_OK && !Allowed(load_code)) {
    Finding(std::string("of_safetensors_load of a bad file gave ") + of_status_code_name(load_code));
  }

  // 2. save what was loaded and load it again: the same names, dtypes, shapes and bytes
  if (load_code == OF_STATUS_OK && bits(1) == 0) {
    std::vector<const char*> names;
    std::vector<const of_tensor_t*> tensors;
    for (const Loaded& l : loaded) {
      names.push_back(l.name.c_str());
      tensors.push_back(l.tensor);
    }
    const char* save = SavePath().c_str();
    if (FZ_CHECK(of_safetensors_save(save, names.data(), tensors.data(), names.size())) == OF_STATUS_OK) {
      std::vector<Loaded> again;
      FZ_ASSERT(Load(s, save, &again) == OF_STATUS_OK, "a saved file does not load");
      FZ_ASSERT(again.size() == loaded.size(), "the round trip changed the tensor count");
      for (size_t i = 0; i < again.size(); ++i) {
        FZ_ASSERT(again[i].name == loaded[i].name, "the round trip changed a name or the order");
        FZ_ASSERT(DimsOf(again[i].tensor) == DimsOf(loaded[i].tensor), "the round trip changed a shape");
        const of_dtype_t *d1 = nullptr, *d2 = nullptr;
        FZ_MUST(of_tensor_dtype(again[i].tensor, &d1));
        FZ_MUST(of_tensor_dtype(loaded[i].tensor, &d2));
        FZ_ASSERT(d1 == d2, "the round trip changed a dtype");
        int64_t numel = 0;
        FZ_MUST(of_tensor_numel(loaded[i].tensor, &numel));
        if (numel <= kMaxNumel) {
          FZ_ASSERT(HashTensor(again[i].tensor) == HashTensor(loaded[i].tensor), "the round trip changed bytes");
        }
      }
      Release(again);
    }
  }

  // 3. load_into a subset of the targets
  std::vector<Target> targets = MakeTargets(s);
  std::vector<const char*> names;
  std::vector<of_tensor_t*> tensors;
  std::vector<uint64_t> before;
  for (const Target& t : targets) {
    if (bits(2) != 0) continue;  // about a quarter of them each time
    names.push_back(t.name);
    tensors.push_back(t.tensor);
  }
  if (names.empty() && bits(1)) {
    names.push_back(targets[0].name);
    tensors.push_back(targets[0].tensor);
  }
  for (const Target& t : targets) before.push_back(HashTensor(t.tensor));
  const int32_t strict = static_cast<int32_t>(bits(1));
  const of_status_code_t into_code =
      FZ_CHECK(of_safetensors_load_into(path.c_str(), names.data(), tensors.data(), names.size(), strict));
  if (into_code != OF_STATUS_OK) {
    for (size_t i = 0; i < targets.size(); ++i) {
      FZ_ASSERT(HashTensor(targets[i].tensor) == before[i], "a failed of_safetensors_load_into modified a target");
    }
  } else {
    // strict: every tensor of the file was named, so all of it was checked and read (strict 0 reads
    // only the named tensors: a bad tensor it skips is not its concern)
    FZ_ASSERT(load_code != OF_STATUS_DATA_LOSS || !strict,
              "a strict of_safetensors_load_into accepted a file that of_safetensors_load finds malformed");
    for (size_t i = 0; i < targets.size(); ++i) {
      const Loaded* from = nullptr;
      bool named = false;
      for (const char* n : names) named |= std::strcmp(n, targets[i].name) == 0;
      for (const Loaded& l : loaded) {
        if (named && l.name == targets[i].name) from = &l;
      }
      if (from != nullptr) {
        // an expanded target holds its last write in each aliased element; compare the others
        if (std::strcmp(targets[i].name, "i") != 0) {
          FZ_ASSERT(HashTensor(targets[i].tensor) == HashTensor(from->tensor),
                    "of_safetensors_load_into did not write the file's values");
        }
      } else if (load_code == OF_STATUS_OK) {
        FZ_ASSERT(HashTensor(targets[i].tensor) == before[i], "of_safetensors_load_into wrote a target not in the file");
      }
    }
  }

  // 4. misuse, now and then
  switch (bits(4)) {
    case 0: {
      of_tensor_list_t* list = nullptr;
      FZ_ASSERT(FZ_CHECK(of_safetensors_load(nullptr, path.c_str(), &list)) == OF_STATUS_INVALID_ARGUMENT,
                "load with a NULL session");
      FZ_ASSERT(FZ_CHECK(of_safetensors_load(s, nullptr, &list)) == OF_STATUS_INVALID_ARGUMENT, "load with a NULL path");
      break;
    }
    case 1: {
      of_tensor_list_t* list = nullptr;
      FZ_ASSERT(FZ_CHECK(of_safetensors_load(s, "/nonexistent/fuzz.safetensors", &list)) == OF_STATUS_NOT_FOUND,
                "load of a missing file");
      FZ_ASSERT(FZ_CHECK(of_safetensors_load(s, "/proc/self", &list)) != OF_STATUS_OK, "load of a directory");
      break;
    }
    case 2:
      FZ_ASSERT(FZ_CHECK(of_safetensors_load_into(path.c_str(), nullptr, nullptr, 1, 0)) == OF_STATUS_INVALID_ARGUMENT,
                "load_into with NULL arrays");
      break;
    default: break;
  }

  for (Target& t : targets) of_tensor_release(t.tensor);
  Release(loaded);
  of_session_destroy(s);
  return 0;
}
