#include "src/exec/program_connections.h"

#include <algorithm>
#include <vector>

namespace weft::exec {

Status connectPrograms(std::span<const core::Op> ops, std::span<const algorithms::Program> programs,
                       const std::function<core::ConnectionTable&(const core::Op&)>& tableOf,
                       const std::function<void(const core::Op&)>& lacking) {
  std::vector<core::ConnectionTable*> tables;
  std::vector<std::vector<core::ConnectionRequest>> requests;
  for (size_t i = 0; i < ops.size(); ++i) {
    core::ConnectionTable& table = tableOf(ops[i]);
    bool lacks = false;
    for (const algorithms::Lane& lane : programs[i].lanes) {
      for (const algorithms::Step& step : lane.steps) {
        bool needSend = step.sendPeer >= 0 && table.send(lane.channel, step.sendPeer) == nullptr;
        bool needRecv = step.recvPeer >= 0 && table.recv(lane.channel, step.recvPeer) == nullptr;
        if (!needSend && !needRecv) continue;
        if (!lacks && lacking) lacking(ops[i]);
        lacks = true;
        size_t index = std::find(tables.begin(), tables.end(), &table) - tables.begin();
        if (index == tables.size()) {
          tables.push_back(&table);
          requests.emplace_back();
        }
        if (needSend) requests[index].push_back({lane.channel, step.sendPeer, core::Direction::kSend});
        if (needRecv) requests[index].push_back({lane.channel, step.recvPeer, core::Direction::kRecv});
      }
    }
  }
  for (size_t i = 0; i < tables.size(); ++i) WEFT_RETURN_IF_ERROR(tables[i]->beginConnect(requests[i]));
  for (core::ConnectionTable* table : tables) WEFT_RETURN_IF_ERROR(table->finishConnect());
  return Status::ok();
}

}  // namespace weft::exec
