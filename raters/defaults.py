"""The 22 default demographic groups of the reference study (HUMAINE): one axis within one country."""

AGE_BANDS = ["18–34", "35–54", "55+"]  # noqa: RUF001 - en dashes, as printed for raters
ETHNICITIES = ["Asian", "Black", "White", "Other"]
POLITICS = {
    "US": ["Democrat", "Republican", "Independent"],
    "UK": ["Conservative", "Labour", "Liberal Democrat", "Green", "Reform"],
}

# Axes on which a rater may decline to answer and still take part (on the pooled board only).
OPTIONAL_AXES = {"ethnicity", "politics"}


def default_groups() -> list[dict]:
    groups = []
    for country in ("US", "UK"):
        options = {"age": AGE_BANDS, "ethnicity": ETHNICITIES, "politics": POLITICS[country]}
        for axis, labels in options.items():
            for position, label in enumerate(labels):
                groups.append(
                    {
                        "slug": _slug(country, axis, label),
                        "country": country,
                        "axis": axis,
                        "label": label,
                        "position": position,
                    }
                )
    return groups


def _slug(country: str, axis: str, label: str) -> str:
    text = label.lower().replace("–", "-").replace("+", "-plus").replace(" ", "-")  # noqa: RUF001
    return f"{country.lower()}-{axis}-{text}"
