// Sessions.
#include "capi/src/capi_internal.h"

using namespace oneflow;
using capi::Guard;
using capi::Require;


extern "C" {

void of_session_options_init(of_session_options_t* options) {
  if (options == nullptr) return;
  const SessionOptions defaults;
  *options = of_session_options_t{};
  options->struct_size = sizeof(of_session_options_t);
  options->seed = defaults.seed;
  options->num_threads = defaults.num_threads;
  options->device_type = static_cast<int32_t>(defaults.default_device.type);
  options->device_index = defaults.default_device.index;
}

of_status_t* of_session_create(const of_session_options_t* options, of_session_t** out_session) {
  return Guard(__func__, [&] {
    Require(out_session, "out_session");
    const of_session_options_t o = capi::ReadOptions(options, of_session_options_init, "options");
    SessionOptions so;
    so.seed = o.seed;
    so.num_threads = o.num_threads;
    so.default_device = Device::FromRaw(o.device_type, o.device_index);
    *out_session = new of_session_t{std::make_shared<Session>(so)};
  });
}

void of_session_destroy(of_session_t* session) { delete session; }

of_status_t* of_session_manual_seed(of_session_t* session, uint64_t seed) {
  return Guard(__func__, [&] { capi::SessionOf(session).generator().ManualSeed(seed); });
}

of_status_t* of_session_dim_symbol(of_session_t* session, const char* name, int64_t* out_dim) {
  return Guard(__func__, [&] {
    Session& s = capi::SessionOf(session);
    Require(name, "name");
    Require(out_dim, "out_dim");
    *out_dim = s.DimSymbol(name).raw();
  });
}

}  // extern "C"
