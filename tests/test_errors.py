"""The error hierarchy: unknown names say which kind of name, and the old name still works."""

from __future__ import annotations

import pytest

from hhrlhf.checks import check_class_names
from hhrlhf.convert import get_format
from hhrlhf.errors import HHError, UnknownNameError, UnknownSubsetError
from hhrlhf.subsets import get_subset


@pytest.mark.parametrize(
    ("lookup", "kind"),
    [
        (lambda: get_subset("nope"), "subset"),
        (lambda: get_subset("helpful-base").file("dev"), "split"),
        (lambda: get_format("nope"), "format"),
        (lambda: check_class_names(["nope"]), "check class"),
    ],
    ids=["subset", "split", "format", "check class"],
)
def test_unknown_names_say_what_kind_of_name(lookup, kind):
    with pytest.raises(UnknownNameError) as info:
        lookup()
    exc = info.value
    assert (exc.kind, exc.name) == (kind, "nope" if kind != "split" else "dev")
    assert str(exc).startswith(f"unknown {kind} ")
    assert exc.known and all(k in str(exc) for k in exc.known)


def test_unknown_source_names_the_sources():
    from hhrlhf.download import file_url
    from hhrlhf.subsets import get_subset

    spec = get_subset("helpful-base").file("train")
    with pytest.raises(UnknownNameError, match="unknown source 'ftp'; expected one of: hub"):
        file_url(spec, source="ftp")


def test_the_former_name_is_the_same_class_and_takes_the_former_arguments():
    assert UnknownSubsetError is UnknownNameError
    exc = UnknownSubsetError("x", ["a", "b"])
    assert (exc.kind, exc.name, exc.known) == ("name", "x", ["a", "b"])
    assert isinstance(exc, HHError) and isinstance(exc, KeyError)
    assert str(exc) == "unknown name 'x'; expected one of: a, b"
