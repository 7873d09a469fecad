#pragma once
// The layouts AMX's tiles load their operands in (tiles.hpp), packed from row-major
// bf16 matrices, and fp32 results narrowed back to bf16, for attention_head.
// AVX-512 code, run only where the tiles are usable.
#include <cstdint>

#include <c10/util/BFloat16.h>

namespace vit::detail::amx {

// Where bias is not null (fp32, one value per column of x), x + bias is packed
// instead of x, rounded to bf16 as narrow_rows rounds.

// x's rows (x_stride values apart) as `pairs` pairs of bf16 each, transposed: dst's
// row c (dst_stride pairs apart) holds pair c of every row of x, zeros past x's end
// up to a multiple of 16. This lays x^T out as B, and a paired x as x^T's A.
void transpose_pairs(const c10::BFloat16* x, int64_t x_stride, const float* bias, int64_t rows,
                     int64_t pairs, c10::BFloat16* dst, int64_t dst_stride);

// x (rows x cols bf16, rows x_stride apart) as B with K along its rows,
// `depth` deep: dst's row p holds the pairs (x[2p][c], x[2p+1][c]) for every
// c, and zeros past x's last row.
void pair_rows(const c10::BFloat16* x, int64_t x_stride, const float* bias, int64_t rows,
               int64_t cols, int64_t depth, c10::BFloat16* dst);

// dst (rows x cols, row-major) = x, x's rows x_stride apart.
void biased_rows(const c10::BFloat16* x, int64_t x_stride, const float* bias, int64_t rows,
                 int64_t cols, c10::BFloat16* dst);

// dst's rows (dst_stride apart) = x's (rows x cols fp32, x_stride apart) rounded to
// nearest-even bf16, subnormals taken as 0. Where sums is not null, also writes each
// column's rounded values summed (cols floats).
void narrow_rows(const float* x, int64_t x_stride, int64_t rows, int64_t cols, c10::BFloat16* dst,
                 int64_t dst_stride, float* sums);

}  // namespace vit::detail::amx
