"""The benchmarks `manage.py bench NAME` runs: each is a module here with `run(*, quick: bool) -> dict`.

They measure the product from outside, so they sit above every app and nothing in the apps imports them.
"""
