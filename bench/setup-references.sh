#!/bin/sh
# bench/setup-references.sh: the modern references bench/compare runs beside
# gad (torch 2.x eager and torch.compile, JAX jit), in a virtual environment
# of their own under the build directory, at pinned versions so that two
# runs of the suite compare with the same libraries.
#
#   bench/setup-references.sh [BUILD] [--reuse-venv VENV] [--python PY]
#
# BUILD (default: build) gets BUILD/bench-venv. --reuse-venv VENV: a venv
# that already has the pinned torch (and numpy): the new venv reads VENV's
# packages through a .pth file and only JAX is installed (saves the ~200 MB
# torch download while developing). --python PY: the interpreter the venv is
# made from (default python3). Idempotent: a second run with the pins in place
# installs nothing. torch comes from PyTorch's CPU wheel index (smaller, no
# CUDA libraries), from PyPI if that index cannot be reached. CI never runs
# this: benchmarks are not tests.
set -eu

TORCH_PIN=2.15.0
JAX_PIN=0.10.2
NUMPY_PIN=2.4.6
TORCH_INDEX=https://download.pytorch.org/whl/cpu

build=build
reuse=
py=python3
while [ $# -gt 0 ]; do
    case "$1" in
    --reuse-venv) reuse=$2; shift ;;
    --python) py=$2; shift ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    -*) echo "setup-references.sh: unknown option $1" >&2; exit 2 ;;
    *) build=$1 ;;
    esac
    shift
done

venv=$build/bench-venv
vpy=$venv/bin/python
if [ ! -x "$vpy" ]; then
    mkdir -p "$build"
    "$py" -m venv "$venv"
fi

if [ -n "$reuse" ]; then
    # the reused venv's site-packages, after the new venv's own (so JAX and
    # its numpy pin, if installed here, win)
    site=$("$reuse/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    own=$("$vpy" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    echo "$site" > "$own/zz-reuse-torch.pth"
fi

have() { # have PACKAGE VERSION: installed at that version (any local tag)
    "$vpy" - "$1" "$2" <<'EOF'
import sys
from importlib import metadata
try:
    v = metadata.version(sys.argv[1])
except metadata.PackageNotFoundError:
    sys.exit(1)
sys.exit(0 if v.split("+")[0] == sys.argv[2] else 1)
EOF
}

pip() { "$vpy" -m pip install --disable-pip-version-check -q "$@"; }

have numpy $NUMPY_PIN || pip "numpy==$NUMPY_PIN"
if ! have torch $TORCH_PIN; then
    # one quick try of the CPU index: pip's default retries take minutes
    # where the index's name does not resolve
    pip --retries 1 --timeout 20 --index-url "$TORCH_INDEX" "torch==$TORCH_PIN" ||
        pip "torch==$TORCH_PIN"
fi
if ! have jax $JAX_PIN || ! have jaxlib $JAX_PIN; then
    pip "jax[cpu]==$JAX_PIN" "numpy==$NUMPY_PIN"
fi

"$vpy" - <<'EOF'
import sys
import numpy, torch, jax, jaxlib
print("python %s" % sys.version.split()[0])
print("numpy %s" % numpy.__version__)
print("torch %s (%s)" % (torch.__version__, torch.__file__.rsplit("/", 2)[0]))
print("jax %s, jaxlib %s" % (jax.__version__, jaxlib.__version__))
EOF
echo "references ready: $vpy"
