"""Every numbered clause of each approved rule text (seeds/), read from the text itself.

A clause is a numbered rule of the body (`9.2.1`, NZ `9.3A`), a top-level section with no numbered
rule under it (ACT `1`, NZ `8`), a numbered item of a house-way appendix (NSW `App2 4.1`, NZ
`App4 2.3`, ACT `App D 2`), or an appendix with nothing numbered in it (NSW `App3`, the cuts).
Lettered paragraphs (`ACT 5.1(c)`) are parts of their clause, not clauses: the NZ text lost its
letters in conversion (each one reads "1."), so only the explicit letters of ACT, UTH 8.2 and the NZ
amendment (004) are known, and a citation's letter is checked against those where known.

The texts have a few misprinted numbers; `ERRATA` reads them as meant, each with why, and the
numbering check (every clause's parent exists, no number twice) fails on any other.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from importlib import resources

from shared.errors import InputError


class SeedError(InputError):
    """A seed's text does not number its clauses the way this reader expects."""


@dataclass(frozen=True)
class Seed:
    key: str  # the --rules name: nsw, nz, act, uth
    tag: str  # the prefix a citation uses: NSW, NZ, ACT, UTH
    game: str
    title: str
    files: tuple[str, ...]  # seeds/ files, the approved text first, then its amendments


SEEDS: tuple[Seed, ...] = (
    Seed("nsw", "NSW", "paigow", "Pai Gow, NSW (The Star, 2024)", ("000_e69570623fec5fbb.txt",)),
    Seed("uth", "UTH", "uth", "Ultimate Texas Hold'em, NSW (The Star, 2025)",
         ("001_7916df6f9b424f65.txt",)),
    Seed("nz", "NZ", "paigow", "Pai Gow, New Zealand (with the 2001 amendment)",
         ("002_cf6eb8f2c2a01e81.txt", "004_4596970daa21b303.txt")),
    Seed("act", "ACT", "paigow", "Pai Gow, ACT (Casino Canberra, 1993)",
         ("003_c7f4617fa4abe05d.txt",)),
)
BY_KEY = {s.key: s for s in SEEDS}
BY_TAG = {s.tag: s for s in SEEDS}


@dataclass(frozen=True)
class Clause:
    seed: str  # Seed.key
    id: str  # "9.2.1", "9.3A", "8", "App2 4.1", "App D 2", "App3"
    text: str  # the clause's first line, as printed
    where: str  # "000_....txt:123"
    letters: frozenset[str] | None = None  # its explicit (a), (b)...; None: not known (NZ)
    deleted: bool = False  # "[This rule has been deleted ...]"
    amended_by: str = ""  # the amendment's file, when it substitutes the clause's text


# (seed, number as printed, how the line begins after it) -> the number meant, and why.
ERRATA: dict[tuple[str, str, str], tuple[str, str]] = {
    ("uth", "4.1.1", "commence play by dealing"): (
        "4.3.3", "the third option of 4.3 (after 4.3.1, 4.3.2), misprinted as a second 4.1.1"),
    ("uth", "5.1.1.1", "Contribute to the jackpot pool"): (
        "15.2.5.2", "the second item of 15.2.5 (after 15.2.5.1), misprinted as 5.1.1.1"),
    ("uth", "5.1.1.2", "Have a qualifying wager"): (
        "15.2.5.3", "the third item of 15.2.5, misprinted as 5.1.1.2"),
}

_MARK = re.compile(r"<\|[^|]*\|>")  # conversion artefacts in the NZ text
_NUMBERED = re.compile(r"^[\s\-*]*(\d{1,2}(?:\.\d{1,2})+[A-Z]?)\.?(?:\s+|$)(.*)")
_LETTER = re.compile(r"^[\s\-*]*\(([a-z])\)\s")


def _lines(name: str) -> list[str]:
    text = resources.files("controller.rules").joinpath("seeds", name).read_text("utf-8")
    return [_MARK.sub("", line).rstrip() for line in text.splitlines()]


def _index(lines: list[str], pattern: str, start: int = 0) -> int:
    rx = re.compile(pattern)
    for i in range(start, len(lines)):
        if rx.search(lines[i]):
            return i
    raise SeedError(f"no line matches {pattern!r}")


@dataclass
class _Reader:
    seed: Seed
    name: str
    clauses: dict[str, Clause] = field(default_factory=dict)
    sections: set[str] = field(default_factory=set)
    letters: dict[str, set[str]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def add(self, cid: str, text: str, line: int, amended_by: str = "") -> None:
        where = f"{self.name}:{line + 1}"
        if cid in self.clauses and not amended_by:
            first = self.clauses[cid].where
            self.problems.append(f"{self.seed.tag} {cid} twice ({first}, {where})")
            return
        self.clauses[cid] = Clause(self.seed.key, cid, text.strip()[:160], where,
                                   deleted="has been deleted" in text, amended_by=amended_by)

    def body(self, lines: list[str], start: int, end: int, section: re.Pattern[str]) -> None:
        current = ""
        for i in range(start, end):
            line = lines[i]
            if (m := section.match(line)) and not _NUMBERED.match(line):
                self.sections.add(m.group(1))
                current, heading = m.group(1), line
                self.clauses.setdefault(f"§{current}", Clause(
                    self.seed.key, current, heading.strip(" #*-"), f"{self.name}:{i + 1}"))
                continue
            if m := _NUMBERED.match(line):
                number, rest = m.group(1), m.group(2)
                if number.endswith(".0"):  # NZ numbers its sections "3.0"
                    self.sections.add(number[:-2])
                    current = number[:-2]
                    self.clauses.setdefault(f"§{current}", Clause(
                        self.seed.key, current, rest, f"{self.name}:{i + 1}"))
                    continue
                for (seed, printed, begins), (meant, _why) in ERRATA.items():
                    if seed == self.seed.key and number == printed and rest.startswith(begins):
                        number = meant
                self.add(number, rest, i)
                current = number
                continue
            if (m := _LETTER.match(line)) and current:
                self.letters.setdefault(current, set()).add(m.group(1))

    def finish(self) -> list[Clause]:
        # A section is a clause of its own only when nothing numbered is under it.
        out: list[Clause] = []
        numbered = [c for k, c in self.clauses.items() if not k.startswith("§")]
        for key, clause in self.clauses.items():
            if key.startswith("§"):
                sec = key[1:]
                if any(c.id.startswith(f"{sec}.") for c in numbered):
                    continue
                clause = Clause(clause.seed, sec, clause.text, clause.where)
            out.append(clause)
        ids = {c.id for c in out} | self.sections
        for c in out:
            parent = _parent(c.id)
            if parent and parent not in ids:
                self.problems.append(f"{self.seed.tag} {c.id} ({c.where}): no {parent} above it")
        if self.problems:
            raise SeedError("; ".join(self.problems))
        known = {k: frozenset(v) for k, v in self.letters.items()}
        return [_with_letters(c, known) for c in out]


def _with_letters(c: Clause, known: dict[str, frozenset[str]]) -> Clause:
    letters = known.get(c.id)
    if letters is None and c.seed in ("act", "uth", "nsw"):  # these texts keep their letters
        letters = frozenset()
    if c.seed == "nz" and not c.id.startswith("App") and c.id not in known:
        letters = None  # lost in the text's conversion (or the amendment's page ends first)
    return Clause(c.seed, c.id, c.text, c.where, letters, c.deleted, c.amended_by)


def _parent(cid: str) -> str:
    """`9.2.1` -> `9.2`; `App2 4.1` -> `App2 4`; a top-level number or appendix -> ''."""
    head, _, number = cid.rpartition(" ")
    number = re.sub(r"[A-Z]$", "", number)
    if "." not in number:
        return ""
    up = number.rsplit(".", 1)[0]
    return f"{head} {up}" if head else up


def _appendix(reader: _Reader, lines: list[str], start: int, end: int, name: str,
              item: re.Pattern[str], sub: re.Pattern[str] | None) -> None:
    """A house-way appendix: numbered items `name N`, and `name N.M` under them."""
    current = ""
    for i in range(start, end):
        line = lines[i]
        if sub and (m := sub.match(line)):
            current = f"{name} {m.group(1)}"
            reader.add(current, m.group(2), i)
        elif m := item.match(line):
            current = f"{name} {m.group(1)}"
            reader.sections.add(current)
            reader.clauses.setdefault(f"§{current}", Clause(
                reader.seed.key, current, m.group(2), f"{reader.name}:{i + 1}"))
        elif (m := re.match(r"^\s*-?\s*\(?([a-z])\)\s", line)) and current:
            reader.letters.setdefault(current, set()).add(m.group(1))


def _open(seed: Seed) -> tuple[list[str], _Reader]:
    """The seed's approved text, and a reader for it."""
    return _lines(seed.files[0]), _Reader(seed, seed.files[0])


def _nsw(seed: Seed) -> list[Clause]:
    lines, r = _open(seed)
    start = _index(lines, r"^# 1\. Definitions")
    apps = [_index(lines, rf"^## Appendix {n}$") for n in (1, 2, 3, 4)]
    r.body(lines, start, apps[0], re.compile(r"^#+\s*\**\s*(\d{1,2})\.\s"))
    r.add("App1", "Appendix 1: the ranking of the tiles", apps[0])
    _appendix(r, lines, apps[1], apps[2], "App2",
              re.compile(r"^[#\s*]*(\d)\.\s+(.*)"), re.compile(r"^(\d\.\d)\s+(.*)"))
    r.add("App3", "Appendix 3: Pai Gow cuts", apps[2])
    r.add("App4", "Appendix 4: House cuts (the cut die)", apps[3])
    return r.finish()


def _uth(seed: Seed) -> list[Clause]:
    lines, r = _open(seed)
    start = _index(lines, r"^1\. Definitions")
    end = _index(lines, r"^Diagram A", start)
    r.body(lines, start, end, re.compile(r"^(\d{1,2})\.\s+[A-Z]"))
    return r.finish()


def _nz(seed: Seed) -> list[Clause]:
    amendment = seed.files[1]
    lines, r = _open(seed)
    start = _index(lines, r"^1\.0\s")
    layout = _index(lines, r"^Pai Gow Table Layout")
    r.body(lines, start, layout, re.compile(r"^(\d{1,2})\.0\s"))
    pairs = _index(lines, r"^Ranking of Tiles - Pairs")
    single = _index(lines, r"^Ranking of Tiles - Individual")
    houseway = _index(lines, r"^House Way$")
    cuts = _index(lines, r"^\s*Pai Gow Cuts")
    r.add("App1", "Appendix 1: the Pai Gow table layout", layout)
    r.add("App2", "Appendix 2: ranking of tiles, pairs, wongs, gongs and high nines", pairs)
    r.add("App3", "Appendix 3: ranking of tiles, individual", single)
    _appendix(r, lines, houseway, cuts, "App4",
              re.compile(r"^(\d)\.\t(.*)"), re.compile(r"^(\d\.\d)\t(.*)"))
    r.add("App5", "Appendix 5: Pai Gow cuts", cuts)
    # The amendment substitutes whole clauses, quoted: '"11.1 When the house is the sole banker:'.
    amended = _lines(amendment)
    current = ""
    closed: set[str] = set()
    for i, line in enumerate(amended):
        if m := re.match(r'^"(\d{1,2}\.\d{1,2}[A-Z]?)\s+(.*)', line):
            current = m.group(1)
            if current not in r.clauses:
                r.problems.append(f"NZ {current} ({amendment}:{i + 1}) substitutes no clause")
            r.letters[current] = set()
            r.clauses[current] = Clause(seed.key, current, m.group(2).strip()[:160],
                                        f"{amendment}:{i + 1}", amended_by=amendment)
        elif (m := _LETTER.match(line)) and current:
            r.letters[current].add(m.group(1))
        if current and line.endswith('."'):  # the quote closes: its letters are all here
            closed.add(current)
    for number in set(r.letters) - closed:  # cut off by the page's end: its letters are not known
        if r.clauses[number].amended_by:
            del r.letters[number]
    return r.finish()


def _act(seed: Seed) -> list[Clause]:
    lines, r = _open(seed)
    index = _index(lines, r"^1\. PAI GOW TABLE")
    start = _index(lines, r"^1\. PAI GOW TABLE", index + 1)
    apps = {x: _index(lines, rf'^APPENDIX "{x}"') for x in "ABCDE"}
    r.body(lines, start, apps["A"], re.compile(r"^\s*(\d{1,2})\.\s+[A-Z][A-Z ,/&-]+$"))
    r.add("App A", "Appendix A: the pairs, ranked", apps["A"])
    r.add("App B", "Appendix B: wongs, gongs and high nines, ranked", apps["B"])
    r.add("App C", "Appendix C: individual domino rankings", apps["C"])
    current = ""
    for i in range(apps["D"], apps["E"]):
        line = lines[i]
        if m := re.match(r"^\s*-?\s*(\d)\)\s+(.*)", line):
            current = f"App D {m.group(1)}"
            r.add(current, m.group(2), i)
        elif m := re.match(r"^(EXCEPTIONS|INDIVIDUALS)$", line.strip()):
            current = f"App D {m.group(1).title()}"
            r.add(current, line.strip(), i)
        elif (m := re.match(r"^\s*-?\s*([a-z])\)\s", line)) and current:
            r.letters.setdefault(current, set()).add(m.group(1))
    r.add("App E", "Appendix E: traditional cuts", apps["E"])
    return r.finish()


_READERS = {"nsw": _nsw, "uth": _uth, "nz": _nz, "act": _act}


@cache
def clauses(key: str) -> tuple[Clause, ...]:
    """The seed's clauses in the order of its text."""
    return tuple(_READERS[key](BY_KEY[key]))


def all_clauses(keys: Iterable[str] | None = None) -> dict[str, tuple[Clause, ...]]:
    return {k: clauses(k) for k in (keys or BY_KEY)}
