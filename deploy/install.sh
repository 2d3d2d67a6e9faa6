#!/bin/sh
# The install steps of the container image, as a plain script: deploy/Dockerfile runs exactly these,
# and an operator can run them on a host (see deploy/README.md). Run from the repository root.
#
#   sh deploy/install.sh deps VENV   create VENV if needed and install the dependencies listed in
#                                    pyproject.toml (only pyproject.toml is needed, not the source)
#   sh deploy/install.sh app VENV    install paperbot itself from the source, without touching the
#                                    dependencies installed by the first step
set -eu

usage() {
    echo "usage: sh deploy/install.sh deps|app VENV" >&2
    exit 2
}

[ "$#" -eq 2 ] || usage
step=$1
venv=$2
python=${PYTHON:-python3}

if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv"
fi

case "$step" in
deps)
    # tomllib needs Python >= 3.11, which paperbot requires anyway.
    "$venv/bin/python" -c '
import sys, tomllib
with open("pyproject.toml", "rb") as f:
    project = tomllib.load(f)["project"]
sys.stdout.write("".join(dep + "\n" for dep in project["dependencies"]))
' > "$venv/paperbot-requirements.txt"
    "$venv/bin/python" -m pip install --no-cache-dir --disable-pip-version-check --quiet \
        -r "$venv/paperbot-requirements.txt"
    ;;
app)
    "$venv/bin/python" -m pip install --no-cache-dir --disable-pip-version-check --quiet --no-deps .
    "$venv/bin/paperbot" --help > /dev/null
    ;;
*)
    usage
    ;;
esac
