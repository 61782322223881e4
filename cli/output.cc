#include "cli/output.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <unistd.h>

namespace netdiag::cli {

std::string withCommas(uint64_t n) {
  std::string digits = std::to_string(n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string writeFileAtomically(const std::string& path,
                                const std::function<void(std::ostream&)>& write) {
  if (path == "-") {
    write(std::cout);
    std::cout.flush();
    return std::cout ? "" : "cannot write to stdout";
  }
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return "cannot create " + tmp + ": " + std::strerror(errno);
    write(out);
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      return "cannot write " + tmp + ": " + std::strerror(errno);
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    return "cannot rename " + tmp + " to " + path + ": " + ec.message();
  }
  return "";
}

}  // namespace netdiag::cli
