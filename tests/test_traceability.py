"""Issue 32, clause traceability: every numbered clause of each seed, read from its text, is
tested, implemented, left to people or not applicable, never unknown; none is implemented but
untested; every citation in code and tests names a clause that exists; docs/traceability.md is
what `python -m controller.rules --refresh` writes.

This file is not scanned for citations (controller/rules/trace.py SKIP): its clause numbers are
examples of the grammar, some deliberately wrong."""

from __future__ import annotations

import io
import json
import re
import tokenize
from pathlib import Path

import pytest

from controller.cli import main as tablectl
from controller.rules import citations, classify, report
from controller.rules.citations import scan_text
from controller.rules.clauses import SEEDS, Clause, SeedError, _Reader, clauses
from controller.rules.trace import REFRESH, Trace, build, covered

REPO = Path(__file__).resolve().parents[1]
SHARED = Path("/work/shared/seeds")


@pytest.fixture(scope="module")
def trace() -> Trace:
    return build(REPO)


def ids(seed: str) -> list[str]:
    return [c.id for c in clauses(seed)]


# -- the clauses, from the text --------------------------------------------------------------


@pytest.mark.skipif(not SHARED.is_dir(), reason="the approved texts' shared copy is not here")
def test_the_packaged_seeds_are_the_approved_texts_byte_for_byte() -> None:
    packaged = REPO / "controller" / "rules" / "seeds"
    for seed in SEEDS:
        for name in seed.files:
            assert (packaged / name).read_bytes() == (SHARED / name).read_bytes(), name


def test_each_seed_numbers_its_clauses_as_printed() -> None:
    nsw, uth, nz, act = ids("nsw"), ids("uth"), ids("nz"), ids("act")
    # Printed numbers, in the text's order: NSW 9.3 is printed before the items 9.2.1...
    assert nsw.index("9.3") < nsw.index("9.2.1") < nsw.index("9.4") < nsw.index("9.3.1")
    assert {"15.9.5", "16.6", "17.12.1", "App2 4.1", "App2 7", "App3", "App4"} <= set(nsw)
    assert "4" not in nsw  # a section with numbered clauses under it is not one itself
    assert {"8.2", "11.17.2", "15.3.1"} <= set(uth) and "15.4" not in uth
    assert {"9.3A", "8", "App4 6.2", "App5"} <= set(nz)
    assert {"1", "2", "15.13", "App D Exceptions", "App D Individuals", "App E"} <= set(act)


def test_misprinted_numbers_are_read_as_meant_and_no_others() -> None:
    uth = ids("uth")
    # "4.1.1. commence play by dealing..." under 4.3; "5.1.1.1."/"5.1.1.2." under 15.2.5.
    assert uth.index("4.3.2") + 1 == uth.index("4.3.3")
    assert uth[uth.index("15.2.5.1") + 1:uth.index("15.2.5.3") + 1] == ["15.2.5.2", "15.2.5.3"]
    assert "5.1.1.1" not in uth and uth.count("4.1.1") == 1
    assert "qualifying wager" in next(c.text for c in clauses("uth") if c.id == "15.2.5.3")


def test_the_nz_amendment_substitutes_its_clauses_and_the_deleted_one_is_marked() -> None:
    nz = {c.id: c for c in clauses("nz")}
    assert nz["11.1"].amended_by.startswith("004_") and nz["11.1"].letters == frozenset("abcdefghi")
    assert nz["11.3"].letters is None  # the amendment's page ends inside 11.3
    assert nz["6.1"].letters is None  # the NZ text lost its letters
    assert nz["9.5"].deleted and not nz["9.6"].deleted
    act = {c.id: c for c in clauses("act")}
    assert act["5.1"].letters == frozenset("abcd") and act["3.1"].letters == frozenset()


def test_a_number_printed_twice_or_without_its_parent_is_refused() -> None:
    seed = SEEDS[0]
    section = re.compile(r"^(\d+)\.\s+[A-Z]")
    twice = _Reader(seed, "x.txt")
    twice.body(["3. The Tiles", "3.1 one", "3.1 again"], 0, 3, section)
    with pytest.raises(SeedError, match=r"NSW 3.1 twice"):
        twice.finish()
    orphan = _Reader(seed, "x.txt")
    orphan.body(["3. The Tiles", "3.1 one", "5.1.1.1 stray"], 0, 3, section)
    with pytest.raises(SeedError, match=r"NSW 5.1.1.1 .*no 5.1.1 above it"):
        orphan.finish()


# -- the citation grammar --------------------------------------------------------------------


def cites(text: str, path: str = "controller/x.py", default: str = "") -> list[tuple[str, ...]]:
    return [(c.seed, c.ref, c.to, c.letters, "strict" if c.strict else "prose")
            for c in scan_text(text, path, 1, default)]


def test_a_tag_governs_its_list_ranges_and_letters() -> None:
    assert cites("# the cut (NSW 7.3, 15.1-15.2; NZ 9.2(a), ACT 5.1 (c)-(d))") == [
        ("nsw", "7.3", "", "", "strict"),
        ("nsw", "15.1", "15.2", "", "strict"),
        ("nz", "9.2", "", "a", "strict"),
        ("act", "5.1", "", "c-d", "strict"),
    ]


def test_appendices_and_the_house_way_sign() -> None:
    assert cites('"NZ App4 5.4(b)"') == [("nz", "App4", "", "", "strict"),
                                         ("nz", "App4 5.4", "", "b", "strict")]
    assert cites("# App D Exc (b), App D Individuals (a)-(e)") == [
        ("act", "App D", "", "", "strict"), ("act", "App D Exceptions", "", "b", "strict"),
        ("act", "App D", "", "", "strict"), ("act", "App D Individuals", "", "a-e", "strict")]
    # § is an item of the seed's house-way appendix: NSW App2, NZ App4.
    assert cites("# §6.3 puts the high tile high", default="NSW") == [
        ("nsw", "App2 6.3", "", "", "strict")]


def test_a_bare_number_takes_the_tag_before_it_else_the_files_else_none() -> None:
    assert cites("# NSW: a void round, not after 15.11") == [("nsw", "15.11", "", "", "prose")]
    assert cites("# deemed folded (11.10)", default="UTH") == [("uth", "11.10", "", "", "strict")]
    assert cites("# rule 12.15") == [("", "12.15", "", "", "strict")]  # unresolved: fails
    # In a UTH file NSW is the game's jurisdiction, not the Pai Gow seed.
    assert cites('"""UTH engine (NSW, The Star): pay tables (rules 10.9, 10.12)."""',
                 default="UTH") == [("uth", "10.9", "", "", "strict"),
                                    ("uth", "10.12", "", "", "strict")]


def test_numbers_that_are_not_clauses_are_not_cited() -> None:
    assert cites('"timeout 0.5 s, Python 3.11, $12.50, 10%, 1/10, 2026-01-01T00:00:01.743Z"') == [
        ("", "3.11", "", "", "prose")]  # prose, unresolved: neither counted nor checked
    assert cites("# NSW 8 boxes of 4 tiles") == [("nsw", "8", "", "", "strict")]


def test_a_citation_naming_no_clause_is_a_problem_and_a_section_names_none() -> None:
    (c,) = scan_text("# NSW 99.1", "x.py", 1, "")
    assert covered(c, clauses("nsw"))[1] == "NSW 99.1: no such clause"
    (c,) = scan_text("# ACT 5.1(e)", "x.py", 1, "")
    assert "has no (e) (it has: abcd)" in covered(c, clauses("act"))[1]
    (c,) = scan_text("# NSW 8", "x.py", 1, "")
    assert covered(c, clauses("nsw")) == ([], "")
    (c,) = scan_text("# UTH 15.2.9-15.2.10", "x.py", 1, "")
    named, wrong = covered(c, clauses("uth"))
    assert wrong == "" and [x.id for x in named] == [
        "15.2.9", "15.2.9.1", "15.2.9.2", "15.2.9.3", "15.2.9.4", "15.2.9.5", "15.2.10"]


def test_drifted_and_unresolved_citations_in_a_tree_fail_the_trace(tmp_path: Path) -> None:
    (tmp_path / "controller").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "controller" / "a.py").write_text(
        "X = 1  # NSW 9.2.1.1 decides, NSW 9.2.9 does not exist\n"
        "Y = 2  # a bare rule 12.15 in a file of several seeds (NZ 12.15, ACT 13.9)\n")
    (tmp_path / "tests" / "test_a.py").write_text('"""NSW 9.2.1.1 checked; ACT 5.1(e)."""\n')
    t = build(tmp_path, classified=[])
    assert any("controller/a.py:1: NSW 9.2.9: no such clause" in p for p in t.problems)
    assert any("tests/test_a.py:1: ACT 5.1(e)" in p for p in t.problems)
    row = next(r for r in t.rows["nsw"] if r.clause.id == "9.2.1.1")
    assert row.status == "tested" and row.code == ["controller/a.py:1"]
    assert len(t.unknown()) > 700  # nothing classified here


def test_a_classification_of_a_clause_that_is_now_cited_is_stale(tmp_path: Path) -> None:
    (tmp_path / "controller" / "rules").mkdir(parents=True)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text("# NSW 16.15: a copy of the rules\n")
    entries = [classify.Classified("nsw", ("16.14", "16.15"), "n/a", "the casino's"),
               classify.Classified("nsw", ("17",), "n/a", "promotions")]
    (tmp_path / "controller" / "rules" / "classified.toml").write_text(classify.dump(entries))
    t = build(tmp_path, classified=entries)
    assert t.stale == [("nsw", "16.15")]
    assert any(REFRESH in p for p in t.problems)
    assert classify.prune(t.stale, tmp_path) == [("nsw", "16.15")]
    kept = classify.load((tmp_path / "controller" / "rules" / "classified.toml").read_text())
    assert kept == [classify.Classified("nsw", ("16.14",), "n/a", "the casino's"), entries[1]]


# -- the repository's own trace --------------------------------------------------------------


def test_every_citation_in_code_and_tests_names_a_clause(trace: Trace) -> None:
    assert trace.problems == []


def test_every_clause_is_classified_none_unknown(trace: Trace) -> None:
    left = [f"{r.clause.seed} {r.clause.id}: {r.clause.text[:60]}" for r in trace.unknown()]
    assert left == [], f"cite them in code and tests, or classify them in classified.toml: {left}"


def test_no_clause_is_implemented_but_untested(trace: Trace) -> None:
    left = [f"{r.clause.seed} {r.clause.id} ({', '.join(r.code[:2])})" for r in trace.untested()]
    assert left == [], f"a test that checks each, citing it: {left}"


def test_the_traceability_page_is_current(trace: Trace) -> None:
    page = (REPO / report.DOC).read_text()
    assert page == report.markdown(trace), f"regenerate with {REFRESH}"


# -- tablectl rules trace --------------------------------------------------------------------


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = tablectl.main(argv)
    return code, capsys.readouterr().out


def test_the_command_prints_one_seed_and_its_totals(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(["rules", "trace", "--rules", "act", "--json"], capsys)
    data = json.loads(out)
    assert list(data["seeds"]) == ["act"]
    act = data["seeds"]["act"]
    assert sum(act["totals"].values()) == len(act["clauses"]) == len(clauses("act"))
    by_id = {c["id"]: c for c in act["clauses"]}
    assert by_id["12.5"]["status"] == "tested" and by_id["12.5"]["tests"]
    assert by_id["15.12"]["status"] == "n/a" and by_id["15.12"]["why"]
    assert code == (1 if data["untested"] or data["problems"] or act["totals"]["unknown"] else 0)
    code, out = run(["rules", "trace", "--rules", "act"], capsys)
    assert re.search(r"^ACT totals: \d+ clauses: \d+ tested, ", out, re.M)
    assert "implemented but untested: " in out


def test_the_command_says_it_needs_a_source_checkout(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("controller.rules.trace.repo_root", lambda: tmp_path)
    code = tablectl.main(["rules", "trace"])
    err = capsys.readouterr().err
    assert code == 69 and "no tests/ here" in err and "Traceback" not in err


def test_clause_objects_carry_where_they_are_printed() -> None:
    c: Clause = next(c for c in clauses("nsw") if c.id == "14.1")
    name, line = c.where.split(":")
    text = (REPO / "controller" / "rules" / "seeds" / name).read_text().splitlines()
    assert "14.1" in text[int(line) - 1] and "1 to 1" in c.text


def _tokenize_blocks(source: str) -> list[tuple[str, int]]:
    """What citations._blocks gave when it ran on tokenize (its reference; 50x slower)."""
    out: list[tuple[str, int]] = []
    comment: list[str] = []
    start = last_line = -1
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            if comment and tok.start[0] == last_line + 1:
                comment.append(tok.string.lstrip("#"))
            else:
                if comment:
                    out.append(("\n".join(comment), start))
                comment, start = [tok.string.lstrip("#")], tok.start[0]
            comment[-1] = "# " + comment[-1] if len(comment) == 1 else comment[-1]
            last_line = tok.start[0]
        elif tok.type == tokenize.STRING:
            out.append((tok.string, tok.start[0]))
        elif (tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT)
              and comment and tok.start[0] > last_line):
            out.append(("\n".join(comment), start))
            comment = []
    if comment:
        out.append(("\n".join(comment), start))
    return out


TRICKY = '''\
x = 1  # NSW 7.3
## doubled hashes, 9.1
y = f"{x!r} 'ACT 5.1'", rb'\\\\', u"# not a comment" \\
    + """NZ 3.0
  # inside a docstring, App2 4.1 \\""" still in it"""
# a comment block
f"a string does not end it"
# ends only at code
if"x": z = '\\
'  # after a continued string
f = 2
# last
'''


def test_the_comment_and_string_reader_reads_as_tokenize_does() -> None:
    compile(TRICKY, "tricky", "exec")  # valid Python, as the scanned files are
    assert list(citations._blocks(TRICKY)) == _tokenize_blocks(TRICKY)
    for path in [*sorted((REPO / "controller" / "rules").glob("*.py")), Path(__file__)]:
        source = path.read_text("utf-8")
        assert list(citations._blocks(source)) == _tokenize_blocks(source), path
