// The liveness-based memory planner (core/graph/memory_plan.h): hand cases with known offsets and peaks,
// randomized instances checked by a brute-force verifier against the contract and a lower bound, errors.
#include "core/graph/memory_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "core/common/error.h"
#include "tests/ops/op_test_util.h"

namespace oneflow::graph {
namespace {

using test::ExpectError;

size_t AlignUp(size_t bytes, size_t alignment) { return (bytes + alignment - 1) / alignment * alignment; }

// Whether request i's in-place claim must be honoured, decided from the documented rule alone.
std::vector<bool> ExpectedInplace(const std::vector<BufferRequest>& rs) {
  std::vector<bool> inplace(rs.size(), false), claimed(rs.size(), false);
  for (size_t i = 0; i < rs.size(); ++i) {
    const int32_t p = rs[i].inplace_of;
    if (p < 0 || rs[i].bytes == 0) continue;
    const BufferRequest& q = rs[static_cast<size_t>(p)];
    if (q.last != rs[i].first || rs[i].bytes > q.bytes || claimed[static_cast<size_t>(p)]) continue;
    if (inplace[static_cast<size_t>(p)] && q.first == q.last) continue;
    claimed[static_cast<size_t>(p)] = true;
    inplace[i] = true;
  }
  return inplace;
}

// The largest, over steps, of the sum of `bytes` over intervals [from, to] (steps >= 0).
size_t MaxLive(const std::vector<std::array<int64_t, 3>>& intervals) {
  int64_t max_step = 0;
  for (const auto& [from, to, bytes] : intervals) max_step = std::max(max_step, to);
  std::vector<int64_t> diff(static_cast<size_t>(max_step) + 2, 0);
  for (const auto& [from, to, bytes] : intervals) {
    if (from > to) continue;
    diff[static_cast<size_t>(from)] += bytes;
    diff[static_cast<size_t>(to) + 1] -= bytes;
  }
  int64_t live = 0, best = 0;
  for (int64_t d : diff) best = std::max(best, live += d);
  return static_cast<size_t>(best);
}

struct Bounds {
  // No plan that keeps the contract and honours the same claims can do better: the aligned bytes live at
  // once, where an honoured in-place request counts only after the step it shares with its predecessor.
  size_t requests = 0;
  // The same for the planner's model, where an in-place chain holds its largest member's size for the
  // union of its members' lifetimes: the bound for placing those blocks, which measures placement alone.
  size_t blocks = 0;
};

Bounds LowerBounds(const std::vector<BufferRequest>& rs, const std::vector<bool>& inplace, size_t alignment) {
  std::vector<std::array<int64_t, 3>> per_request, per_block;
  std::vector<size_t> block_of(rs.size());
  for (size_t i = 0; i < rs.size(); ++i) {
    const auto bytes = static_cast<int64_t>(AlignUp(rs[i].bytes, alignment));
    per_request.push_back({inplace[i] ? rs[i].first + 1 : rs[i].first, rs[i].last, bytes});
    if (inplace[i]) {
      block_of[i] = block_of[static_cast<size_t>(rs[i].inplace_of)];
      auto& blk = per_block[block_of[i]];
      blk[0] = std::min<int64_t>(blk[0], rs[i].first);
      blk[1] = std::max<int64_t>(blk[1], rs[i].last);
      blk[2] = std::max(blk[2], bytes);
    } else {
      block_of[i] = per_block.size();
      per_block.push_back({rs[i].first, rs[i].last, bytes});
    }
  }
  return {MaxLive(per_request), MaxLive(per_block)};
}

// Brute force over all pairs: the whole contract of PlanMemory. Returns the lower bounds for reporting.
Bounds CheckPlan(const std::vector<BufferRequest>& rs, const MemoryPlan& plan, size_t alignment) {
  const size_t n = rs.size();
  EXPECT_EQ(plan.offsets.size(), n);
  EXPECT_EQ(plan.inplace.size(), n);
  if (plan.offsets.size() != n || plan.inplace.size() != n) return {};
  EXPECT_EQ(plan.inplace, ExpectedInplace(rs));
  size_t total = 0, max_end = 0;
  for (size_t i = 0; i < n; ++i) {
    EXPECT_EQ(plan.offsets[i] % alignment, 0u) << "request " << i;
    if (rs[i].bytes == 0) {
      EXPECT_EQ(plan.offsets[i], 0u) << "zero-byte request " << i;
    }
    total += AlignUp(rs[i].bytes, alignment);
    max_end = std::max(max_end, plan.offsets[i] + AlignUp(rs[i].bytes, alignment));
    if (plan.inplace[i]) {
      EXPECT_EQ(plan.offsets[i], plan.offsets[static_cast<size_t>(rs[i].inplace_of)]) << "in-place request " << i;
    }
  }
  EXPECT_EQ(plan.total_bytes, total);
  EXPECT_EQ(plan.peak_bytes, max_end);  // the arena holds every buffer, and no more than that
  int64_t collisions = 0;
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i + 1; j < n; ++j) {
      if (rs[i].last < rs[j].first || rs[j].last < rs[i].first) continue;  // never live together
      const bool disjoint = plan.offsets[i] + rs[i].bytes <= plan.offsets[j] ||
                            plan.offsets[j] + rs[j].bytes <= plan.offsets[i];
      if (disjoint) continue;
      const bool pair = plan.inplace[j] && rs[j].inplace_of == static_cast<int32_t>(i);
      if (!pair && ++collisions <= 5) {
        ADD_FAILURE() << "requests " << i << " [" << rs[i].first << ", " << rs[i].last << "] at " << plan.offsets[i]
                      << " (+" << rs[i].bytes << ") and " << j << " [" << rs[j].first << ", " << rs[j].last
                      << "] at " << plan.offsets[j] << " (+" << rs[j].bytes << ") are live together and overlap";
      }
    }
  }
  EXPECT_EQ(collisions, 0);
  const Bounds lower = LowerBounds(rs, plan.inplace, alignment);
  EXPECT_LE(lower.requests, lower.blocks);
  EXPECT_GE(plan.peak_bytes, lower.blocks);
  EXPECT_GE(plan.peak_bytes, lower.requests);
  EXPECT_LE(plan.peak_bytes, plan.total_bytes);
  return lower;
}

MemoryPlan PlanAndCheck(const std::vector<BufferRequest>& rs, size_t alignment = 64) {
  MemoryPlan plan = PlanMemory(rs, alignment);
  CheckPlan(rs, plan, alignment);
  return plan;
}

// ---- hand cases ---------------------------------------------------------------------------------------

// Step k writes buffer k and reads buffer k - 1: two buffers are live at each step.
std::vector<BufferRequest> Chain(int n, size_t bytes, bool inplace) {
  std::vector<BufferRequest> rs;
  for (int k = 0; k < n; ++k) rs.push_back({bytes, k, k + 1 < n ? k + 1 : k, inplace && k > 0 ? k - 1 : -1});
  return rs;
}

TEST(MemoryPlanHand, ChainNeedsTwoBuffers) {
  const auto rs = Chain(10, 1000, false);
  const MemoryPlan plan = PlanAndCheck(rs);
  EXPECT_EQ(plan.total_bytes, 10u * 1024);
  EXPECT_EQ(plan.peak_bytes, 2u * 1024);
  for (int k = 0; k < 10; ++k) EXPECT_EQ(plan.offsets[k], k % 2 == 0 ? 0u : 1024u) << k;
  EXPECT_EQ(std::count(plan.inplace.begin(), plan.inplace.end(), true), 0);
}

TEST(MemoryPlanHand, InPlaceChainNeedsOneBuffer) {
  const auto rs = Chain(10, 1000, true);
  const MemoryPlan plan = PlanAndCheck(rs);
  EXPECT_EQ(plan.peak_bytes, 1024u);
  EXPECT_EQ(plan.total_bytes, 10u * 1024);
  for (int k = 0; k < 10; ++k) {
    EXPECT_EQ(plan.offsets[k], 0u) << k;
    EXPECT_EQ(plan.inplace[k], k > 0) << k;
  }
}

TEST(MemoryPlanHand, InPlaceChainShrinkingKeepsRootSize) {
  // 300 -> 200 (in place) -> 100 (in place), then a 250-byte buffer that lives with the last one only.
  const std::vector<BufferRequest> rs = {{300, 0, 1}, {200, 1, 2, 0}, {100, 2, 3, 1}, {250, 3, 3}};
  const MemoryPlan plan = PlanAndCheck(rs, 1);
  EXPECT_EQ(plan.offsets, (std::vector<size_t>{0, 0, 0, 300}));  // the chain's block is 300 bytes for its life
  EXPECT_EQ(plan.peak_bytes, 550u);
}

TEST(MemoryPlanHand, FullyOverlappingNeedsTotal) {
  const std::vector<BufferRequest> rs = {{100, 0, 4}, {700, 0, 4}, {64, 1, 3}, {5000, 2, 2}, {1, 0, 4}};
  const MemoryPlan plan = PlanAndCheck(rs);
  EXPECT_EQ(plan.total_bytes, 128u + 704 + 64 + 5056 + 64);
  EXPECT_EQ(plan.peak_bytes, plan.total_bytes);
  // Largest first: 5000 at 0, 700 after it, then 100, 64-byte ties by first step (the 1-byte one starts earlier).
  EXPECT_EQ(plan.offsets, (std::vector<size_t>{5056 + 704, 5056, 5056 + 704 + 128 + 64, 0, 5056 + 704 + 128}));
}

TEST(MemoryPlanHand, GreedyBySizeReusesFreedGap) {
  // A (100) lives [0, 1]; B (50) [1, 2] collides with A; C (50) [2, 3] only with B, so it reuses A's memory.
  const std::vector<BufferRequest> rs = {{100, 0, 1}, {50, 1, 2}, {50, 2, 3}, {30, 3, 5}, {80, 4, 5}};
  const MemoryPlan plan = PlanAndCheck(rs, 1);
  // Largest first: A@0; E (80, [4, 5]) misses A -> 0; B (50, [1, 2]) hits A -> 100; C (50, [2, 3]) hits only
  // B -> 0; D (30, [3, 5]) hits E (0..80) and C (0..50) -> 80 (B, at 100..150, is dead by step 3).
  EXPECT_EQ(plan.offsets, (std::vector<size_t>{0, 100, 0, 80, 0}));
  EXPECT_EQ(plan.peak_bytes, 150u);
}

TEST(MemoryPlanHand, ZeroByteRequestsTakeNoSpace) {
  const std::vector<BufferRequest> rs = {{0, 0, 5}, {128, 0, 2}, {0, 1, 1}, {128, 1, 3}, {0, 3, 4, 3}, {0, 1, 2, 2}};
  const MemoryPlan plan = PlanAndCheck(rs);
  EXPECT_EQ(plan.offsets[0], 0u);
  EXPECT_EQ(plan.offsets[2], 0u);
  EXPECT_EQ(plan.offsets[4], 0u);
  EXPECT_EQ(plan.peak_bytes, 256u);
  EXPECT_EQ(plan.total_bytes, 256u);
  // A zero-byte request needs no memory, so its in-place claim is not taken (neither on a real buffer nor
  // on another zero-byte one).
  EXPECT_FALSE(plan.inplace[4]);
  EXPECT_FALSE(plan.inplace[5]);

  const std::vector<BufferRequest> only_zero = {{0, 0, 0}, {0, 0, 3}};
  const MemoryPlan empty = PlanAndCheck(only_zero);
  EXPECT_EQ(empty.peak_bytes, 0u);
  EXPECT_EQ(empty.total_bytes, 0u);
  EXPECT_EQ(PlanMemory(std::span<const BufferRequest>{}).peak_bytes, 0u);
}

TEST(MemoryPlanHand, AlignmentRounding) {
  const std::vector<BufferRequest> rs = {{1, 0, 2}, {1, 0, 2}, {1, 1, 2}};
  MemoryPlan plan = PlanAndCheck(rs, 64);
  EXPECT_EQ(plan.offsets, (std::vector<size_t>{0, 64, 128}));
  EXPECT_EQ(plan.peak_bytes, 192u);
  EXPECT_EQ(plan.total_bytes, 192u);
  plan = PlanAndCheck(rs, 1);
  EXPECT_EQ(plan.offsets, (std::vector<size_t>{0, 1, 2}));
  EXPECT_EQ(plan.peak_bytes, 3u);
  plan = PlanAndCheck({{65, 0, 0}, {64, 0, 0}, {256, 0, 0}}, 256);
  EXPECT_EQ(plan.offsets, (std::vector<size_t>{0, 256, 512}));  // all 256 after rounding: ties by order
  EXPECT_EQ(plan.total_bytes, 768u);
  EXPECT_EQ(plan.peak_bytes, 768u);
}

TEST(MemoryPlanHand, InPlaceNotHonoured) {
  // Wrong last step: request 0 is read last at step 2, so step 1 cannot overwrite it.
  MemoryPlan plan = PlanAndCheck({{256, 0, 2}, {256, 1, 3, 0}});
  EXPECT_FALSE(plan.inplace[1]);
  EXPECT_NE(plan.offsets[0], plan.offsets[1]);
  EXPECT_EQ(plan.peak_bytes, 512u);

  // Too big: the result does not fit in the buffer it would overwrite.
  plan = PlanAndCheck({{256, 0, 1}, {257, 1, 2, 0}});
  EXPECT_FALSE(plan.inplace[1]);
  EXPECT_EQ(plan.peak_bytes, 256u + 320u);
  // Smaller is fine.
  plan = PlanAndCheck({{256, 0, 1}, {255, 1, 2, 0}});
  EXPECT_TRUE(plan.inplace[1]);
  EXPECT_EQ(plan.peak_bytes, 256u);

  // Second claimant: two results of step 1 both claim request 0; only the first gets it.
  plan = PlanAndCheck({{256, 0, 1}, {256, 1, 2, 0}, {256, 1, 2, 0}});
  EXPECT_TRUE(plan.inplace[1]);
  EXPECT_FALSE(plan.inplace[2]);
  EXPECT_EQ(plan.offsets[0], plan.offsets[1]);
  EXPECT_NE(plan.offsets[2], plan.offsets[1]);
  EXPECT_EQ(plan.peak_bytes, 512u);

  // A claim on an in-place buffer that is written and last read in the same step: its predecessor is still
  // live at that step, so sharing it would overlap two live buffers that are not a pair.
  plan = PlanAndCheck({{256, 0, 1}, {256, 1, 1, 0}, {256, 1, 2, 1}});
  EXPECT_TRUE(plan.inplace[1]);
  EXPECT_FALSE(plan.inplace[2]);
  EXPECT_EQ(plan.peak_bytes, 512u);
}

TEST(MemoryPlanHand, Deterministic) {
  std::vector<BufferRequest> rs;
  for (int k = 0; k < 50; ++k) rs.push_back({static_cast<size_t>(64 * (k % 7 + 1)), k % 10, k % 10 + k % 3});
  const MemoryPlan a = PlanMemory(rs), b = PlanMemory(rs);
  EXPECT_EQ(a.offsets, b.offsets);
  EXPECT_EQ(a.peak_bytes, b.peak_bytes);
}

// ---- randomized ---------------------------------------------------------------------------------------

// Independent lifetimes: a start per request, a heavy-tailed length, log-uniform sizes, and in-place claims
// of which some are valid and some are not.
std::vector<BufferRequest> RandomIntervals(std::mt19937_64& rng, int n, int steps) {
  std::uniform_int_distribution<int> start(0, steps - 1);
  std::geometric_distribution<int> length(0.08);
  std::uniform_real_distribution<double> log_size(0.0, 20.0);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<BufferRequest> rs(static_cast<size_t>(n));
  for (auto& r : rs) {
    r.first = start(rng);
    r.last = r.first + (u(rng) < 0.1 ? 0 : length(rng));
    r.bytes = u(rng) < 0.02 ? 0 : static_cast<size_t>(std::exp2(log_size(rng)));
  }
  std::sort(rs.begin(), rs.end(), [](const BufferRequest& a, const BufferRequest& b) { return a.first < b.first; });
  // Requests by last step, to aim claims at buffers that die where the claimant starts.
  std::vector<std::vector<int>> ending(static_cast<size_t>(steps) + 200);
  for (int i = 0; i < n; ++i) {
    BufferRequest& r = rs[static_cast<size_t>(i)];
    const double x = u(rng);
    if (x < 0.15) {
      r.inplace_of = std::uniform_int_distribution<int>(0, std::max(i - 1, 0))(rng);  // mostly not honourable
      if (r.inplace_of >= i) r.inplace_of = -1;
    } else if (x < 0.45 && r.first < static_cast<int>(ending.size()) && !ending[r.first].empty()) {
      const auto& cands = ending[static_cast<size_t>(r.first)];
      r.inplace_of = cands[std::uniform_int_distribution<size_t>(0, cands.size() - 1)(rng)];
    }
    if (r.last < static_cast<int>(ending.size())) ending[static_cast<size_t>(r.last)].push_back(i);
  }
  return rs;
}

// A graph-like trace: step s writes one buffer and reads 1-3 recent ones; a buffer lives until its last
// reader. Half of the steps that read a buffer for the last time with a result of the same size (an
// elementwise op) claim it in place.
std::vector<BufferRequest> RandomGraph(std::mt19937_64& rng, int n) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<BufferRequest> rs(static_cast<size_t>(n));
  std::vector<std::vector<int>> reads(static_cast<size_t>(n));
  size_t stage = 1 << 16;
  for (int s = 0; s < n; ++s) {
    if (u(rng) < 0.02) stage = static_cast<size_t>(std::exp2(10.0 + 10.0 * u(rng)));  // a new resolution stage
    rs[s].first = rs[s].last = s;
    rs[s].bytes = u(rng) < 0.8 ? stage : static_cast<size_t>(static_cast<double>(stage) * (0.25 + 2.0 * u(rng)));
    const int nread = s == 0 ? 0 : 1 + static_cast<int>(u(rng) * 3);
    for (int k = 0; k < nread; ++k) {
      // Mostly the previous step; sometimes a skip connection from further back.
      const int back = u(rng) < 0.7 ? 1 : 1 + static_cast<int>(u(rng) * 40);
      const int j = std::max(0, s - back);
      reads[s].push_back(j);
      rs[j].last = std::max(rs[j].last, s);
    }
  }
  for (int s = 1; s < n; ++s) {
    if (u(rng) < 0.5) continue;
    for (int j : reads[s]) {
      if (rs[j].last == s && rs[s].bytes == rs[j].bytes) {
        rs[s].inplace_of = j;
        break;
      }
    }
  }
  return rs;
}

// peak / lower bound over a set of instances, against both bounds.
struct Ratios {
  double sum[2] = {0, 0}, worst[2] = {0, 0};
  int count = 0;
  // Returns peak / blocks bound.
  double Add(const MemoryPlan& plan, const Bounds& lower) {
    const double peak = static_cast<double>(plan.peak_bytes);
    const double r[2] = {peak / static_cast<double>(lower.blocks), peak / static_cast<double>(lower.requests)};
    for (int k = 0; k < 2; ++k) {
      sum[k] += r[k];
      worst[k] = std::max(worst[k], r[k]);
    }
    ++count;
    return r[0];
  }
  double mean(int k) const { return sum[k] / count; }
  void Print(const char* name) const {
    std::printf("[ %-9s ] peak / lower bound over %d instances: mean %.4f, worst %.4f (blocks bound); "
                "mean %.4f, worst %.4f (requests bound)\n",
                name, count, mean(0), worst[0], mean(1), worst[1]);
  }
};

// The ratios are taken against the blocks bound, which judges placement; against the requests bound, random
// intervals also pay for chains whose members shrink (a block keeps its root's size), which real in-place
// ops (elementwise, same size) do not. Measured over 120 interval seeds: mean 1.031, worst 1.116; over 200
// graph seeds: mean 1.062, worst 1.264 (requests bound for intervals: mean 1.160, worst 1.363). The
// fixed seeds below are checked against bounds with margin, since the distributions of <random> differ
// between standard libraries.
TEST(MemoryPlanRandom, IntervalsKeepContractAndNearLowerBound) {
  Ratios ratios;
  int64_t honoured = 0;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    std::mt19937_64 rng(seed);
    const int n = 1000 + static_cast<int>(seed) * 250;
    const auto rs = RandomIntervals(rng, n, n / 4);
    const size_t alignment = size_t{1} << (seed % 9);  // 1 .. 256
    const MemoryPlan plan = PlanMemory(rs, alignment);
    const double ratio = ratios.Add(plan, CheckPlan(rs, plan, alignment));
    EXPECT_LE(ratio, 1.3) << "seed " << seed;
    honoured += std::count(plan.inplace.begin(), plan.inplace.end(), true);
  }
  ratios.Print("intervals");
  std::printf("[ intervals ] %lld in-place pairs honoured\n", static_cast<long long>(honoured));
  EXPECT_LE(ratios.mean(0), 1.1);
  EXPECT_GT(honoured, 1000);
}

TEST(MemoryPlanRandom, GraphTracesKeepContractAndNearLowerBound) {
  Ratios ratios;
  double with_claims = 0, without_claims = 0;
  for (uint64_t seed = 100; seed < 110; ++seed) {
    std::mt19937_64 rng(seed);
    const auto rs = RandomGraph(rng, 3000);
    const MemoryPlan plan = PlanMemory(rs, 64);
    const double ratio = ratios.Add(plan, CheckPlan(rs, plan, 64));
    EXPECT_LE(ratio, 1.3) << "seed " << seed;
    // The same trace without in-place claims. Greedy placement is a heuristic, so a single trace may come
    // out slightly worse with claims; on the whole they must pay off.
    auto no_claims = rs;
    for (auto& r : no_claims) r.inplace_of = -1;
    with_claims += static_cast<double>(plan.peak_bytes);
    without_claims += static_cast<double>(PlanAndCheck(no_claims).peak_bytes);
  }
  ratios.Print("graph");
  std::printf("[ graph     ] peak with / without in-place claims: %.4f\n", with_claims / without_claims);
  EXPECT_LE(ratios.mean(0), 1.15);
  EXPECT_LT(with_claims, without_claims);
}

TEST(MemoryPlanRandom, TwentyThousandRequestsPlanFast) {
#ifdef NDEBUG
  const int n = 20000;
  const double limit_s = 1.0;
#else
  const int n = 5000;  // unoptimised (sanitizer) builds: the planner is O(n^2) in the worst case
  const double limit_s = 5.0;
#endif
  std::mt19937_64 rng(7);
  std::vector<BufferRequest> graph = RandomGraph(rng, n);
  std::vector<BufferRequest> overlapping(static_cast<size_t>(n));  // the worst case: every block collides
  for (size_t i = 0; i < overlapping.size(); ++i) overlapping[i] = {64 * (i % 100 + 1), 0, 1};
  for (const auto& [name, rs] : {std::pair{"graph", &graph}, std::pair{"overlapping", &overlapping}}) {
    const auto t0 = std::chrono::steady_clock::now();
    const MemoryPlan plan = PlanMemory(*rs);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("[ timing    ] %zu %s requests planned in %.3f s, peak %zu of total %zu bytes\n", rs->size(), name,
                seconds, plan.peak_bytes, plan.total_bytes);
    EXPECT_LT(seconds, limit_s) << name;
    EXPECT_EQ(plan.offsets.size(), rs->size());
    if (rs == &overlapping) {
      EXPECT_EQ(plan.peak_bytes, plan.total_bytes);
    }
  }
}

// ---- errors -------------------------------------------------------------------------------------------

TEST(MemoryPlanErrors, InvalidRequestsNamed) {
  ExpectError([] { PlanMemory(std::vector<BufferRequest>{{64, 0, 1}, {64, 3, 2}}); },
              {"requests[1]", "last step 2", "first step 3"});
  ExpectError([] { PlanMemory(std::vector<BufferRequest>{{64, 0, 1}, {64, 1, 2, 1}}); },
              {"requests[1].inplace_of is 1", "earlier request"});
  ExpectError([] { PlanMemory(std::vector<BufferRequest>{{64, 0, 1}, {64, 1, 2, 5}}); },
              {"requests[1].inplace_of is 5"});
  ExpectError([] { PlanMemory(std::vector<BufferRequest>{{64, 0, 1, -2}}); }, {"requests[0].inplace_of is -2"});
  ExpectError([] { PlanMemory(std::vector<BufferRequest>{{SIZE_MAX - 3, 0, 1}}, 64); },
              {"requests[0]", "overflows", "alignment 64"});
  ExpectError([] { PlanMemory(std::vector<BufferRequest>{{SIZE_MAX / 2, 0, 1}, {SIZE_MAX / 2 + 64, 0, 1}}, 64); },
              {"total size", "requests[1]"});
}

TEST(MemoryPlanErrors, AlignmentMustBePowerOfTwo) {
  const std::vector<BufferRequest> rs = {{64, 0, 1}};
  for (size_t a : {size_t{0}, size_t{3}, size_t{48}, size_t{100}}) {
    ExpectError([&] { PlanMemory(rs, a); }, StatusCode::kInvalidArgument,
                {"alignment must be a power of two", "got " + std::to_string(a)});
  }
  EXPECT_EQ(PlanMemory(rs, 1).peak_bytes, 64u);
  EXPECT_EQ(PlanMemory(rs, 4096).peak_bytes, 4096u);
}

}  // namespace
}  // namespace oneflow::graph
