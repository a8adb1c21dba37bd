import pytest

from raters.panel import InvalidPanelLink, keyed_hash, parse_panel_ids

PID = "5f1a2b3c4d5e6f7a8b9c0d1e"


def test_it_reads_prolific_ids():
    ids = parse_panel_ids(
        {"PROLIFIC_PID": PID, "STUDY_ID": "a" * 24, "SESSION_ID": "b" * 24}, panel="prolific"
    )
    assert (ids.participant, ids.study, ids.session) == (PID, "a" * 24, "b" * 24)


def test_it_reads_generic_ids():
    ids = parse_panel_ids({"pid": "panel-user_42", "study": "s1"}, panel="generic")
    assert (ids.participant, ids.study, ids.session) == ("panel-user_42", "s1", "")


@pytest.mark.parametrize(
    ("panel", "params"),
    [
        ("prolific", {}),
        ("prolific", {"pid": "panel-user"}),
        ("prolific", {"PROLIFIC_PID": "short"}),
        ("prolific", {"PROLIFIC_PID": PID + "0"}),
        ("prolific", {"PROLIFIC_PID": "<script>alert(1)</script>"}),
        ("prolific", {"PROLIFIC_PID": PID, "SESSION_ID": "not hex at all!!!!!!!!!!!"}),
        ("prolific", {"PROLIFIC_PID": PID, "STUDY_ID": "x"}),
        ("generic", {"PROLIFIC_PID": PID}),
        ("generic", {"pid": ""}),
        ("generic", {"pid": "x" * 65}),
        ("generic", {"pid": "has space"}),
    ],
)
def test_it_rejects_missing_or_malformed_ids_with_a_readable_message(panel, params):
    with pytest.raises(InvalidPanelLink) as error:
        parse_panel_ids(params, panel=panel)
    assert "panel" in str(error.value)


def test_it_names_the_bad_parameter():
    with pytest.raises(InvalidPanelLink, match="SESSION_ID"):
        parse_panel_ids({"PROLIFIC_PID": PID, "SESSION_ID": "nope"})
    with pytest.raises(InvalidPanelLink, match=r"missing your participant id \(pid\)"):
        parse_panel_ids({}, panel="generic")


def test_it_hashes_ids_with_the_key():
    assert keyed_hash("k1", PID) == keyed_hash("k1", PID)
    assert keyed_hash("k1", PID) != keyed_hash("k2", PID)
    assert PID not in keyed_hash("k1", PID)
