"""The rater API: token-authenticated clients that run battles with the web flow's rules."""
