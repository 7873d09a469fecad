# Sourced by the benchmark scripts that run `vit train`.

# A scratch folder for the runs, in $out, removed on exit; every vit train
# points runs/latest at its run, so the user's link is put back on exit too.
bench_scratch() {
  out=$(mktemp -d)
  bench_latest=$(readlink runs/latest 2>/dev/null || true)
  trap bench_restore EXIT
}
bench_restore() {
  rm -rf "$out"
  if [ -n "$bench_latest" ]; then ln -sfn "$bench_latest" runs/latest; else rm -f runs/latest; fi
}

# The median of the numbers on stdin, one a line.
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
