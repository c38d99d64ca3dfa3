#!/usr/bin/env bash
# Build the docs site and look at it in a real browser (headless Chromium, Debian's `chromium` package):
# screenshots of the index and of one API page, and a check that the API page holds the rendered docstrings.
# Not run by CI (it needs a browser): `bash scripts/check_docs_site.sh [OUT_DIR]` (default /tmp/ding_lite_docs_check).
# Browser: apt-get update && apt-get install -y chromium
set -euo pipefail
cd "$(dirname "$0")/.."
out="$(realpath -m "${1:-/tmp/ding_lite_docs_check}")"
browser="$(command -v chromium || command -v chromium-browser || true)"
if [ -z "$browser" ]; then
  echo "check_docs_site: no chromium found; install it with: apt-get update && apt-get install -y chromium" >&2
  exit 2
fi
mkdir -p "$out"
NO_MKDOCS_2_WARNING=1 python -m mkdocs build --strict --site-dir "$out/site"
port="$(python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
python -m http.server "$port" --bind 127.0.0.1 --directory "$out/site" >"$out/http.log" 2>&1 &
server=$!
trap 'kill "$server"' EXIT
for _ in $(seq 50); do  # wait until the server answers
  python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/')" 2>/dev/null && break
  sleep 0.1
done
shoot() {  # shoot URL_PATH NAME: a screenshot and the DOM after scripts ran
  local flags=(--headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1280,1000)
  "$browser" "${flags[@]}" --screenshot="$out/$2.png" "http://127.0.0.1:$port/$1" 2>/dev/null
  "$browser" "${flags[@]}" --dump-dom "http://127.0.0.1:$port/$1" >"$out/$2.html" 2>/dev/null
}
shoot "" index
shoot "api/pipelines/" api_pipelines
# the pages rendered: the theme's title, and mkdocstrings' headings with docstrings under them
grep -q "ding_lite documentation" "$out/index.html" || { echo "check_docs_site: index page did not render" >&2; exit 1; }
for name in serial_pipeline parallel_pipeline plot_pipeline; do
  grep -q "id=\"ding_lite.entry.[a-z_]*.$name\"" "$out/api_pipelines.html" \
    || { echo "check_docs_site: API page lacks $name" >&2; exit 1; }
done
grep -q "Train until the eval return reaches" "$out/api_pipelines.html" \
  || { echo "check_docs_site: API page lacks the serial_pipeline docstring" >&2; exit 1; }
echo "docs site OK: screenshots $out/index.png $out/api_pipelines.png"
