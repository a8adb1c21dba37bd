"""The default sampling frame of the reference study (HUMAINE): two countries, three axes each, and
22 groups (one option on one axis within one country). Admins can change all of it."""

COUNTRIES = [("US", "United States"), ("UK", "United Kingdom")]

# (slug, short label, screener question, whether "prefer not to say" is offered)
AXES = [
    ("age", "Age", "How old are you?", False),
    ("ethnicity", "Ethnicity", "Which best describes your ethnicity?", True),
    ("politics", "Politics", "Which political party do you feel closest to?", True),
]

AGE_BANDS = ["18–34", "35–54", "55+"]  # noqa: RUF001 - en dashes, as printed for raters
ETHNICITIES = ["Asian", "Black", "White", "Other"]
POLITICS = {
    "US": ["Democrat", "Republican", "Independent"],
    "UK": ["Conservative", "Labour", "Liberal Democrat", "Green", "Reform"],
}


def default_options(country: str) -> dict[str, list[str]]:
    return {"age": AGE_BANDS, "ethnicity": ETHNICITIES, "politics": POLITICS[country]}


def group_slug(country: str, axis: str, label: str) -> str:
    text = label.lower().replace("–", "-").replace("+", "-plus").replace(" ", "-")  # noqa: RUF001
    return f"{country.lower()}-{axis}-{text}"
