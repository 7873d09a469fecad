#include "vit/train/metrics_log.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "vit/atomic_write.hpp"
#include "vit/error.hpp"

namespace vit {
namespace {

using nlohmann::json;

constexpr const char* kCsvHeader =
    "step,epoch,train_loss,train_acc,val_loss,val_acc,best_val_acc,lr,images_per_sec,elapsed_s,"
    "val_top5,ema_val_loss,ema_val_acc,peak_memory_mib";

// The optional fields, by name, as metrics.jsonl and metrics.csv name them.
template <class R, class F>
void for_each_optional(R& r, F&& f) {
  f("val_top5", r.val_top5);
  f("ema_val_loss", r.ema_val_loss);
  f("ema_val_acc", r.ema_val_acc);
  f("peak_memory_mib", r.peak_memory_mib);
}

}  // namespace

json to_json(const ValidationRecord& r) {
  json j = {{"step", r.step},
            {"epoch", r.epoch},
            {"train_loss", r.train_loss},
            {"train_acc", r.train_acc},
            {"val_loss", r.val_loss},
            {"val_acc", r.val_acc},
            {"best_val_acc", r.best_val_acc},
            {"lr", r.lr},
            {"images_per_sec", r.images_per_sec},
            {"elapsed_s", r.elapsed_s}};
  for_each_optional(r, [&](const char* name, const std::optional<double>& value) {
    if (value) j[name] = *value;
  });
  return j;
}

namespace {

std::string to_csv(const ValidationRecord& r) {
  std::string optional;
  for_each_optional(r, [&](const char*, const std::optional<double>& value) {
    optional += value ? fmt::format(",{:.6g}", *value) : ",";
  });
  return fmt::format("{},{:.4f},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},{:.6g},{:.1f},{:.1f}", r.step,
                     r.epoch, r.train_loss, r.train_acc, r.val_loss, r.val_acc, r.best_val_acc,
                     r.lr, r.images_per_sec, r.elapsed_s) +
         optional;
}

ValidationRecord from_json(const json& j) {
  ValidationRecord r;
  r.step = j.at("step").get<int64_t>();
  r.epoch = j.at("epoch").get<double>();
  r.train_loss = j.at("train_loss").get<double>();
  r.train_acc = j.value("train_acc", 0.0);
  r.val_loss = j.at("val_loss").get<double>();
  r.val_acc = j.at("val_acc").get<double>();
  r.best_val_acc = j.value("best_val_acc", r.val_acc);
  r.lr = j.at("lr").get<double>();
  r.images_per_sec = j.at("images_per_sec").get<double>();
  r.elapsed_s = j.at("elapsed_s").get<double>();
  for_each_optional(r, [&](const char* name, std::optional<double>& value) {
    if (j.contains(name)) value = j.at(name).get<double>();
  });
  return r;
}

void append_line(const std::string& path, const std::string& line) {
  std::ofstream out(path, std::ios::app);
  out << line << '\n';
  out.flush();
  if (!out) throw Error(path + ": cannot append a metrics record (disk full or not writable?)");
}

}  // namespace

MetricsLog::MetricsLog(const std::string& dir, int64_t keep_up_to_step)
    : jsonl_path_(dir + "/metrics.jsonl"), csv_path_(dir + "/metrics.csv") {
  std::vector<ValidationRecord> kept;
  if (keep_up_to_step >= 0 && std::filesystem::exists(jsonl_path_)) {
    for (const auto& r : read(jsonl_path_))
      if (r.step <= keep_up_to_step) kept.push_back(r);
  }
  std::string jsonl, csv = std::string(kCsvHeader) + "\n";
  for (const auto& r : kept) {
    jsonl += to_json(r).dump() + "\n";
    csv += to_csv(r) + "\n";
  }
  write_text_atomically(jsonl_path_, jsonl);
  write_text_atomically(csv_path_, csv);
}

void MetricsLog::append(const ValidationRecord& record) {
  append_line(jsonl_path_, to_json(record).dump());
  append_line(csv_path_, to_csv(record));
}

std::vector<ValidationRecord> MetricsLog::read(const std::string& jsonl_path) {
  std::ifstream in(jsonl_path);
  if (!in) throw Error(jsonl_path + ": cannot open");
  std::vector<ValidationRecord> records;
  std::string line;
  for (int line_number = 1; std::getline(in, line); ++line_number) {
    if (line.empty()) continue;
    try {
      records.push_back(from_json(json::parse(line)));
    } catch (const json::exception& e) {
      throw Error(jsonl_path + ":" + std::to_string(line_number) + ": not a metrics record (" +
                  e.what() + ")");
    }
  }
  return records;
}

}  // namespace vit
