"""The public labelled pairs a judge is trained on: where each file comes from (repository,
commit, sha256), under what licence, and how its lines become (document, claim, label) pairs.

Files are read from a folder the user lays out (`--sources DIR`): `DIR/<name>/<path>`, a
checkout of the named repository at the pinned commit. Nothing is downloaded here: the
recipe names what to fetch, checks the bytes it is given, and refuses any other bytes.

Sources left out on purpose, with why, are in `EXCLUDED` (their licences do not allow shipping
a model trained on them, or they state none).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from anvil_local.errors import DataError
from anvil_local.models.catalogue import sha256_file


@dataclass(frozen=True)
class Pair:
    """One labelled pair: is `claim` supported by `document`?"""

    document: str
    claim: str
    supported: bool
    source: str
    ref: str  # where in the source: "<path>:<line>"


@dataclass(frozen=True)
class SourceFile:
    path: str
    sha256: str


@dataclass(frozen=True)
class Source:
    """A public data set pinned to a commit, with the licence that allows training on it."""

    name: str
    repo: str
    commit: str
    folder: str  # the checkout's folder name under --sources
    files: tuple[SourceFile, ...]
    licence: str
    about: str

    def paths(self, root: Path) -> list[Path]:
        return [root / self.folder / f.path for f in self.files]

    def check(self, root: Path) -> None:
        """Every file present with the pinned bytes, or a one-line DataError naming it."""
        for spec, path in zip(self.files, self.paths(root), strict=True):
            if not path.is_file():
                raise DataError(
                    f"{self.name}: {path} is missing (a checkout of {self.repo} at "
                    f"{self.commit[:12]} under {root / self.folder})"
                )
            digest = file_sha256(path)
            if digest != spec.sha256:
                raise DataError(
                    f"{self.name}: {path} has sha256 {digest[:16]}..., the recipe pins "
                    f"{spec.sha256[:16]}... ({self.repo} at {self.commit[:12]})"
                )

    def pairs(self, root: Path) -> Iterator[Pair]:
        """The source's lines as pairs: DocNLI's `label<TAB>premise<TAB>hypothesis`."""
        for spec, path in zip(self.files, self.paths(root), strict=True):
            with path.open(encoding="utf-8") as handle:
                for number, line in enumerate(handle, 1):
                    fields = line.rstrip("\n").split("\t")
                    if len(fields) != 3:
                        continue  # DocNLI has a few lines with a tab inside a text
                    label, premise, hypothesis = fields
                    if label not in ("entailment", "not_entailment"):
                        continue
                    if not premise.strip() or not hypothesis.strip():
                        continue
                    yield Pair(
                        " ".join(premise.split()),
                        " ".join(hypothesis.split()),
                        label == "entailment",
                        self.name,
                        f"{spec.path}:{number}",
                    )


def file_sha256(path: Path) -> str:
    return sha256_file(path)


_DOCNLI = "salesforce/DocNLI"
_DOCNLI_COMMIT = "492992a4d3fbf4bb96a7a48c4c6c95ee11c3234a"

SOURCES: tuple[Source, ...] = (
    Source(
        name="docnli-mnli",
        repo=_DOCNLI,
        commit=_DOCNLI_COMMIT,
        folder="DocNLI",
        files=(
            SourceFile(
                "Data/binary-MNLI/dev.txt",
                "61499a54b82fa8e03948c0aeed8933f962931624e2bb4cdacdba42f19a8a1205",
            ),
            SourceFile(
                "Data/binary-MNLI/test.txt",
                "598389832fa655690ad0a1c321eabe537cb1ebd7a7bc50ca74e1668168a0c1ee",
            ),
        ),
        licence="BSD-3-Clause (DocNLI); MultiNLI text under OANC, CC BY 3.0 and CC BY-SA 3.0",
        about="MultiNLI sentence pairs, neutral and contradiction merged into not supported",
    ),
    Source(
        name="docnli-fever",
        repo=_DOCNLI,
        commit=_DOCNLI_COMMIT,
        folder="DocNLI",
        files=(
            SourceFile(
                "Data/binary-FEVER-NLI/dev.txt",
                "5a6d4171b189f2b91142b887e248803994dc32a770eaeaf43fa9912afbb94f92",
            ),
            SourceFile(
                "Data/binary-FEVER-NLI/test.txt",
                "5aa3fa72c9020ba3a66b0e859810cdb262918c38e176dfd455039cccf91f5340",
            ),
        ),
        licence="BSD-3-Clause (DocNLI); FEVER claims and Wikipedia evidence under CC BY-SA 3.0",
        about="FEVER claims against Wikipedia evidence passages (several sentences)",
    ),
)

#: Sources named in the issue tracker's research and left out, with the reason.
EXCLUDED: dict[str, str] = {
    "DocNLI MCTest-NLI": "MCTest is released under a Microsoft Research licence for research use",
    "asaakyan/covidfact": "the repository states no licence",
    "tdiggelm/climate-fever-dataset": "the repository states no licence",
    "ANLI, SICK": "non-commercial licences",
    "tingofurro/summac data/": "not in the repository snapshot (downloaded by a script)",
}


def case_pairs(path: Path, label: str) -> Iterator[Pair]:
    """A user's own labelled cases as pairs: `input` the document, `actual_output` the claim,
    `label` (`labels.NAME`) 1/true for supported, 0/false for not (0.5 and up counts as 1)."""
    key = label.removeprefix("labels.")
    if not path.is_file():
        raise DataError(f"--cases {path}: no such file")
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                raise DataError(f"{path}:{number}: not JSON") from None
            value = (row.get("labels") or {}).get(key) if isinstance(row, dict) else None
            document, claim = (
                (row.get("input"), row.get("actual_output")) if value is not None else (None, None)
            )
            if not isinstance(document, str) or not isinstance(claim, str):
                raise DataError(
                    f"{path}:{number}: a labelled case needs `input`, `actual_output` and "
                    f"`labels.{key}`"
                )
            if isinstance(value, bool | int | float):
                supported = float(value) >= 0.5
            else:
                raise DataError(f"{path}:{number}: labels.{key} is {value!r}, not 0/1")
            yield Pair(document, claim, supported, path.stem, f"{path.name}:{number}")


def source_named(name: str) -> Source:
    for source in SOURCES:
        if source.name == name:
            return source
    known = ", ".join(s.name for s in SOURCES)
    raise DataError(f"no training source named {name!r} (known: {known})")
