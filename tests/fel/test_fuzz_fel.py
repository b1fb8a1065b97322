"""Fuzzing FEL XML: malformed bytes, hostile DTDs (entity expansion, external entities),
and real invoices with random changes to their tree. Every document is either refused with
a Spanish reason (FelXmlError) or validated, its issues listed and its PDF drawn; nothing
else ever escapes, so a batch always goes on to its next file."""

from __future__ import annotations

import copy
from pathlib import Path
from xml.etree import ElementTree

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from fel.parsing import FEL_NS, FelXmlError, parse_document
from fel.processing import process_bytes
from fel.render import Branding
from fel.themes import get_theme
from fel.validation import validate
from tests.fel_support import LONG_SAMPLE, SAT_SAMPLE
from tests.fuzz_support import FUZZ

SAMPLES = [ElementTree.parse(path).getroot() for path in (SAT_SAMPLE, LONG_SAMPLE)]
BRANDING = Branding(theme=get_theme("azul"))

# Values that stress the readers of amounts, dates and identifiers.
odd_values = st.one_of(
    st.sampled_from(
        [
            "",
            "1E+50",
            "-1E+30",
            "1E-999999",
            "9" * 40,
            "NaN",
            "Infinity",
            "-0",
            "1,2,3",
            "0.000000001",
            "2024-13-45T99:99:99",
            "K",
            "CF",
        ]
    ),
    st.decimals(allow_nan=False, allow_infinity=False).map(str),
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs", "Cc"]), max_size=30),
)


@st.composite
def mutated_invoices(draw) -> bytes:
    """A real invoice with some elements' text, attributes or presence changed at random."""
    root = copy.deepcopy(draw(st.sampled_from(SAMPLES)))
    elements = list(root.iter())
    for _ in range(draw(st.integers(1, 8))):
        element = draw(st.sampled_from(elements))
        action = draw(st.sampled_from(["text", "attribute", "remove", "duplicate"]))
        if action == "text":
            element.text = draw(odd_values)
        elif action == "attribute" and element.attrib:
            element.set(draw(st.sampled_from(sorted(element.attrib))), draw(odd_values))
        elif action in ("remove", "duplicate") and len(element):
            child = draw(st.sampled_from(list(element)))
            if action == "remove":
                element.remove(child)
            else:
                element.append(copy.deepcopy(child))
            elements = list(root.iter())
    return ElementTree.tostring(root, encoding="utf-8")


DOCTYPES = [
    '<!DOCTYPE d [<!ENTITY a "{body}">]>',
    '<!DOCTYPE d [<!ENTITY % p "{body}"> %p;]>',
    '<!DOCTYPE d [<!ENTITY x SYSTEM "file:///etc/{body}">]>',
    '<!DOCTYPE d PUBLIC "-//x//{body}" "http://127.0.0.1:9/x.dtd">',
    '<!DOCTYPE d SYSTEM "file:///dev/{body}">',
]
hostile = st.builds(
    lambda doctype, body, use: (
        f'<?xml version="1.0"?>{doctype.format(body=body)}<dte:GTDocumento xmlns:dte="{FEL_NS}">'
        f"{'&a;' if use else ''}</dte:GTDocumento>"
    ),
    st.sampled_from(DOCTYPES),
    st.text(alphabet="abclo&;", max_size=20),
    st.booleans(),
).map(str.encode)
random_trees = st.recursive(
    st.builds(lambda tag: f"<{tag}/>", st.sampled_from(["GTDocumento", "SAT", "DTE", "x"])),
    lambda inner: st.builds(
        lambda tag, children: f"<{tag}>{''.join(children)}</{tag}>",
        st.sampled_from(["dte:GTDocumento", "GTDocumento", "SAT", "DTE", "DatosEmision", "Items", "Item"]),
        st.lists(inner, max_size=3),
    ),
    max_leaves=10,
).map(str.encode)
documents = st.one_of(
    mutated_invoices(),
    hostile,
    random_trees,
    st.binary(max_size=200),
    mutated_invoices().map(lambda data: data[: len(data) // 2]),
)


def _outcome(data: bytes):
    try:
        return validate(parse_document(data))
    except FelXmlError as exc:
        assert str(exc)  # a reason for the person who sent it
        return None


@FUZZ
@given(data=documents)
@example(data=b"<" * 10_000)
@example(data=b"<a>" * 5000 + b"</a>" * 5000)
@example(data=SAT_SAMPLE.read_bytes().replace(b"<dte:GranTotal>", b"<dte:GranTotal>1E+50", 1))
def test_every_document_is_refused_or_validated(data):
    validation = _outcome(data)
    if validation is not None:
        assert all(isinstance(issue, str) and issue for issue in validation.issues)
        assert validation.ok == (not validation.issues)


@FUZZ
@given(data=mutated_invoices())
@example(data=SAT_SAMPLE.read_bytes().replace(b"<dte:GranTotal>", b"<dte:GranTotal>1E+50", 1))
def test_every_readable_document_renders_or_says_why(tmp_path_factory, data):
    """The whole pipeline, as a batch runs it for each file: an error text or a PDF."""
    folder = tmp_path_factory.mktemp("fel")
    result = process_bytes(Path("x.xml"), data, folder / "x.pdf", BRANDING)
    if result.error:
        assert result.pdf_path is None
    else:
        assert result.validation is not None
        assert (folder / "x.pdf").read_bytes().startswith(b"%PDF")


@pytest.mark.parametrize("doctype", DOCTYPES)
def test_every_kind_of_dtd_is_refused(doctype):
    data = (
        f'<?xml version="1.0"?>{doctype.format(body="lol")}'
        '<dte:GTDocumento xmlns:dte="http://www.sat.gob.gt/dte/fel/0.2.0"/>'
    ).encode()
    with pytest.raises(FelXmlError, match="por seguridad"):
        parse_document(data)


def test_a_document_just_under_the_size_limit_is_validated(settings):
    """Thousands of items (as many as FEL_MAX_XML_BYTES allows): read and checked whole, in
    one linear pass, with the totals' issue named once rather than per item."""
    root = copy.deepcopy(SAMPLES[1])
    items = root.find(f"{{{FEL_NS}}}SAT/{{{FEL_NS}}}DTE/{{{FEL_NS}}}DatosEmision/{{{FEL_NS}}}Items")
    originals = list(items)
    size = len(ElementTree.tostring(root))
    per_round = sum(len(ElementTree.tostring(item)) for item in originals)
    for _ in range((settings.FEL_MAX_XML_BYTES - size) // per_round):
        items.extend(copy.deepcopy(item) for item in originals)
    data = ElementTree.tostring(root, encoding="utf-8")
    assert len(data) <= settings.FEL_MAX_XML_BYTES
    document = parse_document(data)
    validation = validate(document)
    assert len(document.items) == len(items) > 2000
    assert not validation.ok and any("GranTotal" in issue for issue in validation.issues)
