// LLDP frames (collector/lldp.h) from untrusted bytes, as libpcap hands them
// over: the whole Ethernet frame, and the same bytes as a bare LLDPDU. A
// rejected frame carries an error text; an accepted one renders its IDs.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "collector/lldp.h"

namespace {

void check(const std::optional<netdiag::collector::LldpInfo>& info, const std::string& error) {
  if (!info) {
    if (error.empty()) std::abort();
    return;
  }
  (void)info->chassisText();
  (void)info->portText();
  if (info->neighbor().empty()) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace netdiag::collector;
  std::string error;
  check(decodeLldpFrame(data, size, &error), error);
  error.clear();
  check(decodeLldpdu(data, size, &error), error);
  return 0;
}
