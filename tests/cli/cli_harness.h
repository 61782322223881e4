#pragma once

// Runs the real `netdiag` binary in a per-test temporary directory and
// captures its exit code, stdout and stderr.

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

namespace netdiag::testing {

namespace fs = std::filesystem;

struct Outcome {
  int code = -1;
  std::string out, err;
};

// A file's whole text ("" when it cannot be read).
inline std::string readFile(const std::string& file) {
  std::ifstream in(file);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class CliTest : public ::testing::Test {
 protected:
  // (Named here, not in SetUp: a fixture's members may take paths in it.)
  CliTest()
      : dir_(fs::temp_directory_path() /
             ("netdiag-cli-" + std::to_string(::getpid()) + "-" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name())) {}
  void SetUp() override { fs::create_directories(dir_); }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  void write(const std::string& name, const std::string& text) const {
    std::ofstream(path(name)) << text;
  }

  static std::string slurp(const std::string& file) { return readFile(file); }

  Outcome run(const std::string& args) const {
    std::string cmd = std::string(NETDIAG_BIN) + " " + args + " >" + path("stdout") + " 2>" +
                      path("stderr") + " </dev/null";
    int status = std::system(cmd.c_str());
    Outcome r;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = slurp(path("stdout"));
    r.err = slurp(path("stderr"));
    return r;
  }

  fs::path dir_;
};

}  // namespace netdiag::testing
