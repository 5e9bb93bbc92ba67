#include "src/core/progress_record.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace weft::core
