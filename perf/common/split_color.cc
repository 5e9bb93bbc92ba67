#include "perf/common/split_color.h"

#include <strings.h>

#include <cctype>
#include <cstdlib>
#include <cstring>

namespace weft::perf {
namespace {

// nccl-tests' number syntax: blanks, then 0b binary or what strtoul reads with base 0 (decimal,
// 0x hexadecimal, 0 octal), then nothing but blanks.
bool parseOperand(const char* text, long* value) {
  while (*text != '\0' && std::isspace(static_cast<unsigned char>(*text))) ++text;
  int base = 0;
  if (strncasecmp(text, "0b", 2) == 0) {
    text += 2;
    base = 2;
  }
  char* end = nullptr;
  *value = static_cast<long>(std::strtoul(text, &end, base));
  if (end == text) return false;
  while (*end != '\0' && std::isspace(static_cast<unsigned char>(*end))) ++end;
  return *end == '\0';
}

}  // namespace

bool splitColor(int proc, const char* splitMask, const char* split, int* color, std::string* error) {
  *color = 0;
  if (splitMask != nullptr && splitMask[0] != '\0') {
    char* end = nullptr;
    const unsigned long mask = std::strtoul(splitMask, &end, 16);
    if (end == splitMask || *end != '\0') {
      *error = std::string("NCCL_TESTS_SPLIT_MASK=") + splitMask + " is not a hexadecimal mask";
      return false;
    }
    *color = static_cast<int>(static_cast<unsigned long>(proc) & mask);
    return true;
  }
  if (split == nullptr || split[0] == '\0') return true;
  // Each operation by its word or its symbol.
  struct Rule {
    const char* word;
    char symbol;
  };
  static const Rule kRules[] = {{"AND", '&'}, {"OR", '|'}, {"MOD", '%'}, {"DIV", '/'}};
  for (const Rule& rule : kRules) {
    const size_t wordLength = std::strlen(rule.word);
    const char* operand = nullptr;
    if (strncasecmp(split, rule.word, wordLength) == 0) operand = split + wordLength;
    if (split[0] == rule.symbol) operand = split + 1;
    if (operand == nullptr) continue;
    long n = 0;
    if (!parseOperand(operand, &n)) break;
    if ((rule.symbol == '%' || rule.symbol == '/') && n == 0) {
      *error = std::string("NCCL_TESTS_SPLIT=") + split + " divides by zero";
      return false;
    }
    switch (rule.symbol) {
      case '&': *color = static_cast<int>(proc & n); break;
      case '|': *color = static_cast<int>(proc | n); break;
      case '%': *color = static_cast<int>(proc % n); break;
      default: *color = static_cast<int>(proc / n); break;
    }
    return true;
  }
  *error = std::string("NCCL_TESTS_SPLIT=") + split +
           " is not one of AND<n>, OR<n>, MOD<n>, DIV<n> (or &<n>, |<n>, %<n>, /<n>), with n "
           "decimal, 0x hexadecimal or 0b binary";
  return false;
}

}  // namespace weft::perf
