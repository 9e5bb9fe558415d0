"""`cclab schemes` lists the registry: names, summaries, options with defaults."""

from __future__ import annotations

import cclab._core


def test_lists_every_registered_scheme(cli) -> None:
    code, out, err = cli("schemes")
    assert (code, err) == (0, "")
    names = [s["name"] for s in cclab._core.schemes()]
    assert {"newreno", "cubic", "fixed"} <= set(names)
    for scheme in cclab._core.schemes():
        assert scheme["name"] in out
        assert scheme["summary"].split()[0] in out
        for option in scheme["options"]:
            assert option["name"] in out


def test_options_carry_defaults_and_what_they_accept() -> None:
    cubic = next(s for s in cclab._core.schemes() if s["name"] == "cubic")
    beta = next(o for o in cubic["options"] if o["name"] == "beta")
    assert beta["default"] == "0.7"
    assert "number" in beta["accepts"]


def test_one_scheme_and_unknown_names(cli) -> None:
    code, out, _ = cli("schemes", "cubic")
    assert code == 0
    assert "cubic" in out
    assert "newreno" not in out
    code, _, err = cli("schemes", "cubc")
    assert code == 2
    assert "unknown scheme cubc" in err
