"""The kit's `install.sh`: one command on the offline side.

It checks the kit against its manifest with the target's bare Python (the kit's copy of
`manifest.py`), makes a virtual environment, installs anvil-local from the kit's wheels
alone (no index, no other find-links, no pip configuration of the host), stores the kit's
models in the data dir as their catalogue entries (`anvil models add`), and runs
`anvil doctor`, whose exit status it returns.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

_TEMPLATE = """\
#!/bin/sh
# Install anvil-local {version} from this kit, with no network: a virtual environment, the
# kit's wheels only, the kit's models stored in the data dir, then `anvil doctor`.
#   sh install.sh [VENV]    VENV defaults to ./anvil-venv; PYTHON=... picks the interpreter
set -eu
KIT=$(CDPATH= cd -- "$(dirname -- "$0")" && pwd)
VENV=${{1:-anvil-venv}}
PYTHON=${{PYTHON:-python3}}
WANT={python}
HAVE=$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
if [ "$HAVE" != "$WANT" ]; then
    echo "install.sh: the kit's wheels are for Python $WANT; $PYTHON is $HAVE (set PYTHON=)" >&2
    exit 2
fi
"$PYTHON" "$KIT/verify_kit.py" "$KIT"
"$PYTHON" -m venv "$VENV"
env -u PIP_FIND_LINKS -u PIP_INDEX_URL -u PIP_EXTRA_INDEX_URL PIP_CONFIG_FILE=/dev/null \\
    "$VENV/bin/python" -m pip install --disable-pip-version-check --no-index \\
    --find-links "$KIT/wheels" "anvil-local=={version}"
for model in {models}; do
    "$VENV/bin/anvil" models add "$KIT/$model"
done
"$VENV/bin/anvil" doctor
echo "installed: $VENV/bin/anvil"
"""


def install_script(version: str, python: str, model_paths: Sequence[str]) -> str:
    """install.sh for anvil-local `version` on Python `python` (major.minor), storing the
    models at `model_paths` (relative to the kit)."""
    text = _TEMPLATE.format(
        version=version,
        python=shlex.quote(python),
        models=" ".join(shlex.quote(p) for p in model_paths),
    )
    if not model_paths:  # nothing to store: no loop
        start = text.index("for model in")
        text = text[:start] + text[text.index("done\n", start) + len("done\n") :]
    return text
