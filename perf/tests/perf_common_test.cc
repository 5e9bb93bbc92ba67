// Tests of the benchmarks' shared code that needs no communicator: number formats, the exactness
// of the test data under any reduction order, the checker, option parsing and table formatting.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <vector>

#include "perf/common/data_check.h"
#include "perf/common/data_types.h"
#include "perf/common/float_formats.h"
#include "perf/common/options.h"
#include "perf/common/report.h"
#include "perf/common/split_color.h"

namespace weft::perf {
namespace {

TEST(FloatFormats, KnownPatterns) {
  EXPECT_EQ(encodeFloat(1.0, kHalfFormat), 0x3c00u);
  EXPECT_EQ(encodeFloat(-2.0, kHalfFormat), 0xc000u);
  EXPECT_EQ(encodeFloat(65504.0, kHalfFormat), 0x7bffu);
  EXPECT_EQ(encodeFloat(65520.0, kHalfFormat), 0x7c00u);  // rounds up past the largest: infinity
  EXPECT_EQ(encodeFloat(std::ldexp(1.0, -24), kHalfFormat), 0x0001u);  // smallest subnormal
  EXPECT_EQ(encodeFloat(1.0 + std::ldexp(1.0, -11), kHalfFormat), 0x3c00u);  // tie to even
  EXPECT_EQ(encodeFloat(1.0, kBfloat16Format), 0x3f80u);
  EXPECT_EQ(encodeFloat(1.0, kFloat8E4M3Format), 0x38u);
  EXPECT_EQ(encodeFloat(448.0, kFloat8E4M3Format), 0x7eu);
  EXPECT_EQ(encodeFloat(1000.0, kFloat8E4M3Format), 0x7eu);  // no infinity: saturates
  EXPECT_EQ(encodeFloat(-1000.0, kFloat8E4M3Format), 0xfeu);
  EXPECT_EQ(encodeFloat(1.0, kFloat8E5M2Format), 0x3cu);
  EXPECT_EQ(encodeFloat(57344.0, kFloat8E5M2Format), 0x7bu);
  EXPECT_EQ(encodeFloat(1.0e6, kFloat8E5M2Format), 0x7cu);
  EXPECT_EQ(largestFinite(kFloat8E4M3Format), 448.0);
  EXPECT_EQ(largestFinite(kHalfFormat), 65504.0);
  EXPECT_TRUE(std::isnan(decodeFloat(0x7f, kFloat8E4M3Format)));
  EXPECT_TRUE(std::isinf(decodeFloat(0x7c00, kHalfFormat)));
}

TEST(FloatFormats, EveryPatternRoundTrips) {
  for (FloatFormat format : {kHalfFormat, kBfloat16Format, kFloat8E4M3Format, kFloat8E5M2Format}) {
    const uint32_t patterns = 1u << (1 + format.exponentBits + format.mantissaBits);
    for (uint32_t bits = 0; bits < patterns; ++bits) {
      double value = decodeFloat(bits, format);
      if (std::isnan(value)) continue;
      ASSERT_EQ(encodeFloat(value, format), bits) << "pattern " << bits;
    }
  }
}

TEST(FloatFormats, HalfMatchesTheCompiler) {
  // _Float16 conversions round to nearest even in hardware or libgcc: an independent reference.
  for (uint32_t bits = 0; bits < (1u << 16); bits += 7) {
    float f;
    uint32_t floatBits = 0x38000000u + bits * 1021u;  // floats from 2^-15 upward, off the half grid
    std::memcpy(&f, &floatBits, sizeof(f));
    _Float16 h = static_cast<_Float16>(f);
    uint16_t expected;
    std::memcpy(&expected, &h, sizeof(expected));
    ASSERT_EQ(encodeFloat(f, kHalfFormat), expected) << f;
  }
}

// Reduces the ranks' inputs the way a library might: element type arithmetic with one rounding
// per operation, in the rank order given.
struct Reducer {
  DataSpec spec;
  std::vector<std::vector<unsigned char>> inputs;  // per rank
  size_t count;

  double load(int rank, size_t j) const {
    const TypeInfo& info = typeInfo(spec.type);
    const unsigned char* p = inputs[rank].data() + j * info.size;
    uint64_t bits = 0;
    std::memcpy(&bits, p, info.size);
    switch (spec.type) {
      case ncclInt8: return static_cast<int8_t>(bits);
      case ncclUint8: return static_cast<uint8_t>(bits);
      case ncclInt32: return static_cast<int32_t>(bits);
      case ncclUint32: return static_cast<uint32_t>(bits);
      case ncclInt64: return static_cast<double>(static_cast<int64_t>(bits));
      case ncclUint64: return static_cast<double>(bits);
      case ncclFloat32: { float f; std::memcpy(&f, p, 4); return f; }
      case ncclFloat64: { double d; std::memcpy(&d, p, 8); return d; }
      case ncclFloat16: return decodeFloat(static_cast<uint32_t>(bits), kHalfFormat);
      case ncclBfloat16: return decodeFloat(static_cast<uint32_t>(bits), kBfloat16Format);
      case ncclFloat8e4m3: return decodeFloat(static_cast<uint32_t>(bits), kFloat8E4M3Format);
      case ncclFloat8e5m2: return decodeFloat(static_cast<uint32_t>(bits), kFloat8E5M2Format);
      default: return 0;
    }
  }
  // Rounds to the element type (integers: the test data never leaves their range).
  double round(double v) const {
    switch (spec.type) {
      case ncclFloat32: return static_cast<float>(v);
      case ncclFloat16: return decodeFloat(encodeFloat(v, kHalfFormat), kHalfFormat);
      case ncclBfloat16: return decodeFloat(encodeFloat(v, kBfloat16Format), kBfloat16Format);
      case ncclFloat8e4m3: return decodeFloat(encodeFloat(v, kFloat8E4M3Format), kFloat8E4M3Format);
      case ncclFloat8e5m2: return decodeFloat(encodeFloat(v, kFloat8E5M2Format), kFloat8E5M2Format);
      default: return v;
    }
  }
  void store(std::vector<unsigned char>* out, size_t j, double v) const {
    const TypeInfo& info = typeInfo(spec.type);
    unsigned char* p = out->data() + j * info.size;
    uint64_t bits = 0;
    switch (spec.type) {
      case ncclFloat32: { float f = static_cast<float>(v); std::memcpy(p, &f, 4); return; }
      case ncclFloat64: std::memcpy(p, &v, 8); return;
      case ncclFloat16: bits = encodeFloat(v, kHalfFormat); break;
      case ncclBfloat16: bits = encodeFloat(v, kBfloat16Format); break;
      case ncclFloat8e4m3: bits = encodeFloat(v, kFloat8E4M3Format); break;
      case ncclFloat8e5m2: bits = encodeFloat(v, kFloat8E5M2Format); break;
      case ncclUint64: bits = static_cast<uint64_t>(v); break;
      default: bits = static_cast<uint64_t>(static_cast<int64_t>(v)); break;
    }
    std::memcpy(p, &bits, info.size);
  }

  int64_t loadInteger(int rank, size_t j) const {
    const TypeInfo& info = typeInfo(spec.type);
    uint64_t bits = 0;
    std::memcpy(&bits, inputs[rank].data() + j * info.size, info.size);
    switch (spec.type) {
      case ncclInt8: return static_cast<int8_t>(bits);
      case ncclInt32: return static_cast<int32_t>(bits);
      default: return static_cast<int64_t>(bits);
    }
  }

  // Integer types: 64-bit wrapping arithmetic, in the given order.
  std::vector<unsigned char> reduceIntegers(const std::vector<int>& order) const {
    const TypeInfo& info = typeInfo(spec.type);
    std::vector<unsigned char> out(count * info.size);
    for (size_t j = 0; j < count; ++j) {
      auto term = [&](int r) {
        int64_t v = loadInteger(r, j);
        return spec.op == TestOp::kMulSum ? v * (1 + (r & 1)) : v;
      };
      int64_t acc = term(order[0]);
      for (size_t k = 1; k < order.size(); ++k) {
        int64_t v = term(order[k]);
        switch (spec.op) {
          case TestOp::kSum: case TestOp::kAvg: case TestOp::kMulSum:
            acc = static_cast<int64_t>(static_cast<uint64_t>(acc) + static_cast<uint64_t>(v));
            break;
          case TestOp::kProd:
            acc = static_cast<int64_t>(static_cast<uint64_t>(acc) * static_cast<uint64_t>(v));
            break;
          case TestOp::kMax: acc = info.kind == NumberKind::kUnsignedInteger
                                       ? static_cast<int64_t>(std::max<uint64_t>(acc, v)) : std::max(acc, v);
            break;
          case TestOp::kMin: acc = info.kind == NumberKind::kUnsignedInteger
                                       ? static_cast<int64_t>(std::min<uint64_t>(acc, v)) : std::min(acc, v);
            break;
        }
      }
      if (spec.op == TestOp::kAvg) {
        acc = info.kind == NumberKind::kUnsignedInteger
                  ? static_cast<int64_t>(static_cast<uint64_t>(acc) / static_cast<uint64_t>(spec.nranks))
                  : acc / spec.nranks;
      }
      uint64_t bits = static_cast<uint64_t>(acc);
      std::memcpy(out.data() + j * info.size, &bits, info.size);
    }
    return out;
  }

  // premultiply: avg as a sum of terms scaled by 1/n (each rounded), else sum then divide.
  std::vector<unsigned char> reduce(const std::vector<int>& order, bool premultiply) const {
    const TypeInfo& info = typeInfo(spec.type);
    const bool floating = info.kind == NumberKind::kFloat;
    if (!floating) return reduceIntegers(order);
    const double inverse = round(1.0 / spec.nranks);
    std::vector<unsigned char> out(count * info.size);
    for (size_t j = 0; j < count; ++j) {
      auto term = [&](int r) {
        double v = load(r, j);
        if (spec.op == TestOp::kMulSum) {
          alignas(8) unsigned char scalar[8];
          writePreMulScalar(spec.type, r, scalar);
          double s = 0;
          std::vector<std::vector<unsigned char>> one{std::vector<unsigned char>(scalar, scalar + 8)};
          Reducer scalarReader{spec, one, 1};
          s = scalarReader.load(0, 0);
          return round(v * s);
        }
        if (spec.op == TestOp::kAvg && floating && premultiply) return round(v * inverse);
        return v;
      };
      double acc = term(order[0]);
      for (size_t k = 1; k < order.size(); ++k) {
        double v = term(order[k]);
        switch (spec.op) {
          case TestOp::kSum: case TestOp::kAvg: case TestOp::kMulSum: acc = round(acc + v); break;
          case TestOp::kProd: acc = round(acc * v); break;
          case TestOp::kMax: acc = std::max(acc, v); break;
          case TestOp::kMin: acc = std::min(acc, v); break;
        }
      }
      if (spec.op == TestOp::kAvg && !(floating && premultiply)) {
        acc = floating ? round(acc / spec.nranks) : std::trunc(acc / spec.nranks);
      }
      store(&out, j, acc);
    }
    return out;
  }
};

class DataCheckTest : public ::testing::TestWithParam<int> {};

TEST_P(DataCheckTest, AnyOrderGivesTheExpectedResult) {
  const int nranks = GetParam();
  const size_t count = 257;
  for (const TypeInfo& type : allTypes()) {
    for (const OpInfo& op : allOps()) {
      DataSpec spec{type.type, op.op, nranks, 7};
      Reducer reducer{spec, {}, count};
      for (int r = 0; r < nranks; ++r) {
        reducer.inputs.emplace_back(count * type.size);
        fillInput(reducer.inputs.back().data(), count, 1000, spec, r);
      }
      std::vector<unsigned char> expected(count * type.size);
      fillReduced(expected.data(), count, 1000, spec);

      std::vector<int> forward(nranks);
      std::iota(forward.begin(), forward.end(), 0);
      std::vector<int> backward(forward.rbegin(), forward.rend());
      std::vector<int> shuffled = forward;
      std::rotate(shuffled.begin(), shuffled.begin() + nranks / 2, shuffled.end());
      for (const auto& order : {forward, backward, shuffled}) {
        for (bool premultiply : {false, true}) {
          std::vector<unsigned char> actual = reducer.reduce(order, premultiply);
          EXPECT_EQ(countWrong(actual.data(), expected.data(), count, spec), 0)
              << type.name << " " << op.name << " nranks " << nranks << " premultiply " << premultiply;
        }
      }

      // Two corrupted elements are both found.
      std::vector<unsigned char> actual = reducer.reduce(forward, false);
      actual[3 * type.size] ^= 0x40;
      actual[200 * type.size + type.size - 1] ^= 0x60;
      EXPECT_EQ(countWrong(actual.data(), expected.data(), count, spec), 2) << type.name << " " << op.name;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(RankCounts, DataCheckTest, ::testing::Values(1, 2, 3, 4, 5, 8, 24, 100));

TEST(DataCheck, InputsVaryWithRankSeedAndIndex) {
  DataSpec spec{ncclInt32, TestOp::kSum, 4, 1};
  std::vector<int32_t> a(64), b(64), c(64), d(64);
  fillInput(a.data(), 64, 0, spec, 0);
  fillInput(b.data(), 64, 0, spec, 1);
  fillInput(c.data(), 64, 64, spec, 0);
  spec.seed = 2;
  fillInput(d.data(), 64, 0, spec, 0);
  EXPECT_NE(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(a, d);
}

TEST(Options, SizesAndDefaults) {
  EXPECT_EQ(parseSize("8"), 8.0);
  EXPECT_EQ(parseSize("1K"), 1024.0);
  EXPECT_EQ(parseSize("32M"), 32.0 * 1024 * 1024);
  EXPECT_EQ(parseSize("2g"), 2.0 * 1024 * 1024 * 1024);
  EXPECT_LT(parseSize("12X"), 0);
  EXPECT_LT(parseSize("abc"), 0);

  Options options;
  char program[] = "all_reduce_perf";
  char* argv[] = {program, nullptr};
  ParseOutcome outcome = parseOptions(1, argv, &options);
  EXPECT_TRUE(outcome.run);
  EXPECT_EQ(options.minBytes, 32u << 20);
  EXPECT_EQ(options.maxBytes, 32u << 20);
  EXPECT_EQ(options.iters, 20);
  EXPECT_EQ(options.warmupIters, 1);
  EXPECT_EQ(options.check, 1);
  EXPECT_EQ(options.aggregation, TimeAggregation::kAverage);
}

TEST(Options, FlagsAndIgnoredOnes) {
  Options options;
  std::vector<std::string> args = {"all_reduce_perf", "-b", "8", "-e", "128M", "-f", "2", "-t", "4",
                                   "-o", "all", "-d", "bfloat16", "-G", "5", "-G", "1", "-y", "1"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  ParseOutcome outcome = parseOptions(static_cast<int>(args.size()), argv.data(), &options);
  ASSERT_TRUE(outcome.run);
  EXPECT_EQ(options.minBytes, 8u);
  EXPECT_EQ(options.maxBytes, 128u << 20);
  EXPECT_EQ(options.stepFactor, 2u);
  EXPECT_EQ(options.nThreads, 4);
  EXPECT_EQ(options.opIndex, -1);
  EXPECT_STREQ(allTypes()[options.typeIndex].name, "bfloat16");
  ASSERT_EQ(options.notes.size(), 2u);  // -G once, -y once
}

ParseOutcome parse(std::vector<std::string> args, Options* options) {
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  return parseOptions(static_cast<int>(args.size()), argv.data(), options);
}

TEST(Options, NewerNcclTestsFlags) {
  Options options;
  ASSERT_TRUE(parse({"alltoall_perf", "-u", "3", "-I", "1", "-J", "out.json", "-z", "2", "-M", "1",
                     "-x", "1", "-D", "0", "-V", "16", "-R", "1"},
                    &options)
                  .run);
  EXPECT_EQ(options.unalign, 3);
  EXPECT_EQ(options.perIterationTiming, 1);
  EXPECT_EQ(options.outputFile, "out.json");
  EXPECT_EQ(options.blocking, 2);
  EXPECT_EQ(options.localRegister, 1);
  EXPECT_EQ(options.notes.size(), 4u);  // -M, -x, -D, -V: GPU only

  Options longNames;
  ASSERT_TRUE(parse({"alltoall_perf", "--unalign", "1", "--per_iter_timing", "1", "--output_file", "a.json",
                     "--memory", "1", "--memory_report", "0"},
                    &longNames)
                  .run);
  EXPECT_EQ(longNames.unalign, 1);
  EXPECT_EQ(longNames.perIterationTiming, 1);
  EXPECT_EQ(longNames.outputFile, "a.json");
  EXPECT_EQ(longNames.notes.size(), 1u);

  Options defaults;
  ASSERT_TRUE(parse({"alltoall_perf"}, &defaults).run);
  EXPECT_EQ(defaults.unalign, 0);
  EXPECT_EQ(defaults.perIterationTiming, 0);
  EXPECT_TRUE(defaults.outputFile.empty());
  EXPECT_EQ(defaults.blocking, 0);
}

TEST(Options, BadValues) {
  Options options;
  EXPECT_TRUE(parse({"all_reduce_perf", "-I", "5"}, &options).run);
  EXPECT_EQ(options.perIterationTiming, 0);  // nccl-tests disables it and goes on
  for (std::vector<std::string> args :
       {std::vector<std::string>{"all_reduce_perf", "-z", "3"}, {"all_reduce_perf", "-u", "-1"},
        {"all_reduce_perf", "-a", "4"}, {"all_reduce_perf", "-R", "3"}, {"all_reduce_perf", "-g", "2"},
        {"all_reduce_perf", "-b", "2M", "-e", "1M"}, {"all_reduce_perf", "-Q", "1"}}) {
    Options bad;
    ParseOutcome outcome = parse(args, &bad);
    EXPECT_FALSE(outcome.run) << args[1];
    EXPECT_EQ(outcome.exitCode, 255) << args[1];
  }
}

TEST(SplitColor, MaskAndOperations) {
  auto color = [](int proc, const char* mask, const char* split) {
    int c = -1;
    std::string error;
    EXPECT_TRUE(splitColor(proc, mask, split, &c, &error)) << error;
    return c;
  };
  EXPECT_EQ(color(5, nullptr, nullptr), 0);
  EXPECT_EQ(color(5, "", ""), 0);
  EXPECT_EQ(color(7, "0x3", nullptr), 3);
  EXPECT_EQ(color(6, "3", nullptr), 2);
  EXPECT_EQ(color(22, "10", nullptr), 16);      // hexadecimal, 0x or not
  EXPECT_EQ(color(7, "0x1", "MOD4"), 1);        // the mask wins
  EXPECT_EQ(color(6, nullptr, "AND 0x3"), 2);
  EXPECT_EQ(color(6, nullptr, "&1"), 0);
  EXPECT_EQ(color(4, nullptr, "or0b1"), 5);
  EXPECT_EQ(color(4, nullptr, "|1"), 5);
  EXPECT_EQ(color(7, nullptr, "MOD 3"), 1);
  EXPECT_EQ(color(7, nullptr, "%2"), 1);
  EXPECT_EQ(color(7, nullptr, "DIV2"), 3);
  EXPECT_EQ(color(7, nullptr, "/4"), 1);

  int c = 0;
  std::string error;
  EXPECT_FALSE(splitColor(3, nullptr, "XOR1", &c, &error));
  EXPECT_NE(error.find("NCCL_TESTS_SPLIT=XOR1"), std::string::npos);
  EXPECT_FALSE(splitColor(3, nullptr, "MOD0", &c, &error));
  EXPECT_FALSE(splitColor(3, nullptr, "AND x", &c, &error));
  EXPECT_FALSE(splitColor(3, "zz", nullptr, &c, &error));
}

TEST(Report, FittedNumbersAsNcclTests) {
  EXPECT_EQ(formatFitted(0.3, 7), "   0.30");
  EXPECT_EQ(formatFitted(1234.5, 7), "1234.50");
  EXPECT_EQ(formatFitted(12345.4, 7), "12345.4");
  EXPECT_EQ(formatFitted(123456.0, 7), " 123456");
  EXPECT_EQ(formatFitted(1234567.0, 7), "1234567");
  EXPECT_EQ(formatFitted(12345678.0, 7), "1.2e+07");
  EXPECT_EQ(formatFitted(2491.9, 6), "2491.9");
  EXPECT_EQ(formatFitted(11.62, 6), " 11.62");
  EXPECT_EQ(formatFitted(123456.0, 6), "123456");
  EXPECT_EQ(formatFitted(1234567.0, 6), " 1e+06");
}

}  // namespace
}  // namespace weft::perf
