#include "command_list.hpp"

#include "analyses/cmd_ablate.hpp"
#include "analyses/cmd_attention.hpp"
#include "analyses/cmd_attn_distance.hpp"
#include "analyses/cmd_cka.hpp"
#include "analyses/cmd_faithfulness.hpp"
#include "analyses/cmd_filters.hpp"
#include "analyses/cmd_lens.hpp"
#include "analyses/cmd_patch.hpp"
#include "analyses/cmd_pos_embed.hpp"
#include "analyses/cmd_probe.hpp"
#include "analyses/cmd_rollout.hpp"
#include "analyses/cmd_sae.hpp"
#include "analyses/cmd_saliency.hpp"
#include "commands/cmd_config.hpp"
#include "commands/cmd_data.hpp"
#include "commands/cmd_eval.hpp"
#include "commands/cmd_export.hpp"
#include "commands/cmd_info.hpp"
#include "commands/cmd_predict.hpp"
#include "commands/cmd_train.hpp"
#include "report/cmd_report.hpp"

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
  register_patch(cli);
  register_sae(cli);
  register_cka(cli);
  register_faithfulness(cli);
  register_report(cli);
}

}  // namespace vit::cli
