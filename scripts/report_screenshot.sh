#!/usr/bin/env bash
# Renders a vit report.html in headless Chromium (Debian's `chromium`) to a
# PNG of the whole page, and checks it the way a reader's browser would:
#   - every <img> decoded (complete, naturalWidth > 0);
#   - no error while loading: no script error, no resource that failed to
#     load, no console message (the page has no scripts of its own);
#   - nothing fetched from a network (host resolution is switched off, so any
#     attempt shows up as a failed resource).
# A copy of the page gets a small inline script at the top of <head> that
# records errors and, once the page has loaded, writes its findings into the
# DOM, which --dump-dom prints. The screenshot is taken of the original page.
#   scripts/report_screenshot.sh REPORT.html OUT.png [WIDTH]
# Exit status: 0 when the checks pass, 1 when one fails, 2 on bad usage or no chromium.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: report_screenshot.sh REPORT.html OUT.png [WIDTH]" >&2; exit 2; }
report=$1 out=$2 width=${3:-1200}
[ -f "$report" ] || { echo "report_screenshot.sh: $report: no such file" >&2; exit 2; }
browser=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
[ -n "$browser" ] || { echo "report_screenshot.sh: chromium is not installed (scripts/setup.sh --browser-check)" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
run_chromium() {  # ARGS... -> the browser's stdout; its stderr goes to $work/stderr
  local flags=(--headless --no-sandbox --disable-gpu --no-first-run --no-default-browser-check
               --disable-extensions --disable-background-networking --disable-sync
               --disable-component-update --no-proxy-server '--host-resolver-rules=MAP * ~NOTFOUND'
               --user-data-dir="$work/profile" --enable-logging=stderr --v=0
               --virtual-time-budget=10000)
  timeout 120 "$browser" "${flags[@]}" "$@" 2>>"$work/stderr"
}

cat >"$work/probe.html" <<'PROBE'
<script>
(function () {
  var errors = [], nl = String.fromCharCode(10);
  window.addEventListener("error", function (e) {
    var t = e.target;
    errors.push(t && t !== window && (t.src || t.href) ? "failed to load " + String(t.src || t.href).slice(0, 80)
                                                       : "script error: " + e.message);
  }, true);
  ["error", "warn", "log"].forEach(function (level) {
    var original = console[level];
    console[level] = function () { errors.push("console." + level + ": " + Array.prototype.join.call(arguments, " ")); original.apply(console, arguments); };
  });
  window.addEventListener("load", function () {
    var images = Array.prototype.slice.call(document.images);
    var broken = images.filter(function (i) { return !i.complete || i.naturalWidth === 0; });
    var result = document.createElement("pre");
    result.id = "vit-report-check";
    result.textContent = "VIT-CHECK images=" + images.length + " broken=" + broken.length +
      " errors=" + errors.length + " height=" + document.documentElement.scrollHeight +
      nl + broken.map(function (i) { return "broken image: " + (i.alt || "(no alt)"); }).concat(errors).join(nl) +
      nl + "VIT-CHECK-END";
    document.body.appendChild(result);
  });
})();
</script>
PROBE
# The probe goes right after the first <head>, before anything that could fail.
awk -v probe="$work/probe.html" '
  !done && (i = index($0, "<head>")) {
    print substr($0, 1, i + 5)
    while ((getline line < probe) > 0) print line
    $0 = substr($0, i + 6); done = 1
  }
  { print }' "$report" >"$work/probed.html"
run_chromium --dump-dom "file://$work/probed.html" >"$work/dom.html" || true
summary=$(grep -o 'VIT-CHECK images=[0-9]* broken=[0-9]* errors=[0-9]* height=[0-9]*' "$work/dom.html" || true)
if [ -z "$summary" ]; then
  echo "report_screenshot.sh: the page never finished loading in $browser" >&2
  tail -n 20 "$work/stderr" >&2
  exit 1
fi
# The findings sit in <pre id="vit-report-check">, from its first line to a line
# VIT-CHECK-END (the probe's own source never starts a line with it).
details=$(sed -n '/id="vit-report-check">VIT-CHECK images=[0-9]/,/^VIT-CHECK-END/p' "$work/dom.html" | sed '1d;$d')
read -r images broken errors height < <(echo "$summary" | sed -E 's/.*images=([0-9]+) broken=([0-9]+) errors=([0-9]+) height=([0-9]+)/\1 \2 \3 \4/')
# Console messages Chromium logged itself (e.g. a blocked resource) count as errors too.
console=$(grep -E ':CONSOLE[:(]|Failed to load resource|net::ERR_' "$work/stderr" || true)

height=$(( height < 600 ? 600 : (height > 30000 ? 30000 : height) ))
run_chromium --hide-scrollbars --window-size="$width,$height" --screenshot="$work/shot.png" "file://$(realpath "$report")" >/dev/null || true
if [ ! -s "$work/shot.png" ]; then
  echo "report_screenshot.sh: chromium wrote no screenshot" >&2
  tail -n 20 "$work/stderr" >&2
  exit 1
fi
mkdir -p "$(dirname "$out")"
cp "$work/shot.png" "$out"

echo "report_screenshot.sh: $report: $images images, $broken not decoded, $errors errors; ${width}x${height} screenshot in $out"
status=0
if [ "$images" -eq 0 ] || [ "$broken" -ne 0 ] || [ "$errors" -ne 0 ]; then status=1; fi
[ -n "$details" ] && echo "$details" >&2
if [ -n "$console" ]; then echo "$console" >&2; status=1; fi
exit $status
