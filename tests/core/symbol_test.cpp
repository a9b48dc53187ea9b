// Symbol<T>: interning gives one address per distinct value, across threads.
#include "core/common/symbol.h"

#include <latch>
#include <set>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include <gtest/gtest.h>

namespace oneflow {
namespace {

// A value type of our own, so that its intern table holds only what these tests put there.
struct Point {
  int x = 0;
  int y = 0;
  friend bool operator==(const Point&, const Point&) = default;
};

}  // namespace
}  // namespace oneflow

template <>
struct std::hash<oneflow::Point> {
  size_t operator()(const oneflow::Point& p) const noexcept {
    return std::hash<int>()(p.x) * 31u + std::hash<int>()(p.y);
  }
};

namespace oneflow {
namespace {

TEST(Symbol, EqualValuesShareOneAddress) {
  const std::string a = "float32";
  const std::string b = std::string("float") + "32";  // a different std::string object
  ASSERT_NE(&a, &b);
  Symbol<std::string> sa(a), sb(b);
  EXPECT_EQ(sa.get(), sb.get());
  EXPECT_TRUE(sa == sb);
  EXPECT_EQ(*sa, "float32");
  EXPECT_EQ(sa->size(), 7u);
  // The interned value is a copy owned by the table, not the argument.
  EXPECT_NE(sa.get(), &a);
  EXPECT_NE(sa.get(), &b);
}

TEST(Symbol, DifferentValuesDifferentAddresses) {
  Symbol<std::string> a("int32"), b("int64"), c("int32 ");
  EXPECT_NE(a.get(), b.get());
  EXPECT_NE(a.get(), c.get());
  EXPECT_FALSE(a == b);
  EXPECT_TRUE(a != b);
  EXPECT_EQ(*a, "int32");
  EXPECT_EQ(*b, "int64");
}

TEST(Symbol, AddressStableWhileTableGrows) {
  // Force many rehashes of the intern table; the first symbol's address must not move.
  const Symbol<Point> first(Point{-1, -1});
  std::vector<Symbol<Point>> all;
  for (int i = 0; i < 5000; ++i) all.push_back(SymbolOf(Point{i, 7}));
  EXPECT_EQ(SymbolOf(Point{-1, -1}).get(), first.get());
  for (int i = 0; i < 5000; ++i) {
    const Symbol<Point> again = SymbolOf(Point{i, 7});
    ASSERT_EQ(again.get(), all[static_cast<size_t>(i)].get()) << i;
    ASSERT_EQ(again->x, i);
  }
}

TEST(Symbol, NullSymbol) {
  Symbol<std::string> null;
  EXPECT_FALSE(static_cast<bool>(null));
  EXPECT_EQ(null.get(), nullptr);
  EXPECT_TRUE(null == Symbol<std::string>());
  Symbol<std::string> s("x");
  EXPECT_TRUE(static_cast<bool>(s));
  EXPECT_FALSE(null == s);
}

TEST(Symbol, ManyThreadsGetOneAddressPerValue) {
  // Thread t interns values t*500 .. t*500+999 (mod kValues): each value is wanted by two threads, and
  // most interns insert a new value, so inserts and rehashes race with each other.
  constexpr int kThreads = 8, kInterns = 1000, kValues = 4000;
  std::vector<std::vector<const Point*>> seen(kThreads, std::vector<const Point*>(kInterns));
  std::latch start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      for (int i = 0; i < kInterns; ++i) {
        const int v = (t * 500 + i) % kValues;
        seen[static_cast<size_t>(t)][static_cast<size_t>(i)] = SymbolOf(Point{v, 1000 + v}).get();
      }
    });
  }
  for (auto& th : threads) th.join();

  std::vector<const Point*> address_of(kValues, nullptr);
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kInterns; ++i) {
      const int v = (t * 500 + i) % kValues;
      const Point* p = seen[static_cast<size_t>(t)][static_cast<size_t>(i)];
      ASSERT_NE(p, nullptr);
      ASSERT_EQ(p->x, v);
      ASSERT_EQ(p->y, 1000 + v);
      if (address_of[static_cast<size_t>(v)] == nullptr) address_of[static_cast<size_t>(v)] = p;
      ASSERT_EQ(p, address_of[static_cast<size_t>(v)]) << "value " << v << " thread " << t;
    }
  }
  std::set<const Point*> distinct;
  for (const Point* p : address_of) {
    ASSERT_NE(p, nullptr);
    distinct.insert(p);
  }
  EXPECT_EQ(distinct.size(), static_cast<size_t>(kValues));
  // And a later intern from this thread agrees with them.
  EXPECT_EQ(SymbolOf(Point{5, 1005}).get(), address_of[5]);
}

TEST(Symbol, HashIsPointerHashAndConsistent) {
  Symbol<std::string> a("hash-a"), a2(std::string("hash-a")), b("hash-b");
  std::hash<Symbol<std::string>> h;
  EXPECT_EQ(h(a), h(a2));
  EXPECT_EQ(h(a), std::hash<const std::string*>()(a.get()));
  EXPECT_EQ(h(b), std::hash<const std::string*>()(b.get()));
  std::unordered_set<Symbol<std::string>> set{a, a2, b};
  EXPECT_EQ(set.size(), 2u);
  EXPECT_EQ(set.count(Symbol<std::string>("hash-a")), 1u);
  EXPECT_EQ(set.count(Symbol<std::string>("hash-c")), 0u);
}

TEST(Symbol, FromInternedRoundTrip) {
  Symbol<std::string> s("round-trip");
  const std::string* raw = s.get();
  Symbol<std::string> back = Symbol<std::string>::FromInterned(raw);
  EXPECT_TRUE(back == s);
  EXPECT_EQ(back.get(), raw);
  EXPECT_EQ(*back, "round-trip");
  EXPECT_EQ(std::hash<Symbol<std::string>>()(back), std::hash<Symbol<std::string>>()(s));
  EXPECT_FALSE(static_cast<bool>(Symbol<std::string>::FromInterned(nullptr)));
}

}  // namespace
}  // namespace oneflow
