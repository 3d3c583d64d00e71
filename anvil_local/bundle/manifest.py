"""A kit's manifest: what it holds (every file's size and sha256) and what it was built from.

This module uses the standard library only: `anvil bundle` copies it into every kit as
`verify_kit.py`, so `install.sh` checks the kit with the target's bare Python before pip
installs anything from it, with the very code `anvil bundle verify` runs.

    python3 verify_kit.py KIT     # exit 0: intact; 2: one line naming the bad file
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

#: The manifest's file name, at the top of the kit.
MANIFEST = "manifest.json"
#: Bumped when the manifest's shape changes.
KIT_VERSION = 1
_CHUNK = 1 << 20


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def kit_files(kit: Path) -> list[str]:
    """Every file of the kit but the manifest, as sorted POSIX paths relative to the kit."""
    return sorted(
        p.relative_to(kit).as_posix() for p in kit.rglob("*") if p.is_file() and p.name != MANIFEST
    )


def write_manifest(kit: Path, about: dict[str, Any]) -> dict[str, Any]:
    """Hash every file of the kit and write the manifest beside them; returns it."""
    files = {}
    for name in kit_files(kit):
        path = kit / name
        files[name] = {"size": path.stat().st_size, "sha256": file_sha256(path)}
    manifest = {"kit": KIT_VERSION, **about, "files": files}
    (kit / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


def read_manifest(kit: Path) -> dict[str, Any]:
    """The kit's manifest; ValueError (one line) when there is none or it is unreadable."""
    path = kit / MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(
            f"{path}: no manifest; is {kit} a kit written by `anvil bundle`?"
        ) from None
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: unreadable manifest ({exc})") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict):
        raise ValueError(f"{path}: not a kit manifest (no file list)")
    if manifest.get("kit") != KIT_VERSION:
        raise ValueError(f"{path}: kit format {manifest.get('kit')!r}, expected {KIT_VERSION}")
    return manifest


def problems(kit: Path) -> list[str]:
    """What differs between the kit and its manifest, one line per file (empty: intact).
    A missing, resized or altered file, and a file the manifest does not list (pip would
    install a stray wheel), are all problems."""
    manifest = read_manifest(kit)
    listed: dict[str, dict[str, Any]] = manifest["files"]
    found = []
    for name, expected in sorted(listed.items()):
        path = kit / name
        if not path.is_file():
            found.append(f"{path}: missing (the manifest lists it)")
        elif path.stat().st_size != expected.get("size"):
            found.append(
                f"{path}: {path.stat().st_size} bytes, the manifest says {expected.get('size')}"
            )
        elif file_sha256(path) != expected.get("sha256"):
            found.append(f"{path}: sha256 differs from the manifest's {expected.get('sha256')}")
    for name in kit_files(kit):
        if name not in listed:
            found.append(f"{kit / name}: not in the manifest")
    return found


def main(argv: list[str]) -> int:
    """`python3 verify_kit.py KIT`: one line, exit 0 when intact, 2 when not (a script in
    the kit, run before anything is installed: it writes to the streams, no logging set up)."""
    if len(argv) != 1:
        sys.stderr.write("usage: verify_kit.py KIT\n")
        return 2
    kit = Path(argv[0])
    try:
        found = problems(kit)
    except ValueError as exc:
        sys.stderr.write(f"Error: {exc}\n")
        return 2
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        sys.stderr.write(f"Error: {found[0]}{more}\n")
        return 2
    count = len(read_manifest(kit)["files"])
    sys.stdout.write(f"{kit}: {count} files match the manifest\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
