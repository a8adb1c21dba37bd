import pytest

from tournaments.identity import self_identification


@pytest.mark.parametrize(
    "text",
    [
        "As an AI language model developed by OpenAI, I cannot browse the web.",
        "I'm Claude, an AI assistant.",
        "I’m Claude, with a typographic apostrophe.",  # noqa: RUF001
        "Hello! I am ChatGPT. How can I help?",
        "My name is Gemini and I was trained to help.",
        "I was created by Anthropic to be helpful.",
        "As an assistant built on GPT-4o, I suggest the following.",
        "I am Falcon Mini, happy to help.",  # the battle's own model name
    ],
)
def test_it_spots_a_model_naming_itself(text):
    assert self_identification(text, own_names=["Falcon Mini", "Falcon Labs"]) is not None


@pytest.mark.parametrize(
    "text",
    [
        "The Pixel phone is made by Google and runs Android.",
        "Llama and Mistral are open-weight model families you can run locally.",
        "I am happy to compare ChatGPT-style tools with search engines.\n\nOpenAI is a company.",
        "Here is a recipe for bread. I am sure you will enjoy it.",
        "Je suis un assistant. Voici la réponse.",
    ],
)
def test_it_leaves_replies_that_only_mention_products(text):
    assert self_identification(text, own_names=["Falcon Mini", "Falcon Labs"]) is None


def test_it_returns_the_identifying_phrase():
    assert self_identification("Sure. I'm Claude, by the way.", own_names=[]) == "I'm Claude"
