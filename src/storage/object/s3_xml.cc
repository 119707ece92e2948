#include "storage/object/s3_xml.h"

#include <cstdint>
#include <memory>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/absl_compat.h"

namespace kf::object {
namespace {

constexpr int kMaxDepth = 16;

struct Element {
  std::string name;
  std::string text;  // concatenated character data directly inside the element
  std::vector<Element> children;

  // The only child named `name`; null if there is none or more than one.
  const Element* Only(std::string_view child) const {
    const Element* found = nullptr;
    for (const Element& c : children) {
      if (c.name != child) continue;
      if (found != nullptr) return nullptr;
      found = &c;
    }
    return found;
  }
};

absl::Status Bad(std::string_view why) {
  return absl::InternalError(absl::StrCat("malformed S3 XML: ", ToAbsl(why)));
}

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.' || c == ':';
}
bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}

  absl::StatusOr<Element> Document() {
    SkipSpace();
    if (in_.substr(pos_, 5) == "<?xml") {
      const size_t end = in_.find("?>", pos_);
      if (end == std::string_view::npos) return Bad("unterminated XML declaration");
      pos_ = end + 2;
    }
    SkipSpace();
    Element root;
    if (absl::Status s = ParseElement(&root, 0); !s.ok()) return s;
    SkipSpace();
    if (pos_ != in_.size()) return Bad("content after the root element");
    return root;
  }

 private:
  void SkipSpace() {
    while (pos_ < in_.size() && IsSpace(in_[pos_])) ++pos_;
  }
  bool Eat(char c) {
    if (pos_ < in_.size() && in_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  absl::StatusOr<std::string> Name() {
    const size_t begin = pos_;
    while (pos_ < in_.size() && IsNameChar(in_[pos_])) ++pos_;
    if (pos_ == begin) return Bad("expected a name");
    return std::string(in_.substr(begin, pos_ - begin));
  }

  // Decodes character data up to `stop` (exclusive), resolving entities.
  absl::Status Text(char stop, std::string* out) {
    while (pos_ < in_.size() && in_[pos_] != stop) {
      const char c = in_[pos_];
      if (c == '<' || (c == '>' && stop == '"')) return Bad("unexpected markup in text");
      if (c != '&') {
        out->push_back(c);
        ++pos_;
        continue;
      }
      const size_t semi = in_.find(';', pos_);
      if (semi == std::string_view::npos || semi - pos_ > 12) return Bad("bad entity");
      const std::string_view ent = in_.substr(pos_ + 1, semi - pos_ - 1);
      pos_ = semi + 1;
      if (ent == "amp") {
        out->push_back('&');
      } else if (ent == "lt") {
        out->push_back('<');
      } else if (ent == "gt") {
        out->push_back('>');
      } else if (ent == "quot") {
        out->push_back('"');
      } else if (ent == "apos") {
        out->push_back('\'');
      } else if (ent.size() >= 2 && ent[0] == '#') {
        const bool hex = ent[1] == 'x';
        const std::string_view digits = ent.substr(hex ? 2 : 1);
        uint32_t cp = 0;
        const bool ok =
            hex ? absl::SimpleHexAtoi(ToAbsl(digits), &cp) : absl::SimpleAtoi(ToAbsl(digits), &cp);
        if (!ok || digits.empty() || digits[0] == '+' || digits[0] == '-' || cp == 0 ||
            cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
          return Bad("bad character reference");
        }
        AppendUtf8(cp, out);
      } else {
        return Bad("unknown entity");
      }
    }
    return absl::OkStatus();
  }

  absl::Status ParseElement(Element* e, int depth) {
    if (depth > kMaxDepth) return Bad("nested too deep");
    if (!Eat('<')) return Bad("expected '<'");
    auto name = Name();
    if (!name.ok()) return name.status();
    e->name = *std::move(name);
    // Attributes (xmlns on the root): checked for form, values dropped.
    for (;;) {
      const size_t before = pos_;
      SkipSpace();
      if (Eat('/')) {
        if (!Eat('>')) return Bad("expected '>' after '/'");
        return absl::OkStatus();
      }
      if (Eat('>')) break;
      if (pos_ == before) return Bad("expected space before an attribute");
      if (auto attr = Name(); !attr.ok()) return attr.status();
      SkipSpace();
      if (!Eat('=')) return Bad("expected '=' in an attribute");
      SkipSpace();
      if (!Eat('"')) return Bad("expected a double-quoted attribute value");
      std::string ignored;
      if (absl::Status s = Text('"', &ignored); !s.ok()) return s;
      if (!Eat('"')) return Bad("unterminated attribute value");
    }
    for (;;) {
      if (absl::Status s = Text('<', &e->text); !s.ok()) return s;
      if (pos_ >= in_.size()) return Bad(absl::StrCat("unterminated element ", e->name));
      if (in_.substr(pos_, 2) == "</") {
        pos_ += 2;
        auto end = Name();
        if (!end.ok()) return end.status();
        if (*end != e->name) return Bad(absl::StrCat("</", *end, "> closes <", e->name, ">"));
        SkipSpace();
        if (!Eat('>')) return Bad("expected '>' in an end tag");
        return absl::OkStatus();
      }
      if (in_.substr(pos_, 2) == "<!" || in_.substr(pos_, 2) == "<?") {
        return Bad("comments, CDATA, DOCTYPE and processing instructions are not supported");
      }
      e->children.emplace_back();
      if (absl::Status s = ParseElement(&e->children.back(), depth + 1); !s.ok()) return s;
    }
  }

  std::string_view in_;
  size_t pos_ = 0;
};

// The text of the only child `name` of `e` (required).
absl::StatusOr<std::string> Field(const Element& e, std::string_view name) {
  const Element* c = e.Only(name);
  if (c == nullptr) {
    return Bad(absl::StrCat("<", e.name, "> needs exactly one <", ToAbsl(name), ">"));
  }
  if (!c->children.empty()) return Bad(absl::StrCat("<", ToAbsl(name), "> has children"));
  return c->text;
}

}  // namespace

absl::StatusOr<ListObjectsPage> ParseListObjectsV2(std::string_view xml) {
  Reader reader(xml);
  auto root = reader.Document();
  if (!root.ok()) return root.status();
  if (root->name != "ListBucketResult") return Bad("root is not <ListBucketResult>");
  ListObjectsPage page;
  auto truncated = Field(*root, "IsTruncated");
  if (!truncated.ok()) return truncated.status();
  if (*truncated == "true") {
    page.truncated = true;
  } else if (*truncated != "false") {
    return Bad("IsTruncated is neither true nor false");
  }
  if (page.truncated) {
    auto token = Field(*root, "NextContinuationToken");
    if (!token.ok()) return token.status();
    if (token->empty()) return Bad("empty NextContinuationToken");
    page.next_continuation_token = *std::move(token);
  }
  for (const Element& c : root->children) {
    if (c.name != "Contents") continue;
    ObjectInfo info;
    auto key = Field(c, "Key");
    if (!key.ok()) return key.status();
    auto size = Field(c, "Size");
    if (!size.ok()) return size.status();
    if (size->empty() || size->find_first_not_of("0123456789") != std::string::npos ||
        !absl::SimpleAtoi(*size, &info.size)) {
      return Bad(absl::StrCat("bad Size: ", *size));
    }
    info.key = *std::move(key);
    if (const Element* etag = c.Only("ETag"); etag != nullptr) {
      info.etag = etag->text;
      if (info.etag.size() >= 2 && info.etag.front() == '"' && info.etag.back() == '"') {
        info.etag = info.etag.substr(1, info.etag.size() - 2);
      }
    }
    if (!page.objects.empty() && page.objects.back().key >= info.key) {
      return Bad("keys out of order");
    }
    page.objects.push_back(std::move(info));
  }
  return page;
}

absl::StatusOr<S3ErrorBody> ParseS3Error(std::string_view xml) {
  Reader reader(xml);
  auto root = reader.Document();
  if (!root.ok()) return root.status();
  if (root->name != "Error") return Bad("root is not <Error>");
  auto code = Field(*root, "Code");
  if (!code.ok()) return code.status();
  S3ErrorBody out{.code = *std::move(code)};
  if (const Element* m = root->Only("Message"); m != nullptr) out.message = m->text;
  return out;
}

}  // namespace kf::object
