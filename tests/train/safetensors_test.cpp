// safetensors: round trips of every dtype, files whose bytes are written by hand here (so the format
// is checked independently of the writer), the writer's exact bytes, LoadInto, and every error.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <unistd.h>

#include "tests/ops/op_test_util.h"
#include "core/io/safetensors.h"
#include "core/tensor/factory.h"

namespace oneflow {
namespace {

namespace fs = std::filesystem;
using safetensors::NamedTensors;

std::string LittleEndian64(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[static_cast<size_t>(i)] = static_cast<char>(v >> (8 * i));
  return s;
}

std::string Bytes(const TensorPtr& t) {
  std::string s(t->nbytes(), '\0');
  if (!s.empty()) CopyToHost(*t, s.data(), s.size());
  return s;
}

TensorPtr Filled(Symbol<DType> dtype, const Shape& shape) {
  // Element i holds 1.5 (i % 5 - 2) (integers: 7 (i % 5), bool: i % 2).
  TensorPtr t = Empty(dtype, shape, Device::CPU());
  VisitDType(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (int64_t i = 0; i < t->numel(); ++i) {
      const double v = dtype->is_bool()             ? static_cast<double>(i % 2)
                       : dtype->is_floating_point() ? static_cast<double>(i % 5 - 2) * 1.5
                                                    : static_cast<double>(i % 5 * 7);
      if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
        t->data<T>()[i] = T(static_cast<float>(v));
      } else if constexpr (std::is_same_v<T, bool>) {
        t->data<T>()[i] = v != 0.0;
      } else {
        t->data<T>()[i] = static_cast<T>(v);
      }
    }
  });
  return t;
}

class SafetensorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("of_safetensors_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  std::string Write(const std::string& name, const std::string& bytes) const {
    const std::string path = Path(name);
    std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return path;
  }
  // A file with `header` as its JSON (size N = header.size()) and `data` after it.
  std::string WriteFile(const std::string& header, const std::string& data = "") const {
    return Write("hand.safetensors", LittleEndian64(header.size()) + header + data);
  }
  static std::string Read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  // The files in the test directory (to find leftover temporary files).
  size_t FileCount() const { return static_cast<size_t>(std::distance(fs::directory_iterator(dir_), {})); }

  fs::path dir_;
};

using ::oneflow::test::ExpectError;

TEST_F(SafetensorsTest, RoundTripOfEveryDtypeKeepsOrderNamesAndMetadata) {
  NamedTensors tensors;
  for (DataType code : {DataType::kFloat64, DataType::kBool, DataType::kInt8, DataType::kUInt8, DataType::kInt16,
                        DataType::kInt32, DataType::kInt64, DataType::kFloat16, DataType::kBFloat16,
                        DataType::kFloat32}) {
    const Symbol<DType> dtype = DType::Get(code);
    tensors.emplace_back(std::string("t_") + std::string(dtype->name()), Filled(dtype, Shape{2, 3}));
  }
  tensors.emplace_back("scalar", Filled(DType::Float32(), Shape{}));
  tensors.emplace_back("empty", Filled(DType::Int64(), Shape{0, 4}));
  tensors.emplace_back("caf\xc3\xa9 \"q\"\\n\n", Filled(DType::Int32(), Shape{1, 1, 5}));
  // A strided tensor is saved in row-major order: the transpose of a (3, 2) tensor.
  TensorPtr base = Filled(DType::Float32(), Shape{3, 2});
  tensors.emplace_back("transposed", Tensor::MakeView(*base, Shape{2, 3}, {1, 2}, 0));
  const safetensors::Metadata metadata = {{"format", "pt"}, {"note", "tab\there \xe2\x9c\x93 \"quoted\""}};
  const std::string path = Path("all.safetensors");
  safetensors::Save(path, tensors, metadata);
  EXPECT_EQ(FileCount(), 1u);  // no temporary file left behind

  safetensors::Metadata loaded_metadata;
  const NamedTensors loaded = safetensors::Load(path, Device::CPU(), &loaded_metadata);
  EXPECT_EQ(loaded_metadata, metadata);
  ASSERT_EQ(loaded.size(), tensors.size());
  for (size_t i = 0; i < loaded.size(); ++i) {
    SCOPED_TRACE(tensors[i].first);
    EXPECT_EQ(loaded[i].first, tensors[i].first);
    EXPECT_EQ(loaded[i].second->dtype(), tensors[i].second->dtype());
    EXPECT_EQ(loaded[i].second->shape(), tensors[i].second->shape());
    EXPECT_TRUE(loaded[i].second->is_contiguous());
    if (tensors[i].first != "transposed") {
      EXPECT_EQ(Bytes(loaded[i].second), Bytes(tensors[i].second));
    }
  }
  // transposed[i][j] = base[j][i]
  const float* b = base->data<float>();
  const float* t = loaded.back().second->data<float>();
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 3; ++j) EXPECT_EQ(t[i * 3 + j], b[j * 2 + i]);
  }
  // Saving again replaces the file.
  safetensors::Save(path, {{"only", Filled(DType::UInt8(), Shape{3})}});
  EXPECT_EQ(safetensors::Load(path).size(), 1u);
}

TEST_F(SafetensorsTest, ReadsAHandWrittenFile) {
  // Header order differs from data order; whitespace and escapes as other writers may produce.
  const std::string header =
      "{ \"__metadata__\" : {\"format\": \"pt\", \"k\\u00e9y\": \"\\ud83d\\ude00\"},\n"
      "  \"b\\/2\": {\"dtype\": \"I16\", \"shape\": [3], \"data_offsets\": [8, 14]},\n"
      "  \"a\": {\"shape\": [2, 1], \"dtype\": \"F32\", \"data_offsets\": [0, 8], \"extra\": [1, {}]},\n"
      "  \"flag\": {\"dtype\": \"BOOL\", \"shape\": [], \"data_offsets\": [14, 15]}\n"
      "}    ";
  std::string data;
  data += std::string("\x00\x00\xc0\x3f", 4);  // 1.5f
  data += std::string("\x00\x00\x00\xc0", 4);  // -2.0f
  data += std::string("\x01\x00\xfe\xff\x2c\x01", 6);  // int16 1, -2, 300
  data += std::string("\x01", 1);  // true
  safetensors::Metadata metadata;
  const NamedTensors loaded = safetensors::Load(WriteFile(header, data), Device::CPU(), &metadata);
  ASSERT_EQ(loaded.size(), 3u);
  EXPECT_EQ(loaded[0].first, "a");
  EXPECT_EQ(loaded[0].second->dtype(), DType::Float32());
  EXPECT_EQ(loaded[0].second->shape(), (Shape{2, 1}));
  EXPECT_EQ(loaded[0].second->data<float>()[0], 1.5f);
  EXPECT_EQ(loaded[0].second->data<float>()[1], -2.0f);
  EXPECT_EQ(loaded[1].first, "b/2");
  EXPECT_EQ(loaded[1].second->dtype(), DType::Int16());
  EXPECT_EQ(loaded[1].second->data<int16_t>()[0], 1);
  EXPECT_EQ(loaded[1].second->data<int16_t>()[1], -2);
  EXPECT_EQ(loaded[1].second->data<int16_t>()[2], 300);
  EXPECT_EQ(loaded[2].first, "flag");
  EXPECT_EQ(loaded[2].second->shape(), Shape{});
  EXPECT_TRUE(loaded[2].second->data<bool>()[0]);
  const safetensors::Metadata want = {{"format", "pt"}, {"k\xc3\xa9y", "\xf0\x9f\x98\x80"}};
  EXPECT_EQ(metadata, want);
}

TEST_F(SafetensorsTest, WritesTheFormatByteForByte) {
  TensorPtr x = Empty(DType::Float64(), Shape{1}, Device::CPU());
  x->data<double>()[0] = 0.5;
  TensorPtr y = Empty(DType::BFloat16(), Shape{2, 1}, Device::CPU());
  y->data<bfloat16>()[0] = bfloat16(1.0f);
  y->data<bfloat16>()[1] = bfloat16(-3.0f);
  const std::string path = Path("out.safetensors");
  safetensors::Save(path, {{"x", x}, {"y", y}}, {{"m", "v"}});
  const std::string bytes = Read(path);
  ASSERT_GE(bytes.size(), 8u);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[static_cast<size_t>(i)]);
  EXPECT_EQ(n % 8, 0u);  // the data starts 8-byte aligned
  ASSERT_EQ(bytes.size(), 8 + n + 12);
  std::string json = bytes.substr(8, n);
  const size_t end = json.find_last_not_of(' ');
  EXPECT_EQ(json.substr(0, end + 1),
            "{\"__metadata__\":{\"m\":\"v\"},"
            "\"x\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8]},"
            "\"y\":{\"dtype\":\"BF16\",\"shape\":[2,1],\"data_offsets\":[8,12]}}");
  EXPECT_EQ(bytes.substr(8 + n), std::string("\x00\x00\x00\x00\x00\x00\xe0\x3f\x80\x3f\x40\xc0", 12));
}

TEST_F(SafetensorsTest, LoadIntoCopiesByNameIntoAnyLayout) {
  TensorPtr w = Filled(DType::Float32(), Shape{2, 3});
  TensorPtr b = Filled(DType::Float64(), Shape{3});
  const std::string path = Path("model.safetensors");
  safetensors::Save(path, {{"w", w}, {"b", b}});

  // w's target is the transpose of a (3, 2) tensor; b's is contiguous.
  TensorPtr w_storage = Full(DType::Float32(), Shape{3, 2}, 0.0, Device::CPU());
  TensorPtr w_target = Tensor::MakeView(*w_storage, Shape{2, 3}, {1, 2}, 0);
  TensorPtr b_target = Full(DType::Float64(), Shape{3}, 0.0, Device::CPU());
  safetensors::LoadInto(path, {{"b", b_target}, {"w", w_target}}, true);
  EXPECT_EQ(Bytes(b_target), Bytes(b));
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 3; ++j) EXPECT_EQ(w_storage->data<float>()[j * 2 + i], w->data<float>()[i * 3 + j]);
  }

  // Non-strict: only the names in both are copied.
  TensorPtr b2 = Full(DType::Float64(), Shape{3}, 0.0, Device::CPU());
  TensorPtr other = Full(DType::Float64(), Shape{3}, 7.0, Device::CPU());
  safetensors::LoadInto(path, {{"b", b2}, {"not_in_file", other}}, false);
  EXPECT_EQ(Bytes(b2), Bytes(b));
  EXPECT_EQ(Bytes(other), Bytes(Full(DType::Float64(), Shape{3}, 7.0, Device::CPU())));
}

TEST_F(SafetensorsTest, LoadIntoErrorsChangeNothing) {
  const std::string path = Path("model.safetensors");
  safetensors::Save(path, {{"w", Filled(DType::Float32(), Shape{2, 3})}, {"b", Filled(DType::Float64(), Shape{3})}});
  TensorPtr w = Full(DType::Float32(), Shape{2, 3}, 0.0, Device::CPU());
  TensorPtr b = Full(DType::Float64(), Shape{3}, 0.0, Device::CPU());
  const std::string zeros_w = Bytes(w);
  TensorPtr c = Full(DType::Float64(), Shape{3}, 0.0, Device::CPU());
  ExpectError([&] { safetensors::LoadInto(path, {{"w", w}, {"b", b}, {"c", c}}, true); }, StatusCode::kNotFound,
              {path, "'c'"});
  // One tensor under two names: each copy would overwrite the other.
  ExpectError([&] { safetensors::LoadInto(path, {{"w", w}, {"b", b}, {"c", b}}, false); },
              StatusCode::kInvalidArgument, {"'b'", "'c'", "overlap"});
  ExpectError([&] { safetensors::LoadInto(path, {{"w", w}}, true); }, StatusCode::kInvalidArgument,
              {"'b'", "not among the targets"});
  ExpectError([&] { safetensors::LoadInto(path, {{"w", w}, {"b", Full(DType::Float32(), Shape{3}, 0, Device::CPU())}}, true); },
              StatusCode::kInvalidArgument, {"'b'", "float64", "float32", "(3,)"});
  ExpectError([&] { safetensors::LoadInto(path, {{"w", w}, {"b", Full(DType::Float64(), Shape{1, 3}, 0, Device::CPU())}}, false); },
              StatusCode::kInvalidArgument, {"'b'", "(3,)", "(1, 3)"});
  ExpectError([&] { safetensors::LoadInto(path, {{"w", w}, {"w", b}}, false); }, StatusCode::kInvalidArgument,
              {"'w'", "more than one"});
  ExpectError([&] { safetensors::LoadInto(path, {{"w", nullptr}}, false); }, StatusCode::kInvalidArgument,
              {"'w'", "null"});
  EXPECT_EQ(Bytes(w), zeros_w);  // w came first in each failed call but was not written
}

TEST_F(SafetensorsTest, SaveErrors) {
  TensorPtr t = Filled(DType::Float32(), Shape{2});
  const std::string path = Path("x.safetensors");
  safetensors::Save(path, {{"keep", t}});
  const std::string before = Read(path);
  const auto invalid = StatusCode::kInvalidArgument;
  ExpectError([&] { safetensors::Save(path, {{"a", t}, {"a", t}}); }, invalid, {"'a'", "more than one"});
  ExpectError([&] { safetensors::Save(path, {{"", t}}); }, invalid, {"empty name"});
  ExpectError([&] { safetensors::Save(path, {{std::string("a\0b", 3), t}}); }, invalid, {"NUL character", "'a\\x00b'"});
  ExpectError([&] { safetensors::Save(path, {{"__metadata__", t}}); }, invalid, {"__metadata__", "reserve"});
  ExpectError([&] { safetensors::Save(path, {{"a", nullptr}}); }, invalid, {"'a'", "null"});
  ExpectError([&] { safetensors::Save(path, {{"bad\xff", t}}); }, invalid, {"UTF-8"});
  ExpectError([&] { safetensors::Save(path, {{"a", t}}, {{"k", "1"}, {"k", "2"}}); }, invalid, {"'k'", "more than once"});
  ExpectError([&] { safetensors::Save(path, {{"a", t}}, {{"k", "\xc0\x80"}}); }, invalid, {"UTF-8"});
  ExpectError([&] { safetensors::Save(Path("no/such/dir/x.safetensors"), {{"a", t}}); }, StatusCode::kNotFound,
              {"no/such/dir/x.safetensors"});
  ExpectError([&] { safetensors::Save("", {{"a", t}}); }, invalid, {"path"});
  EXPECT_EQ(Read(path), before);
  EXPECT_EQ(FileCount(), 1u);
}

TEST_F(SafetensorsTest, FileErrors) {
  ExpectError([&] { safetensors::Load(Path("missing.safetensors")); }, StatusCode::kNotFound,
              {"missing.safetensors"});
  ExpectError([&] { safetensors::Load(dir_.string()); }, StatusCode::kInvalidArgument, {"not a regular file"});
  const auto loss = StatusCode::kDataLoss;
  ExpectError([&] { safetensors::Load(Write("short", std::string("\x08\x00\x00", 3))); }, loss, {"short", "truncated", "3 bytes"});
  ExpectError([&] { safetensors::Load(Write("n", LittleEndian64(1000) + "{}")); }, loss,
              {"truncated", "header size is 1000"});
  ExpectError([&] { safetensors::Load(Write("huge", LittleEndian64(~uint64_t{0}) + "{}")); }, loss, {"header size"});
  // Truncated in the data: the offsets reach past the end.
  const std::string f32 = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  ExpectError([&] { safetensors::Load(WriteFile(f32, std::string(5, '\0'))); }, loss,
              {"truncated", "'a'", "8", "5 bytes"});
  ExpectError([&] { safetensors::Load(WriteFile(f32, std::string(9, '\0'))); }, loss, {"9 bytes", "only 8"});
}

TEST_F(SafetensorsTest, HeaderErrors) {
  struct Case {
    std::string header;
    std::string data;
    StatusCode code;
    std::vector<std::string_view> words;
  };
  const auto loss = StatusCode::kDataLoss;
  const std::string eight(8, '\0');
  const std::vector<Case> cases = {
      {"", "", loss, {"not valid JSON", "ended"}},
      {"[]", "", loss, {"must be a JSON object"}},
      {"{\"a\":1,}", "", loss, {"not valid JSON", "string key"}},
      {"{\"a\" 1}", "", loss, {"expected ':'"}},
      {"{\"a\":1.5}", "", loss, {"integers"}},
      {"{\"a\":[01]}", "", loss, {"leading zeros"}},
      {"{\"a\":99999999999999999999}", "", loss, {"range"}},
      {"{\"a\":true}", "", loss, {"unexpected character 't'"}},
      {"{\"a", "", loss, {"unterminated string"}},
      {"{\"a\\q\":1}", "", loss, {"bad escape"}},
      {"{\"\\udc00\":1}", "", loss, {"surrogate"}},
      {"{\"\\ud800x\":1}", "", loss, {"surrogate"}},
      {"{\"\xff\":1}", "", loss, {"UTF-8"}},
      {"{\"\xc0\xaf\":1}", "", loss, {"UTF-8"}},
      {"{\"a\tb\":1}", "", loss, {"control character"}},
      {"{} x", "", loss, {"after the JSON object"}},
      {std::string(100, '[') + std::string(100, ']'), "", loss, {"too deep"}},
      {"{\"a\":1,\"a\":2}", "", loss, {"duplicate key \"a\""}},
      {R"({"a":{"dtype":"U16","shape":[1],"data_offsets":[0,2]}})", std::string(2, '\0'), StatusCode::kInvalidArgument,
       {"'a'", "U16", "not supported"}},
      {R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", "", loss, {"'a'", "shape"}},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", std::string(4, '\0'), loss,
       {"'a'", "needs 8 bytes", "span 4"}},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", "", loss, {"'a'", "data_offsets"}},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8,8]}})", eight, loss, {"'a'", "data_offsets"}},
      {R"({"a":{"shape":[2],"data_offsets":[0,8]}})", eight, loss, {"'a'", "no \"dtype\""}},
      {R"({"a":{"dtype":"F32","data_offsets":[0,8]}})", eight, loss, {"'a'", "no \"shape\""}},
      {R"({"a":{"dtype":7,"shape":[2],"data_offsets":[0,8]}})", eight, loss, {"'a'", "must be a string"}},
      {R"({"a":[1]})", eight, loss, {"'a'", "object"}},
      // A NUL in a name: it would read back as a C string cut short ("a"); the message is not cut.
      {R"({"a\u0000b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", eight, loss,
       {"'a\\x00b'", "NUL character"}},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
       eight, loss, {"'a'", "'b'", "overlap"}},
      {R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", eight, loss, {"[0, 4)", "no tensor"}},
      {R"({"__metadata__":{"k":1}})", "", loss, {"metadata", "\"k\"", "string"}},
      {R"({"__metadata__":[]})", "", loss, {"__metadata__", "object"}},
      {R"({"a":{"dtype":"BOOL","shape":[3],"data_offsets":[0,3]}})", std::string("\1\0\2", 3), loss,
       {"'a'", "byte 2", "element 2"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.header);
    const std::string path = WriteFile(c.header, c.data);
    std::vector<std::string> words(c.words.begin(), c.words.end());
    words.push_back(path);  // every message names the file
    ExpectError([&] { safetensors::Load(path); }, c.code, words);
    // LoadInto reads the same header (the bad BOOL byte is found only when that tensor is read).
    if (c.header.find("BOOL") == std::string::npos) {
      EXPECT_THROW(safetensors::LoadInto(path, {}, false), Error);
    }
  }
}

}  // namespace
}  // namespace oneflow
