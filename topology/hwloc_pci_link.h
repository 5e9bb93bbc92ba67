#pragma once
// A PCIe link as PciAttributes holds it (rate per lane and width), from what hwloc gives: its
// linkspeed attribute, the data rate of all lanes together in GB/s.

namespace weft::topology {

/// Rate per lane in GT/s (2.5, 5, 8, 16, 32, 64) and lanes; 0 when unknown.
struct PciLink {
  double speedGts = 0;
  int width = 0;
};

/// The link whose data rate hwloc would report as `gigabytesPerSecond` (GT/s x lanes x line
/// encoding / 8: 0.25 GB/s per Gen1 lane ... 7.56 per Gen6 lane). A rate alone does not tell
/// Gen3 x16 from Gen4 x8; the lowest generation that gives a width of 1, 2, 4, 8 or 16 lanes is
/// taken, which gives the same pciBandwidth() as any other reading. Unknown (0, 0) for 0 and for
/// rates no such link has.
PciLink pciLinkFromHwlocSpeed(double gigabytesPerSecond);

}  // namespace weft::topology
