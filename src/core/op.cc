#include "src/core/op.h"

#include "src/core/communicator.h"

namespace weft::core {

algorithms::OpShape shapeOf(const Op& op) {
  return algorithms::OpShape{.collective = op.collective,
                             .count = op.count,
                             .root = op.root,
                             .nranks = op.comm->nranks(),
                             .rank = op.comm->rank(),
                             .granule = algorithms::chunkGranule(op.type)};
}

}  // namespace weft::core
