#pragma once
// How a report document's fields are described once and used twice. Each struct of the
// model gets one description, `Fields<T>::each(io, s)`, that names its keys in order:
//
//   io("length_ns", s.length_ns, {.required = true, .duration = true});
//
// The same description writes (io is a Writer: the member's value into a json object) and
// reads (io is a Reader: a JSON node's member into the struct, checked). A new field is
// one line in its struct's description. Rules say what a reader refuses and when a writer
// leaves the key out; a description may add `after_read` for checks across fields (a list
// whose length is another field, an index that must be in range) and older reports'
// fallbacks that a rule cannot say. Not real-time.
#include <array>
#include <cmath>
#include <cstdint>
#include <fmt/format.h>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "src/errors.hpp"

namespace chunkscope::fields {

using nlohmann::json;

// ================================================================ a node and its path

/// A JSON node and the dotted path that leads to it, for error lines.
class Node {
 public:
  Node(const json& j, std::string path) : j_(&j), path_(std::move(path)) {}

  const json& raw() const { return *j_; }
  const std::string& path() const { return path_; }

  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(fmt::format("field '{}': {}", path_.empty() ? "(top level)" : path_, what));
  }
  std::string child_path(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  /// The key is there and not null.
  bool has(const char* key) const { return j_->is_object() && j_->contains(key) && !(*j_)[key].is_null(); }
  /// The key is there, null or not.
  bool contains(const char* key) const { return j_->is_object() && j_->contains(key); }

  /// This node as an object; anything else is an error.
  const Node& object() const {
    if (!j_->is_object()) fail(fmt::format("expected an object, found {}", j_->type_name()));
    return *this;
  }
  /// The member at `key`; a null node (named by its path) when there is none, so that
  /// reading it fails with the field's name instead of reading past the object.
  Node at(const char* key) const {
    static const json kNull;
    if (j_->is_object())
      if (const auto it = j_->find(key); it != j_->end()) return Node(*it, child_path(key));
    return Node(kNull, child_path(key));
  }
  /// The object at `key`; missing, null or not an object is an error.
  Node obj(const char* key) const {
    if (!j_->is_object()) fail("expected an object");
    if (!has(key)) at(key).fail("missing");
    return at(key).object();
  }
  std::optional<Node> opt_obj(const char* key) const {
    if (!has(key)) return std::nullopt;
    return obj(key);
  }
  /// The array at `key`, or nothing when it is missing (an error when `required`).
  std::optional<Node> arr(const char* key, bool required = false) const {
    if (!has(key)) {
      if (required) at(key).fail("missing");
      return std::nullopt;
    }
    Node n = at(key);
    if (!n.raw().is_array()) n.fail(fmt::format("expected an array, found {}", n.raw().type_name()));
    return n;
  }
  Node elem(std::size_t i) const { return Node((*j_)[i], fmt::format("{}[{}]", path_, i)); }
  std::size_t size() const { return j_->size(); }

  double number() const {
    if (!j_->is_number()) fail(fmt::format("expected a number, found {}", j_->type_name()));
    const double v = j_->get<double>();
    if (!std::isfinite(v)) fail("not a finite number");
    return v;
  }
  std::int64_t integer() const {
    if (j_->is_number_integer()) {
      if (j_->is_number_unsigned() &&
          j_->get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        fail(fmt::format("{} is out of range", j_->dump()));
      return j_->get<std::int64_t>();
    }
    const double v = number();
    if (std::fabs(v) > 9.2e18) fail(fmt::format("{} is out of range", j_->dump()));
    return static_cast<std::int64_t>(std::llround(v));
  }
  std::uint64_t count() const {
    if (j_->is_number_unsigned()) return j_->get<std::uint64_t>();
    const std::int64_t v = integer();
    if (v < 0) fail(fmt::format("expected a count (0 or more), found {}", v));
    return static_cast<std::uint64_t>(v);
  }
  std::string string() const {
    if (!j_->is_string()) fail(fmt::format("expected a string, found {}", j_->type_name()));
    return j_->get<std::string>();
  }
  bool boolean() const {
    if (!j_->is_boolean()) fail(fmt::format("expected true or false, found {}", j_->type_name()));
    return j_->get<bool>();
  }
  // a member's value, or `def` when it is missing or null (a present, mistyped one is an error)
  std::string str(const char* key, const std::string& def) const { return has(key) ? at(key).string() : def; }
  bool flag(const char* key, bool def) const { return has(key) ? at(key).boolean() : def; }
  std::uint64_t u64(const char* key, std::uint64_t def) const { return has(key) ? at(key).count() : def; }

 private:
  const json* j_;
  std::string path_;
};

// ================================================================ rules

/// What a reader refuses and when a writer leaves a key out. The default: optional on
/// reading (a missing or null key keeps the member's value), always written.
struct Rules {
  bool required = false;         // the key must be there (null allowed for an optional member)
  bool duration = false;         // an integer of nanoseconds, not below 0
  bool non_negative = false;     // a number not below 0
  bool share = false;            // a number from 0 to 1
  bool write = true;             // false: the writer leaves it out (the reader still reads it)
  bool null_when_empty = false;  // an empty optional is written as null (else left out)
  const char* old_key = nullptr;  // read from this key when the key is missing (older reports)
};

// ================================================================ enums as words

/// `EnumWords<E>`: the words an enum is written as, and the noun a refusal names it by
/// ("'gpu' is not a stage (source, …)"); without a noun the refusal lists the words
/// ("'f16' is not f32 or f64").
template <typename E>
struct EnumWords;

template <typename E>
concept Worded = requires(E e) {
  { EnumWords<E>::count } -> std::convertible_to<int>;
  { EnumWords<E>::word(e) } -> std::convertible_to<const char*>;
};

template <Worded E>
std::string enum_list(bool with_or) {
  std::string all;
  int listed = 0;
  for (int i = 0; i < EnumWords<E>::count; ++i) {
    const char* w = EnumWords<E>::word(static_cast<E>(i));
    if (!*w) continue;
    const bool last = i == EnumWords<E>::count - 1;
    all += listed == 0 ? "" : (last && with_or ? " or " : ", ");
    all += w;
    ++listed;
  }
  return all;
}

template <Worded E>
E read_enum(const Node& n) {
  const std::string s = n.string();
  for (int i = 0; i < EnumWords<E>::count; ++i)
    if (s == EnumWords<E>::word(static_cast<E>(i))) return static_cast<E>(i);
  const char* noun = EnumWords<E>::noun;
  if (*noun) n.fail(fmt::format("'{}' is not {} ({})", s, noun, enum_list<E>(false)));
  n.fail(fmt::format("'{}' is not {}", s, enum_list<E>(true)));
}

// ================================================================ the description's entry

/// `Fields<T>::each(io, s)` describes T (s is T or const T); `Fields<T>::after_read(node,
/// t)`, where there is one, checks and completes what was read.
template <typename T>
struct Fields;

template <typename T>
concept Described = requires { sizeof(Fields<T>); };

template <typename T>
concept HasAfterRead = requires(const Node& n, T& t) { Fields<T>::after_read(n, t); };

template <typename T>
struct IsOptional : std::false_type {};
template <typename T>
struct IsOptional<std::optional<T>> : std::true_type {};
template <typename T>
struct IsVector : std::false_type {};
template <typename T>
struct IsVector<std::vector<T>> : std::true_type {};

/// A value type with a codec of its own instead of a description (`Codec<T>::put` and
/// `Codec<T>::get`), e.g. a histogram summary or a list held as an object.
template <typename T>
struct Codec;
template <typename T>
concept Coded = requires(const T& t, const Node& n, T& out) {
  { Codec<T>::put(t) } -> std::same_as<json>;
  Codec<T>::get(n, out);
};

// ================================================================ writing

class Writer {
 public:
  static constexpr bool reading = false;
  explicit Writer(json& j) : j_(j) {}

  template <typename T, typename U = T>
  void operator()(const char* key, const T& v, Rules r = {}, const U* = nullptr) {
    if (!r.write) return;
    if constexpr (IsOptional<T>::value) {
      if (v)
        j_[key] = put(*v);
      else if (r.null_when_empty)
        j_[key] = nullptr;
    } else {
      j_[key] = put(v);
    }
  }
  /// A value the reader does not read back (it follows from other fields).
  template <typename T>
  void derived(const char* key, const T& v) {
    j_[key] = put(v);
  }
  /// An object of this struct's members under `key` (e.g. "margin": {"text", "ns"}).
  template <typename F>
  void object(const char* key, F&& inner, Rules r = {}) {
    if (!r.write) return;
    json sub = json::object();
    Writer w(sub);
    inner(w);
    j_[key] = std::move(sub);
  }
  /// An array indexed by an enum, held as an object keyed by the enum's words; an empty
  /// optional element is left out.
  /// A member with its own way to be written and read (`put(v)` gives its json, `get(node,
  /// v)` reads it); the reader sets *missing_as when the key is missing.
  template <typename T, typename Put, typename Get>
  void custom(const char* key, const T& v, Put put_fn, Get, Rules r = {}, const T* = nullptr) {
    if (r.write) j_[key] = put_fn(v);
  }
  template <typename A, typename Key>
  void keyed(const char* key, const A& arr, Key word, Rules r = {}) {
    object(key, [&](Writer& w) {
      for (std::size_t i = 0; i < arr.size(); ++i) w(word(static_cast<int>(i)), arr[i]);
    }, r);
  }

  template <typename T>
  static json put(const T& v) {
    if constexpr (Coded<T>) {
      return Codec<T>::put(v);
    } else if constexpr (Described<T>) {
      json sub = json::object();
      Writer w(sub);
      Fields<T>::each(w, v);
      return sub;
    } else if constexpr (Worded<T>) {
      return EnumWords<T>::word(v);
    } else if constexpr (IsVector<T>::value) {
      json a = json::array();
      for (const auto& e : v) a.push_back(put(e));
      return a;
    } else if constexpr (IsOptional<T>::value) {
      return v ? put(*v) : json(nullptr);
    } else {
      return json(v);
    }
  }

 private:
  json& j_;
};

// ================================================================ reading

class Reader {
 public:
  static constexpr bool reading = true;
  explicit Reader(const Node& n) : n_(n) {}
  const Node& node() const { return n_; }

  /// Reads `key` into `v`. Missing or null keeps v's value, or takes *missing_as when given
  /// (a field that first appeared later: older reports meant that other field); for an
  /// optional struct, *missing_as is what a present object's missing keys start from.
  template <typename T, typename U = T>
  void operator()(const char* key, T& v, Rules r = {}, const U* missing_as = nullptr) {
    const char* k = key;
    if (!n_.contains(key) && r.old_key && n_.contains(r.old_key)) k = r.old_key;
    if (r.required && !n_.contains(k)) n_.at(key).fail("missing");
    if (!n_.has(k)) {
      if constexpr (IsOptional<T>::value) {
        v.reset();
      } else if constexpr (std::is_assignable_v<T&, const U&>) {
        if (missing_as) v = *missing_as;
      }
      return;
    }
    const Node at = n_.at(k);
    if constexpr (IsOptional<T>::value) {
      typename T::value_type x{};
      if constexpr (std::is_same_v<U, typename T::value_type>)
        if (missing_as) x = *missing_as;
      get(at, x, r);
      v = std::move(x);
    } else {
      get(at, v, r);
    }
  }
  template <typename T>
  void derived(const char*, const T&) {}
  template <typename F>
  void object(const char* key, F&& inner, Rules r = {}) {
    if (r.required && !n_.has(key)) n_.at(key).fail("missing");
    if (!n_.has(key)) return;
    Reader sub(n_.obj(key));
    inner(sub);
  }
  template <typename T, typename Put, typename Get>
  void custom(const char* key, T& v, Put, Get get_fn, Rules r = {}, const T* missing_as = nullptr) {
    if (r.required && !n_.contains(key)) n_.at(key).fail("missing");
    if (n_.has(key))
      get_fn(n_.at(key), v);
    else if (missing_as)
      v = *missing_as;
  }
  template <typename A, typename Key>
  void keyed(const char* key, A& arr, Key word, Rules r = {}) {
    object(key, [&](Reader& rd) {
      for (std::size_t i = 0; i < arr.size(); ++i) rd(word(static_cast<int>(i)), arr[i], r.required ? Rules{.required = true} : Rules{});
    }, r);
  }

  template <typename T>
  static void get(const Node& n, T& v, Rules r = {}) {
    if constexpr (Coded<T>) {
      Codec<T>::get(n, v);
    } else if constexpr (Described<T>) {
      Reader sub(n.object());
      Fields<T>::each(sub, v);
      if constexpr (HasAfterRead<T>) Fields<T>::after_read(n, v);
    } else if constexpr (Worded<T>) {
      v = read_enum<T>(n);
    } else if constexpr (IsVector<T>::value) {
      if (!n.raw().is_array()) n.fail(fmt::format("expected an array, found {}", n.raw().type_name()));
      v.clear();
      v.reserve(n.size());
      for (std::size_t i = 0; i < n.size(); ++i) {
        typename T::value_type e{};
        get(n.elem(i), e, r);
        v.push_back(std::move(e));
      }
    } else {
      scalar(n, v, r);
    }
  }

 private:
  static void scalar(const Node& n, bool& v, Rules) { v = n.boolean(); }
  static void scalar(const Node& n, std::string& v, Rules) { v = n.string(); }
  static void scalar(const Node& n, double& v, Rules r) {
    v = n.number();
    if (r.share && (v < 0 || v > 1)) n.fail(fmt::format("{} is not a share (0 to 1)", v));
    if (r.non_negative && v < 0) n.fail(fmt::format("{} is below 0", v));
  }
  template <typename I>
    requires std::is_integral_v<I> && std::is_signed_v<I>
  static void scalar(const Node& n, I& v, Rules r) {
    const std::int64_t x = n.integer();
    if (x < std::numeric_limits<I>::min() || x > std::numeric_limits<I>::max()) n.fail(fmt::format("{} is out of range", x));
    if (r.duration && x < 0) n.fail(fmt::format("{} ns is not a time (below 0)", x));
    if (r.non_negative && x < 0) n.fail(fmt::format("{} is below 0", x));
    v = static_cast<I>(x);
  }
  template <typename U>
    requires std::is_integral_v<U> && std::is_unsigned_v<U> && (!std::is_same_v<U, bool>)
  static void scalar(const Node& n, U& v, Rules) {
    const std::uint64_t x = n.count();
    if (x > std::numeric_limits<U>::max()) n.fail(fmt::format("{} is out of range", x));
    v = static_cast<U>(x);
  }

  Node n_;  // a copy: readers are made from temporaries (n.obj(key))
};

/// Writes a described value as a json object.
template <Described T>
json to_object(const T& v) {
  return Writer::put(v);
}

/// Reads a described value from an object node (after_read included).
template <Described T>
T from_object(const Node& n) {
  T v{};
  Reader::get(n, v);
  return v;
}

}  // namespace chunkscope::fields
