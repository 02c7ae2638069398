#!/usr/bin/env bash
# Makes (or reuses) the Python virtual environment of python/requirements.txt
# and prints its python's path. The environment lives outside the work tree,
# in the user's cache, keyed by the requirements' checksum, so a fresh clone
# (CI's included) reuses it and a change of pins makes a new one.
# WEIR_VENV overrides the folder.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
req="$here/requirements.txt"
sum="$(sha256sum "$req" | cut -c1-12)"
venv="${WEIR_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/weir/venv-$sum}"
py="$venv/bin/python"
if [[ -x "$py" && -f "$venv/.weir-ready" ]]; then
	echo "$py"
	exit 0
fi
python="${PYTHON:-python3}"
echo "weir: making the Python environment $venv (apache-beam takes a few minutes)" >&2
mkdir -p "$(dirname "$venv")"
rm -rf "$venv"
"$python" -m venv "$venv" >&2
"$venv/bin/pip" install --quiet --disable-pip-version-check -r "$req" >&2
touch "$venv/.weir-ready"
echo "$py"
