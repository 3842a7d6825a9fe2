#!/usr/bin/env bash
# Install code-server from the npm registry with no other network access (recipe measured in
# shared/research/editors). Idempotent: a finished install is marked with .ok and reused.
#
# Why not a plain `npm install code-server`: code-server >= 4.103 wants Node 22/24 (Node 20 here:
# pin 4.100.3 = VS Code 1.100.3); its postinstall runs `npm install` in lib/vscode, where
# @vscode/ripgrep downloads rg from GitHub (no network) and kerberos needs gssapi headers. So:
# install with --ignore-scripts, put Debian's rg where @vscode/ripgrep expects it, `npm rebuild`
# the native modules, and replay the rest of code-server's postinstall.sh by hand.
#
# Needs (apt): ripgrep, libkrb5-dev, a C toolchain (build-essential) and python3.
# Env: CS_VERSION (4.100.3), CS_DIR. Prints the code-server binary path on its last line.
set -euo pipefail
CS_VERSION="${CS_VERSION:-4.100.3}"
CS_DIR="${CS_DIR:-$HOME/.cache/milk-lsp-ci/code-server-$CS_VERSION}"
BIN="$CS_DIR/node_modules/.bin/code-server"
if [ -f "$CS_DIR/.ok" ] && [ -x "$BIN" ]; then echo "$BIN"; exit 0; fi

command -v rg >/dev/null || { echo "install_code_server: need ripgrep (apt)" >&2; exit 1; }
[ -e /usr/include/gssapi/gssapi.h ] || { echo "install_code_server: need libkrb5-dev (apt)" >&2; exit 1; }

rm -rf "$CS_DIR"; mkdir -p "$CS_DIR"; cd "$CS_DIR"
LOG="$CS_DIR/install.log"
run() { "$@" >> "$LOG" 2>&1 || { echo "install_code_server: failed: $*" >&2; tail -40 "$LOG" >&2; exit 1; }; }
echo '{"name":"cs-host","version":"0.0.0","private":true}' > package.json
export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false
# Native modules build against the local Node headers: node-gyp must never try to download them.
if [ -z "${npm_config_nodedir:-}" ] && [ -e /usr/include/node/node_api.h ]; then
  export npm_config_nodedir=/usr
fi
run npm install --ignore-scripts "code-server@$CS_VERSION"
run npm rebuild --foreground-scripts argon2

cd node_modules/code-server/lib/vscode
run npm install --omit=dev --ignore-scripts
mkdir -p node_modules/@vscode/ripgrep/bin
ln -sf "$(command -v rg)" node_modules/@vscode/ripgrep/bin/rg
# node-pty's postinstall calls `npx node-gyp`: npm_config_yes avoids "npx canceled".
run env npm_config_yes=true npm rebuild --foreground-scripts

rm -rf node_modules.asar && ln -s node_modules node_modules.asar
(cd bin/remote-cli && ln -sf code-linux.sh code-server)
(cd bin/helpers && ln -sf browser-linux.sh browser.sh)
cd extensions
run npm install --omit=dev --ignore-scripts
run node ./postinstall.mjs

cd "$CS_DIR"
# even --version writes $XDG_CONFIG_HOME/code-server/config.yaml: keep it inside CS_DIR
XDG_CONFIG_HOME="$CS_DIR/xdg-config" XDG_DATA_HOME="$CS_DIR/xdg-data" "$BIN" --version >> "$LOG" 2>&1
touch "$CS_DIR/.ok"
echo "$BIN"
