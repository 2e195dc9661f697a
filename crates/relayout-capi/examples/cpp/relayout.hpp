// relayout.hpp: RAII wrappers of relayout.h for C++17, as a user of the C API would write
// them. A relayout::Kernel owns its relayout_kernel_t and frees it when destroyed; errors
// become relayout::Error exceptions that carry the message and the conformance category.
#pragma once

#include "relayout.h"

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace relayout {

// An error of the C API: its message, and its category ("not_divisible", ...; empty when it
// has none).
class Error : public std::runtime_error {
  public:
    // Takes ownership of `e` and frees it.
    explicit Error(relayout_error_t *e)
        : std::runtime_error(e ? relayout_error_message(e) : "unknown relayout error"),
          category_(e && relayout_error_category(e) ? relayout_error_category(e) : "") {
        relayout_error_free(e);
    }
    const std::string &category() const { return category_; }

  private:
    std::string category_;
};

// An op compiled for one input type. Movable, not copyable; const methods may be called from
// any number of threads at once.
class Kernel {
  public:
    // Compiles `op`, in the op syntax of the relayout command line; throws Error.
    explicit Kernel(const std::string &op) {
        relayout_error_t *e = nullptr;
        k_.reset(relayout_compile(op.c_str(), &e));
        if (!k_) throw Error(e);
    }

    size_t input_bytes() const { return relayout_kernel_input_bytes(k_.get()); }
    size_t output_bytes() const { return relayout_kernel_output_bytes(k_.get()); }

    std::vector<int64_t> output_shape() const {
        std::vector<int64_t> shape(relayout_kernel_output_rank(k_.get()));
        for (size_t i = 0; i < shape.size(); i++) shape[i] = relayout_kernel_output_dim(k_.get(), i);
        return shape;
    }

    // Runs on raw bytes; throws Error (category "buffer_length" for a wrong size).
    void run(const void *src, size_t src_bytes, void *dst, size_t dst_bytes,
             size_t threads = 1) const {
        relayout_error_t *e = nullptr;
        if (relayout_kernel_run(k_.get(), src, src_bytes, dst, dst_bytes, threads, &e) != 0)
            throw Error(e);
    }

    // Runs on a vector of elements of the op's element type, into a new vector.
    template <class T> std::vector<T> run(const std::vector<T> &src, size_t threads = 1) const {
        std::vector<T> dst(output_bytes() / sizeof(T));
        run(src.data(), src.size() * sizeof(T), dst.data(), dst.size() * sizeof(T), threads);
        return dst;
    }

    // The text of one compilation stage: "lowered", "optimized", "loops", "clif", "vcode".
    std::string ir(const std::string &stage) const {
        relayout_error_t *e = nullptr;
        std::unique_ptr<char, decltype(&relayout_string_free)> text(
            relayout_kernel_ir(k_.get(), stage.c_str(), &e), &relayout_string_free);
        if (!text) throw Error(e);
        return text.get();
    }

  private:
    struct Free {
        void operator()(relayout_kernel_t *k) const { relayout_kernel_free(k); }
    };
    std::unique_ptr<relayout_kernel_t, Free> k_;
};

} // namespace relayout
