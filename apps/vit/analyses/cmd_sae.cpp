// vit sae: a sparse autoencoder on one layer's residual stream.
//  - `vit sae train --layer L` learns one (TopK, or ReLU with --l1) on the
//    patch tokens of training images (analysis/sparse_autoencoder) and scores
//    it on validation images: explained variance, L0, dead features, and the
//    model's cross-entropy with the layer spliced through the SAE. Writes
//    sae.safetensors, sae.json, sae.csv (each epoch's loss) and sae.png.
//  - `vit sae features` finds what its most frequent features fire on
//    (analysis/sae_features): features.json, features.csv (every feature's
//    frequency) and, for each, a grid of the validation images on which it
//    fires most, their strongest patch outlined.
#include "analyses/cmd_sae.hpp"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "cli/analysis_outputs.hpp"
#include "cli/input_images.hpp"
#include "vit/analysis/sae_features.hpp"
#include "vit/analysis/sae_file.hpp"
#include "vit/analysis/sparse_autoencoder.hpp"
#include "vit/atomic_write.hpp"
#include "vit/error.hpp"
#include "vit/io/grid.hpp"
#include "vit/io/image_io.hpp"
#include "vit/io/patch_outline.hpp"
#include "vit/io/plot.hpp"

namespace vit::cli {
namespace {

constexpr char kSaeFolder[] = "sae";
constexpr char kSaeFile[] = "sae.safetensors";
constexpr char kFeaturesFolder[] = "features";  // the per-feature grids, under the output folder

namespace fs = std::filesystem;

void check_layer(int64_t layer, const ModelConfig& m) {
  if (layer < 0 || layer > m.depth)
    throw Error(fmt::format(
        "--layer {}: expected 0..{} (0 the embeddings, l the residual stream after block l)", layer,
        m.depth));
}

void check_train_options(const SaeTrainOptions& o, const ModelConfig& m) {
  check_layer(o.layer, m);
  if (o.l1 && !(*o.l1 > 0)) throw Error(fmt::format("--l1 {}: expected a penalty > 0", *o.l1));
  if (!(o.lr > 0)) throw Error(fmt::format("--lr {}: expected a learning rate > 0", o.lr));
}

// What training starts from: --init's SAE (which the flags may not
// contradict), or a random one of --features and --k, or ReLU with --l1.
SaeFile starting_sae(const SaeTrainOptions& o, const ModelConfig& m, uint64_t seed) {
  if (!o.init) {
    const int64_t features = o.features.value_or(8 * m.dim);
    const int64_t k = o.l1 ? 0 : o.k.value_or(kDefaultK);
    if (k > features)
      throw Error(
          fmt::format("--k {} is above the {} features; expected 1..{}", k, features, features));
    return {SparseAutoencoder::random(m.dim, features, k, seed), o.layer, o.l1.value_or(0.0)};
  }
  const std::string& path = *o.init;
  SaeFile file = load_sae(path);
  check_sae_fits(file, m, path);
  const int64_t k = file.sae.k;
  if (file.layer != o.layer)
    throw Error(
        fmt::format("--init {}: trained on layer {}, not --layer {}", path, file.layer, o.layer));
  if (o.features && *o.features != file.sae.features())
    throw Error(fmt::format("--init {} has {} features, not --features {}", path,
                            file.sae.features(), *o.features));
  if ((o.k && *o.k != k) || (o.l1 && k != 0))
    throw Error(fmt::format("--init {} is {}, not {}", path,
                            k > 0 ? fmt::format("a TopK SAE with k {}", k) : "a ReLU SAE",
                            o.l1 ? "--l1's ReLU SAE" : fmt::format("--k {}", *o.k)));
  if (o.l1) file.l1 = *o.l1;
  return file;
}

// The patch tokens of layer `layer` of enough training images for `wanted`
// tokens (all of them when the split is smaller), on `device`.
at::Tensor training_tokens(OpenedModel& opened, const SaeTrainOptions& o, uint64_t seed) {
  const ModelConfig& m = opened.loaded.config.model;
  const int64_t available = opened.images(data::SplitName::kTrain).size();
  int64_t images = (o.tokens + m.num_patches() - 1) / m.num_patches();
  if (images > available) {
    spdlog::warn(
        "--tokens {} needs {} training images, but the split has {}: training on {} tokens",
        o.tokens, images, available, available * m.num_patches());
    images = available;
  }
  const auto pixels = choose_training_images(opened, images, seed, "--tokens").first;
  const auto tokens = layer_patch_tokens(
      opened.loaded.model, o.layer,
      image_batches(pixels, opened.loaded.config, opened.device, attention_batch_size(m)));
  return tokens.slice(0, 0, std::min(o.tokens, tokens.size(0))).to(opened.device);
}

std::string training_csv(const SaeTrainingReport& report) {
  std::string csv = "epoch,loss,resampled\n";
  for (size_t e = 0; e < report.epoch_losses.size(); ++e)
    csv += fmt::format("{},{:.6g},{}\n", e + 1, report.epoch_losses[e], report.epoch_resampled[e]);
  return csv;
}

// Left: the training loss by epoch. Right: every feature's firing frequency
// on the validation tokens, most frequent first, on a log scale.
at::Tensor training_plot(const SaeTrainingReport& report, const SaeQuality& quality,
                         const SaeFile& file) {
  io::Panel loss = counting_panel("Training loss", "epoch", "mean loss a token");
  std::vector<double> epochs;
  for (size_t e = 0; e < report.epoch_losses.size(); ++e)
    epochs.push_back(static_cast<double>(e + 1));
  loss.series.push_back({file.sae.k > 0 ? "||x - x_hat||^2" : "||x - x_hat||^2 + l1 |z|", epochs,
                         report.epoch_losses, io::SeriesStyle::kLineAndMarkers});
  loss.legend = false;
  const auto sorted = std::get<0>(quality.frequency.sort(0, /*descending=*/true));
  std::vector<double> rank, log_frequency;
  int64_t dead = 0;
  for (int64_t i = 0; i < sorted.size(0); ++i) {
    const double f = sorted[i].item<double>();
    dead += f > 0 ? 0 : 1;
    rank.push_back(static_cast<double>(i + 1));
    log_frequency.push_back(f > 0 ? std::log10(f) : std::nan(""));
  }
  io::Panel frequency = counting_panel(fmt::format("Firing frequency ({} dead, not shown)", dead),
                                       "feature, most frequent first",
                                       "log10 (share of validation tokens it fires on)");
  frequency.series.push_back({"", rank, log_frequency, io::SeriesStyle::kLine});
  frequency.legend = false;
  io::PlotOptions options;
  options.title = fmt::format("Sparse autoencoder on layer {}: {} features, {}", file.layer,
                              file.sae.features(),
                              file.sae.k > 0 ? fmt::format("TopK k = {}", file.sae.k)
                                             : fmt::format("ReLU, L1 {}", file.l1));
  return io::render_plot({loss, frequency}, options);
}

void print_quality(const nlohmann::json& j) {
  std::cout << fmt::format(
      "layer {}: {} features on {} tokens\n"
      "explained variance {:.4f}, L0 {:.2f}, dead {:.2f}%\n"
      "cross-entropy: clean {:.4f}, spliced {:.4f}, zero-ablated {:.4f}; recovered {:.4f}\n",
      j["layer"].get<int64_t>(), j["features"].get<int64_t>(), j["tokens"].get<int64_t>(),
      j["explained_variance"].get<double>(), j["l0"].get<double>(),
      100 * j["dead_fraction"].get<double>(), j["ce_loss_clean"].get<double>(),
      j["ce_loss_spliced"].get<double>(), j["ce_loss_zero_ablated"].get<double>(),
      j["ce_recovered"].get<double>());
}

// The SAE of --sae (or the default file), on the model's device, checked
// against the model.
SaeFile opened_sae(const std::string& path, const OpenedModel& opened) {
  if (!fs::is_regular_file(path))
    throw Error(path +
                ": no such file; train one with vit sae train --layer L, or pass --sae FILE");
  SaeFile file = load_sae(path);
  check_sae_fits(file, opened.loaded.config.model, path);
  for (auto* t : {&file.sae.W_enc, &file.sae.b_enc, &file.sae.W_dec, &file.sae.b_dec})
    *t = t->to(opened.device);
  return file;
}

// "features/feature-0042.png" for feature 42 of 1024.
std::string feature_png(int64_t feature, int64_t features) {
  const int digits = static_cast<int>(std::to_string(std::max<int64_t>(features - 1, 0)).size());
  return fmt::format("{}/feature-{:0{}}.png", kFeaturesFolder, feature, digits);
}

struct FeatureExample {
  int64_t image, patch;
  double activation;
};

std::vector<FeatureExample> examples_of(const SaeFeatureStatistics& s, int64_t feature) {
  std::vector<FeatureExample> examples;
  for (int64_t m = 0; m < s.top_image.size(0); ++m) {
    const int64_t image = s.top_image[m][feature].item<int64_t>();
    if (image < 0) break;
    examples.push_back({image, s.top_patch[m][feature].item<int64_t>(),
                        s.top_activation[m][feature].item<double>()});
  }
  return examples;
}

at::Tensor feature_grid(int64_t feature, const std::vector<FeatureExample>& examples,
                        const SaeFeatureStatistics& s, const AnalysisInputs& inputs,
                        const std::vector<std::string>& classes, const SaeFile& file,
                        const ModelConfig& m) {
  std::vector<io::Tile> tiles;
  for (const FeatureExample& e : examples) {
    const int64_t row = e.patch / m.grid(), column = e.patch % m.grid();
    tiles.push_back(
        {io::outlined_patch(inputs.pixels[e.image], row, column, m.patch_size),
         fmt::format("{} {}\n{:.3g} at ({}, {})", inputs.ids[static_cast<size_t>(e.image)],
                     class_name(classes, inputs.labels[e.image].item<int64_t>()), e.activation, row,
                     column)});
  }
  io::GridOptions grid;
  grid.columns = std::min<int64_t>(static_cast<int64_t>(tiles.size()), 8);
  grid.title = fmt::format("Feature {} of layer {}: fires on {:.2f}% of patch tokens", feature,
                           file.layer, 100 * s.frequency[feature].item<double>());
  grid.footer =
      "The validation images on which it fires most, strongest first, each at its strongest patch "
      "(outlined); under each, the image, its true class, the activation and the patch (row, "
      "column).";
  return io::make_grid(tiles, grid);
}

std::string features_csv(const SaeFeatureStatistics& s) {
  std::string csv = "feature,frequency,mean_activation,max_activation\n";
  for (int64_t f = 0; f < s.frequency.size(0); ++f)
    csv += fmt::format("{},{:.6g},{:.6g},{:.6g}\n", f, s.frequency[f].item<double>(),
                       s.mean_activation[f].item<double>(), s.top_activation[0][f].item<double>());
  return csv;
}

}  // namespace

fs::path default_sae_file(const LoadedModel& loaded) {
  return fs::path(loaded.path).parent_path() / kSaeFolder / kSaeFile;
}

nlohmann::json write_sae_train(OpenedModel& opened, const SaeTrainOptions& o) {
  LoadedModel& loaded = opened.loaded;
  require_head(loaded, "sae train");
  const Config& config = loaded.config;
  const ModelConfig& m = config.model;
  check_train_options(o, m);
  const uint64_t seed = o.common.seed.value_or(config.seed);
  SaeFile file = starting_sae(o, m, seed);
  const auto start = std::chrono::steady_clock::now();

  const at::Tensor tokens = training_tokens(opened, o, seed);
  SaeTraining training;
  training.epochs = o.epochs;
  training.lr = o.lr;
  training.optimizer = o.optimizer;
  training.l1 = file.l1;
  training.seed = seed;
  training.centre_decoder_bias = !o.init;
  const SaeTrainingReport report = train_sae(file.sae, tokens, training);

  const AnalysisInputs val =
      choose_analysis_inputs({}, o.samples.value_or(kLayerSamples), seed, opened);
  const auto val_batches =
      image_batches(val.pixels, config, opened.device, attention_batch_size(m));
  const SaeQuality quality = sae_quality(
      file.sae, layer_patch_tokens(loaded.model, o.layer, val_batches).to(opened.device));
  const SplicedLosses losses =
      spliced_losses(loaded.model, file.sae, o.layer, val_batches, val.labels);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  const fs::path out = output_folder(o.model, loaded, kSaeFolder);
  fs::create_directories(out);
  const nlohmann::json json = {{"layer", o.layer},
                               {"features", file.sae.features()},
                               {"tokens", tokens.size(0)},
                               {"explained_variance", quality.explained_variance},
                               {"l0", quality.l0},
                               {"dead_fraction", quality.dead_fraction},
                               {"ce_loss_clean", losses.clean},
                               {"ce_loss_spliced", losses.spliced},
                               {"ce_loss_zero_ablated", losses.zero_ablated},
                               {"ce_recovered", losses.recovered}};
  save_sae((out / kSaeFile).string(), file);
  write_text_atomically((out / "sae.json").string(), json.dump(2) + "\n");
  write_text_atomically((out / "sae.csv").string(), training_csv(report));
  io::write_png(out / "sae.png", training_plot(report, quality, file));
  print_quality(json);
  spdlog::info(
      "trained in {:.1f} s ({} steps, {} features resampled); wrote {}, sae.json, .csv "
      "and .png to {}",
      seconds, report.steps, report.resampled, kSaeFile, out.string());
  return json;
}

nlohmann::json write_sae_features(OpenedModel& opened, const SaeFeaturesOptions& o) {
  LoadedModel& loaded = opened.loaded;
  const Config& config = loaded.config;
  const ModelConfig& m = config.model;
  const std::string path = o.sae.value_or(default_sae_file(loaded).string());
  const SaeFile file = opened_sae(path, opened);
  const uint64_t seed = o.common.seed.value_or(config.seed);
  const AnalysisInputs val =
      choose_analysis_inputs({}, o.samples.value_or(kLayerSamples), seed, opened);
  const SaeFeatureStatistics stats = sae_feature_statistics(
      loaded.model, file.sae, file.layer,
      image_batches(val.pixels, config, opened.device, attention_batch_size(m)), o.examples);
  const std::vector<int64_t> chosen = most_frequent_features(stats, o.top);

  const fs::path out = o.model.out.empty() ? fs::path(path).parent_path() : fs::path(o.model.out);
  nlohmann::json listed = nlohmann::json::array();
  for (const int64_t feature : chosen) {
    const auto examples = examples_of(stats, feature);
    const std::string png = feature_png(feature, file.sae.features());
    io::write_png(out / png,
                  feature_grid(feature, examples, stats, val, loaded.class_names, file, m));
    nlohmann::json top = nlohmann::json::array();
    for (const FeatureExample& e : examples)
      top.push_back({{"image", val.ids[static_cast<size_t>(e.image)]},
                     {"label", class_name(loaded.class_names, val.labels[e.image].item<int64_t>())},
                     {"patch", e.patch},
                     {"row", e.patch / m.grid()},
                     {"column", e.patch % m.grid()},
                     {"activation", e.activation}});
    listed.push_back({{"feature", feature},
                      {"frequency", stats.frequency[feature].item<double>()},
                      {"mean_activation", stats.mean_activation[feature].item<double>()},
                      {"png", png},
                      {"top", top}});
  }
  const nlohmann::json json = {{"sae", path},
                               {"layer", file.layer},
                               {"samples", val.labels.size(0)},
                               {"tokens", stats.tokens},
                               {"frequency", to_doubles(stats.frequency)},
                               {"features", listed}};
  write_text_atomically((out / "features.json").string(), json.dump() + "\n");
  write_text_atomically((out / "features.csv").string(), features_csv(stats));
  std::cout << "feature  fires on  mean activation\n";
  for (const auto& f : listed)
    std::cout << fmt::format("{:>7}  {:7.2f}%  {:15.3f}\n", f["feature"].get<int64_t>(),
                             100 * f["frequency"].get<double>(),
                             f["mean_activation"].get<double>());
  spdlog::info("wrote features.json, features.csv and {} feature grids ({}/) to {}", chosen.size(),
               kFeaturesFolder, out.string());
  return json;
}

void register_sae(Cli& cli) {
  CLI::App* sae = cli.app().add_subcommand(
      "sae", "A sparse autoencoder on a layer's residual stream: train one, or show its features");
  sae->require_subcommand(1);

  auto [train, train_cmd] = add_command<SaeTrainOptions>(
      cli, *sae, "train",
      "Train a TopK (or ReLU + L1) sparse autoencoder on one layer's patch tokens and score it",
      on_opened_model(write_sae_train));
  add_model_source_options(*train_cmd, train->model, /*reads_data=*/true,
                           OutFolder::kBesideCheckpoint, "sae.safetensors, sae.json, .csv and .png",
                           kSaeFolder);
  train_cmd
      ->add_option("--layer", train->layer,
                   "the residual stream it learns: 0 the embeddings, l after block l")
      ->required();
  train_cmd->add_option("--features", train->features, "features (default 8 x the model's width)")
      ->check(at_least_one());
  auto* k = train_cmd
                ->add_option("--k", train->k,
                             "a TopK SAE keeping the k largest features (default " +
                                 std::to_string(kDefaultK) + ")")
                ->check(at_least_one());
  train_cmd
      ->add_option("--l1", train->l1, "a ReLU SAE with this L1 penalty on the features instead")
      ->excludes(k);
  train_cmd
      ->add_option("--tokens", train->tokens,
                   "training patch tokens, of training images drawn with --seed")
      ->check(at_least_one())
      ->capture_default_str();
  train_cmd->add_option("--epochs", train->epochs, "passes over the tokens")
      ->check(at_least_one())
      ->capture_default_str();
  train_cmd->add_option("--lr", train->lr, "the learning rate")->capture_default_str();
  add_enum_option(*train_cmd, "--optimizer", train->optimizer,
                  "adam (the default), or sgd: plain steps of -lr times the gradient");
  train_cmd
      ->add_option("--init", train->init,
                   "go on from this SAE (vit sae train's sae.safetensors): its features, k "
                   "and biases")
      ->check(CLI::ExistingFile);
  train_cmd
      ->add_option("--samples", train->samples,
                   "validation images it is scored on, drawn with --seed (default " +
                       std::to_string(kLayerSamples) + ")")
      ->check(at_least_one());

  auto [features, features_cmd] = add_command<SaeFeaturesOptions>(
      cli, *sae, "features",
      "What a sparse autoencoder's most frequent features fire on: the images and patches",
      on_opened_model(write_sae_features));
  add_model_source_options(*features_cmd, features->model, /*reads_data=*/true, OutFolder::kNone);
  features_cmd->add_option("--out", features->model.out,
                           "output folder for features.json, .csv and the feature grids "
                           "(default: the SAE's folder)");
  features_cmd->add_option("--sae", features->sae,
                           "the SAE vit sae train wrote (default sae/sae.safetensors next to the "
                           "checkpoint)");
  features_cmd->add_option("--top", features->top, "features shown, the most frequent first")
      ->check(at_least_one())
      ->capture_default_str();
  features_cmd->add_option("--examples", features->examples, "images shown a feature")
      ->check(at_least_one())
      ->capture_default_str();
  features_cmd
      ->add_option("--samples", features->samples,
                   "validation images searched, drawn with --seed (default " +
                       std::to_string(kLayerSamples) + ")")
      ->check(at_least_one());
}

}  // namespace vit::cli
