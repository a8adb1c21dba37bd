"""`bench web --quick`: a real server under real load answers every measured address, and the figures
come back with the keys the issue asks for; the scratch database is gone afterwards."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import psycopg
import pytest

from bench import web as bench_web


def bench_databases() -> list[str]:
    with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as connection:
        rows = connection.execute("SELECT datname FROM pg_database WHERE datname LIKE 'populus_bench_%'")
        return [name for (name,) in rows]


def test_the_quick_benchmark_measures_page_api_and_trivial_view_on_one_server():
    before = bench_databases()
    result = bench_web.run(quick=True)
    for key in ("leaderboard_ratio", "api_ratio", "leaderboard_p95_ms", "api_p95_ms", "trivial_p95_ms"):
        assert result[key] > 0, key
    assert len(result["rounds"]) == bench_web.QUICK["rounds"]
    for measured in result["rounds"]:
        assert set(measured) == {*bench_web.TARGETS, "trivial_page_sized"}
        assert all(figures["requests"] > 0 for figures in measured.values())
    assert result["leaderboard_ratio"] == pytest.approx(result["leaderboard_rps"] / result["trivial_rps"])
    assert result["leaderboard_vs_page_sized_trivial"] > 0
    assert len(result["fits"]) == bench_web.QUICK["fit_rounds"]
    assert result["fit_burst_max_ms"] >= result["fit_burst_median_ms"] > 0
    assert result["fit_lone_render_ms"] > 0
    assert (
        result["setup"]["data"]["battles"] == bench_web.QUICK["raters"] * bench_web.QUICK["votes_per_rater"]
    )
    assert bench_databases() == before


class FakeSite(BaseHTTPRequestHandler):
    """Answers each benchmarked path as the test says."""

    answers: dict[str, tuple[int, bytes]] = {}

    def do_GET(self):
        status, body = self.answers.get(self.path, (404, b""))
        self.send_response(status)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def fake_site():
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeSite)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


GOOD_BOARD = json.dumps({"suppressed": False, "entries": [{"rank": 1}]}).encode()


@pytest.mark.parametrize(
    ("answers", "message"),
    [
        ({"/leaderboard/": (503, b"down")}, "answered 503"),
        (
            {"/api/v1/boards/": (200, json.dumps({"suppressed": True, "entries": []}).encode())},
            "not a fitted",
        ),
        ({"/leaderboard/": (200, b"<p>no table</p>")}, "no board table"),
    ],
)
def test_it_refuses_to_time_an_address_that_does_not_answer_with_a_board(fake_site, answers, message):
    """An error page, or an empty board, must never be what gets measured."""
    FakeSite.answers = {
        "/bench/trivial": (200, b"ok"),
        "/leaderboard/": (200, b"<table></table>"),
        "/api/v1/boards/": (200, GOOD_BOARD),
        **answers,
    }
    with pytest.raises(bench_web.BenchError, match=message):
        bench_web._check_answers(fake_site)
