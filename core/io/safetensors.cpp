#include "core/io/safetensors.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <unordered_set>

#include <fmt/ranges.h>
#include <unistd.h>

#include "core/common/utf8.h"
#include "core/session/session.h"
#include "core/tensor/copy.h"
#include "core/tensor/factory.h"

namespace oneflow::safetensors {
namespace {

// Tensor bytes are written and read as they lie in memory.
static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes a little-endian host");

// The reference implementation refuses larger headers too.
constexpr uint64_t kMaxHeaderSize = 100'000'000;
constexpr int kMaxJsonDepth = 64;
constexpr std::string_view kMetadataKey = "__metadata__";

struct DTypeName {
  std::string_view name;
  DataType type;
};
constexpr DTypeName kDTypeNames[] = {
    {"BOOL", DataType::kBool}, {"U8", DataType::kUInt8},   {"I8", DataType::kInt8},        {"I16", DataType::kInt16},
    {"I32", DataType::kInt32}, {"I64", DataType::kInt64},  {"F16", DataType::kFloat16},    {"BF16", DataType::kBFloat16},
    {"F32", DataType::kFloat32}, {"F64", DataType::kFloat64},
};

std::string_view FormatName(Symbol<DType> dtype) {
  for (const DTypeName& d : kDTypeNames) {
    if (d.type == dtype->data_type()) return d.name;
  }
  OF_THROW(Internal) << "dtype " << dtype << " has no safetensors name";
}


// ---- a small strict JSON reader: objects, arrays, strings and integers -----------------------------

struct JsonMember;

struct Json {
  enum class Kind { kObject, kArray, kString, kInteger };
  Kind kind = Kind::kObject;
  size_t offset = 0;  // where the value starts in the header, for messages
  std::string string;
  int64_t integer = 0;
  std::vector<JsonMember> members;  // in order; keys are distinct
  std::vector<Json> items;
};

// A named member of an object (not a std::pair, which needs a complete Json where Json declares it).
struct JsonMember {
  std::string key;
  Json value;
};

std::string_view KindName(Json::Kind kind) {
  switch (kind) {
    case Json::Kind::kObject: return "an object";
    case Json::Kind::kArray: return "an array";
    case Json::Kind::kString: return "a string";
    case Json::Kind::kInteger: return "an integer";
  }
  return "?";
}

class JsonReader {
 public:
  JsonReader(std::string_view text, const std::string& path) : text_(text), path_(path) {}

  // One value followed by nothing but whitespace (the header's padding).
  Json ParseDocument() {
    SkipSpace();
    Json value = Value(0);
    SkipSpace();
    if (pos_ != text_.size()) Fail("unexpected characters after the JSON object");
    return value;
  }

 private:
  [[noreturn]] void Fail(std::string_view problem) const {
    OF_THROW(DataLoss) << Quote(path_) << ": the header is not valid JSON: " << problem << " at byte " << pos_
                       << " of the header";
  }
  bool AtEnd() const { return pos_ >= text_.size(); }
  char Peek() const { return AtEnd() ? '\0' : text_[pos_]; }
  void SkipSpace() {
    while (!AtEnd() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r')) ++pos_;
  }
  void Expect(char c) {
    if (Peek() != c || AtEnd()) Fail(AtEnd() ? fmt::format("expected '{}' but the header ended", c)
                                             : fmt::format("expected '{}'", c));
    ++pos_;
  }

  Json Value(int depth) {
    if (depth > kMaxJsonDepth) Fail("nesting is too deep");
    Json v;
    v.offset = pos_;
    if (AtEnd()) Fail("expected a value but the header ended");
    const char c = text_[pos_];
    if (c == '{') {
      v.kind = Json::Kind::kObject;
      ++pos_;
      SkipSpace();
      if (Peek() == '}' && !AtEnd()) {
        ++pos_;
        return v;
      }
      std::unordered_set<std::string> keys;
      while (true) {
        SkipSpace();
        const size_t key_at = pos_;
        if (Peek() != '"' || AtEnd()) Fail("expected a string key");
        std::string key = String();
        if (!keys.insert(key).second) {
          pos_ = key_at;
          Fail(fmt::format("duplicate key \"{}\"", key));
        }
        SkipSpace();
        Expect(':');
        SkipSpace();
        Json member = Value(depth + 1);
        v.members.push_back(JsonMember{std::move(key), std::move(member)});
        SkipSpace();
        if (Peek() == ',' && !AtEnd()) {
          ++pos_;
          continue;
        }
        Expect('}');
        return v;
      }
    }
    if (c == '[') {
      v.kind = Json::Kind::kArray;
      ++pos_;
      SkipSpace();
      if (Peek() == ']' && !AtEnd()) {
        ++pos_;
        return v;
      }
      while (true) {
        SkipSpace();
        v.items.push_back(Value(depth + 1));
        SkipSpace();
        if (Peek() == ',' && !AtEnd()) {
          ++pos_;
          continue;
        }
        Expect(']');
        return v;
      }
    }
    if (c == '"') {
      v.kind = Json::Kind::kString;
      v.string = String();
      return v;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
      v.kind = Json::Kind::kInteger;
      v.integer = Integer();
      return v;
    }
    Fail(fmt::format("unexpected character '{}'", c >= 0x20 && c < 0x7f ? std::string(1, c) : fmt::format("\\x{:02x}", static_cast<unsigned char>(c))));
  }

  int64_t Integer() {
    const bool negative = Peek() == '-';
    if (negative) ++pos_;
    if (AtEnd() || text_[pos_] < '0' || text_[pos_] > '9') Fail("expected a digit");
    if (text_[pos_] == '0' && pos_ + 1 < text_.size() && text_[pos_ + 1] >= '0' && text_[pos_ + 1] <= '9') {
      Fail("numbers must not have leading zeros");
    }
    uint64_t magnitude = 0;
    while (!AtEnd() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      const auto digit = static_cast<uint64_t>(text_[pos_] - '0');
      if (magnitude > (uint64_t{1} << 63) / 10 || magnitude * 10 + digit > (uint64_t{1} << 63) - (negative ? 0 : 1)) {
        Fail("integer out of the range of int64");
      }
      magnitude = magnitude * 10 + digit;
      ++pos_;
    }
    if (Peek() == '.' || Peek() == 'e' || Peek() == 'E') Fail("numbers must be integers");
    return negative ? static_cast<int64_t>(0 - magnitude) : static_cast<int64_t>(magnitude);
  }

  uint32_t Hex4() {
    if (text_.size() - pos_ < 4) Fail("truncated \\u escape");
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) {
      const char h = text_[pos_++];
      v <<= 4;
      if (h >= '0' && h <= '9') v |= static_cast<uint32_t>(h - '0');
      else if (h >= 'a' && h <= 'f') v |= static_cast<uint32_t>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F') v |= static_cast<uint32_t>(h - 'A' + 10);
      else Fail("bad hex digit in a \\u escape");
    }
    return v;
  }

  static void AppendUtf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  std::string String() {
    const size_t start = pos_;
    ++pos_;  // the opening quote
    std::string out;
    while (true) {
      if (AtEnd()) {
        pos_ = start;
        Fail("unterminated string");
      }
      const char c = text_[pos_++];
      if (c == '"') break;
      if (static_cast<unsigned char>(c) < 0x20) {
        --pos_;
        Fail("control character in a string");
      }
      if (c != '\\') {
        out += c;
        continue;
      }
      if (AtEnd()) Fail("truncated escape");
      const char e = text_[pos_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          uint32_t cp = Hex4();
          if (cp >= 0xDC00 && cp <= 0xDFFF) Fail("lone low surrogate in a \\u escape");
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (text_.substr(pos_, 2) != "\\u") Fail("high surrogate without a low surrogate");
            pos_ += 2;
            const uint32_t low = Hex4();
            if (low < 0xDC00 || low > 0xDFFF) Fail("high surrogate without a low surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          AppendUtf8(out, cp);
          break;
        }
        default:
          --pos_;
          Fail(fmt::format("bad escape '\\{}'", e));
      }
    }
    if (!IsValidUtf8(out)) {
      pos_ = start;
      Fail("string is not valid UTF-8");
    }
    return out;
  }

  std::string_view text_;
  const std::string& path_;
  size_t pos_ = 0;
};

// ---- the header ---------------------------------------------------------------------------------------

struct Entry {
  std::string name;
  Symbol<DType> dtype;
  Shape shape;
  uint64_t begin = 0, end = 0;  // within the data section
};

struct Header {
  std::vector<Entry> entries;  // sorted by data offset
  Metadata metadata;
  uint64_t data_start = 0;  // 8 + N
};

// An open file that closes itself.
using FilePtr = std::unique_ptr<std::FILE, int (*)(std::FILE*)>;

[[noreturn]] void ThrowIo(const std::string& path, std::string_view action, int err) {
  StatusCode code = StatusCode::kUnavailable;
  if (err == ENOENT || err == ENOTDIR) code = StatusCode::kNotFound;
  if (err == EACCES || err == EPERM || err == EROFS) code = StatusCode::kPermissionDenied;
  if (err == ENOSPC) code = StatusCode::kResourceExhausted;
  if (err == EISDIR) code = StatusCode::kInvalidArgument;
  throw Error(code, fmt::format("{}: cannot {}: {}", Quote(path), action, std::strerror(err)));
}

FilePtr OpenForReading(const std::string& path, uint64_t* size) {
  OF_CHECK(!path.empty()) << "path is empty";
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec) ThrowIo(path, "open the file", ec.value());
  if (status.type() == std::filesystem::file_type::not_found) ThrowIo(path, "open the file", ENOENT);
  OF_CHECK(std::filesystem::is_regular_file(status)) << Quote(path) << ": not a regular file";
  *size = std::filesystem::file_size(path, ec);
  if (ec) ThrowIo(path, "read the file size", ec.value());
  FilePtr file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) ThrowIo(path, "open the file", errno);
  return file;
}

void ReadExactly(std::FILE* file, void* dst, uint64_t nbytes, const std::string& path, std::string_view what) {
  if (nbytes == 0) return;
  if (std::fread(dst, 1, nbytes, file) != nbytes) {
    if (std::ferror(file)) ThrowIo(path, fmt::format("read {}", what), errno);
    OF_THROW(DataLoss) << Quote(path) << ": truncated: the file ended while reading " << what;
  }
}

const Json& Field(const Json& object, std::string_view key, Json::Kind kind, const std::string& path,
                  const std::string& tensor) {
  for (const auto& [k, v] : object.members) {
    if (k != key) continue;
    if (v.kind != kind) {
      OF_THROW(DataLoss) << Quote(path) << ": tensor " << Quote(tensor) << ": \"" << key << "\" must be " << KindName(kind)
                         << ", got " << KindName(v.kind);
    }
    return v;
  }
  OF_THROW(DataLoss) << Quote(path) << ": tensor " << Quote(tensor) << " has no \"" << key << "\"";
}

Entry ParseEntry(const std::string& name, const Json& info, const std::string& path) {
  // A name is read back as a C string (of_tensor_list_name): "a\u0000b" would come back as "a".
  if (name.find('\0') != std::string::npos) {
    OF_THROW(DataLoss) << Quote(path) << ": tensor name " << Quote(name) << " contains a NUL character (\\u0000)";
  }
  if (info.kind != Json::Kind::kObject) {
    OF_THROW(DataLoss) << Quote(path) << ": tensor " << Quote(name) << " must be described by an object, got "
                       << KindName(info.kind);
  }
  Entry e;
  e.name = name;
  const std::string& dtype = Field(info, "dtype", Json::Kind::kString, path, name).string;
  for (const DTypeName& d : kDTypeNames) {
    if (d.name == dtype) e.dtype = DType::Get(d.type);
  }
  if (!e.dtype) {
    OF_THROW(InvalidArgument) << Quote(path) << ": tensor " << Quote(name) << " has dtype \"" << dtype
                              << "\", which is not supported (BOOL, U8, I8, I16, I32, I64, F16, BF16, F32, F64)";
  }
  uint64_t nbytes = e.dtype->bytes();
  std::vector<Dim> dims;
  for (const Json& d : Field(info, "shape", Json::Kind::kArray, path, name).items) {
    if (d.kind != Json::Kind::kInteger || d.integer < 0) {
      OF_THROW(DataLoss) << Quote(path) << ": tensor " << Quote(name) << ": shape entries must be integers >= 0";
    }
    const auto size = static_cast<uint64_t>(d.integer);
    if (size != 0 && nbytes > std::numeric_limits<uint64_t>::max() / 2 / size) {
      OF_THROW(DataLoss) << Quote(path) << ": tensor " << Quote(name) << ": the shape is too large";
    }
    nbytes *= size;
    dims.emplace_back(d.integer);
  }
  e.shape = Shape(std::move(dims));
  const Json& offsets = Field(info, "data_offsets", Json::Kind::kArray, path, name);
  if (offsets.items.size() != 2 || offsets.items[0].kind != Json::Kind::kInteger ||
      offsets.items[1].kind != Json::Kind::kInteger || offsets.items[0].integer < 0 ||
      offsets.items[1].integer < offsets.items[0].integer) {
    OF_THROW(DataLoss) << Quote(path) << ": tensor " << Quote(name) << ": data_offsets must be [begin, end] with 0 <= begin <= end";
  }
  e.begin = static_cast<uint64_t>(offsets.items[0].integer);
  e.end = static_cast<uint64_t>(offsets.items[1].integer);
  if (e.end - e.begin != nbytes) {
    OF_THROW(DataLoss) << Quote(path) << ": tensor " << Quote(name) << " (" << dtype << ", shape " << e.shape << ") needs "
                       << nbytes << " bytes but its data_offsets [" << e.begin << ", " << e.end << "] span "
                       << e.end - e.begin;
  }
  return e;
}

Header ReadHeader(std::FILE* file, uint64_t file_size, const std::string& path) {
  if (file_size < 8) {
    OF_THROW(DataLoss) << Quote(path) << ": truncated: the file is " << file_size
                       << " bytes, too short for the 8-byte header size";
  }
  unsigned char size_bytes[8];
  ReadExactly(file, size_bytes, 8, path, "the header size");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | size_bytes[i];
  if (n > file_size - 8) {
    OF_THROW(DataLoss) << Quote(path) << ": truncated: the header size is " << n << " bytes but the file has only "
                       << file_size - 8 << " bytes after it";
  }
  if (n > kMaxHeaderSize) {
    OF_THROW(DataLoss) << Quote(path) << ": the header size " << n << " exceeds the limit of " << kMaxHeaderSize << " bytes";
  }
  std::string text(n, '\0');
  ReadExactly(file, text.data(), n, path, "the header");
  const Json root = JsonReader(text, path).ParseDocument();
  if (root.kind != Json::Kind::kObject) OF_THROW(DataLoss) << Quote(path) << ": the header must be a JSON object";

  Header header;
  header.data_start = 8 + n;
  const uint64_t data_size = file_size - header.data_start;
  for (const auto& [name, value] : root.members) {
    if (name == kMetadataKey) {
      if (value.kind != Json::Kind::kObject) OF_THROW(DataLoss) << Quote(path) << ": \"__metadata__\" must be an object";
      for (const auto& [k, v] : value.members) {
        if (v.kind != Json::Kind::kString) {
          OF_THROW(DataLoss) << Quote(path) << ": metadata \"" << k << "\" must be a string, got " << KindName(v.kind);
        }
        header.metadata.emplace_back(k, v.string);
      }
      continue;
    }
    Entry e = ParseEntry(name, value, path);
    if (e.end > data_size) {
      OF_THROW(DataLoss) << Quote(path) << ": truncated: tensor " << Quote(name) << " ends at byte " << e.end
                         << " of the data but the file holds only " << data_size << " bytes of data";
    }
    header.entries.push_back(std::move(e));
  }
  // The tensors must tile the data section: sorted by offset, each begins where the previous ended.
  std::stable_sort(header.entries.begin(), header.entries.end(),
                   [](const Entry& a, const Entry& b) { return a.begin < b.begin || (a.begin == b.begin && a.end < b.end); });
  uint64_t at = 0;
  const Entry* previous = nullptr;
  for (const Entry& e : header.entries) {
    if (e.begin < at) {
      OF_THROW(DataLoss) << Quote(path) << ": tensors " << Quote(previous->name) << " [" << previous->begin << ", "
                         << previous->end << "] and " << Quote(e.name) << " [" << e.begin << ", " << e.end
                         << "] overlap";
    }
    if (e.begin > at) {
      OF_THROW(DataLoss) << Quote(path) << ": bytes [" << at << ", " << e.begin << ") of the data belong to no tensor";
    }
    at = e.end;
    previous = &e;
  }
  if (at != data_size) {
    OF_THROW(DataLoss) << Quote(path) << ": the file has " << data_size << " bytes of data but its tensors cover only " << at;
  }
  return header;
}

// Reads the entries whose `wanted` flag is set (all when empty) into new contiguous CPU tensors; the
// file is positioned just after the header.
std::vector<TensorPtr> ReadData(std::FILE* file, const Header& header, const std::vector<bool>& wanted,
                                const std::string& path) {
  std::vector<TensorPtr> out(header.entries.size());
  uint64_t position = 0;  // within the data section
  for (size_t i = 0; i < header.entries.size(); ++i) {
    const Entry& e = header.entries[i];
    if (!wanted.empty() && !wanted[i]) continue;
    if (e.begin != position) {
      if (std::fseek(file, static_cast<long>(header.data_start + e.begin), SEEK_SET) != 0) {
        ThrowIo(path, "seek", errno);
      }
    }
    TensorPtr t = Empty(e.dtype, e.shape, Device::CPU());
    ReadExactly(file, t->raw_data(), e.end - e.begin, path, fmt::format("tensor {}", Quote(e.name)));
    position = e.end;
    if (e.dtype->is_bool()) {  // Note [Bool bytes]
      if (const int64_t k = FirstNonBooleanByte(t->raw_data(), t->numel()); k >= 0) {
        OF_THROW(DataLoss) << Quote(path) << ": BOOL tensor " << Quote(e.name) << " holds the byte "
                           << int{static_cast<const unsigned char*>(t->raw_data())[k]} << " at element " << k
                           << " (only 0 and 1 are booleans)";
      }
    }
    out[i] = std::move(t);
  }
  return out;
}

// ---- writing ------------------------------------------------------------------------------------------

void AppendJsonString(std::string& out, std::string_view s) {
  out += '"';
  for (const char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<unsigned char>(c));
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

// The tensor's bytes in row-major order: its own memory when it is a contiguous CPU tensor.
TensorPtr HostContiguous(const TensorPtr& t) {
  CheckEager(*t, "the tensor to save");
  if (t->device().type == DeviceType::kCPU) return MakeContiguous(t, &Session::Current().thread_pool());
  OF_CHECK(t->is_contiguous()) << "a strided tensor on " << t->device() << " cannot be saved; make it contiguous";
  TensorPtr host = Empty(t->dtype(), t->shape(), Device::CPU());
  CopyToHost(*t, host->raw_data(), host->nbytes());
  return host;
}

void CheckNames(const NamedTensors& tensors, const Metadata& metadata) {
  std::unordered_set<std::string_view> names;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& [name, t] = tensors[i];
    OF_CHECK(!name.empty()) << "tensor " << i << " has an empty name";
    OF_CHECK(IsValidUtf8(name)) << "the name of tensor " << i << " is not valid UTF-8";
    OF_CHECK(name.find('\0') == std::string::npos)
        << "the name of tensor " << i << " (" << Quote(name) << ") contains a NUL character";
    OF_CHECK(name != kMetadataKey) << "tensor " << i << " is named \"__metadata__\", which the format reserves";
    OF_CHECK(names.insert(name).second) << "the name " << Quote(name) << " is given to more than one tensor";
    OF_CHECK(t) << "tensor " << Quote(name) << " is null";
  }
  std::unordered_set<std::string_view> keys;
  for (const auto& [key, value] : metadata) {
    OF_CHECK(IsValidUtf8(key) && IsValidUtf8(value)) << "metadata entry " << Quote(key) << " is not valid UTF-8";
    OF_CHECK(keys.insert(key).second) << "metadata key " << Quote(key) << " is given more than once";
  }
}

}  // namespace

void Save(const std::string& path, const NamedTensors& tensors, const Metadata& metadata) {
  OF_CHECK(!path.empty()) << "path is empty";
  CheckNames(tensors, metadata);
  std::string header = "{";
  if (!metadata.empty()) {
    AppendJsonString(header, kMetadataKey);
    header += ":{";
    for (size_t i = 0; i < metadata.size(); ++i) {
      if (i > 0) header += ',';
      AppendJsonString(header, metadata[i].first);
      header += ':';
      AppendJsonString(header, metadata[i].second);
    }
    header += '}';
  }
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    if (header.size() > 1) header += ',';
    AppendJsonString(header, name);
    header += fmt::format(":{{\"dtype\":\"{}\",\"shape\":[{}],\"data_offsets\":[{},{}]}}", FormatName(t->dtype()),
                          fmt::join(t->shape().raw(), ","), offset, offset + t->nbytes());
    offset += t->nbytes();
  }
  header += '}';
  header.append((8 - header.size() % 8) % 8, ' ');

  // Written under a temporary name in the same directory, then renamed over `path`.
  static std::atomic<uint64_t> counter{0};
  const std::string temp = fmt::format("{}.tmp{}.{}", path, static_cast<long>(::getpid()), counter++);
  FilePtr file(std::fopen(temp.c_str(), "wbx"), &std::fclose);
  if (!file) ThrowIo(path, "create the file", errno);
  try {
    unsigned char size_bytes[8];
    for (int i = 0; i < 8; ++i) size_bytes[i] = static_cast<unsigned char>(header.size() >> (8 * i));
    auto write = [&](const void* data, size_t nbytes) {
      if (nbytes > 0 && std::fwrite(data, 1, nbytes, file.get()) != nbytes) ThrowIo(path, "write", errno);
    };
    write(size_bytes, 8);
    write(header.data(), header.size());
    for (const auto& [name, t] : tensors) {
      const TensorPtr host = HostContiguous(t);
      write(host->raw_data(), host->nbytes());
    }
    if (std::fclose(file.release()) != 0) ThrowIo(path, "write", errno);
    std::error_code ec;
    std::filesystem::rename(temp, path, ec);
    if (ec) ThrowIo(path, "replace the file", ec.value());
  } catch (...) {
    file.reset();
    std::remove(temp.c_str());
    throw;
  }
}

NamedTensors Load(const std::string& path, Device device, Metadata* metadata) {
  uint64_t size = 0;
  FilePtr file = OpenForReading(path, &size);
  Header header = ReadHeader(file.get(), size, path);
  std::vector<TensorPtr> data = ReadData(file.get(), header, {}, path);
  NamedTensors out;
  out.reserve(data.size());
  for (size_t i = 0; i < data.size(); ++i) {
    TensorPtr t = std::move(data[i]);
    if (device.type != DeviceType::kCPU) t = FromHost(t->dtype(), t->shape(), t->raw_data(), t->nbytes(), device);
    out.emplace_back(std::move(header.entries[i].name), std::move(t));
  }
  if (metadata != nullptr) *metadata = std::move(header.metadata);
  return out;
}

void LoadInto(const std::string& path, const NamedTensors& targets, bool strict) {
  std::unordered_map<std::string_view, size_t> by_name;  // target index by name
  for (size_t i = 0; i < targets.size(); ++i) {
    const auto& [name, t] = targets[i];
    OF_CHECK(t) << "target " << Quote(name) << " is null";
    CheckWritable(*t, "target '" + name + "'");
    OF_CHECK(by_name.emplace(name, i).second) << "the name " << Quote(name) << " is given to more than one target";
    OF_CHECK(t->device().type == DeviceType::kCPU || t->is_contiguous())
        << "target " << Quote(name) << " on " << t->device() << " must be contiguous";
    // Two targets over the same memory would each overwrite the other's data.
    for (size_t j = 0; j < i; ++j) {
      OF_CHECK(!MayShareMemory(*targets[j].second, *t))
          << "targets " << Quote(targets[j].first) << " and " << Quote(name) << " overlap in memory: each would overwrite "
          << "the other's data";
    }
  }
  uint64_t size = 0;
  FilePtr file = OpenForReading(path, &size);
  const Header header = ReadHeader(file.get(), size, path);

  // Match names, dtypes and shapes before reading any data.
  std::vector<bool> wanted(header.entries.size(), false);
  std::vector<size_t> target_of(header.entries.size());
  std::vector<bool> found(targets.size(), false);
  for (size_t i = 0; i < header.entries.size(); ++i) {
    const auto it = by_name.find(header.entries[i].name);
    if (it == by_name.end()) continue;
    wanted[i] = true;
    target_of[i] = it->second;
    found[it->second] = true;
  }
  if (strict) {
    for (size_t i = 0; i < targets.size(); ++i) {
      if (!found[i]) OF_THROW(NotFound) << Quote(path) << ": the file has no tensor " << Quote(targets[i].first) << "";
    }
  }
  for (size_t i = 0; i < header.entries.size(); ++i) {
    const Entry& e = header.entries[i];
    if (!wanted[i]) {
      OF_CHECK(!strict) << Quote(path) << ": the file has tensor " << Quote(e.name) << ", which is not among the targets";
      continue;
    }
    const Tensor& t = *targets[target_of[i]].second;
    OF_CHECK(t.dtype() == e.dtype && t.shape() == e.shape)
        << Quote(path) << ": tensor " << Quote(e.name) << " is " << e.dtype << " of shape " << e.shape
        << " in the file but the target is " << t.dtype() << " of shape " << t.shape();
  }
  const std::vector<TensorPtr> data = ReadData(file.get(), header, wanted, path);
  ThreadPool& pool = Session::Current().thread_pool();
  for (size_t i = 0; i < data.size(); ++i) {
    if (!wanted[i]) continue;
    const Tensor& target = *targets[target_of[i]].second;
    if (target.device().type == DeviceType::kCPU) {
      CopyStrided(*data[i], target, &pool);
    } else {
      GetBackend(target.device()).CopyFromHost(target.raw_data(), data[i]->raw_data(), data[i]->nbytes());
    }
    target.MarkWritten();
  }
}

}  // namespace oneflow::safetensors
