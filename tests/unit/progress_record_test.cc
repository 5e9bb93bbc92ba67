#include "src/core/progress_record.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "algorithms/collective.h"
#include "algorithms/datatype.h"

namespace weft::core {
namespace {

TEST(ProgressRecord, ALaunchOnTheGpuIsReportedAsTheLastCallLaunched) {
  ProgressRecord* record = acquireProgressRecord(0xabc, 1, 4);
  ASSERT_NE(record, nullptr);
  recordCall(record, ProgressState::kLaunched, static_cast<int>(algorithms::Collective::kAllReduce),
             static_cast<int>(algorithms::DataType::kFloat32), 1024, 17);
  EXPECT_EQ(describeProgress(*record), "rank 1/4 comm 0xabc: AllReduce #17 (1024 x float): the last call launched on "
                                       "the GPU");
  recordCall(record, ProgressState::kIdle, static_cast<int>(algorithms::Collective::kAllReduce),
             static_cast<int>(algorithms::DataType::kFloat32), 1024, 17);
  EXPECT_EQ(describeProgress(*record), "rank 1/4 comm 0xabc: no call in progress (last: AllReduce #17)");
  releaseProgressRecord(record);
}


// A block's record in the middle of one of its waits.
GpuBlockProgress waitingBlock(uint64_t kernel, BlockActivity activity, int peer, int channel, uint64_t seen,
                              uint64_t wanted) {
  GpuBlockProgress block;
  block.kernel = kernel;
  block.activity = static_cast<uint32_t>(activity);
  block.peer = peer;
  block.channel = channel;
  block.lane = 1;
  block.step = 2;
  block.steps = 5;
  block.piece = 9;
  block.seen = seen;
  block.wanted = wanted;
  return block;
}

GpuBlockProgress blockIn(uint64_t kernel, BlockActivity activity) {
  GpuBlockProgress block;
  block.kernel = kernel;
  block.activity = static_cast<uint32_t>(activity);
  return block;
}

// What dumpProgress writes.
std::string dumpText() {
  int pipeEnds[2];
  if (pipe(pipeEnds) != 0) return "pipe failed";
  dumpProgress(pipeEnds[1]);  // a few lines: less than the pipe holds
  close(pipeEnds[1]);
  std::string dump;
  char chunk[4096];
  for (ssize_t got; (got = read(pipeEnds[0], chunk, sizeof(chunk))) > 0;) dump.append(chunk, static_cast<size_t>(got));
  close(pipeEnds[0]);
  return dump;
}

class GpuBlocksReport : public ::testing::Test {
 protected:
  void SetUp() override {
    record_ = acquireProgressRecord(0x5f, 0, 2);
    ASSERT_NE(record_, nullptr);
  }
  void TearDown() override {
    attachGpuBlocks(record_, nullptr);  // before blocks_ goes
    releaseProgressRecord(record_);
  }

  // Attaches kRecordedBlocks records, the first of them `first`, the rest never used.
  void attach(const std::vector<GpuBlockProgress>& first) {
    blocks_.assign(kRecordedBlocks, GpuBlockProgress{});
    std::copy(first.begin(), first.end(), blocks_.begin());
    attachGpuBlocks(record_, blocks_.data());
  }

  ProgressRecord* record_ = nullptr;
  std::vector<GpuBlockProgress> blocks_;
};

TEST_F(GpuBlocksReport, NamesEveryBlockNotDoneWithTheLatestKernelAndWhatItWaitsFor) {
  attach({
      blockIn(7, BlockActivity::kDone),
      waitingBlock(7, BlockActivity::kReceiving, 1, 0, 4, 5),
      blockIn(6, BlockActivity::kDone),
      waitingBlock(7, BlockActivity::kSending, 3, 1, 12, 13),
      blockIn(7, BlockActivity::kRunning),
      blockIn(0, BlockActivity::kNone),
      waitingBlock(5, BlockActivity::kSending, 0, 0, 2, 3),  // a replayed graph's kernel, numbered at capture
      waitingBlock(7, BlockActivity::kReceiving, 2, 0, 0, 1),  // a record past the kernel's blocks
  });
  recordKernel(record_, 7, 7);
  EXPECT_EQ(describeGpuBlocks(*record_),
            "GPU kernel 7, 7 blocks: 1 done, 2 waiting, 1 running, 3 not started\n"
            "GPU block 1 of kernel 7: lane 1 step 3/5 piece 9: waiting to receive from rank 1 on channel 0 (posted 4, "
            "needs 5)\n"
            "GPU block 2: not in kernel 7 yet (last: kernel 6, done)\n"
            "GPU block 3 of kernel 7: lane 1 step 3/5 piece 9: waiting for a free slot to send to rank 3 on channel "
            "1 (released 12, needs 13)\n"
            "GPU block 4 of kernel 7: running\n"
            "GPU block 5: not in kernel 7 yet (last: none)\n"
            "GPU block 6: not in kernel 7 yet (last: kernel 5, lane 1 step 3/5 piece 9: waiting for a free slot to "
            "send to rank 0 on channel 0 (released 2, needs 3))\n");
}

TEST_F(GpuBlocksReport, SaysWhatLowLatencyDirectAndNvlsWaitsAreFor) {
  attach({
      waitingBlock(3, BlockActivity::kReceivingLine, 1, 2, 8, 9),
      waitingBlock(3, BlockActivity::kArriving, 2, -1, 10, 11),
      waitingBlock(3, BlockActivity::kFinishing, 0, -1, 10, 11),
      waitingBlock(3, BlockActivity::kAtBarrier, -1, -1, 40, 42),
  });
  recordKernel(record_, 3, 4);
  EXPECT_EQ(describeGpuBlocks(*record_),
            "GPU kernel 3, 4 blocks: 0 done, 4 waiting, 0 running, 0 not started\n"
            "GPU block 0 of kernel 3: lane 1 step 3/5 piece 9: waiting for an LL line from rank 1 on channel 2 "
            "(flag 8, needs 9)\n"
            "GPU block 1 of kernel 3: direct allreduce: waiting for rank 2 to publish its buffers for call 11 (it "
            "is at call 10)\n"
            "GPU block 2 of kernel 3: direct allreduce: waiting for rank 0 to finish call 11 (it is at call 10)\n"
            "GPU block 3 of kernel 3: NVLS allreduce: waiting at the barrier of the team's blocks (40 arrivals, "
            "needs 42)\n");
}

TEST_F(GpuBlocksReport, AKernelIsUnfinishedUntilEachOfItsBlocksIsDoneWithIt) {
  EXPECT_FALSE(gpuBlocksUnfinished(*record_));  // no records
  attach({blockIn(4, BlockActivity::kDone), blockIn(4, BlockActivity::kDone), blockIn(3, BlockActivity::kRunning)});
  EXPECT_FALSE(gpuBlocksUnfinished(*record_));  // no kernel
  recordKernel(record_, 4, 2);
  EXPECT_FALSE(gpuBlocksUnfinished(*record_));  // block 2 is not one of kernel 4's
  recordKernel(record_, 4, 3);
  EXPECT_TRUE(gpuBlocksUnfinished(*record_));  // block 2 has not started it
  recordKernel(record_, 5, 2);
  EXPECT_TRUE(gpuBlocksUnfinished(*record_));  // none has started it
}

TEST_F(GpuBlocksReport, NamesTheFirstBlockInAWaitForAStallsError) {
  attach({blockIn(4, BlockActivity::kDone), blockIn(5, BlockActivity::kRunning)});
  EXPECT_EQ(describeFirstGpuWait(blocks_.data()), "");
  blocks_[3] = waitingBlock(5, BlockActivity::kSending, 2, 1, 6, 7);
  blocks_[9] = waitingBlock(5, BlockActivity::kReceiving, 0, 0, 1, 2);
  EXPECT_EQ(describeFirstGpuWait(blocks_.data()),
            "GPU block 3 of kernel 5: lane 1 step 3/5 piece 9: waiting for a free slot to send to rank 2 on channel 1 "
            "(released 6, needs 7)");
}

TEST_F(GpuBlocksReport, SaysNothingWithoutRecordsOrAKernel) {
  EXPECT_EQ(describeGpuBlocks(*record_), "");  // the host path attaches none
  attach({});
  EXPECT_EQ(describeGpuBlocks(*record_), "");  // no kernel launched yet
  recordKernel(record_, 1, 2);
  EXPECT_EQ(describeGpuBlocks(*record_),
            "GPU kernel 1, 2 blocks: 0 done, 0 waiting, 0 running, 2 not started\n"
            "GPU block 0: not in kernel 1 yet (last: none)\n"
            "GPU block 1: not in kernel 1 yet (last: none)\n");
  recordKernel(record_, 2, static_cast<int>(kRecordedBlocks) + 10);  // blocks past the records: not reported
  const std::string many = describeGpuBlocks(*record_);
  EXPECT_EQ(many.substr(0, many.find('\n')),
            "GPU kernel 2, " + std::to_string(kRecordedBlocks) + " blocks: 0 done, 0 waiting, 0 running, " +
                std::to_string(kRecordedBlocks) + " not started");
  attachGpuBlocks(record_, nullptr);  // as a communicator's GPU resources go away
  EXPECT_EQ(describeGpuBlocks(*record_), "");
}

TEST_F(GpuBlocksReport, TheDumpPrintsTheBlocksUnderTheirCommunicatorsLine) {
  attach({waitingBlock(2, BlockActivity::kReceiving, 1, 0, 0, 1)});
  recordKernel(record_, 2, 1);
  recordCall(record_, ProgressState::kLaunched, static_cast<int>(algorithms::Collective::kAllReduce),
             static_cast<int>(algorithms::DataType::kFloat32), 64, 2);
  std::string dump = dumpText();
  const std::string pid = "weft pid " + std::to_string(getpid()) + ": ";
  EXPECT_NE(dump.find(pid + "rank 0/2 comm 0x5f: AllReduce #2 (64 x float): the last call launched on the GPU\n" +
                      pid + "  GPU kernel 2, 1 block: 0 done, 1 waiting, 0 running, 0 not started\n" + pid +
                      "  GPU block 0 of kernel 2: lane 1 step 3/5 piece 9: waiting to receive from rank 1 on channel 0 "
                      "(posted 0, needs 1)\n"),
            std::string::npos)
      << dump;
  // The host path's records print no GPU lines.
  recordCall(record_, ProgressState::kRunning, static_cast<int>(algorithms::Collective::kAllReduce),
             static_cast<int>(algorithms::DataType::kFloat32), 64, 3);
  dump = dumpText();
  EXPECT_EQ(dump.find("GPU kernel"), std::string::npos) << dump;
}

}  // namespace
}  // namespace weft::core
