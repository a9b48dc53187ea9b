// UTF-8 well-formedness (no overlong forms, surrogates or code points above U+10FFFF): what messages,
// safetensors names and metadata must be.
#pragma once

#include <cstddef>
#include <string_view>

namespace oneflow {

// The length (1 to 4) of the well-formed UTF-8 sequence that `s` starts with, or 0 if it starts with
// none (an empty `s` included).
size_t Utf8SequenceLength(std::string_view s);
bool IsValidUtf8(std::string_view s);

}  // namespace oneflow
