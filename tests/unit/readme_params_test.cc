// README.md's table of environment variables must be exactly what the registry (params.def)
// generates, so that the documentation cannot drift from the code.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

#include "util/params.h"
#include "util/params_doc.h"

#ifndef BRAID_README_PATH
#error "BRAID_README_PATH must be defined by tests/unit/CMakeLists.txt"
#endif

namespace braid {
namespace {

constexpr char kRegenerate[] =
    "Regenerate it with:\n"
    "  cmake --build <build-dir> --target gen_param_table && "
    "<build-dir>/tools/gen_param_table/gen_param_table --update README.md\n";

TEST(ReadmeParamsTest, EnvironmentTableMatchesTheRegistry) {
  std::ifstream in(BRAID_README_PATH, std::ios::binary);
  ASSERT_TRUE(in) << "cannot open " << BRAID_README_PATH;
  std::string readme((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());

  std::string expected = paramsMarkdownTable();
  std::string actual;
  ASSERT_TRUE(extractParamsSection(readme, &actual))
      << BRAID_README_PATH << " needs a line '" << kParamsBeginMarker << "' followed later by a line '"
      << kParamsEndMarker << "', with the table between them. Expected table:\n"
      << expected << kRegenerate;
  EXPECT_EQ(actual, expected) << "The table of environment variables in " << BRAID_README_PATH
                              << " is out of date with src/util/params.def. Expected:\n"
                              << expected << kRegenerate;
}

}  // namespace
}  // namespace braid
