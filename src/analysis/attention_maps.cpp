// Shape key: L layers, B batch, H heads, F prefix tokens, N = F + g*g tokens, g grid side.
#include "vit/analysis/attention_maps.hpp"

#include <regex>

#include <torch/torch.h>

#include "vit/analysis/rollout.hpp"
#include "vit/error.hpp"

namespace vit {
namespace {

constexpr const char* kAttentionMapsWhere = "attention maps";

// (B,H,N,N) -> (B,H,N): the query's row.
at::Tensor query_row(const at::Tensor& attention, const AttentionQuery& query,
                     const AttentionShape& shape) {
  switch (query.kind) {
    case AttentionQuery::Kind::kPatchMean:
      return attention.slice(/*dim=*/2, /*start=*/shape.prefix).mean(/*dim=*/2);
    case AttentionQuery::Kind::kPatch:
      return attention.select(/*dim=*/2, shape.prefix + query.row * shape.grid + query.column);
    case AttentionQuery::Kind::kClassToken:
      break;
  }
  return attention.select(/*dim=*/2, 0);
}

void check_query(const AttentionQuery& query, int64_t grid) {
  if (query.kind != AttentionQuery::Kind::kPatch) return;
  if (query.row < 0 || query.row >= grid || query.column < 0 || query.column >= grid) {
    throw Error(std::string(kAttentionMapsWhere) + ": query patch " + attention_query_name(query) +
                " is outside the " + std::to_string(grid) + "x" + std::to_string(grid) +
                " patch grid; rows and columns count from 0 to " + std::to_string(grid - 1));
  }
}

}  // namespace

AttentionQuery parse_attention_query(const std::string& text) {
  static const std::regex kPattern(R"(\s*(\d{1,6})\s*,\s*(\d{1,6})\s*)");
  std::smatch match;
  if (!std::regex_match(text, match, kPattern)) {
    throw Error("query '" + text +
                "' is not a patch 'i,j'; expected row and column counted from 0, e.g. 3,4");
  }
  AttentionQuery query;
  query.kind = AttentionQuery::Kind::kPatch;
  query.row = std::stoll(match[1].str());
  query.column = std::stoll(match[2].str());
  return query;
}

std::string attention_query_name(const AttentionQuery& query) {
  switch (query.kind) {
    case AttentionQuery::Kind::kPatchMean:
      return "patch_mean";
    case AttentionQuery::Kind::kPatch:
      return std::to_string(query.row) + "," + std::to_string(query.column);
    case AttentionQuery::Kind::kClassToken:
      break;
  }
  return "class_token";
}

at::Tensor attention_query_maps(const std::vector<at::Tensor>& attentions,
                                const AttentionQuery& query, int64_t prefix_tokens) {
  const auto shape = check_attention_shapes(attentions, kAttentionMapsWhere, prefix_tokens);
  check_query(query, shape.grid);
  std::vector<at::Tensor> layers;
  for (const auto& a : attentions) {
    const auto dtype = a.scalar_type() == torch::kDouble ? torch::kDouble : torch::kFloat;
    layers.push_back(query_row(a.detach().to(torch::kCPU, dtype), query, shape)
                         .slice(/*dim=*/2, /*start=*/shape.prefix));  // (B, H, g*g)
  }
  return torch::stack(layers, /*dim=*/1)
      .reshape({shape.batch, shape.layers, shape.heads, shape.grid, shape.grid});
}

}  // namespace vit
