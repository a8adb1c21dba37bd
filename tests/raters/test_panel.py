import pytest

from raters.panel import InvalidPanelLink, keyed_hash, parse_panel_ids

PID = "5f1a2b3c4d5e6f7a8b9c0d1e"


def test_it_reads_prolific_ids():
    ids = parse_panel_ids({"PROLIFIC_PID": PID, "STUDY_ID": "a" * 24, "SESSION_ID": "b" * 24})
    assert ids.participant == PID
    assert ids.session == "b" * 24


def test_it_reads_a_generic_pid():
    assert parse_panel_ids({"pid": "panel-user_42"}).participant == "panel-user_42"


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"PROLIFIC_PID": "short"},
        {"PROLIFIC_PID": PID + "0"},
        {"PROLIFIC_PID": "<script>alert(1)</script>"},
        {"PROLIFIC_PID": PID, "SESSION_ID": "not hex at all!!!!!!!!!!!"},
        {"PROLIFIC_PID": PID, "STUDY_ID": "x"},
        {"pid": ""},
        {"pid": "x" * 65},
        {"pid": "has space"},
    ],
)
def test_it_rejects_missing_or_malformed_ids_with_a_readable_message(params):
    with pytest.raises(InvalidPanelLink) as error:
        parse_panel_ids(params)
    assert "panel" in str(error.value)


def test_it_names_the_bad_parameter():
    with pytest.raises(InvalidPanelLink, match="SESSION_ID"):
        parse_panel_ids({"PROLIFIC_PID": PID, "SESSION_ID": "nope"})


def test_it_hashes_ids_with_the_key():
    assert keyed_hash("k1", PID) == keyed_hash("k1", PID)
    assert keyed_hash("k1", PID) != keyed_hash("k2", PID)
    assert PID not in keyed_hash("k1", PID)
