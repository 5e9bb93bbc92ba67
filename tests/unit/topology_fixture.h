#pragma once
// The project's topology fixtures (tests/fixtures/topology/), for the unit tests that read them.

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "topology/nccl_xml.h"
#include "topology/system.h"

namespace weft::tests {

/// The path of fixture `name`.
inline std::filesystem::path topologyFixturePath(const std::string& name) {
  return std::filesystem::path(__FILE__).parent_path() / ".." / "fixtures" / "topology" / name;
}

/// Fixture `name` read as an NCCL topology file; a failed read fails the calling test.
inline topology::System loadTopologyFixture(const std::string& name) {
  topology::System system;
  const Status status = topology::readNcclTopologyFile(topologyFixturePath(name).string(), &system);
  EXPECT_TRUE(status.isOk()) << name << ": " << status.message();
  return system;
}

}  // namespace weft::tests
