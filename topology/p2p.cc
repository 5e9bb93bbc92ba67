#include "topology/p2p.h"

#include "src/base/knobs.h"

namespace weft::topology {

bool p2pAllowed(const Paths& paths, int a, int b, const P2pPolicy& policy) {
  const PathType path = paths.between(a, b).type;
  if (path == PathType::kDis) return false;
  return !policy.level.has_value() || withinLevel(path, *policy.level);
}

Status p2pPolicyFromKnobs(P2pPolicy* policy) {
  *policy = P2pPolicy{};
  if (knobs::getBool(knobs::KnobId::kP2pDisable)) {
    policy->level = PathType::kLoc;
    policy->setting = "NCCL_P2P_DISABLE=1";
    return Status::ok();
  }
  const std::string text = knobs::getString(knobs::KnobId::kP2pLevel);
  if (text.empty()) return Status::ok();
  PathType parsed;
  if (!parseLevel(text, &parsed)) {
    return invalidArgument("NCCL_P2P_LEVEL=%s is not a level: use LOC, NVL, PIX, PXB, PHB or SYS (or 0-4), or unset "
                           "it for any path on the host",
                           text.c_str());
  }
  policy->level = parsed;
  policy->setting = "NCCL_P2P_LEVEL=" + text;
  return Status::ok();
}

}  // namespace weft::topology
