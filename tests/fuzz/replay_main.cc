// A main for fuzz targets built without libFuzzer (g++ builds): runs the target once on each file
// named on the command line, or on each file of a named folder, in name order. The corpus replay
// tests use it; a crash or a broken property fails the process as it would under libFuzzer.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "tests/fuzz/fuzz_target.h"

namespace {

namespace fs = std::filesystem;

/// The files to run for one argument: the file itself, or a folder's files in name order.
bool collectInputs(const fs::path& path, std::vector<fs::path>* inputs) {
  std::error_code error;
  if (fs::is_regular_file(path, error)) {
    inputs->push_back(path);
    return true;
  }
  if (!fs::is_directory(path, error)) {
    fprintf(stderr, "%s is neither a file nor a folder: for a corpus, run scripts/fuzz.sh with its target\n",
            path.c_str());
    return false;
  }
  std::vector<fs::path> files;
  for (const fs::directory_entry& entry : fs::directory_iterator(path, error)) {
    if (entry.is_regular_file()) files.push_back(entry.path());
  }
  if (files.empty()) {
    fprintf(stderr, "%s holds no inputs: run scripts/fuzz.sh with its target to make its corpus\n", path.c_str());
    return false;
  }
  std::sort(files.begin(), files.end());
  inputs->insert(inputs->end(), files.begin(), files.end());
  return true;
}

bool replay(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    fprintf(stderr, "cannot read %s\n", path.c_str());
    return false;
  }
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // An empty vector's data() may be null; libFuzzer always passes a valid pointer.
  static const uint8_t kEmpty = 0;
  LLVMFuzzerTestOneInput(bytes.empty() ? &kEmpty : bytes.data(), bytes.size());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s FILE_OR_FOLDER...\n", argv[0]);
    return 2;
  }
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    if (!collectInputs(argv[i], &inputs)) return 1;
  }
  for (const fs::path& input : inputs) {
    if (!replay(input)) return 1;
  }
  printf("replayed %zu inputs, every one passed\n", inputs.size());
  return 0;
}
