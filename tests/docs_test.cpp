// The documentation cannot drift from the code:
//  - docs/data-layout.md: every "$ devicearray layout ..." block is run and must equal
//    the command's output, and the format catalog must match the command's formats;
//  - docs/gpu-access-tutorial.md: every code block is a verbatim excerpt of the
//    example (or test) file the line above it links to, and that example is built;
//  - the API reference (scripts/doxygen.sh) builds without a single warning.
//
// Paths: the source tree is found from this file's path (or DEVICEARRAY_SOURCE_DIR),
// the build tree from this executable's path (<build>/tests/docs_test), the command
// at <build>/tools/devicearray (or DEVICEARRAY_CLI).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

fs::path sourceRoot() {
  if (const char* env = std::getenv("DEVICEARRAY_SOURCE_DIR"); env != nullptr && *env != '\0') return env;
  return fs::path(__FILE__).parent_path().parent_path();
}

fs::path buildRoot() { return fs::read_symlink("/proc/self/exe").parent_path().parent_path(); }

fs::path cliPath() {
  if (const char* env = std::getenv("DEVICEARRAY_CLI"); env != nullptr && *env != '\0') return env;
  return buildRoot() / "tools" / "devicearray";
}

std::string readFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> splitLines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string rstrip(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.pop_back();
  return s;
}

/// Lines with trailing blanks removed and trailing empty lines dropped: the CLI pads
/// table cells with spaces that editors strip from Markdown, and that carry no meaning.
std::vector<std::string> normalized(const std::vector<std::string>& lines) {
  std::vector<std::string> out;
  for (const auto& l : lines) out.push_back(rstrip(l));
  while (!out.empty() && out.back().empty()) out.pop_back();
  return out;
}

struct CommandResult {
  int status = -1;
  std::string output;
};

CommandResult run(const std::string& command) {
  CommandResult r;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buffer{};
  for (std::size_t n; (n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0;) r.output.append(buffer.data(), n);
  const int raw = pclose(pipe);
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return r;
}

struct CodeBlock {
  int line = 0;                  ///< 1-based line of the opening fence
  std::string info;              ///< the fence's info string ("cpp", "text", ...)
  std::string context;           ///< the last non-blank line before the fence
  std::vector<std::string> body;
};

std::vector<CodeBlock> codeBlocks(const std::string& markdown) {
  std::vector<CodeBlock> blocks;
  const auto lines = splitLines(markdown);
  std::string lastText;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].rfind("```", 0) != 0) {
      if (!rstrip(lines[i]).empty()) lastText = lines[i];
      continue;
    }
    CodeBlock b;
    b.line = static_cast<int>(i) + 1;
    b.info = rstrip(lines[i].substr(3));
    b.context = lastText;
    std::size_t j = i + 1;
    for (; j < lines.size() && lines[j].rfind("```", 0) != 0; ++j) b.body.push_back(lines[j]);
    if (j == lines.size()) throw std::runtime_error("unterminated code block at line " + std::to_string(b.line));
    blocks.push_back(std::move(b));
    i = j;
    lastText.clear();
  }
  return blocks;
}

bool isPlainArgument(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-';
  });
}

std::vector<std::string> words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

class DocsPages : public ::testing::Test {
 protected:
  void requireCli() {
    if (!fs::exists(cliPath()))
      GTEST_SKIP() << "the devicearray command was not built (" << cliPath() << "); it needs CLI11";
  }
  /// stdout of `devicearray layout <args>`; fails the test when the command fails.
  std::string layout(const std::vector<std::string>& args) {
    std::string cmd = cliPath().string() + " layout";
    for (const auto& a : args) {
      EXPECT_TRUE(isPlainArgument(a)) << "unexpected argument '" << a << "'";
      cmd += " " + a;
    }
    const CommandResult r = run(cmd + " 2>&1");
    EXPECT_EQ(r.status, 0) << cmd << " failed:\n" << r.output;
    return r.output;
  }
};

// ----------------------------------------------------------- data-layout.md --

TEST_F(DocsPages, DataLayoutBlocksAreExactlyTheOutputOfTheirCommands) {
  requireCli();
  const auto blocks = codeBlocks(readFile(sourceRoot() / "docs" / "data-layout.md"));
  std::set<std::string> commands;
  for (const CodeBlock& b : blocks) {
    ASSERT_FALSE(b.body.empty()) << "empty code block at data-layout.md:" << b.line;
    const std::string prompt = "$ devicearray layout ";
    ASSERT_EQ(b.body[0].rfind(prompt, 0), 0u)
        << "data-layout.md:" << b.line << ": every block must start with '" << prompt
        << "...' so that this test can check it";
    const std::string args = b.body[0].substr(prompt.size());
    commands.insert(args);
    const std::vector<std::string> page(b.body.begin() + 1, b.body.end());
    const auto expected = normalized(splitLines(layout(words(args))));
    const auto shown = normalized(page);
    if (shown != expected) {
      std::size_t k = 0;
      while (k < shown.size() && k < expected.size() && shown[k] == expected[k]) ++k;
      ADD_FAILURE() << "data-layout.md:" << b.line + 2 + static_cast<int>(k) << ": the block differs from the output of "
                    << "'devicearray layout " << args << "' (paste the command's output)\n  page:    "
                    << (k < shown.size() ? shown[k] : "<end of block>") << "\n  command: "
                    << (k < expected.size() ? expected[k] : "<end of output>");
    }
  }
  // The reference's worked examples must stay on the page.
  for (const char* required : {"PointXYZ -H 2 -W 3", "PointZ -H 2 -W 3", "PointXYZ -N 4", "SNR -N 4"})
    EXPECT_EQ(commands.count(required), 1u) << "data-layout.md lost the worked example '" << required << "'";
}

TEST_F(DocsPages, DataLayoutCatalogMatchesEveryFormatOfTheCommand) {
  requireCli();
  const auto lines = splitLines(readFile(sourceRoot() / "docs" / "data-layout.md"));
  // | `PointXYZ` | `float` | 3 | 12 | `x y z` | ...
  const std::regex row(R"(^\| `(\w+)` \| `(\w+)` \| (\d+) \| (\d+) \| `([^`]*)`.*\|\s*$)");
  // format            PointXYZ (3 x float, 12 bytes/element)
  const std::regex header(R"(^format\s+(\w+) \((\d+) x (\w+), (\d+) bytes/element)");
  std::map<std::string, int> seen;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::smatch m;
    if (!std::regex_match(lines[i], m, row)) continue;
    const std::string name = m[1], type = m[2], channels = m[3], bytes = m[4], members = m[5];
    ++seen[name];
    const std::string out = layout({name, "-H", "1", "-W", "1"});
    std::smatch h;
    ASSERT_TRUE(std::regex_search(out, h, header)) << "unexpected output for " << name << ":\n" << out;
    EXPECT_EQ(h[1].str(), name) << "data-layout.md:" << i + 1;
    EXPECT_EQ(h[2].str(), channels) << "data-layout.md:" << i + 1 << ": channels of " << name;
    EXPECT_EQ(h[3].str(), type) << "data-layout.md:" << i + 1 << ": channel type of " << name;
    EXPECT_EQ(h[4].str(), bytes) << "data-layout.md:" << i + 1 << ": bytes per element of " << name;
    // Single-letter members must match the channel letters of the command's memory row
    // (|X00|Y00|Z00| for x y z); `value` (SNR) has no letter to compare.
    const auto names = words(members);
    if (std::all_of(names.begin(), names.end(), [](const std::string& n) { return n.size() == 1; })) {
      std::string letters;
      for (const auto& n : names) letters += static_cast<char>(std::toupper(static_cast<unsigned char>(n[0])));
      std::string fromCli;
      for (const auto& l : splitLines(out))
        if (l.find('|') != std::string::npos && l.find("00") != std::string::npos && l.find("row") == std::string::npos) {
          std::istringstream cells(l);
          for (std::string cell; std::getline(cells, cell, '|');)
            if (!rstrip(cell).empty() && rstrip(cell).find_first_not_of(' ') != std::string::npos)
              fromCli += cell[cell.find_first_not_of(' ')];
        }
      EXPECT_EQ(fromCli, letters) << "data-layout.md:" << i + 1 << ": member order of " << name;
    }
  }
  // Every format the command knows appears exactly once.
  const CommandResult unknown = run(cliPath().string() + " layout NoSuchFormat -N 1 2>&1");
  const std::smatch list = [&] {
    std::smatch m;
    std::regex_search(unknown.output, m, std::regex(R"(one of: ([^)]*)\))"));
    return m;
  }();
  ASSERT_FALSE(list.empty()) << "the command no longer lists its formats on an unknown name:\n" << unknown.output;
  std::set<std::string> formats;
  std::istringstream names(list[1].str());
  for (std::string n; std::getline(names, n, ',');) formats.insert(words(n).at(0));
  EXPECT_EQ(formats.size(), 14u);
  for (const auto& f : formats) EXPECT_EQ(seen[f], 1) << "the catalog must list " << f << " exactly once";
  EXPECT_EQ(seen.size(), formats.size()) << "the catalog lists a format the command does not know";
}

// ----------------------------------------------------- gpu-access-tutorial.md --

TEST_F(DocsPages, TutorialCodeBlocksAreVerbatimExcerptsOfBuiltExamples) {
  const fs::path docs = sourceRoot() / "docs";
  const auto blocks = codeBlocks(readFile(docs / "gpu-access-tutorial.md"));
  ASSERT_GE(blocks.size(), 6u) << "the tutorial lost its code";
  const std::string examplesCMake = readFile(sourceRoot() / "examples" / "CMakeLists.txt");
  // The line above a block links the file it quotes: "... [`examples/x.cu`](../examples/x.cu):"
  const std::regex link(R"(\]\((\.\./(?:examples|tests)/[^)#]+)\))");
  for (const CodeBlock& b : blocks) {
    std::smatch m;
    std::string target;
    for (auto it = std::sregex_iterator(b.context.begin(), b.context.end(), link); it != std::sregex_iterator(); ++it)
      target = (*it)[1];
    ASSERT_FALSE(target.empty()) << "gpu-access-tutorial.md:" << b.line
                                 << ": the line before a code block must link the example it quotes, got: "
                                 << b.context;
    const fs::path file = (docs / target).lexically_normal();
    ASSERT_TRUE(fs::exists(file)) << "gpu-access-tutorial.md:" << b.line << ": " << file << " does not exist";
    const auto source = splitLines(readFile(file));
    const auto excerpt = b.body;
    ASSERT_FALSE(excerpt.empty()) << "gpu-access-tutorial.md:" << b.line << ": empty block";
    const auto found = std::search(source.begin(), source.end(), excerpt.begin(), excerpt.end());
    EXPECT_TRUE(found != source.end()) << "gpu-access-tutorial.md:" << b.line << ": the block is not a verbatim run of "
                                   << "lines of " << target << " (update the page from the file)";
    // C++ examples must be built (and so compiled by CI); tests are globbed by tests/CMakeLists.txt;
    // Python examples are run by tests/python/test_examples.py.
    const std::string rel = file.lexically_relative(sourceRoot()).string();
    if (rel.rfind("examples/", 0) == 0 && file.extension() != ".py")
      EXPECT_NE(examplesCMake.find(file.filename().string()), std::string::npos)
          << rel << " is quoted by the tutorial but not built by examples/CMakeLists.txt";
  }
}

// ------------------------------------------------------------ API reference --

TEST(ApiReference, DoxygenBuildsWithoutWarnings) {
  if (run("command -v doxygen >/dev/null 2>&1").status != 0)
    GTEST_SKIP() << "doxygen is not installed (scripts/install-deps.sh installs it)";
  const fs::path out = buildRoot() / "docs" / "api";
  const CommandResult r = run((sourceRoot() / "scripts" / "doxygen.sh").string() + " " + out.string() + " 2>&1");
  EXPECT_EQ(r.status, 0) << r.output;
}

}  // namespace
