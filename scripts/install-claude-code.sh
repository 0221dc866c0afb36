#!/usr/bin/env bash
# Installs the Claude Code that `npm run test:agents` runs, pinned, into a cache folder
# (reused when the right version is there). Never a dependency of this package: the tests
# run the real runtime, the package does not ship it.
set -euo pipefail
version="${CLAUDE_CODE_VERSION:-2.1.328}"
cache="${CLAUDE_CODE_CACHE:-$HOME/.cache/team-protocols/claude-code}"
manifest="$cache/node_modules/@anthropic-ai/claude-code/package.json"
if [ -f "$manifest" ] && grep -q "\"version\": \"$version\"" "$manifest"; then
  echo "Claude Code $version: $cache (cached)"
  exit 0
fi
mkdir -p "$cache"
# Its own folder and package.json, so npm installs there and nowhere near this repository.
[ -f "$cache/package.json" ] || echo '{"private":true}' > "$cache/package.json"
npm install --prefix "$cache" --no-audit --no-fund --no-save --loglevel=error \
  "@anthropic-ai/claude-code@$version"
echo "Claude Code $version: $cache"
