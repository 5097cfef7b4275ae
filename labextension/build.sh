#!/usr/bin/env bash
# Rebuild the JupyterLab extension into ../cuda_magic/labextension (committed: users need no Node).
# Needs Node 18+ and npm; then `pip install -e .` copies it where JupyterLab looks
# (share/jupyter/labextensions/cuda-magic-highlight). docs/development.md says more.
set -euo pipefail
cd "$(dirname "$0")"
npm ci --no-audit --no-fund
npx tsc
core="$(python3 -c 'import jupyterlab, os; print(os.path.join(os.path.dirname(jupyterlab.__file__), "staging"))')"
rm -rf ../cuda_magic/labextension
node node_modules/@jupyterlab/builder/lib/build-labextension.js --core-path "$core" .
sha256sum src/index.ts package.json package-lock.json > ../cuda_magic/labextension/source.sha256
