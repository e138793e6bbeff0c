"""The design documents are in the repository, and every citation of them resolves.

Code, tests and the README cite sections as ``DESIGN \u00a7N`` (docs/DESIGN.md),
``XLA \u00a7N`` (docs/XLA.md) and ``TPU-OBSERVED \u00a7N`` (docs/TPU-OBSERVED.md).  Each
must name its document and a numbered heading that exists there; inside the
documents a bare section sign names their own sections.  (This file spells the
section sign as an escape so that it cites nothing.)
"""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from tests.support import ROOT

SECTION = "\u00a7"
DOCS = {"DESIGN": "docs/DESIGN.md", "XLA": "docs/XLA.md", "TPU-OBSERVED": "docs/TPU-OBSERVED.md"}
HEADING = re.compile(r"^#{2,4} (\d+(?:\.\d+)*)\.? ", re.M)
NUM = r"\d+(?:\.\d+)*"
NAMED = re.compile(rf"\b(DESIGN|XLA|TPU-OBSERVED) {SECTION}({NUM})")
ANY = re.compile(rf"{SECTION} ?({NUM})?")


def sections(doc: str) -> set[str]:
    return set(HEADING.findall((ROOT / DOCS[doc]).read_text(encoding="utf-8")))


def repo_files() -> list[str]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs a git checkout to list the repository's files")
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                         cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return sorted(rel for rel in set(out.split()) if (ROOT / rel).is_file())


def citations() -> list[tuple[str, int, str, str | None]]:
    """(file, line, document or None when unnamed, section) for every section sign in the repository."""
    found = []
    for rel in repo_files():
        try:
            text = (ROOT / rel).read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        own = next((d for d, path in DOCS.items() if path == rel), None)
        for lineno, line in enumerate(text.splitlines(), 1):
            named = {m.start(2) - 1: (m.group(1), m.group(2)) for m in NAMED.finditer(line)}
            for m in ANY.finditer(line):
                doc, num = named.get(m.start(), (own, m.group(1)))
                found.append((rel, lineno, doc, num))
    return found


def test_both_documents_have_numbered_sections():
    for doc in ("DESIGN", "XLA"):
        assert {"1", "3", "5", "9"} <= sections(doc), doc
    assert {"3", "5", "8"} <= sections("TPU-OBSERVED")
    assert {"3.1", "9.2", "11.2", "13.17"} <= sections("XLA")
    assert {"9.2", "9.3", "9.4"} <= sections("DESIGN")


def test_every_citation_names_its_document_and_an_existing_section():
    known = {doc: sections(doc) for doc in DOCS}
    found = citations()
    assert len(found) > 150  # the lit tests explain themselves with citations
    bad = [f"{rel}:{line}: {doc or 'no document'} {SECTION}{num}" for rel, line, doc, num in found
           if doc is None or num is None or num not in known[doc]]
    assert not bad, "citations that do not resolve:\n" + "\n".join(bad)


def test_citations_are_read_as_written():
    """The scanner itself: a named citation, a bare one, and a list."""
    line = f"(DESIGN {SECTION}5; XLA {SECTION}2.1, XLA {SECTION}8.5) and {SECTION}7"
    named = {m.start(2) - 1: (m.group(1), m.group(2)) for m in NAMED.finditer(line)}
    read = [named.get(m.start(), (None, m.group(1))) for m in ANY.finditer(line)]
    assert read == [("DESIGN", "5"), ("XLA", "2.1"), ("XLA", "8.5"), (None, "7")]


def test_the_readme_links_both_documents():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for path in DOCS.values():
        assert f"]({path}" in readme, path
