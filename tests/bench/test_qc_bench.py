from bench import qc as bench_qc


def test_it_scores_every_message_rule_on_public_conversations(tmp_path):
    results = bench_qc.run(quick=True, figures_path=tmp_path / "figures.json")
    assert results["legit_messages"] > 100
    assert results["off_task_messages"] > 50
    assert set(results["rules"]) == {"too_short", "gibberish", "copy", "topic_wandering"}
    for figures in results["rules"].values():
        for key in ("legit_struck", "bad_caught"):
            share = figures[key]
            low, high = share["wilson95"]
            assert low <= share["share"] <= high
            assert share["count"] <= share["n"]
        assert figures["ms"]["p50"] <= figures["ms"]["p95"]
    topic = results["rules"]["topic_wandering"]
    assert topic["bad_caught"]["share"] > topic["legit_nudged"]["share"] + topic["legit_struck"]["share"]
    assert topic["bad_caught_not_english"]["n"] > 0
    assert not (tmp_path / "figures.json").exists()  # a quick run never overwrites the published figures


def test_it_reads_the_cut_short_file_to_its_last_whole_item():
    ids = [cid for cid, _ in bench_qc.sharegpt_conversations()]
    assert len(ids) > 5000
