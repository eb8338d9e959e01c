// Fixture for tests of util's logging and parameters, which read the process environment and
// files. Each test starts from a clean slate: every registry variable, NCCL_CONF_FILE and HOME are
// saved and unset (HOME points at an empty scratch directory, the system config file at a path
// that does not exist), and the logger and registry are reset. Everything is restored afterwards.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "scoped_env.h"
#include "util/log.h"
#include "util/params.h"
#include "util/params_internal.h"

namespace braid::testing {

class UtilEnvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::vector<std::string> names = {"NCCL_CONF_FILE", "HOME"};
    for (int i = 0; i < static_cast<int>(ParamId::kCount); ++i)
      names.push_back(paramInfo(static_cast<ParamId>(i)).name);
    env_.clear(names);
    char pattern[] = "/tmp/braid_util_test_XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    std::filesystem::create_directory(dir_ + "/home");
    setenv("HOME", (dir_ + "/home").c_str(), 1);
    paramsSetSystemConfigPath(dir_ + "/no_system_nccl.conf");
    logSetDeviceQuery(nullptr);
    logReset();
  }

  void TearDown() override {
    env_.restore();
    paramsSetSystemConfigPath("/etc/nccl.conf");
    logSetDeviceQuery(nullptr);
    logReset();  // also closes a debug file inside dir_ before it is removed
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  // Sets a variable and makes the logger and registry read the environment again.
  void setVar(const char* name, const std::string& value) {
    setenv(name, value.c_str(), 1);
    logReset();
  }

  const std::string& dir() const { return dir_; }

  // Writes `contents` to dir()/name and returns the path.
  std::string writeFile(const std::string& name, const std::string& contents) const {
    std::string path = dir_ + "/" + name;
    std::ofstream(path) << contents;
    return path;
  }

  static std::string readFile(const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }

  static std::vector<std::string> readLines(const std::string& path) {
    std::vector<std::string> lines;
    std::istringstream in(readFile(path));
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }

  // Logs at INFO (subsystems `subsys`) into dir()/name; returns the file's path.
  std::string logToFile(const std::string& level, const std::string& subsys, const std::string& name = "log.txt") {
    std::string path = dir_ + "/" + name;
    setenv("NCCL_DEBUG", level.c_str(), 1);
    setenv("NCCL_DEBUG_SUBSYS", subsys.c_str(), 1);
    setenv("NCCL_DEBUG_FILE", path.c_str(), 1);
    logReset();
    return path;
  }

 private:
  ScopedEnv env_;
  std::string dir_;
};

}  // namespace braid::testing
