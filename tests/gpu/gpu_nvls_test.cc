// The NVLS allreduce (src/device/nvls_plan.h) through the public API. Exact results for every
// type and op the switches reduce need two or more GPUs that report multicast, one rank each
// (ncclCommInitAll over every GPU): skipped, saying why, elsewhere; a multicast team that the
// verdict allowed but that could not be made is a failure, not a skip. Where NVLS cannot serve
// (ranks sharing one GPU), NCCL_ALGO=nvls is a clear error naming why.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "nccl.h"
#include "tests/gpu/cuda_assert.h"
#include "tests/gpu/gpu_presence.h"
#include "tests/harness/comm_clique.h"
#include "tests/harness/deadline_guard.h"
#include "tests/harness/scoped_env.h"

namespace weft::gpu_tests {
namespace {

using harness::ncclSucceeded;

const std::chrono::seconds kDeadline = gpuTestDeadline(std::chrono::seconds{120});
// At least three 256 KiB pieces for each of 16 blocks in every type (the 2-byte ones too), so
// blocks reuse their areas, and a tail that fills no 16-byte word.
constexpr size_t kCount = 3 * 16 * (256 * 1024 / 2) + 1;

// Rank r's element i: small integers, exact in every type (sums of 8 ranks stay within 8 bits).
double inputValue(int rank, size_t i, bool isSigned) {
  const double value = static_cast<double>((i * 7 + static_cast<size_t>(rank) * 3) % 11);
  return isSigned ? value - 5 : value;
}

struct TypeCase {
  ncclDataType_t type;
  size_t bytes;
  bool isSigned;
  bool floatMinMax;  // whether the switches take min and max of it (not float and double)
  const char* name;
};

const TypeCase kTypes[] = {
    {ncclInt32, 4, true, true, "int32"},    {ncclUint32, 4, false, true, "uint32"},
    {ncclInt64, 8, true, true, "int64"},    {ncclUint64, 8, false, true, "uint64"},
    {ncclFloat16, 2, true, true, "half"},   {ncclBfloat16, 2, true, true, "bfloat16"},
    {ncclFloat32, 4, true, false, "float"}, {ncclFloat64, 8, true, false, "double"},
};

template <class T>
void store(T value, char* out) {
  std::memcpy(out, &value, sizeof(T));
}

// `value` in `type`'s encoding at `out`.
void encode(ncclDataType_t type, double value, char* out) {
  switch (type) {
    case ncclInt32: return store(static_cast<int32_t>(value), out);
    case ncclUint32: return store(static_cast<uint32_t>(value), out);
    case ncclInt64: return store(static_cast<int64_t>(value), out);
    case ncclUint64: return store(static_cast<uint64_t>(value), out);
    case ncclFloat16: return store(__double2half(value), out);
    case ncclBfloat16: return store(__double2bfloat16(value), out);
    case ncclFloat32: return store(static_cast<float>(value), out);
    default: return store(value, out);
  }
}

class NvlsAllReduce : public ::testing::Test {
 protected:
  void TearDown() override {
    for (size_t r = 0; r < comms_.size(); ++r) {
      (void)cudaSetDevice(static_cast<int>(r));
      if (r < streams_.size()) (void)cudaStreamSynchronize(streams_[r]);
      if (comms_[r] != nullptr) (void)ncclCommDestroy(comms_[r]);
    }
    for (size_t r = 0; r < buffers_.size(); ++r) {
      (void)cudaSetDevice(static_cast<int>(r));
      (void)cudaFree(buffers_[r]);
      (void)cudaFree(outputs_[r]);
      (void)cudaStreamDestroy(streams_[r]);
    }
  }

  // One rank per GPU, each GPU in use before init (as a program's cudaSetDevice leaves it).
  void makeRanks(const std::vector<int>& devices) {
    for (int device : devices) {
      ASSERT_CUDA(cudaSetDevice(device));
      ASSERT_CUDA(cudaFree(nullptr));
    }
    comms_.resize(devices.size());
    ASSERT_TRUE(ncclSucceeded(ncclCommInitAll(comms_.data(), static_cast<int>(devices.size()), devices.data())));
    for (int device : devices) {
      ASSERT_CUDA(cudaSetDevice(device));
      cudaStream_t stream = nullptr;
      ASSERT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
      streams_.push_back(stream);
      void* memory = nullptr;
      ASSERT_CUDA(cudaMalloc(&memory, kCount * 8));
      buffers_.push_back(static_cast<char*>(memory));
      ASSERT_CUDA(cudaMalloc(&memory, kCount * 8 + 16));
      outputs_.push_back(static_cast<char*>(memory));
    }
  }

  std::vector<ncclComm_t> comms_;
  std::vector<cudaStream_t> streams_;
  std::vector<char*> buffers_;
  std::vector<char*> outputs_;  // out of place, one element past the start (no 16-byte alignment)
};

TEST_F(NvlsAllReduce, IsExactForEveryTypeAndOpTheSwitchesReduce) {
  SKIP_WITHOUT_GPU();
  int gpus = 0;
  ASSERT_CUDA(cudaGetDeviceCount(&gpus));
  if (gpus < 2) GTEST_SKIP() << "NVLS needs two or more GPUs on NVSwitches; this machine has " << gpus;
  harness::ScopedEnv algo("NCCL_ALGO", "nvls");
  std::vector<int> devices(gpus);
  for (int d = 0; d < gpus; ++d) devices[d] = d;
  makeRanks(devices);
  const int n = gpus;
  harness::DeadlineGuard guard(kDeadline, "NVLS allreduces");
  for (const TypeCase& t : kTypes) {
    for (ncclRedOp_t op : {ncclSum, ncclMin, ncclMax}) {
      if (op != ncclSum && !t.floatMinMax) continue;
      std::vector<std::vector<char>> inputs(n, std::vector<char>(kCount * t.bytes));
      for (int r = 0; r < n; ++r) {
        for (size_t i = 0; i < kCount; ++i) encode(t.type, inputValue(r, i, t.isSigned), &inputs[r][i * t.bytes]);
        ASSERT_CUDA(cudaSetDevice(r));
        ASSERT_CUDA(cudaMemcpy(buffers_[r], inputs[r].data(), kCount * t.bytes, cudaMemcpyHostToDevice));
      }
      // Sum and max in place; min out of place into memory the kernel must copy piecewise.
      const bool inPlace = op != ncclMin;
      auto output = [&](int r) { return inPlace ? buffers_[r] : outputs_[r] + t.bytes; };
      ASSERT_EQ(ncclGroupStart(), ncclSuccess);
      ncclResult_t result = ncclSuccess;
      for (int r = 0; r < n && result == ncclSuccess; ++r) {
        result = ncclAllReduce(buffers_[r], output(r), kCount, t.type, op, comms_[r], streams_[r]);
      }
      const ncclResult_t ended = ncclGroupEnd();
      if (result == ncclInvalidUsage || ended == ncclInvalidUsage) {
        const std::string why = ncclGetLastError(comms_[0]);
        ASSERT_EQ(why.find("could not be made"), std::string::npos) << why;
        GTEST_SKIP() << why;
      }
      ASSERT_EQ(result, ncclSuccess) << ncclGetLastError(comms_[0]);
      ASSERT_EQ(ended, ncclSuccess) << ncclGetLastError(comms_[0]);
      // The same on every rank: encoded once.
      std::vector<char> want(kCount * t.bytes);
      for (size_t i = 0; i < kCount; ++i) {
        double expected = inputValue(0, i, t.isSigned);
        for (int q = 1; q < n; ++q) {
          const double v = inputValue(q, i, t.isSigned);
          expected = op == ncclSum ? expected + v : op == ncclMin ? std::min(expected, v) : std::max(expected, v);
        }
        encode(t.type, expected, &want[i * t.bytes]);
      }
      std::vector<char> got(kCount * t.bytes);
      for (int r = 0; r < n; ++r) {
        ASSERT_CUDA(cudaSetDevice(r));
        ASSERT_CUDA(cudaStreamSynchronize(streams_[r]));
        ASSERT_CUDA(cudaMemcpy(got.data(), output(r), got.size(), cudaMemcpyDeviceToHost));
        if (got == want) continue;
        size_t i = 0;
        while (std::memcmp(&got[i * t.bytes], &want[i * t.bytes], t.bytes) == 0) ++i;
        FAIL() << t.name << " op " << op << (inPlace ? " in place" : " out of place") << ", rank " << r
               << ": element " << i << " of " << kCount << " is wrong";
      }
    }
  }
}

TEST_F(NvlsAllReduce, OnlyNvlsWhereRanksShareAGpuIsAClearError) {
  SKIP_WITHOUT_GPU();
  harness::ScopedEnv algo("NCCL_ALGO", "nvls");
  makeRanks({0, 0});
  if (HasFatalFailure()) return;
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ncclResult_t first = ncclSuccess;
  for (int r = 0; r < 2; ++r) {
    const ncclResult_t result =
        ncclAllReduce(buffers_[r], buffers_[r], 1024, ncclFloat32, ncclSum, comms_[r], streams_[r]);
    if (first == ncclSuccess) first = result;
  }
  const ncclResult_t ended = ncclGroupEnd();
  EXPECT_EQ(first == ncclSuccess ? ended : first, ncclInvalidUsage);
  const std::string why = ncclGetLastError(comms_[0]);
  EXPECT_NE(why.find("NCCL_ALGO allows only NVLS"), std::string::npos) << why;
  EXPECT_NE(why.find("share the GPU"), std::string::npos) << why;
}

}  // namespace
}  // namespace weft::gpu_tests
