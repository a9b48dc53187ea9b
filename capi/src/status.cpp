// Versions and status objects.
#include "capi/src/capi_internal.h"

namespace oneflow::capi {
namespace {
// Returned when even the status cannot be allocated; of_status_destroy knows not to delete it.
of_status_t g_out_of_memory{OF_STATUS_RESOURCE_EXHAUSTED, {}};
}  // namespace

of_status_t* MakeStatus(StatusCode code, std::string message) noexcept {
  try {
    // The header promises UTF-8 without embedded NULs (C reads the message up to its first NUL).
    return new of_status_t{static_cast<of_status_code_t>(code), SanitizeMessage(message)};
  } catch (...) {
    return &g_out_of_memory;
  }
}

}  // namespace oneflow::capi

using namespace oneflow;

#define OF_STRINGIFY2(x) #x
#define OF_STRINGIFY(x) OF_STRINGIFY2(x)

extern "C" {

void of_version(int32_t* out_major, int32_t* out_minor, int32_t* out_patch) {
  if (out_major) *out_major = OF_VERSION_MAJOR;
  if (out_minor) *out_minor = OF_VERSION_MINOR;
  if (out_patch) *out_patch = OF_VERSION_PATCH;
}

const char* of_version_string(void) {
  return OF_STRINGIFY(OF_VERSION_MAJOR) "." OF_STRINGIFY(OF_VERSION_MINOR) "." OF_STRINGIFY(OF_VERSION_PATCH);
}

int32_t of_abi_version(void) { return OF_ABI_VERSION; }

of_status_code_t of_status_code(const of_status_t* status) { return status ? status->code : OF_STATUS_OK; }

const char* of_status_message(const of_status_t* status) {
  if (status == nullptr) return "";
  if (status->message.empty() && status->code == OF_STATUS_RESOURCE_EXHAUSTED) return "out of memory";
  return status->message.c_str();
}

const char* of_status_code_name(of_status_code_t code) {
  // StatusCodeName returns views of string literals, so .data() is NUL-terminated.
  return StatusCodeName(static_cast<StatusCode>(code)).data();
}

void of_status_destroy(of_status_t* status) {
  if (status != &capi::g_out_of_memory) delete status;
}

}  // extern "C"
