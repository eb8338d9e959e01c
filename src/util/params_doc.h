// The README's table of environment variables is generated from the registry (params.def). The
// table lives between two marker lines; tools/gen_param_table rewrites it and
// tests/unit/readme_params_test checks that it is current. Both use these helpers so that they
// agree on where the section starts and ends.
#pragma once

#include <string>

namespace braid {

inline constexpr char kParamsBeginMarker[] = "<!-- params:begin -->";
inline constexpr char kParamsEndMarker[] = "<!-- params:end -->";

// The text strictly between the begin-marker line and the end-marker line (each marker must be a
// whole line). Returns false when either marker is missing or out of order.
bool extractParamsSection(const std::string& document, std::string* section);

// `document` with that section replaced by `section` (which should end with '\n'). Returns false,
// leaving *out untouched, when the markers are missing or out of order.
bool replaceParamsSection(const std::string& document, const std::string& section, std::string* out);

}  // namespace braid
