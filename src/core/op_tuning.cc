#include "src/core/op_tuning.h"

#include "src/core/communicator.h"

namespace weft::core {

algorithms::TuneShape tuneShapeOf(const Op& op) {
  const Communicator& comm = *op.comm;
  algorithms::TuneShape shape;
  shape.collective = op.collective;
  shape.bytes = op.count * algorithms::dataTypeSize(op.type);
  shape.nranks = comm.nranks();
  shape.networkHops = comm.networkHops();
  shape.treeDepth = comm.treeDepth();
  shape.localTreeDepth = comm.hostLayout().localTreeDepth;
  shape.hostTreeDepth = comm.hostLayout().hostTreeDepth;
  shape.localRingHops = comm.hostLayout().localRingHops;
  shape.channels = static_cast<int>(comm.rings().size());
  shape.minChannels = comm.minChannels();
  shape.slotBytes = comm.slotBytes();
  return shape;
}

double predictedMicroseconds(const Op& op) {
  return algorithms::estimateMicroseconds(tuneShapeOf(op), op.comm->algorithmFilter(), op.comm->protocolFilter(),
                                         op.comm->costModel());
}

}  // namespace weft::core
