"""Citations of clauses in Python source: comments, docstrings and string literals.

The grammar (docs/traceability.md, "How a clause is cited"):

- A tag names the seed: `NSW`, `NZ`, `ACT` or `UTH`. A clause number alone is ambiguous across the
  Pai Gow seeds, so a number takes the tag last written before it in the same comment block,
  docstring or string; with none, the file's own: a path with `uth`, `nsw`, `nz` or `act` as a
  word (controller/games/uth/..., houseway/nz.py). A number with no tag either way is unresolved,
  and a test fails on it: write the tag.
- After a tag, `rule`/`rules`/`clause`, `§`, `(` or `#`, a list of numbers: `NSW 7.3, 15.1-15.2;`,
  `rules 9.1-9.3`, `(5.3, 7.2.4)`. A range covers every clause from its first to its last in the
  seed's order. A letter (`ACT 5.1(c)`, `5.1 (c)-(d)`) is a part of its clause.
- Appendices: `App2 4.1`, `Appendix 2`, `App4 2.2`, `App D 2(a)`, `App D Exc (b)`,
  `App D Individuals (a)-(e)`; `App D` is the ACT's (no other seed letters its appendices).
- A whole section (`NSW 8`, `rules 5.5, 7, 9`) names no clause but must exist.

A number in running prose (`not after 15.13`) counts when the clause exists and is otherwise taken
for something else (a version, an amount): only the listed forms above are checked for existence.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from controller.rules.clauses import BY_TAG


@dataclass(frozen=True)
class Citation:
    seed: str  # Seed.key, or "" when unresolved
    ref: str  # a clause id or section as written, canonical: "9.2.1", "App2 4.1", "App D 2"
    to: str  # the range's last clause ("" for one clause)
    letters: str  # "c", "a-e" or ""
    path: str  # relative to the repository
    line: int
    written: str  # the words around it, for a person
    strict: bool  # written in a citation's form (checked for existence), not running prose


_TOKEN = re.compile(
    r"""(?P<tag>\b(?:NSW|NZ|ACT|UTH)\b)
    |(?P<app>\bApp(?:endix)?\.?\s?(?:"[A-E]"|[A-E]\b|\d\b))
    |(?P<part>\b(?:Exc(?:eptions)?|EXCEPTIONS|Individuals|INDIVIDUALS)\b)
    |(?P<key>\b(?:[Rr]ules?|[Cc]lauses?)\b|§)
    |(?P<ref>(?<![\w.$:~])[1-9]\d?(?:\.\d{1,2})*A?(?![\w%$]|\.\d|:\d|\s?(?:s|ms|KB|MB|x)\b))
    |(?P<letters>\(\s?[a-z]{1,3}\s?\))
    |(?P<range>\s?[-–—]\s?|\bto\b)
    |(?P<sep>[,;/&]|\band\b|\bor\b)
    |(?P<open>[(#])
    |(?P<word>\w+|[^\s\w])
    """,
    re.VERBOSE,
)

# What any citation needs (a superset): an appendix, a dotted number, or a number after a tag or
# key (an undotted one cites only there). Most strings and comments have none: skipped at C speed.
_MAYBE = re.compile(
    r"App|[1-9]\d?\.\d|(?:\b(?:NSW|NZ|ACT|UTH|[Rr]ules?|[Cc]lauses?)\b|§)(?s:.*)[1-9]")
HOUSE_WAY = {"nsw": "App2", "nz": "App4", "act": "App D"}  # where each seed's house way is
_WORDS = {"uth": "UTH", "nsw": "NSW", "nz": "NZ", "act": "ACT"}


def file_tag(path: str) -> str:
    words = set(re.split(r"[/_.\-]", path.lower()))
    found = [tag for word, tag in _WORDS.items() if word in words]
    return found[0] if len(found) == 1 else ""


def _only_tag(source: str) -> str:
    """The one seed a file cites, when it cites only one: its bare numbers are that seed's."""
    tags = set(re.findall(r"\b(NSW|NZ|ACT|UTH)\b", source))
    return tags.pop() if len(tags) == 1 else ""


def _canon_app(text: str) -> str:
    name = re.sub(r"^App(?:endix)?\.?\s?", "", text).strip('"')
    return f"App {name}" if name.isalpha() else f"App{name}"


def scan_text(text: str, path: str, line: int, default: str) -> list[Citation]:
    """The citations in one comment block, docstring or string starting at `line`."""
    out: list[Citation] = []
    if not _MAYBE.search(text):
        return out
    at, counted = line, 0
    tag, app = "", ""
    listing = False  # the last thing read opens or continues a list of numbers
    integers = False  # a whole section number is a citation here (after a tag, key or app)
    extend = False  # out[-1] may still take a letter, a range's end or an App D part
    pending_range = False
    for m in _TOKEN.finditer(text):
        kind, value = m.lastgroup, m.group()
        at += text.count("\n", counted, m.start())  # from the last token: linear in the text
        counted = m.start()
        if kind == "tag" and value == "NSW" and default == "UTH":
            continue  # in a UTH file NSW is the game's jurisdiction: its one seed is UTH's
        if kind == "tag":
            tag, app, listing, integers, extend = value, "", True, True, False
        elif kind == "app":
            app, listing, integers = _canon_app(value), True, True
            seed = "act" if app.startswith("App ") else _seed(tag or default)
            out.append(Citation(seed, app, "", "", path, at, _around(text, m), True))
            extend = True
        elif kind == "part" and app == "App D":
            part = "Exceptions" if value.lower().startswith("exc") else "Individuals"
            out.append(Citation("act", f"App D {part}", "", "", path, at, _around(text, m), True))
            listing, extend, integers = True, True, False
        elif kind == "key" and value == "§":  # §4.2: an item of the seed's house-way appendix
            app = HOUSE_WAY.get(_seed(tag or default), app)
            listing, integers = True, True
        elif kind in ("key", "open"):
            listing = True
            integers = integers or kind == "key"
        elif kind == "ref":
            dotted = "." in value
            if not dotted and not (integers and listing):
                listing = integers = pending_range = False
                continue
            if app.startswith("App ") and dotted:
                app = ""  # lettered appendices number no dotted items: a rule of the body
            value = value[:-2] if value.endswith(".0") else value  # NZ prints sections "3.0"
            seed = _seed("ACT" if app == "App D" else (tag or default))
            ref = f"{app} {value}" if app else value
            if pending_range and extend:
                prev = out[-1]
                out[-1] = Citation(prev.seed, prev.ref, ref, prev.letters, prev.path,
                                   prev.line, prev.written, prev.strict and listing)
            else:
                out.append(Citation(seed, ref, "", "", path, at, _around(text, m), listing))
            extend, pending_range = True, False
            integers = integers and not dotted
        elif kind == "letters" and extend:
            letter = value.strip("() ")
            prev = out[-1]
            letters = f"{prev.letters}-{letter}" if pending_range and prev.letters else letter
            out[-1] = Citation(prev.seed, prev.ref, prev.to, letters, prev.path, prev.line,
                               prev.written, prev.strict)
            pending_range = integers = False
        elif kind == "range" and extend and listing:
            pending_range = True
        elif kind == "sep":
            pending_range = False
            if value == ";":
                app = ""
        else:  # a word: the list ends
            listing = integers = pending_range = extend = False
            if value not in ("ex", "."):  # App2 §7 ex.9: still the appendix's
                app = ""
    return out


def _seed(tag: str) -> str:
    seed = BY_TAG.get(tag)
    return seed.key if seed else ""


def _around(text: str, m: re.Match[str]) -> str:
    start = max(0, text.rfind("\n", 0, m.start()) + 1, m.start() - 40)
    end = text.find("\n", m.end())
    end = min(end if end >= 0 else len(text), m.end() + 40)
    return " ".join(text[start:end].split())


# Python's lexing in one regex pass, for what _blocks needs: comments, string literals and runs
# of other code on a line. tokenize gave the same at ~50x the cost (most of `tablectl rules
# trace`); test_traceability checks the two agree. Whitespace and a backslash outside a string
# (a line continuation) match nothing and are skipped.
_LEX = re.compile(
    r"""(?P<comment>\#[^\n]*)
    |(?P<string>\"\"\"(?:\\.|[^\\])*?\"\"\"|'''(?:\\.|[^\\])*?'''
       |"(?:\\.|[^\\"\n])*"|'(?:\\.|[^\\'\n])*')
    |(?P<code>[^\s\#"'\\][^\#"'\n\\]*)
    """,
    re.VERBOSE | re.DOTALL,
)
_PREFIX = re.compile(r"(?<!\w)[rRbBuUfF]{1,2}$")  # a string's prefix ends the code before it


def _blocks(source: str) -> Iterator[tuple[str, int]]:
    """Comment blocks (consecutive comment lines joined) and string literals, with their line.

    As tokenize gives them: a string does not end a comment block, code on a later line does; a
    string keeps its prefix (f, rb, ...)."""
    comment: list[str] = []
    start = 0
    last_line = -1
    line, pos = 1, 0
    code_end, code = -1, ""
    for m in _LEX.finditer(source):
        line += source.count("\n", pos, m.start())
        pos = m.start()
        kind = m.lastgroup
        if kind == "comment":
            text = m.group().lstrip("#")
            if comment and line == last_line + 1:
                comment.append(text)
            else:
                if comment:
                    yield "\n".join(comment), start
                comment, start = [text], line
            comment[-1] = "# " + comment[-1] if len(comment) == 1 else comment[-1]
            last_line = line
        elif kind == "string":
            prefix = _PREFIX.search(code) if code_end == m.start() else None
            yield (prefix.group() if prefix else "") + m.group(), line
        else:
            code_end, code = m.end(), m.group()
            is_prefix = _PREFIX.match(code) and source.startswith(("'", '"'), m.end())
            if comment and line > last_line and not is_prefix:
                yield "\n".join(comment), start
                comment = []
    if comment:
        yield "\n".join(comment), start


def scan_file(path: Path, rel: str) -> list[Citation]:
    source = path.read_text("utf-8")
    default = file_tag(rel) or _only_tag(source)
    out: list[Citation] = []
    for text, line in _blocks(source):
        out.extend(scan_text(text, rel, line, default))
    return out


def scan(root: Path, tops: Iterable[str], skip: Iterable[str] = ()) -> list[Citation]:
    """Every citation in the .py files under root/top for each top, but not those under skip."""
    skipped = tuple(skip)
    out: list[Citation] = []
    for top in tops:
        for path in sorted((root / top).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            if rel.startswith(skipped) or "/." in f"/{rel}":
                continue
            out.extend(scan_file(path, rel))
    return out
