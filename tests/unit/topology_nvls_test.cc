// Whether NVLS could serve a machine's GPUs (topology/nvls.h): on the project's H100 NVSwitch
// fixture it could; elsewhere the answer names the first reason it could not.

#include "topology/nvls.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/unit/topology_fixture.h"

namespace weft::topology {
namespace {

System load(const std::string& name) { return tests::loadTopologyFixture(name); }

// Two GPUs of compute capability `sm`, joined through an NVSwitch or directly.
System twoGpus(int sm, bool throughSwitch) {
  System system;
  Node cpu;
  cpu.type = NodeType::kCpu;
  const int root = system.addNode(cpu);
  int gpus[2];
  for (int g = 0; g < 2; ++g) {
    Node gpu;
    gpu.type = NodeType::kGpu;
    gpu.parent = root;
    gpu.gpu.dev = g;
    gpu.gpu.sm = sm;
    gpus[g] = system.addNode(gpu);
    system.addLink(root, gpus[g], LinkType::kPci, 24);
  }
  if (throughSwitch) {
    Node nvSwitch;
    nvSwitch.type = NodeType::kNvSwitch;
    const int fabric = system.addNode(nvSwitch);
    for (int gpu : gpus) system.addLink(gpu, fabric, LinkType::kNvLink, 18 * nvlinkBandwidth(sm), 18);
  } else {
    system.addLink(gpus[0], gpus[1], LinkType::kNvLink, 4 * nvlinkBandwidth(sm), 4);
  }
  system.setNvlinkDescribed(true);
  return system;
}

TEST(Nvls, HopperGpusOnNvSwitchesCouldUseIt) {
  const NvlsSupport nvls = nvlsSupport(load("full-dump-h100x8-nvswitch.xml"), true);
  EXPECT_TRUE(nvls.possible) << nvls.reason;
  EXPECT_NE(nvls.reason.find("MULTICAST_SUPPORTED"), std::string::npos) << nvls.reason;
  EXPECT_TRUE(nvlsSupport(twoGpus(100, true), true).possible) << "Blackwell";
}

TEST(Nvls, NcclNvlsEnableZeroRulesItOut) {
  const NvlsSupport nvls = nvlsSupport(load("full-dump-h100x8-nvswitch.xml"), false);
  EXPECT_FALSE(nvls.possible);
  EXPECT_EQ(nvls.reason, "NCCL_NVLS_ENABLE=0");
}

TEST(Nvls, EachReasonItCannotIsNamed) {
  struct Case {
    System system;
    const char* says;
  };
  const Case cases[] = {
      {load("grace-hopper-c2c.xml"), "the source shows 1"},
      {load("flattened-a100x8.xml"), "compute capability"},
      {twoGpus(80, true), "GPU0 is sm_80: NVLS needs Hopper"},
      {twoGpus(90, false), "GPU0 has no NVLink to an NVSwitch"},
  };
  for (const Case& c : cases) {
    const NvlsSupport nvls = nvlsSupport(c.system, true);
    EXPECT_FALSE(nvls.possible) << c.says;
    EXPECT_NE(nvls.reason.find(c.says), std::string::npos) << nvls.reason;
  }
}

}  // namespace
}  // namespace weft::topology
