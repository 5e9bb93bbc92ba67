#pragma once
// Reading the attributes of a parsed XML element into typed values, with failures that say
// where: "<document>, line 12: <pci> attribute class="zz" is not a hexadecimal number".
// For the topology file readers; pugixml stays inside topology/.

#include <pugixml.hpp>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "src/base/status.h"

namespace weft::topology {

/// The text an XML document was parsed from and its name, to turn offsets into line numbers.
/// Holds a view: the text must outlive it.
class XmlText {
 public:
  XmlText(std::string_view text, std::string name) : text_(text), name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  /// The 1-based line of byte `offset` (pugixml's parse offsets and offset_debug()).
  int lineAt(ptrdiff_t offset) const;
  /// "<name>, line N" for an element parsed from this text.
  std::string where(const pugi::xml_node& element) const;
  /// Parses the text into `document`; XML that is not well-formed is kInvalidArgument naming the
  /// line and what is wrong.
  Status parse(pugi::xml_document* document) const;

 private:
  std::string_view text_;
  std::string name_;
};

/// The attributes of one element, read into typed values. A missing attribute, or one whose value
/// is empty or blank, leaves the output unchanged (the value stays unknown). A value that cannot be
/// read leaves it unchanged too, and the first such failure is kept for status(): read every
/// attribute, then check once.
class XmlAttributes {
 public:
  XmlAttributes(const XmlText& text, pugi::xml_node element) : text_(text), element_(element) {}

  /// The value with surrounding blanks removed; "" when missing.
  std::string text(const char* name) const;
  bool has(const char* name) const { return !text(name).empty(); }

  /// A hexadecimal number, with or without "0x", in either case, that fits in `T`.
  template <typename T>
  void hex(const char* name, T* value) {
    uint64_t parsed = 0;
    if (readHex(name, std::numeric_limits<T>::max(), &parsed)) *value = static_cast<T>(parsed);
  }
  /// A decimal integer (may be negative).
  void integer(const char* name, int* value);
  /// A decimal number ("0.000000", "56000", "2.5").
  void number(const char* name, double* value);
  /// "0" or "1"; an absent attribute leaves `value` as it was.
  void flag(const char* name, std::optional<bool>* value);
  /// A PCI bus id ("0000:3b:00.0", "3B:00.0", "00000000:3b:00.0"), stored canonical.
  void busId(const char* name, std::string* value);

  /// OK, or the first failure: kInvalidArgument naming the document, line, element, attribute and
  /// value ("<file>, line 12: <pci> attribute class="zz" is not a hexadecimal number").
  const Status& status() const { return status_; }

  /// The failure for attribute `name` whose value is not `expected` ("a hexadecimal number").
  Status invalid(const char* name, const char* expected) const;
  /// A failure about the element as a whole: "<where>: <element> <what>".
  Status elementError(const std::string& what) const;

 private:
  /// True when the attribute is present and `*value` was read.
  bool readHex(const char* name, uint64_t max, uint64_t* value);
  template <typename T>
  bool readDecimal(const char* name, const char* expected, T* value);
  void fail(const char* name, const char* expected);

  const XmlText& text_;
  pugi::xml_node element_;
  Status status_;
};

}  // namespace weft::topology
