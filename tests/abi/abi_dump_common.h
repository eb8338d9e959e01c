/*
 * abi_dump_common.h -- the printing helpers that abi_dump.c (nccl.h, in C and C++) and
 * abi_dump_host.cc (nccl_device/host.h, C++ only) share. Every fact is one line, `key value...`, with
 * a key that no other line uses, so abi_compare.sh can diff two dumps key by key. Lines only a C++
 * build can print start with "cxx.", so a C dump and a C++ dump of one header can be compared too.
 */
#ifndef BRAID_TESTS_ABI_DUMP_COMMON_H_
#define BRAID_TESTS_ABI_DUMP_COMMON_H_

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
#include <type_traits>
#include <typeinfo>

/* The spelling of a type, identical to the C11 _Generic table below. */
template <typename T>
struct AbiTypeName {
  static constexpr const char* kName = "other";
};
#define ABI_TYPE_NAME_ENTRY(type, name)        \
  template <>                                  \
  struct AbiTypeName<type> {                   \
    static constexpr const char* kName = name; \
  };
ABI_TYPE_NAME_ENTRY(char, "char")
ABI_TYPE_NAME_ENTRY(signed char, "signed char")
ABI_TYPE_NAME_ENTRY(unsigned char, "unsigned char")
ABI_TYPE_NAME_ENTRY(short, "short")
ABI_TYPE_NAME_ENTRY(unsigned short, "unsigned short")
ABI_TYPE_NAME_ENTRY(int, "int")
ABI_TYPE_NAME_ENTRY(unsigned int, "unsigned int")
ABI_TYPE_NAME_ENTRY(long, "long")
ABI_TYPE_NAME_ENTRY(unsigned long, "unsigned long")
ABI_TYPE_NAME_ENTRY(long long, "long long")
ABI_TYPE_NAME_ENTRY(unsigned long long, "unsigned long long")
ABI_TYPE_NAME_ENTRY(float, "float")
ABI_TYPE_NAME_ENTRY(double, "double")
ABI_TYPE_NAME_ENTRY(long double, "long double")
ABI_TYPE_NAME_ENTRY(char*, "char*")
ABI_TYPE_NAME_ENTRY(const char*, "const char*")
ABI_TYPE_NAME_ENTRY(void*, "void*")
ABI_TYPE_NAME_ENTRY(const void*, "const void*")
#define ABI_TYPE_NAME(expr) AbiTypeName<std::decay_t<decltype(expr)>>::kName
#define ABI_ALIGNOF(type) alignof(type)
/* The mangled name of a type: it spells out struct tags, pointers, arrays and enums, so two headers
 * that disagree on any of them print different lines. */
#define ABI_MANGLED(type) typeid(type).name()
#else
/* clang-format cannot lay out a _Generic association list. */
/* clang-format off */
#define ABI_TYPE_NAME(expr)                                                                          \
  _Generic((expr), char: "char", signed char: "signed char", unsigned char: "unsigned char",         \
           short: "short", unsigned short: "unsigned short", int: "int", unsigned int: "unsigned int", \
           long: "long", unsigned long: "unsigned long", long long: "long long",                      \
           unsigned long long: "unsigned long long", float: "float", double: "double",                \
           long double: "long double", char*: "char*", const char*: "const char*", void*: "void*",   \
           const void*: "const void*", default: "other")
/* clang-format on */
#define ABI_ALIGNOF(type) _Alignof(type)
#endif

#define PRINT_INT(name, expr) printf("%s %lld (type %s)\n", name, (long long)(expr), ABI_TYPE_NAME(expr))
#define PRINT_ENUM(value) printf("enum.%s %lld\n", #value, (long long)(value))
#define PRINT_SIZE(type) \
  printf("sizeof.%s %zu\nalignof.%s %zu\n", #type, sizeof(type), #type, (size_t)ABI_ALIGNOF(type))
/* A struct by its tag: C++ mangles the tag into every signature that takes the struct. */
#define PRINT_STRUCT_SIZE(tag)                                                            \
  printf("sizeof.struct.%s %zu\nalignof.struct.%s %zu\n", #tag, sizeof(struct tag), #tag, \
         (size_t)ABI_ALIGNOF(struct tag))
#define PRINT_FIELD_COMMON(type, field)                                                                                \
  printf("field.%s.%s offset %zu size %zu type %s\n", #type, #field, offsetof(type, field), sizeof(((type*)0)->field), \
         ABI_TYPE_NAME(((type*)0)->field))
#ifdef __cplusplus
/* C++ adds the exact declared type of each field (decltype keeps arrays and enums as they are). */
#define PRINT_FIELD(type, field)   \
  PRINT_FIELD_COMMON(type, field); \
  printf("cxx.field.%s.%s %s\n", #type, #field, ABI_MANGLED(decltype(((type*)0)->field)))
#else
#define PRINT_FIELD(type, field) PRINT_FIELD_COMMON(type, field)
#endif
#define PRINT_PTR_FIELD(prefix, obj, field) \
  printf("%s.%s %s\n", prefix, #field, (obj).field == NULL ? "NULL" : "non-NULL")
#define PRINT_INT_FIELD(prefix, obj, field) printf("%s.%s %lld\n", prefix, #field, (long long)(obj).field)
#define PRINT_HEX_FIELD(prefix, obj, field) printf("%s.%s 0x%llx\n", prefix, #field, (unsigned long long)(obj).field)
#define PRINT_MACRO_UNDEFINED(name) printf("macro.%s <undefined>\n", name)
/* An integer macro; the caller wraps it in #ifdef NAME ... #else PRINT_MACRO_UNDEFINED ... #endif, so that
 * a macro missing from one header shows as a diff line rather than a build failure. */
#define PRINT_INT_MACRO(name) PRINT_INT("macro." #name, name)

#endif /* BRAID_TESTS_ABI_DUMP_COMMON_H_ */
