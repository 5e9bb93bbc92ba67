#include "topology/nccl_xml_attributes.h"

#include <algorithm>
#include <charconv>

#include "topology/system.h"

namespace weft::topology {
namespace {

std::string_view trimmed(std::string_view value) {
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!value.empty() && blank(value.front())) value.remove_prefix(1);
  while (!value.empty() && blank(value.back())) value.remove_suffix(1);
  return value;
}

}  // namespace

int XmlText::lineAt(ptrdiff_t offset) const {
  if (offset < 0) return 0;
  const size_t end = std::min(static_cast<size_t>(offset), text_.size());
  return 1 + static_cast<int>(std::count(text_.begin(), text_.begin() + end, '\n'));
}

Status XmlText::parse(pugi::xml_document* document) const {
  const pugi::xml_parse_result parsed = document->load_buffer(text_.data(), text_.size());
  if (parsed) return Status::ok();
  return invalidArgument("%s, line %d: not well-formed XML: %s", name_.c_str(), lineAt(parsed.offset),
                         parsed.description());
}

std::string XmlText::where(const pugi::xml_node& element) const {
  const int line = lineAt(element.offset_debug());
  if (line <= 0) return name_;
  return name_ + ", line " + std::to_string(line);
}

std::string XmlAttributes::text(const char* name) const {
  return std::string(trimmed(element_.attribute(name).value()));
}

Status XmlAttributes::invalid(const char* name, const char* expected) const {
  return invalidArgument("%s: <%s> attribute %s=\"%s\" is not %s", text_.where(element_).c_str(),
                         element_.name(), name, element_.attribute(name).value(), expected);
}

Status XmlAttributes::elementError(const std::string& what) const {
  return invalidArgument("%s: <%s> %s", text_.where(element_).c_str(), element_.name(), what.c_str());
}

void XmlAttributes::fail(const char* name, const char* expected) {
  if (status_.isOk()) status_ = invalid(name, expected);
}

bool XmlAttributes::readHex(const char* name, uint64_t max, uint64_t* value) {
  const std::string valueText = text(name);
  if (valueText.empty()) return false;
  std::string_view digits = valueText;
  if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) digits.remove_prefix(2);
  auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), *value, 16);
  if (error == std::errc::result_out_of_range || (error == std::errc() && *value > max)) {
    fail(name, "a hexadecimal number in range");
    return false;
  }
  if (error != std::errc() || end != digits.data() + digits.size()) {
    fail(name, "a hexadecimal number");
    return false;
  }
  return true;
}

template <typename T>
bool XmlAttributes::readDecimal(const char* name, const char* expected, T* value) {
  const std::string valueText = text(name);
  if (valueText.empty()) return false;
  T parsed{};
  auto [end, error] = std::from_chars(valueText.data(), valueText.data() + valueText.size(), parsed);
  if (error != std::errc() || end != valueText.data() + valueText.size()) {
    fail(name, expected);
    return false;
  }
  *value = parsed;
  return true;
}

void XmlAttributes::integer(const char* name, int* value) { readDecimal(name, "a decimal integer", value); }

void XmlAttributes::number(const char* name, double* value) { readDecimal(name, "a decimal number", value); }

void XmlAttributes::flag(const char* name, std::optional<bool>* value) {
  const std::string valueText = text(name);
  if (valueText.empty()) return;
  if (valueText != "0" && valueText != "1") return fail(name, "0 or 1");
  *value = valueText == "1";
}

void XmlAttributes::busId(const char* name, std::string* value) {
  const std::string valueText = text(name);
  if (valueText.empty()) return;
  std::string canonical = canonicalBusId(valueText);
  if (canonical.empty()) return fail(name, "a PCI bus id (such as 0000:3b:00.0)");
  *value = std::move(canonical);
}

}  // namespace weft::topology
