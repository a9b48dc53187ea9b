// Session: dim symbols per session, ids, options, and the free-tensor store.
#include "core/session/session.h"

#include <cstring>
#include <limits>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/tensor/factory.h"
#include "tests/core/test_util.h"

namespace oneflow {
namespace {

using testing::ExpectError;

// A 4-element float tensor over caller memory whose release is counted.
TensorPtr Counted(int* released) {
  auto* buf = new float[4]{};
  return AdoptHost(DType::Float32(), Shape{4}, buf, 16, [released](void* p) {
    ++*released;
    delete[] static_cast<float*>(p);
  });
}

TEST(Session, OptionsAndDefaults) {
  Session s(SessionOptions{});
  EXPECT_EQ(s.default_device(), Device::CPU());
  EXPECT_EQ(s.options().seed, 0x5eedu);
  EXPECT_EQ(s.generator().seed(), 0x5eedu);
  SessionOptions o;
  o.seed = 77;
  o.num_threads = 4;
  Session s2(o);
  EXPECT_EQ(s2.generator().seed(), 77u);
  EXPECT_EQ(s2.options().num_threads, 4);
}

TEST(Session, InvalidOptionsAreErrors) {
  SessionOptions o;
  o.num_threads = -1;
  ExpectError([&] { Session s(o); }, StatusCode::kInvalidArgument, "num_threads");
  o.num_threads = std::numeric_limits<int32_t>::min();
  ExpectError([&] { Session s(o); }, StatusCode::kInvalidArgument, "num_threads");
  SessionOptions cuda;
  cuda.default_device = Device{DeviceType::kCUDA, 1000};  // no machine has this device
  testing::ExpectDeviceUnavailable([&] { Session s(cuda); }, "cuda:1000");
}

TEST(Session, SeedDrivesTheGenerator) {
  SessionOptions o;
  o.seed = 2024;
  Session a(o), b(o);
  const TensorPtr x = Rand(a.generator(), DType::Float32(), Shape{16}, a.default_device());
  const TensorPtr y = Rand(b.generator(), DType::Float32(), Shape{16}, b.default_device());
  EXPECT_EQ(std::memcmp(x->raw_data(), y->raw_data(), 64), 0);
}

TEST(Generator, ReserveHandsOutDisjointRanges) {
  Generator gen(123);
  const Generator::Range a = gen.Reserve(10);
  const Generator::Range b = gen.Reserve(0);
  const Generator::Range c = gen.Reserve(5);
  EXPECT_EQ(a.key, 123u);
  EXPECT_EQ(a.first_counter, 0u);
  EXPECT_EQ(b.first_counter, 10u);
  EXPECT_EQ(c.first_counter, 10u);
  EXPECT_EQ(gen.Reserve(1).first_counter, 15u);
  gen.ManualSeed(9);
  const Generator::Range d = gen.Reserve(4);
  EXPECT_EQ(d.key, 9u);
  EXPECT_EQ(d.first_counter, 0u);
  EXPECT_EQ(gen.seed(), 9u);
}

TEST(Generator, ReserveFromManyThreads) {
  Generator gen(1);
  constexpr int kThreads = 8, kEach = 1000;
  constexpr uint64_t kCount = 3;
  std::vector<std::vector<uint64_t>> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) got[static_cast<size_t>(t)].push_back(gen.Reserve(kCount).first_counter);
    });
  }
  for (auto& th : threads) th.join();
  std::set<uint64_t> starts;
  for (const auto& v : got) {
    for (uint64_t s : v) {
      EXPECT_EQ(s % kCount, 0u);
      starts.insert(s);
    }
  }
  // Every range [s, s + 3) is handed out exactly once, and together they tile [0, 24000).
  EXPECT_EQ(starts.size(), static_cast<size_t>(kThreads * kEach));
  EXPECT_EQ(*starts.rbegin(), kCount * (kThreads * kEach - 1));
  EXPECT_EQ(gen.Reserve(1).first_counter, kCount * kThreads * kEach);
}

TEST(Session, DimSymbols) {
  Session s(SessionOptions{});
  const Dim n = s.DimSymbol("N");
  EXPECT_TRUE(n.is_symbol());
  EXPECT_EQ(n.symbol_name(), "N");
  EXPECT_TRUE(s.DimSymbol("N") == n);
  EXPECT_EQ(s.DimSymbol(std::string("N")).raw(), n.raw());
  const Dim m = s.DimSymbol("M");
  EXPECT_FALSE(m == n);
  EXPECT_EQ(m.symbol_name(), "M");

  Session other(SessionOptions{});
  const Dim n_other = other.DimSymbol("N");
  EXPECT_TRUE(n_other.is_symbol());
  EXPECT_EQ(n_other.symbol_name(), "N");
  EXPECT_FALSE(n_other == n);  // a different session, a different symbol
  EXPECT_TRUE(other.DimSymbol("N") == n_other);
  // Names are validated as Dim::NewSymbol validates them.
  ExpectError([&] { s.DimSymbol(""); }, StatusCode::kInvalidArgument, "non-empty");
  ExpectError([&] { s.DimSymbol("9x"); }, StatusCode::kInvalidArgument, "digit");
}

TEST(Session, DimSymbolFromManyThreadsIsOneSymbol) {
  Session s(SessionOptions{});
  constexpr int kThreads = 8;
  std::vector<int64_t> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 100; ++i) got[static_cast<size_t>(t)] = s.DimSymbol("batch").raw();
    });
  }
  for (auto& th : threads) th.join();
  for (int64_t r : got) EXPECT_EQ(r, s.DimSymbol("batch").raw());
}

TEST(Session, NextIdIsUnique) {
  std::set<uint64_t> ids;
  constexpr int kThreads = 4, kEach = 1000;
  std::vector<std::vector<uint64_t>> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) got[static_cast<size_t>(t)].push_back(Session::NextId());
    });
  }
  for (auto& th : threads) th.join();
  for (const auto& v : got) {
    for (uint64_t id : v) {
      EXPECT_NE(id, 0u);
      ids.insert(id);
    }
  }
  EXPECT_EQ(ids.size(), static_cast<size_t>(kThreads * kEach));
  EXPECT_EQ(ids.count(Session::NextId()), 0u);
}

TEST(FreeTensorStore, AddFindCountNames) {
  Session s(SessionOptions{});
  FreeTensorStore& store = s.free_tensors();
  const uint64_t g1 = Session::NextId(), g2 = Session::NextId();
  EXPECT_EQ(store.Count(g1), 0u);
  EXPECT_TRUE(store.Names(g1).empty());
  const TensorPtr a = Full(DType::Float32(), Shape{}, 0.5, Device::CPU());
  const TensorPtr b = Full(DType::Int64(), Shape{2}, 1, Device::CPU());
  const TensorPtr c = Full(DType::Bool(), Shape{3}, 1, Device::CPU());
  store.Add(g1, "scalar_0", a);
  store.Add(g1, "mask", c);
  store.Add(g1, "b_const", b);
  store.Add(g2, "scalar_0", b);  // names are per graph
  EXPECT_EQ(store.Count(g1), 3u);
  EXPECT_EQ(store.Count(g2), 1u);
  EXPECT_EQ(store.Names(g1), (std::vector<std::string>{"scalar_0", "mask", "b_const"}));  // insertion order
  EXPECT_EQ(store.Names(g2), (std::vector<std::string>{"scalar_0"}));
  EXPECT_EQ(store.Find(g1, a.get()), "scalar_0");
  EXPECT_EQ(store.Find(g1, b.get()), "b_const");
  EXPECT_EQ(store.Find(g1, c.get()), "mask");
  EXPECT_EQ(store.Find(g2, b.get()), "scalar_0");
  EXPECT_EQ(store.Find(g2, a.get()), "");
  EXPECT_EQ(store.Find(Session::NextId(), a.get()), "");
  // The store holds references.
  EXPECT_EQ(a->refcount(), 2);
  EXPECT_EQ(b->refcount(), 3);
  store.RemoveGraph(g1);
  EXPECT_EQ(store.Count(g1), 0u);
  EXPECT_TRUE(store.Names(g1).empty());
  EXPECT_EQ(store.Find(g1, a.get()), "");
  EXPECT_EQ(a->refcount(), 1);
  EXPECT_EQ(b->refcount(), 2);  // still held for g2
  EXPECT_EQ(store.Count(g2), 1u);
  store.RemoveGraph(g1);  // removing again is harmless
  store.RemoveGraph(g2);
  EXPECT_EQ(b->refcount(), 1);
}

TEST(FreeTensorStore, DuplicateNameIsAlreadyExists) {
  Session s(SessionOptions{});
  FreeTensorStore& store = s.free_tensors();
  const uint64_t g = Session::NextId();
  int released = 0;
  store.Add(g, "x", Counted(&released));
  ExpectError([&] { store.Add(g, "x", Counted(&released)); }, StatusCode::kAlreadyExists, "'x'",
              std::to_string(g));
  EXPECT_EQ(released, 1);  // the rejected tensor was not kept
  EXPECT_EQ(store.Count(g), 1u);
  EXPECT_EQ(store.Names(g), (std::vector<std::string>{"x"}));
  ExpectError([&] { store.Add(g, "null", TensorPtr()); }, StatusCode::kInvalidArgument, "null");
  EXPECT_EQ(store.Count(g), 1u);
  store.RemoveGraph(g);
  EXPECT_EQ(released, 2);
}

TEST(FreeTensorStore, StoreOwnsTheTensorsUntilRemoveGraph) {
  int released = 0, other_released = 0;  // before the session: its store releases "kept" when it ends
  Session s(SessionOptions{});
  FreeTensorStore& store = s.free_tensors();
  const uint64_t g = Session::NextId(), other = Session::NextId();
  {
    TensorPtr t = Counted(&released);
    store.Add(g, "free_0", t);
    store.Add(g, "free_1", Counted(&released));
    store.Add(other, "kept", Counted(&other_released));
  }  // the caller's references are gone; the store keeps the tensors alive
  EXPECT_EQ(released, 0);
  EXPECT_EQ(store.Count(g), 2u);
  store.RemoveGraph(g);
  EXPECT_EQ(released, 2);
  EXPECT_EQ(other_released, 0);
  EXPECT_EQ(store.Count(other), 1u);
}

TEST(FreeTensorStore, ReleaseMayReenterTheStore) {
  // RemoveGraph releases after unlocking, so a deleter may call back into the store.
  Session s(SessionOptions{});
  FreeTensorStore& store = s.free_tensors();
  const uint64_t g = Session::NextId();
  size_t seen_count = 99;
  auto* buf = new float[1]{};
  store.Add(g, "t", AdoptHost(DType::Float32(), Shape{1}, buf, 4, [&](void* p) {
              seen_count = store.Count(g);
              delete[] static_cast<float*>(p);
            }));
  store.RemoveGraph(g);
  EXPECT_EQ(seen_count, 0u);
}

TEST(Session, TensorsOutliveTheirSession) {
  int released = 0;
  TensorPtr t;
  {
    Session s(SessionOptions{});
    t = Counted(&released);
    t = Rand(s.generator(), DType::Float32(), Shape{8}, s.default_device());
  }
  EXPECT_EQ(released, 1);  // the first tensor was replaced
  EXPECT_EQ(t->numel(), 8);
  EXPECT_GE(t->data<float>()[7], 0.0f);
}

TEST(Session, DestroyingASessionReleasesItsFreeTensors) {
  int released = 0;
  {
    Session s(SessionOptions{});
    s.free_tensors().Add(Session::NextId(), "x", Counted(&released));
    EXPECT_EQ(released, 0);
  }
  EXPECT_EQ(released, 1);
}

}  // namespace
}  // namespace oneflow
