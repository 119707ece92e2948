// Error-propagation macros for absl::Status / absl::StatusOr, the one error model of the
// codebase (docs/semantics.md §3 "Errors").
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define KF_CONCAT_INNER_(a, b) a##b
#define KF_CONCAT_(a, b) KF_CONCAT_INNER_(a, b)

// RETURN_IF_ERROR(expr): evaluates `expr` (a Status) and returns it from the enclosing
// function if it is not OK.
#define RETURN_IF_ERROR(expr)                \
  do {                                       \
    ::absl::Status kf_status_ = (expr);      \
    if (!kf_status_.ok()) return kf_status_; \
  } while (0)

// ASSIGN_OR_RETURN(lhs, expr): evaluates `expr` (a StatusOr<T>); on error returns its status,
// otherwise move-assigns the value to `lhs` (which may be a declaration: `auto x`).
#define ASSIGN_OR_RETURN(lhs, expr) \
  KF_ASSIGN_OR_RETURN_IMPL_(KF_CONCAT_(kf_statusor_, __LINE__), lhs, expr)

#define KF_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr)     \
  auto statusor = (expr);                                  \
  if (!statusor.ok()) return std::move(statusor).status(); \
  lhs = std::move(statusor).value()
