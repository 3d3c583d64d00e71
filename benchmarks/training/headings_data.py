"""Code-made training cases for the headings DAG's structural questions (issue 40, part 5).

    python benchmarks/training/headings_data.py --out build/headings [--cases 1600] [--seed 0]

Writes `present.jsonl` (every case, `labels.present`: the three headings 'Intro', 'Body' and
'Conclusion' all stand on lines of their own) and `ordered.jsonl` (the cases holding all
three, `labels.ordered`: they come in that order), as `anvil train data --cases` reads them.
The summaries are made by code from word lists (no evaluation text is used), so every label
is exact: a random set of headings (the three, some of them, distractors such as 'Notes',
or none), in a random order, in one of the ways a person writes a heading ('Intro',
'Intro:', '## Intro', 'INTRO', '**Intro**', 'intro', ...), over filler
meeting sentences that sometimes name a heading word in passing. `--split test` draws from
other word lists, for a held-out check the training never saw.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

WANTED = ["Intro", "Body", "Conclusion"]
DISTRACTORS = {
    "train": ["Notes", "Summary", "Actions", "Background", "Next steps", "Decisions"],
    "test": ["Overview", "Details", "Follow-up", "Risks", "Agenda", "Outcome"],
}
TEAMS = {
    "train": ["platform", "design", "sales", "support", "data", "mobile", "security"],
    "test": ["billing", "search", "infrastructure", "marketing", "research"],
}
PEOPLE = {
    "train": ["Ana", "Bo", "Chen", "Dara", "Eli", "Femi", "Gus"],
    "test": ["Hana", "Ivo", "Jun", "Kemal", "Lea"],
}
THINGS = {
    "train": ["the cache migration", "the API review", "the release notes", "the login bug",
              "the quarterly budget", "the onboarding guide", "the load tests"],
    "test": ["the invoice export", "the search index", "the vendor contract",
             "the survey results", "the backup policy"],
}  # fmt: skip
VERBS = ["will finish", "will review", "reported on", "asked about", "will draft", "fixed"]
#: How a heading is written: as a person might, in any case and markup (`h` the heading,
#: `H` in capitals, `l` in lower case).
STYLES = ["{h}", "{h}:", "## {h}", "{h}", "{H}", "**{h}**", "# {h}", "{H}:", "{l}", "**{h}:**"]


def sentence(rng: random.Random, split: str) -> str:
    person, thing = rng.choice(PEOPLE[split]), rng.choice(THINGS[split])
    line = f"{person} {rng.choice(VERBS)} {thing}."
    if rng.random() < 0.15:  # a heading word in passing, not a heading
        line += f" The {rng.choice(WANTED).lower()} of the plan stays as it is."
    return line


def summary(rng: random.Random, split: str, team: str) -> tuple[str, list[str]]:
    """A summary and the headings it holds, in order."""
    kind = rng.random()
    if kind < 0.5:
        headings = list(WANTED)
        if rng.random() < 0.5:
            while headings == WANTED:
                rng.shuffle(headings)
        if rng.random() < 0.25:
            headings.insert(rng.randrange(4), rng.choice(DISTRACTORS[split]))
    elif kind < 0.9:
        keep = rng.sample(WANTED, rng.randint(0, 2))
        extra = rng.sample(DISTRACTORS[split], rng.randint(0 if keep else 1, 2))
        headings = keep + extra
        rng.shuffle(headings)
    else:
        headings = []
    if not headings:
        body = " ".join(sentence(rng, split) for _ in range(rng.randint(2, 3)))
        return f"The {team} team met. {body}", []
    style = rng.choice(STYLES)
    blocks = [
        f"{style.format(h=h, H=h.upper(), l=h.lower())}\n"
        + " ".join(sentence(rng, split) for _ in range(rng.randint(1, 2)))
        for h in headings
    ]
    return "\n\n".join(blocks), [h for h in headings if h in WANTED]


def cases(count: int, seed: int, split: str) -> list[dict]:
    rng = random.Random(f"{seed}:{split}")
    out = []
    for i in range(count):
        team = rng.choice(TEAMS[split])
        text, found = summary(rng, split, team)
        present = all(h in found for h in WANTED)
        labels = {"present": int(present)}
        if present:
            labels["ordered"] = int(found == WANTED)
        out.append(
            {
                "id": f"headings-{split}-{i}",
                "input": f"Transcript of the {team} team meeting {i}.",
                "actual_output": text,
                "labels": labels,
            }
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--cases", type=int, default=1600)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--split", choices=["train", "test"], default="train")
    args = parser.parse_args()
    made = cases(args.cases, args.seed, args.split)
    args.out.mkdir(parents=True, exist_ok=True)
    files = {
        "present.jsonl": made,
        "ordered.jsonl": [c for c in made if "ordered" in c["labels"]],
    }
    for name, rows in files.items():
        with open(args.out / name, "w", encoding="utf-8") as f:
            for row in rows:
                f.write(json.dumps(row) + "\n")
        share = sum(1 for r in rows if r["labels"][name.split(".")[0]]) / len(rows)
        print(f"{args.out / name}: {len(rows)} cases, {share:.0%} labelled 1")


if __name__ == "__main__":
    main()
