#include "commands.hpp"

#include "cmd_ablate.hpp"
#include "cmd_attention.hpp"
#include "cmd_attn_distance.hpp"
#include "cmd_cka.hpp"
#include "cmd_config.hpp"
#include "cmd_data.hpp"
#include "cmd_eval.hpp"
#include "cmd_export.hpp"
#include "cmd_faithfulness.hpp"
#include "cmd_filters.hpp"
#include "cmd_info.hpp"
#include "cmd_lens.hpp"
#include "cmd_pos_embed.hpp"
#include "cmd_predict.hpp"
#include "cmd_probe.hpp"
#include "cmd_report.hpp"
#include "cmd_rollout.hpp"
#include "cmd_saliency.hpp"
#include "cmd_train.hpp"

namespace vit::cli {

void register_all_commands(Cli& cli) {
  register_train(cli);
  register_eval(cli);
  register_predict(cli);
  register_info(cli);
  register_config(cli);
  register_data(cli);
  register_rollout(cli);
  register_attn_distance(cli);
  register_export(cli);
  register_pos_embed(cli);
  register_filters(cli);
  register_saliency(cli);
  register_attention(cli);
  register_lens(cli);
  register_probe(cli);
  register_ablate(cli);
  register_cka(cli);
  register_faithfulness(cli);
  register_report(cli);
}

}  // namespace vit::cli
